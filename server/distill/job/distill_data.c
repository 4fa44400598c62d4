/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a distillation run trains and judges on. Train is cut by a seeded permutation into
 * the seed set (true labels) and the calibration items (thresholds; never trained on);
 * the held-out items come from their own files. The fleet's uplinked samples join the
 * seed rows with the teacher's soft labels only: a sample whose input equals a held-out
 * item is dropped (the held-out set must never enter training), as is one the teacher
 * was unsure of, one of another shape, and a repeat of an input already taken.
 */
#include "distill/job/distill_job.h"
#include "mf_json.h"

#include "blob/blob_store.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include "mf_mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUT_MAX (64u * 1024u)

/* One uplinked sample as collected (before the blobs are read). */
struct smp {
    int64_t seq;
    char id[MF_STORE_SAMPLE_ID_LEN + 1];
    char sha[MF_SHA256_HEX_LEN + 1];
    char teacher[MF_STORE_NAME_SIZE];
    float probs[MF_DATASET_CLASSES];
    int audit;
};

int mf_distill__data_load(struct mf_distill_data *d, struct mf_ctx *ctx,
                          const struct mf_distill_model_cfg *c)
{
    mf_dataset *all = NULL;
    size_t *idx = NULL;
    int err;

    memset(d, 0, sizeof(*d));
    err = mf_dataset_load_idx(&d->train, ctx, &ctx->alloc, c->train_images, c->train_labels);
    if (err == MF_OK)
        err = mf_dataset_load_idx(&all, ctx, &ctx->alloc, c->heldout_images, c->heldout_labels);
    if (err == MF_OK && all->dim != d->train->dim)
        err = mf_fail(ctx, MF_E_INVALID, "held-out items have %u bytes, train items %u", all->dim,
                      d->train->dim);
    if (err == MF_OK) {
        size_t b = c->heldout_end ? c->heldout_begin : 0,
               e = c->heldout_end ? c->heldout_end : all->n;

        if (e > all->n)
            err = mf_fail(ctx, MF_E_INVALID, "held-out range ends at %zu, the set has %zu", e,
                          all->n);
        idx = err == MF_OK ? mf_calloc(&ctx->alloc, e - b, sizeof(*idx)) : NULL;
        for (size_t i = 0; idx && i < e - b; i++)
            idx[i] = b + i;
        if (err == MF_OK && !idx)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory for the held-out set");
        if (err == MF_OK)
            err = mf_dataset_select(&d->heldout, ctx, all, idx, e - b);
    }
    mf_free(&ctx->alloc, idx);
    mf_dataset_free(all);
    if (err == MF_OK) {
        d->n_seed = (size_t)(c->seed_fraction * (double)d->train->n);
        d->n_calib = c->calibration;
        if (d->n_seed < 10 || d->n_seed + d->n_calib > d->train->n)
            err = mf_fail(ctx, MF_E_INVALID,
                          "train has %zu items: too few for a seed set of %zu and %zu calibration "
                          "items",
                          d->train->n, d->n_seed, d->n_calib);
    }
    if (err == MF_OK) {
        d->perm = mf_calloc(&ctx->alloc, d->train->n, sizeof(*d->perm));
        if (!d->perm)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory for the train permutation");
        else
            mf_dataset_permutation(d->perm, d->train->n, c->split_seed);
    }
    d->sample_ids = cJSON_CreateArray();
    d->teacher_versions = cJSON_CreateArray();
    if (err == MF_OK && (!d->sample_ids || !d->teacher_versions))
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (err < 0)
        mf_distill__data_free(d);
    return err;
}

struct collect {
    struct mf_dynbuf rows; /* struct smp */
    struct mf_ctx *ctx;
    const struct mf_distill_model_cfg *c;
    size_t unsure, shape;
};

