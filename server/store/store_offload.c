/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload domain of the store, both backends (struct mf_store_offload_ops, semantics in
 * store.h; docs/protocol-offload.md): the hard-sample store with provenance and the
 * teacher's label, the batch ids that make uplinks idempotent, and score histograms. A batch
 * and its id commit together or not at all; two nodes racing on the same batch id are
 * serialised by the batch row's primary key: the second INSERT waits for the first
 * transaction and then fails, so that request rolls back and answers as a replay.
 */
#include "store/store_engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for MF_STORE_HIST_BINS comma-separated uint64 counts and a NUL: a histogram's bins
 * are one text column on both backends. */
#define MF_STORE_BINS_TEXT_MAX (MF_STORE_HIST_BINS * 21)

/* The distinct input digests of deleted rows, checked for remaining references. */
struct shas {
    struct mf_dynbuf buf; /* MF_SHA256_HEX_LEN + 1 bytes per digest */
    size_t n;
};

#define SHAS_MAX (1u << 20)
#define SHA_SLOT (MF_SHA256_HEX_LEN + 1)

static void bins_format(char out[MF_STORE_BINS_TEXT_MAX], const uint64_t *bins)
{
    size_t n = 0;

    out[0] = '\0';
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        n += (size_t)snprintf(out + n, MF_STORE_BINS_TEXT_MAX - n, "%s%" PRIu64, i ? "," : "",
                              bins[i]);
}

static int bins_parse(uint64_t *bins_out, struct mf_ctx *ctx, const char *text)
{
    const char *p = text;

    for (int i = 0; i < MF_STORE_HIST_BINS; i++) {
        char *end;

        if (*p < '0' || *p > '9')
            return mf_fail(ctx, MF_E_INVALID, "stored histogram is malformed at bin %d", i);
        bins_out[i] = strtoull(p, &end, 10);
        p = end;
        if (*p == ',' && i + 1 < MF_STORE_HIST_BINS)
            p++;
    }
    if (*p)
        return mf_fail(ctx, MF_E_INVALID, "stored histogram has more than %d bins",
                       MF_STORE_HIST_BINS);
    return MF_OK;
}

static const char *shas_at(const struct shas *l, size_t i)
{
    return (const char *)l->buf.data + i * SHA_SLOT;
}

static void shas_init(struct shas *l, struct mf_ctx *ctx)
{
    mf_dynbuf__init(&l->buf, &ctx->alloc, (size_t)SHAS_MAX * SHA_SLOT);
    l->n = 0;
}

static int shas_add(struct shas *l, struct mf_ctx *ctx, const char *sha)
{
    char slot[SHA_SLOT];
    int err;

    /* Deletions are by device or by age: few distinct inputs per call, a linear scan is
     * cheaper than a hash table here. */
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(shas_at(l, i), sha) == 0)
            return MF_OK;
    }
    memset(slot, 0, sizeof(slot));
    (void)snprintf(slot, sizeof(slot), "%s", sha);
    err = mf_dynbuf__append(&l->buf, slot, sizeof(slot));
    if (err < 0)
        return mf_fail(ctx, err, "too many inputs in one deletion (%zu)", l->n);
    l->n++;
    return MF_OK;
}

static void shas_free(struct shas *l)
{
    mf_dynbuf__free(&l->buf);
    l->n = 0;
}

static int one_of(const char *s, const char *const *set)
{
    for (; *set; set++) {
        if (strcmp(s, *set) == 0)
            return 1;
    }
    return 0;
}

static int sample_check(struct mf_ctx *ctx, const struct mf_store_sample *smp)
{
    static const char *const kinds[] = {"hard", "audit", NULL};

    if (strlen(smp->id) != MF_STORE_SAMPLE_ID_LEN)
        return mf_fail(ctx, MF_E_INVALID, "sample id '%s' is not %d hex digits", smp->id,
                       MF_STORE_SAMPLE_ID_LEN);
    if (!one_of(smp->kind, kinds))
        return mf_fail(ctx, MF_E_INVALID, "sample kind '%s' is not hard or audit", smp->kind);
    if (strlen(smp->input_sha256) != MF_SHA256_HEX_LEN)
        return mf_fail(ctx, MF_E_INVALID, "sample %s has no input digest", smp->id);
    return MF_OK;
}

