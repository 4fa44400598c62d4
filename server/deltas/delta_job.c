/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One delta job (see delta_worker.h): pick the sources, encode, keep what is smaller than
 * the full blob, store it as a blob, record it.
 */
#include "deltas/delta_worker.h"

#include "blob/blob_store.h"
#include "mf/diff.h"
#include "mf/patch.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define DELTA_MAX_SOURCES 64

struct delta_sources {
    char sha[DELTA_MAX_SOURCES][MF_SHA256_HEX_LEN + 1];
    uint64_t seq[DELTA_MAX_SOURCES]; /* release sequence; 0 for fleet-only sources */
    size_t n;
    const struct mf_store_version *target;
    unsigned k;
};

void mf_delta__options_init(struct mf_delta_options *o)
{
    memset(o, 0, sizeof(*o));
    o->k = 3;
    o->max_bytes = 512ull << 20;
    o->interval_ms = 2000;
    o->lease_s = 900;
    o->threads = 2;
    o->run_deltas = 1;
    o->compressed_full = 1;
}

int mf_delta__enqueue(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                      const char *version)
{
    char arg[MF_STORE_JOB_ARG_MAX + 1];

    (void)snprintf(arg, sizeof(arg), "%s/%s", model, version);
    return s->ops->jobs->job_enqueue(s, ctx, MF_DELTA_JOB_KIND, arg, (int64_t)time(NULL));
}

static void add_source(struct delta_sources *src, const char *sha, uint64_t seq)
{
    if (strcmp(sha, src->target->sha256) == 0)
        return;
    for (size_t i = 0; i < src->n; i++) {
        if (strcmp(src->sha[i], sha) == 0)
            return;
    }
    if (src->n < DELTA_MAX_SOURCES) {
        memcpy(src->sha[src->n], sha, MF_SHA256_HEX_LEN + 1);
        src->seq[src->n++] = seq;
    }
}

/* Released versions of the target's model below its sequence; keeps the K highest. */
static int visit_release(void *payload, const struct mf_store_version *v)
{
    struct delta_sources *src = payload;
    size_t lowest = 0, released = 0;

    if (strcmp(v->model, src->target->model) != 0 || v->sequence == 0 ||
        v->sequence >= src->target->sequence)
        return MF_OK;
    for (size_t i = 0; i < src->n; i++) {
        if (src->seq[i] == 0)
            continue;
        released++;
        if (src->seq[lowest] == 0 || src->seq[i] < src->seq[lowest])
            lowest = i;
    }
    if (released < src->k) {
        add_source(src, v->sha256, v->sequence);
    } else if (released && v->sequence > src->seq[lowest]) {
        memcpy(src->sha[lowest], v->sha256, MF_SHA256_HEX_LEN + 1);
        src->seq[lowest] = v->sequence;
    }
    return MF_OK;
}

static int visit_fleet(void *payload, const char *unused, const char *sha)
{
    (void)unused;
    add_source(payload, sha, 0);
    return MF_OK;
}