/* "[p0,p1,...]" with exactly MF_DATASET_CLASSES probabilities. */
static int parse_probs(float *out, const char *text)
{
    struct mf_ctx scratch; /* the caller counts a bad vector, it does not report it */
    size_t len = strlen(text);
    cJSON *a, *it;
    unsigned n = 0;
    int ok;

    mf_ctx__init(&scratch, NULL, NULL, NULL, "distill");
    if (mf_json__parse(&a, &scratch, text, len, len, 1, "teacher output") < 0)
        return 0;

    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsNumber(it) || n == MF_DATASET_CLASSES || !(it->valuedouble >= 0))
            break;
        out[n++] = (float)it->valuedouble;
    }
    ok = !it && n == MF_DATASET_CLASSES; /* stopped early: not a clean vector */
    cJSON_Delete(a);
    return ok;
}

static int collect_one(void *payload, const struct mf_store_sample *m)
{
    struct collect *c = payload;
    struct smp r;

    memset(&r, 0, sizeof(r));
    if (m->teacher_confidence < c->c->min_teacher_confidence) {
        c->unsure++;
        return MF_OK;
    }
    if (!parse_probs(r.probs, m->teacher_output)) {
        c->shape++;
        return MF_OK;
    }
    r.seq = m->seq;
    (void)snprintf(r.id, sizeof(r.id), "%s", m->id);
    (void)snprintf(r.sha, sizeof(r.sha), "%s", m->input_sha256);
    (void)snprintf(r.teacher, sizeof(r.teacher), "%s", m->teacher_version);
    r.audit = strcmp(m->kind, "audit") == 0;
    return mf_dynbuf__append(&c->rows, &r, sizeof(r)) < 0
               ? mf_fail(c->ctx, MF_E_NOMEM, "out of memory collecting samples")
               : MF_OK;
}

/* Newest first within equal inputs, so the dedupe below keeps the newest label. */
static int by_sha_then_newest(const void *a, const void *b)
{
    const struct smp *x = a, *y = b;
    int k = strcmp(x->sha, y->sha);

    return k ? k : (x->seq < y->seq) - (x->seq > y->seq);
}

static int by_hex(const void *a, const void *b)
{
    return memcmp(a, b, MF_SHA256_HEX_LEN);
}

/* The sorted hex digests of the held-out items. */
static char (*heldout_digests(struct mf_ctx *ctx, const mf_dataset *h))[MF_SHA256_HEX_LEN + 1]
{
    char(*out)[MF_SHA256_HEX_LEN + 1] = mf_calloc(&ctx->alloc, h->n ? h->n : 1, sizeof(*out));
    uint8_t dg[MF_SHA256_DIGEST_LEN];

    for (size_t i = 0; out && i < h->n; i++) {
        mf_sha256__digest(dg, h->x + i * h->dim, h->dim);
        mf_hex__encode(out[i], dg, sizeof(dg));
    }
    if (out)
        qsort(out, h->n, sizeof(*out), by_hex);
    return out;
}

static int add_teacher_version(cJSON *list, const char *v)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, list)
    {
        if (strcmp(it->valuestring, v) == 0)
            return MF_OK;
    }
    return cJSON_AddItemToArray(list, cJSON_CreateString(v)) ? MF_OK : MF_E_NOMEM;
}

/* Soft targets at temperature T from probabilities at T = 1: p^(1/T), renormalised. */
static void soften(float *q, const float *p, float t)
{
    double sum = 0;

    for (unsigned k = 0; k < MF_DATASET_CLASSES; k++) {
        q[k] = p[k] > 0 ? (float)pow((double)p[k], 1.0 / (double)t) : 0.0f;
        sum += q[k];
    }
    for (unsigned k = 0; k < MF_DATASET_CLASSES; k++)
        q[k] = sum > 0 ? (float)(q[k] / sum) : 1.0f / MF_DATASET_CLASSES;
}