#define SAMPLE_COLUMNS                                                                             \
    "seq, id, device_id, model, model_version, kind, method, score, created_at, received_at,"      \
    " output_kind, output, input_sha256, input_size, teacher_version, teacher_output,"             \
    " teacher_confidence, labelled_at"

/* The catalogue of this domain. Where a parameter meets a number literal first (`? = 0`),
 * PostgreSQL would infer a 32-bit integer: its text casts them. */
static const struct mf_sql sql_batch_lookup =
    MF_SQL("SELECT accepted, duplicates FROM offload_batches WHERE device_id = ? AND batch_id = ?",
           "batch lookup");
static const struct mf_sql sql_sample_insert =
    MF_SQL("INSERT INTO offload_samples(id, device_id, model, model_version, kind, method,"
           " score, created_at, received_at, output_kind, output, input_sha256,"
           " input_size) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
           " ON CONFLICT(id) DO NOTHING",
           "storing a sample");
static const struct mf_sql sql_batch_insert =
    MF_SQL("INSERT INTO offload_batches(device_id, batch_id, accepted, duplicates,"
           " created_at) VALUES(?, ?, ?, ?, ?)",
           "recording a batch");
static const struct mf_sql sql_sample_label =
    MF_SQL("UPDATE offload_samples SET teacher_version = ?, teacher_output = ?,"
           " teacher_confidence = ?, labelled_at = ? WHERE id = ?",
           "labelling a sample");
static const struct mf_sql sql_samples_walk = {
    .sqlite = "SELECT " SAMPLE_COLUMNS " FROM offload_samples"
              " WHERE (?1 = '' OR model = ?1) AND (?2 = '' OR model_version = ?2)"
              " AND (?3 = '' OR kind = ?3) AND (?4 = '' OR device_id = ?4)"
              " AND (?5 = 0 OR received_at >= ?5) AND (?6 = 0 OR received_at < ?6)"
              " AND (?7 <= 0 OR (teacher_version <> '' AND teacher_confidence >= ?7))"
              " AND (?8 = 0 OR teacher_version = '') AND seq > ?9"
              " ORDER BY seq LIMIT CASE WHEN ?10 > 0 THEN ?10 ELSE -1 END",
    .pg = "SELECT " SAMPLE_COLUMNS " FROM offload_samples"
          " WHERE (?1::text = '' OR model = ?1) AND (?2::text = '' OR model_version = ?2)"
          " AND (?3::text = '' OR kind = ?3) AND (?4::text = '' OR device_id = ?4)"
          " AND (?5::bigint = 0 OR received_at >= ?5::bigint)"
          " AND (?6::bigint = 0 OR received_at < ?6::bigint)"
          " AND (?7::float8 <= 0 OR (teacher_version <> '' AND teacher_confidence >= ?7::float8))"
          " AND (?8::bigint = 0 OR teacher_version = '') AND seq > ?9::bigint"
          " ORDER BY seq LIMIT CASE WHEN ?10::bigint > 0 THEN ?10::bigint END",
    .what = "listing samples",
    .stream = 1,
};
static const struct mf_sql sql_samples_delete =
    MF_SQL_PAIR("DELETE FROM offload_samples WHERE (?1 = '' OR device_id = ?1)"
                " AND (?2 = 0 OR received_at < ?2) RETURNING input_sha256",
                "DELETE FROM offload_samples WHERE (?1::text = '' OR device_id = ?1)"
                " AND (?2::bigint = 0 OR received_at < ?2::bigint) RETURNING input_sha256",
                "deleting samples");
