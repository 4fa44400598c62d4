/* SPDX-License-Identifier: Apache-2.0 */
/* Blob removal by reference and the orphan sweep (see blob_gc.h). */
#include "blob/blob_gc.h"

#include "blob/blob_store.h"

struct gc {
    struct mf_ctx *ctx;
    struct mf_store *store;
    const char *root;
    int64_t cutoff_ms;
    int dry_run;
    struct mf_blobgc_report *report;
    mf_blobgc_fn fn;
    void *payload;
};

static int referenced(void *payload, int *referenced_out, const char *sha_hex)
{
    struct gc *g = payload;
    char who[MF_STORE_BLOB_REF_MAX];
    int err = g->store->ops->blobs->blob_ref(who, g->store, g->ctx, sha_hex);

    *referenced_out = err < 0 || who[0] != '\0';
    return err;
}

int mf_blobgc__remove(int *removed_out, struct mf_ctx *ctx, struct mf_store *s, const char *root,
                      const char *sha_hex, int64_t cutoff_ms)
{
    struct gc g = {.ctx = ctx, .store = s, .root = root};

    return mf_blob__remove_orphan(removed_out, ctx, root, sha_hex, cutoff_ms, referenced, &g);
}

static int sweep_one(void *payload, const char *sha_hex, int64_t mtime_ms)
{
    struct gc *g = payload;
    int is_ref = 0, removed = 0;
    int err;

    if (mtime_ms >= g->cutoff_ms) {
        g->report->young++;
        return MF_OK;
    }
    err = referenced(g, &is_ref, sha_hex);
    if (err < 0)
        return err;
    if (is_ref) {
        g->report->referenced++;
        return MF_OK;
    }
    if (g->dry_run)
        removed = 1;
    else
        err =
            mf_blob__remove_orphan(&removed, g->ctx, g->root, sha_hex, g->cutoff_ms, referenced, g);
    if (err == MF_OK && removed) {
        g->report->removed++;
        if (g->fn)
            err = g->fn(g->payload, sha_hex, mtime_ms);
    } else if (err == MF_OK) {
        g->report->referenced++; /* named or re-committed while the sweep looked at it */
    }
    return err;
}

int mf_blobgc__sweep(struct mf_blobgc_report *out, struct mf_ctx *ctx, struct mf_store *s,
                     const char *root, int64_t now_ms, int64_t grace_s, int dry_run,
                     mf_blobgc_fn fn, void *payload)
{
    struct gc g = {.ctx = ctx,
                   .store = s,
                   .root = root,
                   .cutoff_ms = now_ms - grace_s * 1000,
                   .dry_run = dry_run,
                   .report = out,
                   .fn = fn,
                   .payload = payload};

    out->removed = out->referenced = out->young = 0;
    return mf_blob__walk(ctx, root, sweep_one, &g);
}
