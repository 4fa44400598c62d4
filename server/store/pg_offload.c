/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL ops of schema migration 4 (semantics in store.h, same as sqlite_offload.c).
 * A batch and its id are one transaction; two nodes racing on the same batch id are
 * serialised by the batch row's primary key: the second INSERT waits for the first
 * transaction and then fails, so that request rolls back and answers as a replay.
 */
#include "store/pg_store.h"
#include "store/store_blobref.h"
#include "store/store_offload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_COLUMNS                                                                             \
    "seq, id, device_id, model, model_version, kind, method, score::text, created_at,"             \
    " received_at, output_kind, output, input_sha256, input_size, teacher_version,"                \
    " teacher_output, teacher_confidence::text, labelled_at"

static void param_double(struct mf_pg_params *p, double v, char *room, size_t size)
{
    (void)snprintf(room, size, "%.17g", v);
    mf_pg__param_text(p, room);
}

static double col_double(const PGresult *res, int row, int col)
{
    return strtod(PQgetvalue(res, row, col), NULL);
}

static int batch_lookup(int *found_out, int *accepted_out, int *dups_out, PGconn *c,
                        struct mf_ctx *ctx, const char *device_id, const char *batch_id)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, batch_id);
    err = mf_pg__query(&res, c, ctx,
                       "SELECT accepted, duplicates FROM offload_batches"
                       " WHERE device_id = $1 AND batch_id = $2",
                       &p, "batch lookup");
    *found_out = err == MF_OK && PQntuples(res) > 0;
    if (*found_out) {
        *accepted_out = (int)mf_pg__col_i64(res, 0, 0);
        *dups_out = (int)mf_pg__col_i64(res, 0, 1);
    }
    PQclear(res);
    return err;
}

static int insert_sample(int *added_out, PGconn *c, struct mf_ctx *ctx, const char *device_id,
                         const struct mf_store_sample *m)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    char score[32];
    int err = mf_store__sample_check(ctx, m);

    if (err < 0)
        return err;
    mf_pg__param_text(&p, m->id);
    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, m->model);
    mf_pg__param_text(&p, m->model_version);
    mf_pg__param_text(&p, m->kind);
    mf_pg__param_text(&p, m->method);
    param_double(&p, m->score, score, sizeof(score));
    mf_pg__param_i64(&p, m->created_at);
    mf_pg__param_i64(&p, m->received_at);
    mf_pg__param_text(&p, m->output_kind);
    mf_pg__param_text(&p, m->output);
    mf_pg__param_text(&p, m->input_sha256);
    mf_pg__param_i64(&p, (int64_t)m->input_size);
    err = mf_pg__query(&res, c, ctx,
                       "INSERT INTO offload_samples(id, device_id, model, model_version, kind,"
                       " method, score, created_at, received_at, output_kind, output,"
                       " input_sha256, input_size) VALUES($1, $2, $3, $4, $5, $6, $7::float8,"
                       " $8::bigint, $9::bigint, $10, $11, $12, $13::bigint)"
                       " ON CONFLICT(id) DO NOTHING",
                       &p, "storing a sample");
    if (err == MF_OK)
        *added_out = mf_pg__changes(res) > 0;
    PQclear(res);
    return err;
}

static int batch_put_tx(int *replayed_out, int *accepted_out, int *dups_out, PGconn *c,
                        struct mf_ctx *ctx, const char *device_id, const char *batch_id,
                        const struct mf_store_sample *rows, size_t n)
{
    struct mf_pg_params p = {0};
    int found = 0, err = MF_OK;

    if (batch_id) {
        err = batch_lookup(&found, accepted_out, dups_out, c, ctx, device_id, batch_id);
        if (err < 0 || found) {
            *replayed_out = found;
            return err;
        }
    }
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        int added = 0;

        err = insert_sample(&added, c, ctx, device_id, &rows[i]);
        *(added ? accepted_out : dups_out) += 1;
    }
    if (err < 0 || !batch_id)
        return err;
    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, batch_id);
    mf_pg__param_i64(&p, *accepted_out);
    mf_pg__param_i64(&p, *dups_out);
    mf_pg__param_i64(&p, n ? rows[0].received_at : 0);
    return mf_pg__exec(c, ctx,
                       "INSERT INTO offload_batches(device_id, batch_id, accepted, duplicates,"
                       " created_at) VALUES($1, $2, $3::bigint, $4::bigint, $5::bigint)",
                       &p, "recording a batch");
}

