/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background labelling and deletion of hard samples. Labelling runs as "label" jobs on the
 * store's job queue (claimed once across nodes by the worker in server/deltas): it takes a
 * page of unlabelled samples of one model, reads each input blob and asks the teacher.
 * The page is copied out of the store before any teacher call, so no store lock is held
 * while a teacher thinks.
 */
#include "offload/offload_srv.h"

#include "blob/blob_gc.h"
#include "blob/blob_store.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define LABEL_PAGE_MAX 64

struct label_item {
    char id[MF_STORE_SAMPLE_ID_LEN + 1];
    char sha[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    size_t n_classes;
};

struct label_page {
    struct label_item items[LABEL_PAGE_MAX];
    size_t n;
};

static int collect(void *payload, const struct mf_store_sample *m)
{
    struct label_page *p = payload;
    struct label_item *it = &p->items[p->n];

    if (p->n == LABEL_PAGE_MAX)
        return MF_OK;
    (void)snprintf(it->id, sizeof(it->id), "%s", m->id);
    (void)snprintf(it->sha, sizeof(it->sha), "%s", m->input_sha256);
    it->size = m->input_size;
    /* The stored output is "[a,b,...]" written by the sample parser: classes = commas + 1. */
    it->n_classes = 1;
    for (const char *c = m->output; *c; c++)
        it->n_classes += *c == ',';
    p->n++;
    return MF_OK;
}

static int read_input(uint8_t *buf, struct mf_ctx *ctx, const char *root,
                      const struct label_item *it)
{
    size_t len = 0;
    int err = mf_blob__read(buf, MF_OFFLOAD_INPUT_MAX, &len, ctx, root, it->sha);

    if (err == MF_OK && len != it->size)
        err = mf_fail(ctx, MF_E_IO, "input blob %s has %zu bytes, not %llu", it->sha, len,
                      (unsigned long long)it->size);
    return err;
}

/* "[p0,p1,...]" at float32 precision into a ctx allocation. */
static char *format_probs(struct mf_ctx *ctx, const float *p, size_t n)
{
    struct mf_dynbuf b;
    int err;

    mf_dynbuf__init(&b, &ctx->alloc, n * 18 + 3);
    err = mf_dynbuf__append(&b, "[", 1);
    for (size_t i = 0; err == MF_OK && i < n; i++)
        err = mf_dynbuf__appendf(&b, "%s%.9g", i ? "," : "", (double)p[i]);
    if (err == MF_OK)
        err = mf_dynbuf__append(&b, "]", 2);
    if (err < 0) {
        mf_dynbuf__free(&b);
        return NULL;
    }
    return (char *)mf_dynbuf__take(&b, NULL);
}

static int label_one(struct mf_teacher *t, struct mf_store *s, struct mf_ctx *ctx, const char *root,
                     const struct label_item *it, uint8_t *in, float *probs)
{
    char version[MF_STORE_NAME_SIZE];
    float conf = 0.0f;
    char *text;
    int err = read_input(in, ctx, root, it);

    if (err == MF_OK)
        err = mf_teacher__ask(probs, version, t, ctx, in, (size_t)it->size, it->n_classes, 0);
    if (err < 0)
        return err;
    for (size_t c = 0; c < it->n_classes; c++)
        conf = probs[c] > conf ? probs[c] : conf;
    text = format_probs(ctx, probs, it->n_classes);
    if (!text)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory storing a label");
    err = s->ops->offload->sample_label(s, ctx, it->id, version, text, conf, (int64_t)time(NULL));
    mf_free(&ctx->alloc, text);
    return err;
}

int mf_offsrv__label_run(int *made_out, struct mf_offload_srv *srv, struct mf_store *s,
                         struct mf_ctx *ctx, const char *blob_root, const char *model, size_t max)
{
    struct mf_teacher *t = mf_offsrv__teacher(srv, model);
    struct mf_store_sample_query q;
    struct label_page *page;
    uint8_t *in;
    float *probs;
    int err;

    *made_out = 0;
    if (!t)
        return mf_fail(ctx, MF_E_NOTFOUND, "no teacher configured for model '%s'", model);
    page = mf_calloc(&ctx->alloc, 1, sizeof(*page));
    in = mf_alloc(&ctx->alloc, MF_OFFLOAD_INPUT_MAX);
    probs = mf_alloc(&ctx->alloc, MF_TEACHER_MAX_CLASSES * sizeof(float));
    if (!page || !in || !probs) {
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory labelling samples");
        goto out;
    }
    memset(&q, 0, sizeof(q));
    q.model = model;
    q.unlabelled = 1;
    q.limit = (int64_t)(max < LABEL_PAGE_MAX ? max : LABEL_PAGE_MAX);
    err = s->ops->offload->samples_walk(s, ctx, &q, collect, page);
    for (size_t i = 0; err == MF_OK && i < page->n; i++) {
        if (page->items[i].n_classes > MF_TEACHER_MAX_CLASSES)
            continue;
        err = label_one(t, s, ctx, blob_root, &page->items[i], in, probs);
        if (err == MF_OK)
            (*made_out)++;
    }
out:
    mf_free(&ctx->alloc, probs);
    mf_free(&ctx->alloc, in);
    mf_free(&ctx->alloc, page);
    return err;
}

struct orphans {
    struct mf_ctx *ctx;
    struct mf_store *store;
    const char *root;
    int64_t started_ms;
};

/* After the deletion committed: its inputs that no row of any table names (store.h). */
static int remove_blob(void *payload, const char *unused, const char *sha)
{
    struct orphans *o = payload;
    int removed = 0;

    (void)unused;
    return mf_blobgc__remove(&removed, o->ctx, o->store, o->root, sha, o->started_ms);
}

int mf_offsrv__delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *blob_root, const char *device_id, int64_t before)
{
    /* A blob committed since the deletion began is an upload of the same bytes whose row
     * may be on its way: it stays (for the sweep, if it stays unreferenced). */
    struct orphans o = {ctx, s, blob_root, mf_blob__clock_ms()};

    return s->ops->offload->samples_delete(deleted_out, s, ctx, device_id, before, remove_blob, &o);
}
