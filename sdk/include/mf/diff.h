/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/diff.h
 * @brief Model deltas, server and tools side: patch creation and inspection (library
 * mf_diff_create), which also reads and writes classic BSDIFF40 patches. Works on whole
 * buffers. Device builds MUST NOT link it; a device app includes mf/patch.h only.
 */
#ifndef MF_DIFF_H
#define MF_DIFF_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/buf.h"
/* Deprecated: mf/diff.h used to declare the apply side too. It still includes mf/patch.h for
 * one release so old includes compile; include mf/patch.h for mf_patch_*. Removed in 0.2. */
#include "mf/patch.h"

MF_BEGIN_DECLS

typedef struct mf_diff mf_diff; /**< opaque; holds options, allocator and error message */

typedef enum mf_diff_format {
    MF_DIFF_FORMAT_MF = 0,      /**< modelferry delta (docs/formats/delta.md) */
    MF_DIFF_FORMAT_BSDIFF40 = 1 /**< classic bsdiff 4.3 patch with bzip2 streams */
} mf_diff_format;

#define MF_DIFF_OPTIONS_VERSION 1

typedef struct {
    unsigned int version;  /**< MF_DIFF_OPTIONS_VERSION */
    mf_diff_format format; /**< output format of mf_diff_create() */
    int level;             /**< zstd level of the final encoding (default 19) */
    unsigned int threads;  /**< encoder threads (default 2); > 1: allocator thread-safe */
    size_t max_window;     /**< window of the produced patch (default MF_PATCH_DEFAULT_WINDOW) */
    uint64_t max_new_size; /**< largest new image BSDIFF40 apply will build (default 4 GiB) */
} mf_diff_options;

/** @brief Fills defaults. @return MF_OK or MF_E_INVALID (unknown version). */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_diff_options_init(mf_diff_options *opts,
                                                         unsigned int version);

/**
 * @brief Creates a diff handle. `opts` NULL means defaults; `alloc` NULL means libc.
 * @return MF_OK, MF_E_INVALID, MF_E_NOMEM. Ownership: free with mf_diff_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_diff_new(mf_diff **out, const mf_diff_options *opts,
                                                const mf_allocator *alloc);

/** @brief mf_diff_free(NULL) is a no-op. */
MF_EXTERN void mf_diff_free(mf_diff *d);

/**
 * @brief Builds a patch that turns `old` into `new_img` in the handle's format.
 * Memory: about 5 x old_len + 2 x new_len at the peak (suffix array of the old image).
 * @return MF_OK, MF_E_NOMEM, MF_E_LIMIT (an input above 2 GiB - 1).
 * Ownership: `*patch_out` belongs to the caller; release it with mf_free(alloc, p) using the
 * handle's allocator.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_diff_create(uint8_t **patch_out, size_t *patch_len_out,
                                                   mf_diff *d, const uint8_t *old, size_t old_len,
                                                   const uint8_t *new_img, size_t new_len);

/**
 * @brief Applies a BSDIFF40 patch in memory (tools side; memory = old + new + patch).
 * @return MF_OK, MF_E_INVALID (malformed patch), MF_E_LIMIT (new size above max_new_size),
 *   MF_E_NOMEM. Ownership: `*new_out` as for mf_diff_create().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_diff_bsdiff40_apply(uint8_t **new_out, size_t *new_len_out,
                                                           mf_diff *d, const uint8_t *old,
                                                           size_t old_len, const uint8_t *patch,
                                                           size_t patch_len);

/** Summary of one block of an mf patch, for mf_diff_describe(). */
typedef struct {
    uint32_t index;
    const char *kind;     /**< "stored", "zstd", "copy", "bsdiff" or "numeric"; static */
    unsigned int word;    /**< numeric word size in bytes, else 0 */
    uint64_t new_offset;  /**< where the block's output starts */
    uint32_t new_len;     /**< output bytes */
    uint32_t payload_len; /**< bytes in the patch after the block header */
    uint64_t old_offset;  /**< copy/numeric source, bsdiff start position */
    int sparse;           /**< numeric: only the non-zero residual words are listed */
    int raw;              /**< numeric: byte planes of the new values, no old image */
    int float_planes;     /**< numeric raw: sign rotated, mantissa bytes by exponent */
} mf_diff_block_info;

/** Summary of an mf patch header, for mf_diff_describe(). */
typedef struct {
    unsigned int format_version;
    uint64_t old_size;
    uint64_t new_size;
    uint8_t old_sha256[32];
    uint8_t new_sha256[32];
    uint32_t block_count;
    uint32_t window;
} mf_diff_header_info;

typedef int (*mf_diff_block_fn)(void *payload, const mf_diff_block_info *block);

/**
 * @brief Parses the header and walks the block headers of an mf patch (no decompression).
 * `fn` may be NULL; a negative value from `fn` stops the walk and is returned.
 * @return MF_OK, MF_E_INVALID (malformed or truncated patch).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_diff_describe(mf_diff_header_info *out, mf_diff *d,
                                                     const uint8_t *patch, size_t patch_len,
                                                     mf_diff_block_fn fn, void *payload);

/** @return the message of the last failure, "" if none. Borrowed; owned by `d`. */
MF_EXTERN const char *mf_diff_errmsg(const mf_diff *d);

MF_END_DECLS

#endif /* MF_DIFF_H */