static int fill(struct mf_distill_data *d, struct mf_ctx *ctx, const char *blob_root,
                const struct mf_distill_model_cfg *c, struct smp *rows, size_t n)
{
    const size_t dim = d->train->dim, total = d->n_seed + n;
    char(*held)[MF_SHA256_HEX_LEN + 1] = heldout_digests(ctx, d->heldout);
    uint8_t *buf = mf_alloc(&ctx->alloc, INPUT_MAX);
    int err = MF_OK;

    d->x = mf_calloc(&ctx->alloc, total, dim);
    d->y = mf_calloc(&ctx->alloc, total, 1);
    d->has_soft = mf_calloc(&ctx->alloc, total, 1);
    d->soft = mf_calloc(&ctx->alloc, total * MF_DATASET_CLASSES, sizeof(float));
    if (!held || !buf || !d->x || !d->y || !d->has_soft || !d->soft)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory for a training set of %zu rows", total);
    for (size_t i = 0; err == MF_OK && i < d->n_seed; i++) {
        memcpy(d->x + i * dim, d->train->x + d->perm[i] * dim, dim);
        d->y[i] = d->train->y[d->perm[i]];
    }
    d->n = d->n_seed;
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        size_t len = 0;

        if (i > 0 && strcmp(rows[i].sha, rows[i - 1].sha) == 0)
            continue; /* an older label of an input taken already */
        if (bsearch(rows[i].sha, held, d->heldout->n, sizeof(*held), by_hex)) {
            d->n_dropped_heldout++;
            continue;
        }
        err = mf_blob__read(buf, INPUT_MAX, &len, ctx, blob_root, rows[i].sha);
        if (err == MF_E_NOTFOUND || (err == MF_OK && len != dim)) {
            d->n_dropped_shape++; /* deleted since, or another input shape */
            err = MF_OK;
            continue;
        }
        if (err < 0)
            break;
        memcpy(d->x + d->n * dim, buf, dim);
        d->y[d->n] = MF_TRAIN_NO_LABEL;
        d->has_soft[d->n] = 1;
        soften(d->soft + d->n * MF_DATASET_CLASSES, rows[i].probs, c->temperature);
        if (!cJSON_AddItemToArray(d->sample_ids, cJSON_CreateString(rows[i].id)) ||
            add_teacher_version(d->teacher_versions, rows[i].teacher) < 0)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory recording sample ids");
        d->n_audit += (size_t)rows[i].audit;
        d->n_hard += (size_t)!rows[i].audit;
        d->max_seq = rows[i].seq > d->max_seq ? rows[i].seq : d->max_seq;
        d->n++;
    }
    mf_free(&ctx->alloc, buf);
    mf_free(&ctx->alloc, held);
    return err;
}

int mf_distill__data_samples(struct mf_distill_data *d, struct mf_ctx *ctx, struct mf_store *s,
                             const char *blob_root, const struct mf_distill_model_cfg *c,
                             int64_t until)
{
    struct mf_store_sample_query q = {.model = c->model, .min_confidence = 1e-9};
    struct collect col = {.ctx = ctx, .c = c};
    struct smp *rows;
    size_t n, skip = 0;
    int err;

    mf_dynbuf__init(&col.rows, &ctx->alloc, SIZE_MAX);
    err = s->ops->offload->samples_walk(s, ctx, &q, collect_one, &col);
    rows = (struct smp *)col.rows.data;
    n = err == MF_OK ? col.rows.len / sizeof(struct smp) : 0;
    while (n && rows[n - 1].seq > until)
        n--; /* arrived after the run was created: the next run's */
    if (n > c->max_samples)
        skip = n - c->max_samples; /* rows are by seq: keep the newest */
    if (n > skip)                  /* rows is NULL when there is none */
        qsort(rows + skip, n - skip, sizeof(*rows), by_sha_then_newest);
    d->n_dropped_unsure = col.unsure;
    d->n_dropped_shape = col.shape;
    if (err == MF_OK)
        err = fill(d, ctx, blob_root, c, n > skip ? rows + skip : NULL, n - skip);
    mf_dynbuf__free(&col.rows);
    return err;
}

void mf_distill__data_free(struct mf_distill_data *d)
{
    const mf_allocator *a = d->train ? &d->train->alloc : NULL;

    if (a) {
        mf_free(a, d->x);
        mf_free(a, d->y);
        mf_free(a, d->has_soft);
        mf_free(a, d->soft);
        mf_free(a, d->perm);
    }
    mf_dataset_free(d->train);
    mf_dataset_free(d->heldout);
    cJSON_Delete(d->sample_ids);
    cJSON_Delete(d->teacher_versions);
    memset(d, 0, sizeof(*d));
}
