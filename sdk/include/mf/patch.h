/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/patch.h
 * @brief Model deltas, device side: streaming patch apply (library mf_diff_apply).
 *
 * The format is described in docs/formats/delta.md. Apply is an I/O-free state machine:
 * patch bytes in, new image bytes out, the old image read by offset through a callback, all
 * memory in one workspace whose size is known before the first byte
 * (mf_patch_workspace_size()). Creating patches is in mf/diff.h (server and tools only).
 */
#ifndef MF_PATCH_H
#define MF_PATCH_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/buf.h"

MF_BEGIN_DECLS

typedef struct mf_patch mf_patch; /**< opaque; layout private to diff/apply/ */

/**
 * Random access to the installed (old) image.
 * @return the number of bytes read (MUST be `len` unless the image ends) or a negative mf_err.
 */
typedef int (*mf_source_read_fn)(void *payload, uint64_t offset, void *buf, size_t len);

#define MF_PATCH_OPTIONS_VERSION 1
/** Default and recommended window: with it the whole workspace is about 0.8 MiB
 *  (window + zstd's context and one block buffer + a 64 KiB stage). */
#define MF_PATCH_DEFAULT_WINDOW (512u * 1024u)
/** Smallest window a patch may declare and an apply accepts. */
#define MF_PATCH_MIN_WINDOW 4096u
/** SHA-256 of the empty image: a patch from it is a compressed full blob (docs/protocol.md,
 *  "compressed_full"), applied with `source_size` 0 and no `source_read`. */
#define MF_PATCH_EMPTY_SHA256_HEX "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct {
    unsigned int version;          /**< MF_PATCH_OPTIONS_VERSION; fields are only appended */
    size_t max_window;             /**< hard bound; a patch that needs more gives MF_E_LIMIT */
    mf_source_read_fn source_read; /**< required */
    void *source_payload;          /**< passed back to source_read untouched */
    uint64_t source_size;          /**< size of the old image; 0 = unknown (not checked) */
} mf_patch_options;

/** Bytes of opaque resume state inside mf_patch_checkpoint. */
#define MF_PATCH_CHECKPOINT_STATE_SIZE 256

/**
 * Resume point at a block boundary. Persist it only after the new image is durably written
 * up to `new_offset`; resume by mf_patch_restore() and feeding the patch from `patch_offset`.
 */
typedef struct {
    uint64_t patch_offset; /**< feed the patch from this byte on after a restore */
    uint64_t new_offset;   /**< the new image is complete up to (excluding) this byte */
    uint8_t state[MF_PATCH_CHECKPOINT_STATE_SIZE]; /**< opaque, sealed by a checksum */
} mf_patch_checkpoint;

/**
 * @brief Fills `opts` with defaults for `version`.
 * @return MF_OK, or MF_E_INVALID for an unknown version.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_options_init(mf_patch_options *opts,
                                                          unsigned int version);

/** @return the workspace bytes mf_patch_init_static() needs for `opts` (0 if max_window is
 *  below MF_PATCH_MIN_WINDOW). */
MF_EXTERN size_t mf_patch_workspace_size(const mf_patch_options *opts);

/**
 * @brief Builds a patch applier inside caller memory; never allocates.
 * @param ws workspace, aligned for any object, at least mf_patch_workspace_size(opts) bytes.
 * @return MF_OK, MF_E_INVALID (bad options), MF_E_LIMIT (ws_size too small).
 * Ownership: `*out` lives inside `ws`; drop it by releasing `ws` (no free call needed).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_init_static(mf_patch **out, void *ws, size_t ws_size,
                                                         const mf_patch_options *opts);

/**
 * @brief Heap variant: one allocation of mf_patch_workspace_size(opts) through `alloc`
 * (NULL: libc).
 * @return MF_OK, MF_E_INVALID, MF_E_NOMEM. Ownership: free with mf_patch_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_new(mf_patch **out, const mf_patch_options *opts,
                                                 const mf_allocator *alloc);

/** @brief Releases an applier from mf_patch_new(). mf_patch_free(NULL) is a no-op. */
MF_EXTERN void mf_patch_free(mf_patch *p);

/**
 * @brief Consumes patch bytes from `in` and writes new-image bytes to `out`.
 * Either buffer may have zero room; the call makes whatever progress it can.
 * @return MF_AGAIN (refill `in` and/or drain `out`, call again), MF_OK (image complete and
 *   its sha256 verified; `in` is left at the first byte after the patch), or
 *   MF_E_INVALID (malformed patch), MF_E_LIMIT (patch needs a larger window),
 *   MF_E_SIGNATURE (sha256 of the result differs: wrong old image or corrupt patch),
 *   MF_E_IO (source_read failed). After an error the applier stays failed (MF_E_STATE).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_apply(mf_patch *p, mf_outbuf *out, mf_inbuf *in);

/**
 * @brief Captures the last block boundary whose output has been fully handed out.
 * @return MF_OK, or MF_E_STATE before the patch header has been read.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_checkpoint_get(mf_patch_checkpoint *out,
                                                            const mf_patch *p);

/**
 * @brief Resumes a fresh applier (no byte fed yet) from `ck`.
 * @return MF_OK, MF_E_INVALID (checkpoint corrupt or from another format version),
 *   MF_E_LIMIT (the patch's window exceeds max_window), MF_E_STATE (applier not fresh).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_patch_restore(mf_patch *p, const mf_patch_checkpoint *ck);

/** @return the bytes of the new image written so far. */
MF_EXTERN uint64_t mf_patch_new_offset(const mf_patch *p);

/** @return the message of the last failure, "" if none. Borrowed; owned by `p`. */
MF_EXTERN const char *mf_patch_errmsg(const mf_patch *p);

/** @return a recommended size for the caller's output buffer. */
MF_EXTERN size_t mf_patch_out_size(void);

MF_END_DECLS

#endif /* MF_PATCH_H */
