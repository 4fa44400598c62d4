/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blob lifetime by reference (docs/architecture.md, "Blob lifetime"). A blob file goes only
 * when no row of any table names it (the store's blob_ref), and only after the transaction
 * that deleted the last such row committed: a crash in between leaves an orphan file, never
 * a row naming a missing blob. The sweep removes orphans: unreferenced blobs committed more
 * than a grace period ago, so an upload whose row is not committed yet is never taken.
 */
#ifndef MF_SERVER_BLOB_GC_H
#define MF_SERVER_BLOB_GC_H

#include "mf_ctx.h"
#include "store/store.h"

#include <stdint.h>

/* Uploads commit their blob file and then their row within one request (a model upload, an
 * offload batch of at most 1 MiB, a delta or a distilled model): an hour is far beyond it. */
#define MF_BLOBGC_GRACE_S 3600

/* Removes blob `sha_hex`, found unreferenced by a deletion that began at `cutoff_ms`
 * (mf_blob__clock_ms), unless it was committed since or a row names it by now
 * (mf_blob__remove_orphan). *removed_out 1 when it went. MF_E_IO or the store's errors. */
int mf_blobgc__remove(int *removed_out, struct mf_ctx *ctx, struct mf_store *s, const char *root,
                      const char *sha_hex, int64_t cutoff_ms);

struct mf_blobgc_report {
    int64_t removed;    /* orphans removed (dry run: that would be) */
    int64_t referenced; /* kept: a row names them */
    int64_t young;      /* kept: committed less than the grace period ago */
};

/* A blob the sweep removed, or with dry_run would remove; a negative return stops it. */
typedef int (*mf_blobgc_fn)(void *payload, const char *sha_hex, int64_t mtime_ms);

/* Sweeps the blob store at `now_ms` (mf_blob__clock_ms): every blob committed before
 * now_ms - grace_s seconds that no row refers to is removed (dry_run 0) or only reported (1). `fn`
 * may be NULL. MF_E_IO or the store's errors; the report counts what was done until then. */
int mf_blobgc__sweep(struct mf_blobgc_report *out, struct mf_ctx *ctx, struct mf_store *s,
                     const char *root, int64_t now_ms, int64_t grace_s, int dry_run,
                     mf_blobgc_fn fn, void *payload);

#endif /* MF_SERVER_BLOB_GC_H */