static const struct mf_sql sql_batches_delete =
    MF_SQL_PAIR("DELETE FROM offload_batches WHERE (?1 = '' OR device_id = ?1)"
                " AND (?2 = 0 OR created_at < ?2)",
                "DELETE FROM offload_batches WHERE (?1::text = '' OR device_id = ?1)"
                " AND (?2::bigint = 0 OR created_at < ?2::bigint)",
                "deleting batch ids");
/* The row is created first so that FOR UPDATE always has one to lock: two check-ins of the
 * same version on two nodes then add up instead of one overwriting the other (SQLite's
 * BEGIN IMMEDIATE serialises them already). */
static const struct mf_sql sql_hist_create =
    MF_SQL("INSERT INTO offload_hists(model, version, method, source, bins, asked,"
           " uncertain, updated_at) VALUES(?, ?, ?, ?, '', 0, 0, 0) ON CONFLICT DO NOTHING",
           "creating a histogram");
#define HIST_READ(lock)                                                                            \
    "SELECT bins, asked, uncertain FROM offload_hists WHERE model = ? AND version = ?"             \
    " AND method = ? AND source = ?" lock
static const struct mf_sql sql_hist_read =
    MF_SQL_PAIR(HIST_READ(""), HIST_READ(" FOR UPDATE"), "reading a histogram");
static const struct mf_sql sql_hist_write =
    MF_SQL("UPDATE offload_hists SET bins = ?5, asked = ?6, uncertain = ?7, updated_at = ?8"
           " WHERE model = ?1 AND version = ?2 AND method = ?3 AND source = ?4",
           "storing a histogram");
static const struct mf_sql sql_hists_list =
    MF_SQL_LIST("SELECT model, version, method, source, bins, asked, uncertain, updated_at"
                " FROM offload_hists WHERE (?1 = '' OR model = ?1) AND bins <> ''"
                " ORDER BY model, version, method, source",
                "listing histograms");

struct batch_args {
    int *replayed_out, *accepted_out, *dups_out;
    const char *device_id, *batch_id;
    const struct mf_store_sample *rows;
    size_t n;
};

static int take_batch(void *payload, const struct mf_store_cursor *row)
{
    struct batch_args *a = payload;

    *a->accepted_out = (int)mf_store__col_i64(row, 0);
    *a->dups_out = (int)mf_store__col_i64(row, 1);
    return MF_OK;
}

static int insert_sample(int *added_out, struct mf_store *s, struct mf_store_tx *tx,
                         struct mf_ctx *ctx, const char *device_id, const struct mf_store_sample *m)
{
    int64_t changes = 0;
    int err = sample_check(ctx, m);

    if (err == MF_OK)
        err = mf_store__run(&changes, s, tx, ctx, &sql_sample_insert, NULL, NULL, "ttttttdiittti",
                            m->id, device_id, m->model, m->model_version, m->kind, m->method,
                            m->score, m->created_at, m->received_at, m->output_kind, m->output,
                            m->input_sha256, (int64_t)m->input_size);
    *added_out = changes > 0;
    return err;
}

static int batch_put_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    struct batch_args *a = arg;
    int found = 0, err = MF_OK;

    if (a->batch_id) {
        err = mf_store__first(&found, s, tx, ctx, &sql_batch_lookup, take_batch, a, "tt",
                              a->device_id, a->batch_id);
        if (err < 0 || found) {
            *a->replayed_out = found;
            return err;
        }
    }
    for (size_t i = 0; err == MF_OK && i < a->n; i++) {
        int added = 0;

        err = insert_sample(&added, s, tx, ctx, a->device_id, &a->rows[i]);
        *(added ? a->accepted_out : a->dups_out) += 1;
    }
    if (err < 0 || !a->batch_id)
        return err;
    return mf_store__run(NULL, s, tx, ctx, &sql_batch_insert, NULL, NULL, "ttiii", a->device_id,
                         a->batch_id, (int64_t)*a->accepted_out, (int64_t)*a->dups_out,
                         a->n ? a->rows[0].received_at : (int64_t)0);
}