/* Encodes old -> new; stores and records the patch when it is smaller than new. */
static int make_delta(int *made, struct mf_store *s, struct mf_ctx *ctx, const char *root,
                      const struct mf_delta_options *o, const struct mf_store_version *target,
                      const uint8_t *new_img, size_t new_len, const char *from)
{
    struct mf_store_delta d = {.created_at = (int64_t)time(NULL)};
    mf_diff_options opts;
    mf_diff *diff = NULL;
    uint8_t *old = NULL, *patch = NULL;
    size_t old_len = 0, patch_len = 0;
    int err = s->ops->registry->delta_find(&d, s, ctx, from, target->sha256);

    if (err != MF_E_NOTFOUND)
        return err; /* MF_OK: made already (by this node or another) */
    if (strcmp(from, MF_PATCH_EMPTY_SHA256_HEX) != 0)
        err = mf_blob__read_alloc(&old, &old_len, ctx, root, from, o->max_bytes);
    else
        err = MF_OK; /* the compressed full blob: a delta from nothing */
    if (err == MF_E_NOTFOUND || err == MF_E_LIMIT)
        return MF_OK; /* a fleet version we never had, or too big: full download then */
    if (err == MF_OK)
        err = mf_diff_options_init(&opts, MF_DIFF_OPTIONS_VERSION);
    if (err == MF_OK) {
        opts.threads = o->threads;
        err = mf_diff_new(&diff, &opts, &ctx->alloc);
    }
    if (err == MF_OK) {
        err = mf_diff_create(&patch, &patch_len, diff, old ? old : (const uint8_t *)"", old_len,
                             new_img, new_len);
        if (err < 0)
            err = mf_fail(ctx, err, "encoding %.12s -> %.12s: %s", from, target->sha256,
                          mf_diff_errmsg(diff));
    }
    if (err == MF_OK && patch_len < new_len) {
        err = mf_blob__put(d.delta_sha256, ctx, root, patch, patch_len);
        (void)snprintf(d.model, sizeof(d.model), "%s", target->model);
        memcpy(d.from_sha256, from, sizeof(d.from_sha256));
        memcpy(d.to_sha256, target->sha256, sizeof(d.to_sha256));
        d.size = patch_len;
        (void)snprintf(d.format, sizeof(d.format), "mfdelta");
        if (err == MF_OK)
            err = s->ops->registry->delta_insert(s, ctx, &d);
        if (err == MF_OK) {
            (*made)++;
            MF_LOG_INFO(ctx, "delta %s %.12s -> %s: %zu of %zu bytes", target->model, from,
                        target->version, patch_len, new_len);
        }
    } else if (err == MF_OK) {
        MF_LOG_INFO(ctx, "delta %s %.12s -> %s not kept: %zu bytes >= full %zu", target->model,
                    from, target->version, patch_len, new_len);
    }
    if (patch)
        mf_free(&ctx->alloc, patch);
    mf_diff_free(diff);
    mf_free(&ctx->alloc, old);
    return err;
}

int mf_delta__run(int *made_out, struct mf_store *s, struct mf_ctx *ctx, const char *blob_root,
                  const struct mf_delta_options *o, const char *arg)
{
    char model[MF_STORE_NAME_SIZE], version[MF_STORE_NAME_SIZE];
    const char *slash = strchr(arg, '/');
    struct mf_store_version target;
    struct delta_sources *src;
    uint8_t *new_img = NULL;
    size_t new_len = 0;
    int err;

    *made_out = 0;
    if (!slash || (size_t)(slash - arg) >= sizeof(model) || strlen(slash + 1) >= sizeof(version))
        return mf_fail(ctx, MF_E_INVALID, "delta job argument '%s' is not MODEL/VERSION", arg);
    (void)snprintf(model, sizeof(model), "%.*s", (int)(slash - arg), arg);
    (void)snprintf(version, sizeof(version), "%s", slash + 1);
    err = s->ops->registry->version_get(&target, s, ctx, model, version);
    if (err < 0)
        return err;
    src = mf_calloc(&ctx->alloc, 1, sizeof(*src));
    if (!src)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory planning deltas");
    src->target = &target;
    src->k = o->k;
    /* Every release also gets its compressed full blob (kept when smaller than the raw one),
     * offered to devices that say they decode it (docs/protocol.md, "compressed_full"). */
    if (o->compressed_full)
        add_source(src, MF_PATCH_EMPTY_SHA256_HEX, 0);
    err = s->ops->registry->versions_list(s, ctx, visit_release, src);
    if (err == MF_OK)
        err = s->ops->devices->fleet_sha256s(s, ctx, model, visit_fleet, src);
    if (err == MF_OK && src->n)
        err = mf_blob__read_alloc(&new_img, &new_len, ctx, blob_root, target.sha256, o->max_bytes);
    if (err == MF_E_LIMIT)
        err = MF_OK; /* too big to diff: devices download it whole */
    for (size_t i = 0; err == MF_OK && new_img && i < src->n; i++)
        err = make_delta(made_out, s, ctx, blob_root, o, &target, new_img, new_len, src->sha[i]);
    mf_free(&ctx->alloc, new_img);
    mf_free(&ctx->alloc, src);
    return err;
}
