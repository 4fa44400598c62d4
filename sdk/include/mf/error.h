/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/error.h
 * @brief Error codes shared by every modelferry library.
 *
 * Every fallible function returns `int`: MF_OK (0) on success or a negative mf_err.
 * Streaming calls may also return the positive, non-error MF_AGAIN. Details of a failure
 * are kept in a fixed-size message buffer inside the handle that failed (for example
 * mf_agent_errmsg()); errors never allocate and never touch global or thread-local state.
 *
 * The numbers are part of the ABI: they are never reused or renumbered, new codes are only
 * appended, and a retired code stays as MF_E_OBSOLETE_n.
 */
#ifndef MF_ERROR_H
#define MF_ERROR_H

#include "mf/common.h"

MF_BEGIN_DECLS

typedef enum mf_err {
    MF_OK = 0,           /**< success */
    MF_AGAIN = 1,        /**< streaming call needs more input or output room; not an error */
    MF_E_GENERIC = -1,   /**< unclassified failure */
    MF_E_NOMEM = -2,     /**< the allocator returned NULL */
    MF_E_INVALID = -3,   /**< malformed input: bad patch, manifest, JSON, argument value */
    MF_E_LIMIT = -4,     /**< input asks for more than a configured bound allows */
    MF_E_SIGNATURE = -5, /**< signature or digest mismatch; the data is not trusted */
    MF_E_IO = -6,        /**< file, flash or platform I/O failed */
    MF_E_NOTFOUND = -7,  /**< the named object does not exist */
    MF_E_STATE = -8,     /**< the call is not valid in the object's current state */
    MF_E_AUTH = -9,      /**< a credential was missing, wrong or revoked */
    MF_E_NET = -10,      /**< network failure or unexpected peer answer; may be retried */
} mf_err;

/** Lowest (most negative) code defined by this version of the header. */
#define MF_E_LAST MF_E_NET

/**
 * @brief Name of an error code.
 * @param code any int; unknown values give "unknown error".
 * @return a static string, never NULL.
 */
MF_EXTERN const char *mf_strerror(int code);

MF_END_DECLS

#endif /* MF_ERROR_H */