static int offload_sample_batch_put(int *replayed_out, int *accepted_out, int *dups_out,
                                    struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                    const char *batch_id, const struct mf_store_sample *rows,
                                    size_t n)
{
    struct batch_args a = {replayed_out, accepted_out, dups_out, device_id, batch_id, rows, n};
    int err;

    *replayed_out = *accepted_out = *dups_out = 0;
    err = mf_store__in_tx(s, ctx, batch_put_tx, &a);
    if (err == MF_E_STATE && batch_id) {
        /* Another node committed the same batch id first: answer as its replay. */
        *replayed_out = *accepted_out = *dups_out = 0;
        a.n = 0;
        err = mf_store__in_tx(s, ctx, batch_put_tx, &a);
    }
    if (err < 0)
        *replayed_out = *accepted_out = *dups_out = 0;
    return err;
}

static int offload_sample_label(struct mf_store *s, struct mf_ctx *ctx, const char *id,
                                const char *teacher_version, const char *teacher_output,
                                double confidence, int64_t now)
{
    char missing[64];

    (void)snprintf(missing, sizeof(missing), "no sample '%.40s'", id);
    return mf_store__change(s, NULL, ctx, MF_E_NOTFOUND, missing, &sql_sample_label, "ttdit",
                            teacher_version, teacher_output, confidence, now, id);
}

static int visit_sample(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_sample m;

    memset(&m, 0, sizeof(m));
    mf_store__cols(row, 0, "ittttttdiitstutsdi", &m.seq, MF_STORE_TEXT(m.id),
                   MF_STORE_TEXT(m.device_id), MF_STORE_TEXT(m.model),
                   MF_STORE_TEXT(m.model_version), MF_STORE_TEXT(m.kind), MF_STORE_TEXT(m.method),
                   &m.score, &m.created_at, &m.received_at, MF_STORE_TEXT(m.output_kind), &m.output,
                   MF_STORE_TEXT(m.input_sha256), &m.input_size, MF_STORE_TEXT(m.teacher_version),
                   &m.teacher_output, &m.teacher_confidence, &m.labelled_at);
    return ((mf_store_sample_fn)w->fn)(w->payload, &m);
}

static int offload_samples_walk(struct mf_store *s, struct mf_ctx *ctx,
                                const struct mf_store_sample_query *q, mf_store_sample_fn fn,
                                void *payload)
{
    return mf_store__list(s, ctx, &sql_samples_walk, visit_sample, (void (*)(void))fn, payload,
                          "ttttiidiii", q->model ? q->model : "", q->version ? q->version : "",
                          q->kind ? q->kind : "", q->device_id ? q->device_id : "", q->since,
                          q->until, q->min_confidence, (int64_t)q->unlabelled, q->after_seq,
                          q->limit);
}

struct delete_args {
    int64_t *deleted_out;
    struct shas *all, *gone;
    struct mf_ctx *ctx;
    const char *device_id;
    int64_t before;
};

static int take_deleted(void *payload, const struct mf_store_cursor *row)
{
    struct delete_args *a = payload;

    (*a->deleted_out)++;
    return shas_add(a->all, a->ctx, mf_store__col_str(row, 0));
}

/* Deletes the selected rows (RETURNING their inputs) and the batch ids of the same range,
 * then keeps in `gone` only the inputs no row of any table refers to (blob_ref). */
static int delete_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    struct delete_args *a = arg;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_samples_delete, take_deleted, a, "ti",
                            a->device_id, a->before);

    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_batches_delete, NULL, NULL, "ti", a->device_id,
                            a->before);
    /* An input may be the bytes of a model, a delta or another sample: only what no row of
     * any table names is an orphan, decided here, before the commit. */
    for (size_t i = 0; err == MF_OK && i < a->all->n; i++) {
        char who[MF_STORE_BLOB_REF_MAX];

        err = mf_store__blob_ref_read(who, s, tx, ctx, shas_at(a->all, i));
        if (err == MF_OK && !who[0])
            err = shas_add(a->gone, ctx, shas_at(a->all, i));
    }
    return err;
}