int mf_pg__sample_batch_put(int *replayed_out, int *accepted_out, int *dups_out,
                            struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                            const char *batch_id, const struct mf_store_sample *rows, size_t n)
{
    PGconn *c = NULL;
    int err;

    *replayed_out = *accepted_out = *dups_out = 0;
    MF_PG_IN_TRANSACTION(
        base, ctx, c,
        batch_put_tx(replayed_out, accepted_out, dups_out, c, ctx, device_id, batch_id, rows, n));
    if (err == MF_E_STATE && batch_id) {
        /* Another node committed the same batch id first: answer as its replay. */
        *replayed_out = *accepted_out = *dups_out = 0;
        MF_PG_IN_TRANSACTION(base, ctx, c,
                             batch_put_tx(replayed_out, accepted_out, dups_out, c, ctx, device_id,
                                          batch_id, rows, 0));
    }
    if (err < 0)
        *replayed_out = *accepted_out = *dups_out = 0;
    return err;
}

int mf_pg__sample_label(struct mf_store *base, struct mf_ctx *ctx, const char *id,
                        const char *teacher_version, const char *teacher_output, double confidence,
                        int64_t now)
{
    struct mf_pg_params p = {0};
    char conf[32], missing[64];

    mf_pg__param_text(&p, teacher_version);
    mf_pg__param_text(&p, teacher_output);
    param_double(&p, confidence, conf, sizeof(conf));
    mf_pg__param_i64(&p, now);
    mf_pg__param_text(&p, id);
    (void)snprintf(missing, sizeof(missing), "no sample '%.40s'", id);
    return mf_pg__run_change(base, ctx,
                             "UPDATE offload_samples SET teacher_version = $1, teacher_output = $2,"
                             " teacher_confidence = $3::float8, labelled_at = $4::bigint"
                             " WHERE id = $5",
                             &p, missing);
}

struct sample_walk {
    mf_store_sample_fn fn;
    void *payload;
};

static int visit_sample(const PGresult *res, void *payload)
{
    struct sample_walk *w = payload;
    struct mf_store_sample m;

    memset(&m, 0, sizeof(m));
    m.seq = mf_pg__col_i64(res, 0, 0);
    mf_pg__col_text(m.id, sizeof(m.id), res, 0, 1);
    mf_pg__col_text(m.device_id, sizeof(m.device_id), res, 0, 2);
    mf_pg__col_text(m.model, sizeof(m.model), res, 0, 3);
    mf_pg__col_text(m.model_version, sizeof(m.model_version), res, 0, 4);
    mf_pg__col_text(m.kind, sizeof(m.kind), res, 0, 5);
    mf_pg__col_text(m.method, sizeof(m.method), res, 0, 6);
    m.score = col_double(res, 0, 7);
    m.created_at = mf_pg__col_i64(res, 0, 8);
    m.received_at = mf_pg__col_i64(res, 0, 9);
    mf_pg__col_text(m.output_kind, sizeof(m.output_kind), res, 0, 10);
    m.output = PQgetvalue(res, 0, 11); /* libpq NUL-terminates every value */
    mf_pg__col_text(m.input_sha256, sizeof(m.input_sha256), res, 0, 12);
    m.input_size = (uint64_t)mf_pg__col_i64(res, 0, 13);
    mf_pg__col_text(m.teacher_version, sizeof(m.teacher_version), res, 0, 14);
    m.teacher_output = PQgetvalue(res, 0, 15);
    m.teacher_confidence = col_double(res, 0, 16);
    m.labelled_at = mf_pg__col_i64(res, 0, 17);
    return w->fn(w->payload, &m);
}

int mf_pg__samples_walk(struct mf_store *base, struct mf_ctx *ctx,
                        const struct mf_store_sample_query *q, mf_store_sample_fn fn, void *payload)
{
    struct sample_walk w = {fn, payload};
    struct mf_pg_params p = {0};
    char conf[32];

    mf_pg__param_text(&p, q->model ? q->model : "");
    mf_pg__param_text(&p, q->version ? q->version : "");
    mf_pg__param_text(&p, q->kind ? q->kind : "");
    mf_pg__param_text(&p, q->device_id ? q->device_id : "");
    mf_pg__param_i64(&p, q->since);
    mf_pg__param_i64(&p, q->until);
    param_double(&p, q->min_confidence, conf, sizeof(conf));
    mf_pg__param_i64(&p, q->unlabelled);
    mf_pg__param_i64(&p, q->after_seq);
    mf_pg__param_i64(&p, q->limit);
    return mf_pg__store_walk(
        base, ctx,
        "SELECT " SAMPLE_COLUMNS " FROM offload_samples"
        " WHERE ($1::text = '' OR model = $1) AND ($2::text = '' OR model_version = $2)"
        " AND ($3::text = '' OR kind = $3) AND ($4::text = '' OR device_id = $4)"
        " AND ($5::bigint = 0 OR received_at >= $5::bigint)"
        " AND ($6::bigint = 0 OR received_at < $6::bigint)"
        " AND ($7::float8 <= 0 OR (teacher_version <> '' AND teacher_confidence >= $7::float8))"
        " AND ($8::bigint = 0 OR teacher_version = '') AND seq > $9::bigint"
        " ORDER BY seq LIMIT CASE WHEN $10::bigint > 0 THEN $10::bigint END",
        &p, visit_sample, &w);
}

