/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Content-addressed blob files: <root>/<first 2 hex>/<sha256>, immutable once renamed into
 * place. Uploads stream into <root>/tmp/ while hashing, so a half-finished upload is never
 * visible under a blob name; the commit is fsync(file), rename, fsync(dirs).
 */
#ifndef MF_SERVER_BLOB_STORE_H
#define MF_SERVER_BLOB_STORE_H

#include "mf_ctx.h"
#include "mf_hex.h"

#include <stddef.h>
#include <stdint.h>

#define MF_BLOB_PATH_MAX 4096

/* Creates <root>/ and <root>/tmp/ when missing. MF_E_IO on failure. */
int mf_blob__ensure_dirs(struct mf_ctx *ctx, const char *root);

/* Removes leftovers of uploads interrupted by a crash from <root>/tmp/ (at startup, when
 * no upload can be running). *removed_out counts them. */
int mf_blob__sweep_tmp(int *removed_out, struct mf_ctx *ctx, const char *root);

/* Opens blob `sha_hex` (already validated) for reading. MF_E_NOTFOUND or MF_E_IO.
 * Ownership: the caller closes *fd_out. */
int mf_blob__open(int *fd_out, uint64_t *size_out, struct mf_ctx *ctx, const char *root,
                  const char *sha_hex);

/* Reads blob `sha_hex` whole into `buf` (at most `cap` bytes): MF_E_NOTFOUND, MF_E_LIMIT
 * (larger than cap) or MF_E_IO. */
int mf_blob__read(uint8_t *buf, size_t cap, size_t *len_out, struct mf_ctx *ctx, const char *root,
                  const char *sha_hex);
/* The same into a buffer from ctx->alloc sized for the blob (at most `max` bytes, else
 * MF_E_LIMIT; MF_E_NOMEM). Ownership: the caller frees *out (NULL on failure). */
int mf_blob__read_alloc(uint8_t **out, size_t *len_out, struct mf_ctx *ctx, const char *root,
                        const char *sha_hex, uint64_t max);
/* Stores `len` bytes as a blob (the upload steps below in one call); its name into sha_out. */
int mf_blob__put(char sha_out[MF_SHA256_HEX_LEN + 1], struct mf_ctx *ctx, const char *root,
                 const void *p, size_t len);

struct mf_blob_upload;

/* Starts an upload capped at `max_bytes`. Ownership: mf_blob__upload_free(). */
int mf_blob__upload_begin(struct mf_blob_upload **out, struct mf_ctx *ctx, const char *root,
                          uint64_t max_bytes);
/* Appends and hashes a chunk. MF_E_LIMIT past the cap, MF_E_IO on a write error. */
int mf_blob__upload_write(struct mf_blob_upload *u, struct mf_ctx *ctx, const void *data,
                          size_t len);
/* Ends the byte stream: fsyncs the temp file and yields its digest and size. */
int mf_blob__upload_finish(char sha_hex_out[MF_SHA256_HEX_LEN + 1], uint64_t *size_out,
                           struct mf_blob_upload *u, struct mf_ctx *ctx);
/* After finish: renames the temp file to its blob name (a blob of that name already
 * present is identical by construction; the temp file is then dropped) and fsyncs the
 * directories. After this the blob is durable. */
int mf_blob__upload_commit(struct mf_blob_upload *u, struct mf_ctx *ctx);
/* Releases the upload; an uncommitted temp file is removed. NULL is a no-op. */
void mf_blob__upload_free(struct mf_blob_upload *u);

/* Whether a row refers to blob `sha_hex` (*referenced_out 1) or none does (0). */
typedef int (*mf_blob_ref_fn)(void *payload, int *referenced_out, const char *sha_hex);
/* A committed blob and its modification time (Unix milliseconds: when its bytes were last
 * committed under its name, see mf_blob__upload_commit). */
typedef int (*mf_blob_visit_fn)(void *payload, const char *sha_hex, int64_t mtime_ms);

/* Now in Unix milliseconds on the clock the kernel stamps file times with (it advances by
 * whole ticks): a file committed after this call never has an earlier modification time. */
int64_t mf_blob__clock_ms(void);

/*
 * Removes blob `sha_hex`, which the caller found unreferenced, unless it was committed at or
 * after `cutoff_ms` (mf_blob__clock_ms) or `ref_fn` now finds a row naming it: the file is moved
 * into tmp/ first, so an upload of the same bytes racing the removal commits a new file the
 * checks see, then removed or put back. *removed_out 1 when it went; a missing blob is fine.
 * MF_E_IO, or ref_fn's error (the blob is then put back).
 */
int mf_blob__remove_orphan(int *removed_out, struct mf_ctx *ctx, const char *root,
                           const char *sha_hex, int64_t cutoff_ms, mf_blob_ref_fn ref_fn,
                           void *payload);

/* Visits every committed blob (<root>/<2 hex>/<sha256>; nothing in tmp/), directory by
 * directory; a negative return of fn stops the walk and is returned. MF_E_IO. */
int mf_blob__walk(struct mf_ctx *ctx, const char *root, mf_blob_visit_fn fn, void *payload);

#endif /* MF_SERVER_BLOB_STORE_H */