static int offload_samples_delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                                  const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                                  void *payload)
{
    struct shas all, gone;
    struct delete_args a = {deleted_out, &all, &gone, ctx, device_id, before};
    int err;

    *deleted_out = 0;
    if (!device_id[0] && before <= 0)
        return mf_fail(ctx, MF_E_INVALID, "a sample deletion needs a device or a time");
    shas_init(&all, ctx);
    shas_init(&gone, ctx);
    err = mf_store__in_tx(s, ctx, delete_tx, &a);
    if (err < 0)
        *deleted_out = 0; /* rolled back */
    for (size_t i = 0; err == MF_OK && orphan_fn && i < gone.n; i++)
        err = orphan_fn(payload, "", shas_at(&gone, i));
    shas_free(&all);
    shas_free(&gone);
    return err;
}

struct hist_args {
    const struct mf_store_hist *h;
    int replace;
    uint64_t bins[MF_STORE_HIST_BINS];
    uint64_t asked, uncertain;
    struct mf_ctx *ctx;
};

static int take_hist(void *payload, const struct mf_store_cursor *row)
{
    struct hist_args *a = payload;
    const char *bins = mf_store__col_str(row, 0);

    if (a->replace || !bins[0])
        return MF_OK; /* replaced, or the row just created */
    a->asked = (uint64_t)mf_store__col_i64(row, 1);
    a->uncertain = (uint64_t)mf_store__col_i64(row, 2);
    return bins_parse(a->bins, a->ctx, bins);
}

static int hist_add_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    struct hist_args *a = arg;
    const struct mf_store_hist *h = a->h;
    char text[MF_STORE_BINS_TEXT_MAX];
    int found = 0;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_hist_create, NULL, NULL, "ttti", h->model,
                            h->version, h->method, (int64_t)h->source);

    if (err == MF_OK)
        err = mf_store__first(&found, s, tx, ctx, &sql_hist_read, take_hist, a, "ttti", h->model,
                              h->version, h->method, (int64_t)h->source);
    if (err < 0)
        return err;
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        a->bins[i] += h->bins[i];
    bins_format(text, a->bins);
    return mf_store__run(NULL, s, tx, ctx, &sql_hist_write, NULL, NULL, "tttitiii", h->model,
                         h->version, h->method, (int64_t)h->source, text,
                         (int64_t)(a->asked + h->asked), (int64_t)(a->uncertain + h->uncertain),
                         h->updated_at);
}

static int offload_hist_add(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_hist *h,
                            int replace)
{
    struct hist_args a;

    memset(&a, 0, sizeof(a));
    a.h = h;
    a.replace = replace;
    a.ctx = ctx;
    return mf_store__in_tx(s, ctx, hist_add_tx, &a);
}

static int visit_hist(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_hist h;
    int err;

    memset(&h, 0, sizeof(h));
    mf_store__cols(row, 0, "tttn", MF_STORE_TEXT(h.model), MF_STORE_TEXT(h.version),
                   MF_STORE_TEXT(h.method), &h.source);
    mf_store__cols(row, 5, "uui", &h.asked, &h.uncertain, &h.updated_at);
    err = bins_parse(h.bins, w->ctx, mf_store__col_str(row, 4));
    return err < 0 ? err : ((mf_store_hist_fn)w->fn)(w->payload, &h);
}

static int offload_hists_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                              mf_store_hist_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_hists_list, visit_hist, (void (*)(void))fn, payload, "t",
                          model);
}

/* Each op of the table is the function named after it with the domain's prefix. */
#define OP(name) .name = offload_##name
const struct mf_store_offload_ops mf_store__offload_ops = {
    OP(sample_batch_put), OP(sample_label), OP(samples_walk),
    OP(samples_delete),   OP(hist_add),     OP(hists_list),
};
#undef OP