/* blob_ref on connection `c` (inside a transaction or not). */
static int blob_ref_on(char who_out[MF_STORE_BLOB_REF_MAX], PGconn *c, struct mf_ctx *ctx,
                       const char *sha256)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    who_out[0] = '\0';
    mf_pg__param_text(&p, sha256);
    err = mf_pg__query(&res, c, ctx, mf_store__blob_ref_sql, &p, "checking blob references");
    if (err == MF_OK && PQntuples(res) > 0)
        mf_pg__col_text(who_out, MF_STORE_BLOB_REF_MAX, res, 0, 0);
    PQclear(res);
    return err;
}

static int delete_tx(int64_t *deleted_out, struct mf_store_shas *all, struct mf_store_shas *gone,
                     PGconn *c, struct mf_ctx *ctx, const char *device_id, int64_t before)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, device_id);
    mf_pg__param_i64(&p, before);
    err = mf_pg__query(&res, c, ctx,
                       "DELETE FROM offload_samples WHERE ($1::text = '' OR device_id = $1)"
                       " AND ($2::bigint = 0 OR received_at < $2::bigint) RETURNING input_sha256",
                       &p, "deleting samples");
    if (err == MF_OK)
        *deleted_out = PQntuples(res);
    for (int i = 0; err == MF_OK && i < PQntuples(res); i++)
        err = mf_store__shas_add(all, ctx, PQgetvalue(res, i, 0));
    PQclear(res);
    if (err == MF_OK)
        err = mf_pg__exec(c, ctx,
                          "DELETE FROM offload_batches WHERE ($1::text = '' OR device_id = $1)"
                          " AND ($2::bigint = 0 OR created_at < $2::bigint)",
                          &p, "deleting batch ids");
    /* An input may be the bytes of a model, a delta or another sample: only what no row of
     * any table names is an orphan, decided here, before the commit. */
    for (size_t i = 0; err == MF_OK && i < all->n; i++) {
        char who[MF_STORE_BLOB_REF_MAX];

        err = blob_ref_on(who, c, ctx, mf_store__shas_at(all, i));
        if (err == MF_OK && !who[0])
            err = mf_store__shas_add(gone, ctx, mf_store__shas_at(all, i));
    }
    return err;
}

int mf_pg__samples_delete(int64_t *deleted_out, struct mf_store *base, struct mf_ctx *ctx,
                          const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                          void *payload)
{
    struct mf_store_shas all, gone;
    PGconn *c = NULL;
    int err;

    *deleted_out = 0;
    if (!device_id[0] && before <= 0)
        return mf_fail(ctx, MF_E_INVALID, "a sample deletion needs a device or a time");
    mf_store__shas_init(&all, ctx);
    mf_store__shas_init(&gone, ctx);
    MF_PG_IN_TRANSACTION(base, ctx, c,
                         delete_tx(deleted_out, &all, &gone, c, ctx, device_id, before));
    if (err < 0)
        *deleted_out = 0; /* rolled back */
    for (size_t i = 0; err == MF_OK && orphan_fn && i < gone.n; i++)
        err = orphan_fn(payload, "", mf_store__shas_at(&gone, i));
    mf_store__shas_free(&all);
    mf_store__shas_free(&gone);
    return err;
}

int mf_pg__blob_ref(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *base, struct mf_ctx *ctx,
                    const char *sha256)
{
    PGconn *c = NULL;
    int err = mf_pg__get(&c, base, ctx);

    who_out[0] = '\0';
    if (err == MF_OK) {
        err = blob_ref_on(who_out, c, ctx, sha256);
        mf_pg__put(base, c);
    }
    return err;
}

