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

int mf_delta__enqueue_variant(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                              const char *version, const char *variant)
{
    char arg[MF_STORE_JOB_ARG_MAX + 1];

    (void)snprintf(arg, sizeof(arg), "%s/%s/%s", model, version, variant);
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
    struct mf_store_delta d;
    mf_diff_options opts;
    mf_diff *diff = NULL;
    uint8_t *old = NULL, *patch = NULL;
    size_t old_len = 0, patch_len = 0;
    int err = s->ops->registry->delta_find(&d, s, ctx, from, target->sha256);

    if (err != MF_E_NOTFOUND)
        return err;                     /* MF_OK: made already (by this node or another) */
    d.created_at = (int64_t)time(NULL); /* after the lookup, which clears `d` */
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

/* The released variants named like the target's (delta_sources.variant), of any version. */
struct variant_walk {
    const char *variant;
    struct mf_store_variant *found;
    size_t n, cap;
};

static int visit_variant(void *payload, const struct mf_store_variant *x)
{
    struct variant_walk *w = payload;

    if (strcmp(x->variant, w->variant) == 0 && w->n < w->cap)
        w->found[w->n++] = *x;
    return MF_OK;
}

/* The same variant of the model's earlier releases, as visit_release takes versions: each
 * with its version's sequence, the variant's bytes. */
static int variant_sources(struct delta_sources *src, struct mf_store *s, struct mf_ctx *ctx,
                           const char *variant)
{
    struct variant_walk w = {variant, NULL, 0, DELTA_MAX_SOURCES};
    int err;

    w.found = mf_calloc(&ctx->alloc, w.cap, sizeof(*w.found));
    if (!w.found)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory planning deltas");
    err = s->ops->variants->variants_list(s, ctx, src->target->model, NULL, 1, visit_variant, &w);
    for (size_t i = 0; err == MF_OK && i < w.n; i++) {
        struct mf_store_version v;

        err = s->ops->registry->version_get(&v, s, ctx, w.found[i].model, w.found[i].version);
        memcpy(v.sha256, w.found[i].sha256, sizeof(v.sha256));
        if (err == MF_OK)
            err = visit_release(src, &v);
    }
    mf_free(&ctx->alloc, w.found);
    return err;
}

/* The job's target: MODEL/VERSION (the version's blob) or MODEL/VERSION/VARIANT. */
static int job_target(struct mf_store_version *out, char variant[MF_STORE_NAME_SIZE],
                      struct mf_store *s, struct mf_ctx *ctx, const char *arg)
{
    char parts[3][MF_STORE_NAME_SIZE];
    const char *p = arg;
    size_t n = 0;
    struct mf_store_variant x;
    int err;

    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);

        if (n == 3 || len == 0 || len >= MF_STORE_NAME_SIZE)
            return mf_fail(ctx, MF_E_INVALID,
                           "delta job argument '%s' is not MODEL/VERSION[/VARIANT]", arg);
        (void)snprintf(parts[n++], MF_STORE_NAME_SIZE, "%.*s", (int)len, p);
        if (!slash)
            break;
        p = slash + 1;
    }
    if (n < 2)
        return mf_fail(ctx, MF_E_INVALID, "delta job argument '%s' is not MODEL/VERSION[/VARIANT]",
                       arg);
    variant[0] = '\0';
    err = s->ops->registry->version_get(out, s, ctx, parts[0], parts[1]);
    if (err == MF_OK && n == 3)
        err = s->ops->variants->variant_get(&x, s, ctx, parts[0], parts[1], parts[2]);
    if (err == MF_OK && n == 3) {
        memcpy(out->sha256, x.sha256, sizeof(out->sha256));
        out->size = x.size;
        memcpy(variant, x.variant, MF_STORE_NAME_SIZE);
    }
    return err;
}

int mf_delta__run(int *made_out, struct mf_store *s, struct mf_ctx *ctx, const char *blob_root,
                  const struct mf_delta_options *o, const char *arg)
{
    char model[MF_STORE_NAME_SIZE], variant[MF_STORE_NAME_SIZE];
    struct mf_store_version target;
    struct delta_sources *src;
    uint8_t *new_img = NULL;
    size_t new_len = 0;
    int err;

    *made_out = 0;
    err = job_target(&target, variant, s, ctx, arg);
    if (err < 0)
        return err;
    memcpy(model, target.model, sizeof(model));
    src = mf_calloc(&ctx->alloc, 1, sizeof(*src));
    if (!src)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory planning deltas");
    src->target = &target;
    src->k = o->k;
    /* Every release also gets its compressed full blob (kept when smaller than the raw one),
     * offered to devices that say they decode it (docs/protocol.md, "compressed_full"). */
    if (o->compressed_full)
        add_source(src, MF_PATCH_EMPTY_SHA256_HEX, 0);
    err = variant[0] ? variant_sources(src, s, ctx, variant)
                     : s->ops->registry->versions_list(s, ctx, visit_release, src);
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