int mf_pg__blob_released(int *released_out, struct mf_store *base, struct mf_ctx *ctx,
                         const char *sha256)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, sha256);
    err = mf_pg__run(&res, base, ctx, mf_store__blob_released_sql, &p, "checking a blob's release");
    *released_out = err == MF_OK && PQntuples(res) > 0;
    PQclear(res);
    return err;
}

static int hist_add_tx(PGconn *c, struct mf_ctx *ctx, const struct mf_store_hist *h, int replace)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    uint64_t bins[MF_STORE_HIST_BINS];
    uint64_t asked = 0, uncertain = 0;
    char text[MF_STORE_BINS_TEXT_MAX];
    int err;

    memset(bins, 0, sizeof(bins));
    mf_pg__param_text(&p, h->model);
    mf_pg__param_text(&p, h->version);
    mf_pg__param_text(&p, h->method);
    mf_pg__param_i64(&p, h->source);
    /* The row is created first so that FOR UPDATE always has one to lock: two check-ins of
     * the same version on two nodes then add up instead of one overwriting the other. */
    err = mf_pg__exec(c, ctx,
                      "INSERT INTO offload_hists(model, version, method, source, bins, asked,"
                      " uncertain, updated_at) VALUES($1, $2, $3, $4::bigint, '', 0, 0, 0)"
                      " ON CONFLICT DO NOTHING",
                      &p, "creating a histogram");
    if (err == MF_OK)
        err = mf_pg__query(&res, c, ctx,
                           "SELECT bins, asked, uncertain FROM offload_hists WHERE model = $1"
                           " AND version = $2 AND method = $3 AND source = $4::bigint FOR UPDATE",
                           &p, "reading a histogram");
    if (err == MF_OK && !replace && PQgetvalue(res, 0, 0)[0]) {
        err = mf_store__bins_parse(bins, ctx, PQgetvalue(res, 0, 0));
        asked = (uint64_t)mf_pg__col_i64(res, 0, 1);
        uncertain = (uint64_t)mf_pg__col_i64(res, 0, 2);
    }
    PQclear(res);
    if (err < 0)
        return err;
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        bins[i] += h->bins[i];
    mf_store__bins_format(text, bins);
    mf_pg__param_text(&p, text);
    mf_pg__param_i64(&p, (int64_t)(asked + h->asked));
    mf_pg__param_i64(&p, (int64_t)(uncertain + h->uncertain));
    mf_pg__param_i64(&p, h->updated_at);
    return mf_pg__exec(c, ctx,
                       "UPDATE offload_hists SET bins = $5, asked = $6::bigint,"
                       " uncertain = $7::bigint, updated_at = $8::bigint WHERE model = $1"
                       " AND version = $2 AND method = $3 AND source = $4::bigint",
                       &p, "storing a histogram");
}

int mf_pg__hist_add(struct mf_store *base, struct mf_ctx *ctx, const struct mf_store_hist *h,
                    int replace)
{
    PGconn *c = NULL;
    int err;

    MF_PG_IN_TRANSACTION(base, ctx, c, hist_add_tx(c, ctx, h, replace));
    return err;
}

struct hist_walk {
    mf_store_hist_fn fn;
    void *payload;
    struct mf_ctx *ctx;
};

static int visit_hist(const PGresult *res, void *payload)
{
    struct hist_walk *w = payload;
    struct mf_store_hist h;
    int err;

    memset(&h, 0, sizeof(h));
    mf_pg__col_text(h.model, sizeof(h.model), res, 0, 0);
    mf_pg__col_text(h.version, sizeof(h.version), res, 0, 1);
    mf_pg__col_text(h.method, sizeof(h.method), res, 0, 2);
    h.source = (int)mf_pg__col_i64(res, 0, 3);
    err = mf_store__bins_parse(h.bins, w->ctx, PQgetvalue(res, 0, 4));
    h.asked = (uint64_t)mf_pg__col_i64(res, 0, 5);
    h.uncertain = (uint64_t)mf_pg__col_i64(res, 0, 6);
    h.updated_at = mf_pg__col_i64(res, 0, 7);
    return err < 0 ? err : w->fn(w->payload, &h);
}

int mf_pg__hists_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                      mf_store_hist_fn fn, void *payload)
{
    struct hist_walk w = {fn, payload, ctx};
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, model);
    return mf_pg__store_walk(base, ctx,
                             "SELECT model, version, method, source, bins, asked, uncertain,"
                             " updated_at FROM offload_hists WHERE ($1::text = '' OR model = $1)"
                             " AND bins <> '' ORDER BY model, version, method, source",
                             &p, visit_hist, &w);
}
