/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite ops of schema migration 4 (semantics in store.h): the hard-sample store, the batch
 * ids that make uplinks idempotent, and score histograms. Writes run in BEGIN IMMEDIATE
 * transactions under the store lock, so a batch and its id commit together or not at all.
 */
#include "store/sqlite_store.h"
#include "store/store_blobref.h"
#include "store/store_offload.h"

#include <stdio.h>
#include <string.h>

#define SAMPLE_COLUMNS                                                                             \
    "seq, id, device_id, model, model_version, kind, method, score, created_at, received_at,"      \
    " output_kind, output, input_sha256, input_size, teacher_version, teacher_output,"             \
    " teacher_confidence, labelled_at"

static int db_fail(struct mf_ctx *ctx, sqlite3 *db, const char *what)
{
    return mf_fail(ctx, MF_E_IO, "sqlite %s: %s", what, sqlite3_errmsg(db));
}

static int prepare(sqlite3_stmt **out, sqlite3 *db, struct mf_ctx *ctx, const char *sql)
{
    if (sqlite3_prepare_v2(db, sql, -1, out, NULL) != SQLITE_OK)
        return db_fail(ctx, db, "prepare");
    return MF_OK;
}

static int step_done(sqlite3_stmt *st, sqlite3 *db, struct mf_ctx *ctx, const char *what)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_DONE)
        return MF_OK;
    return db_fail(ctx, db, what);
}

static void col_text(char *dst, size_t size, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);

    (void)snprintf(dst, size, "%s", t ? (const char *)t : "");
}

static const char *col_str(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);

    return t ? (const char *)t : "";
}

static int tx_begin(sqlite3 *db, struct mf_ctx *ctx)
{
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(ctx, db, "BEGIN");
    return MF_OK;
}

/* COMMIT when err is MF_OK, ROLLBACK otherwise; returns err or the COMMIT's failure. */
static int tx_end(sqlite3 *db, struct mf_ctx *ctx, int err)
{
    if (err == MF_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        err = db_fail(ctx, db, "COMMIT");
    if (err < 0)
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

/* 1 and the stored counts when the device stored `batch_id` before, 0 when not. */
static int batch_lookup(int *found_out, int *accepted_out, int *dups_out, sqlite3 *db,
                        struct mf_ctx *ctx, const char *device_id, const char *batch_id)
{
    sqlite3_stmt *st = NULL;
    int err = prepare(&st, db, ctx,
                      "SELECT accepted, duplicates FROM offload_batches"
                      " WHERE device_id = ? AND batch_id = ?");
    int rc;

    *found_out = 0;
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, batch_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *found_out = 1;
        *accepted_out = sqlite3_column_int(st, 0);
        *dups_out = sqlite3_column_int(st, 1);
    } else if (rc != SQLITE_DONE) {
        err = db_fail(ctx, db, "batch lookup");
    }
    sqlite3_finalize(st);
    return err;
}

static int insert_sample(int *added_out, sqlite3_stmt *st, sqlite3 *db, struct mf_ctx *ctx,
                         const char *device_id, const struct mf_store_sample *m)
{
    int err = mf_store__sample_check(ctx, m);

    if (err < 0)
        return err;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, m->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, m->model_version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, m->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, m->method, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 7, m->score);
    sqlite3_bind_int64(st, 8, m->created_at);
    sqlite3_bind_int64(st, 9, m->received_at);
    sqlite3_bind_text(st, 10, m->output_kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, m->output, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, m->input_sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 13, (int64_t)m->input_size);
    err = step_done(st, db, ctx, "storing a sample");
    if (err == MF_OK)
        *added_out = sqlite3_changes(db);
    return err;
}

static int batch_put_locked(int *replayed_out, int *accepted_out, int *dups_out, sqlite3 *db,
                            struct mf_ctx *ctx, const char *device_id, const char *batch_id,
                            const struct mf_store_sample *rows, size_t n)
{
    sqlite3_stmt *st = NULL;
    int found = 0, err = MF_OK;

    if (batch_id) {
        err = batch_lookup(&found, accepted_out, dups_out, db, ctx, device_id, batch_id);
        if (err < 0 || found) {
            *replayed_out = found;
            return err;
        }
    }
    err = prepare(&st, db, ctx,
                  "INSERT INTO offload_samples(id, device_id, model, model_version, kind, method,"
                  " score, created_at, received_at, output_kind, output, input_sha256,"
                  " input_size) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                  " ON CONFLICT(id) DO NOTHING");
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        int added = 0;

        err = insert_sample(&added, st, db, ctx, device_id, &rows[i]);
        *(added ? accepted_out : dups_out) += 1;
    }
    sqlite3_finalize(st);
    if (err < 0 || !batch_id)
        return err;
    err = prepare(&st, db, ctx,
                  "INSERT INTO offload_batches(device_id, batch_id, accepted, duplicates,"
                  " created_at) VALUES(?, ?, ?, ?, ?)");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, batch_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, *accepted_out);
    sqlite3_bind_int(st, 4, *dups_out);
    sqlite3_bind_int64(st, 5, n ? rows[0].received_at : 0);
    err = step_done(st, db, ctx, "recording a batch");
    sqlite3_finalize(st);
    return err;
}

int mf_sqlite__sample_batch_put(int *replayed_out, int *accepted_out, int *dups_out,
                                struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                const char *batch_id, const struct mf_store_sample *rows, size_t n)
{
    sqlite3 *db = mf_sqlite__lock(s);
    int err;

    *replayed_out = *accepted_out = *dups_out = 0;
    err = tx_begin(db, ctx);
    if (err == MF_OK)
        err = tx_end(db, ctx,
                     batch_put_locked(replayed_out, accepted_out, dups_out, db, ctx, device_id,
                                      batch_id, rows, n));
    mf_sqlite__unlock(s);
    if (err < 0)
        *replayed_out = *accepted_out = *dups_out = 0;
    return err;
}

int mf_sqlite__sample_label(struct mf_store *s, struct mf_ctx *ctx, const char *id,
                            const char *teacher_version, const char *teacher_output,
                            double confidence, int64_t now)
{
    sqlite3 *db = mf_sqlite__lock(s);
    sqlite3_stmt *st = NULL;
    int err = prepare(&st, db, ctx,
                      "UPDATE offload_samples SET teacher_version = ?, teacher_output = ?,"
                      " teacher_confidence = ?, labelled_at = ? WHERE id = ?");

    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, teacher_version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, teacher_output, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, confidence);
        sqlite3_bind_int64(st, 4, now);
        sqlite3_bind_text(st, 5, id, -1, SQLITE_STATIC);
        err = step_done(st, db, ctx, "labelling a sample");
    }
    if (err == MF_OK && sqlite3_changes(db) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no sample '%s'", id);
    sqlite3_finalize(st);
    mf_sqlite__unlock(s);
    return err;
}

static void read_sample(struct mf_store_sample *m, sqlite3_stmt *st)
{
    memset(m, 0, sizeof(*m));
    m->seq = sqlite3_column_int64(st, 0);
    col_text(m->id, sizeof(m->id), st, 1);
    col_text(m->device_id, sizeof(m->device_id), st, 2);
    col_text(m->model, sizeof(m->model), st, 3);
    col_text(m->model_version, sizeof(m->model_version), st, 4);
    col_text(m->kind, sizeof(m->kind), st, 5);
    col_text(m->method, sizeof(m->method), st, 6);
    m->score = sqlite3_column_double(st, 7);
    m->created_at = sqlite3_column_int64(st, 8);
    m->received_at = sqlite3_column_int64(st, 9);
    col_text(m->output_kind, sizeof(m->output_kind), st, 10);
    m->output = col_str(st, 11);
    col_text(m->input_sha256, sizeof(m->input_sha256), st, 12);
    m->input_size = (uint64_t)sqlite3_column_int64(st, 13);
    col_text(m->teacher_version, sizeof(m->teacher_version), st, 14);
    m->teacher_output = col_str(st, 15);
    m->teacher_confidence = sqlite3_column_double(st, 16);
    m->labelled_at = sqlite3_column_int64(st, 17);
}

int mf_sqlite__samples_walk(struct mf_store *s, struct mf_ctx *ctx,
                            const struct mf_store_sample_query *q, mf_store_sample_fn fn,
                            void *payload)
{
    sqlite3 *db = mf_sqlite__lock(s);
    sqlite3_stmt *st = NULL;
    struct mf_store_sample m;
    int err = prepare(&st, db, ctx,
                      "SELECT " SAMPLE_COLUMNS " FROM offload_samples"
                      " WHERE (?1 = '' OR model = ?1) AND (?2 = '' OR model_version = ?2)"
                      " AND (?3 = '' OR kind = ?3) AND (?4 = '' OR device_id = ?4)"
                      " AND (?5 = 0 OR received_at >= ?5) AND (?6 = 0 OR received_at < ?6)"
                      " AND (?7 <= 0 OR (teacher_version <> '' AND teacher_confidence >= ?7))"
                      " AND (?8 = 0 OR teacher_version = '') AND seq > ?9"
                      " ORDER BY seq LIMIT ?10");

    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, q->model ? q->model : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, q->version ? q->version : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, q->kind ? q->kind : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, q->device_id ? q->device_id : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, q->since);
        sqlite3_bind_int64(st, 6, q->until);
        sqlite3_bind_double(st, 7, q->min_confidence);
        sqlite3_bind_int(st, 8, q->unlabelled);
        sqlite3_bind_int64(st, 9, q->after_seq);
        sqlite3_bind_int64(st, 10, q->limit > 0 ? q->limit : -1);
    }
    while (err == MF_OK) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, db, "listing samples");
            break;
        }
        read_sample(&m, st);
        err = fn(payload, &m);
    }
    sqlite3_finalize(st);
    mf_sqlite__unlock(s);
    return err;
}

/* blob_ref on the locked connection (inside a transaction or not). */
static int blob_ref_locked(char who_out[MF_STORE_BLOB_REF_MAX], sqlite3 *db, struct mf_ctx *ctx,
                           const char *sha256)
{
    sqlite3_stmt *st = NULL;
    int err = prepare(&st, db, ctx, mf_store__blob_ref_sql);
    int rc;

    who_out[0] = '\0';
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        col_text(who_out, MF_STORE_BLOB_REF_MAX, st, 0);
    else if (rc != SQLITE_DONE)
        err = db_fail(ctx, db, "checking blob references");
    sqlite3_finalize(st);
    return err;
}

/* Deletes the selected rows (RETURNING their inputs) and the batch ids of the same range,
 * then keeps in `gone` only the inputs no remaining sample refers to. */
static int delete_locked(int64_t *deleted_out, struct mf_store_shas *all,
                         struct mf_store_shas *gone, sqlite3 *db, struct mf_ctx *ctx,
                         const char *device_id, int64_t before)
{
    sqlite3_stmt *st = NULL;
    int err = prepare(&st, db, ctx,
                      "DELETE FROM offload_samples WHERE (?1 = '' OR device_id = ?1)"
                      " AND (?2 = 0 OR received_at < ?2) RETURNING input_sha256");

    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, before);
    }
    while (err == MF_OK) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, db, "deleting samples");
            break;
        }
        (*deleted_out)++;
        err = mf_store__shas_add(all, ctx, col_str(st, 0));
    }
    sqlite3_finalize(st);
    st = NULL;
    if (err == MF_OK)
        err = prepare(&st, db, ctx,
                      "DELETE FROM offload_batches WHERE (?1 = '' OR device_id = ?1)"
                      " AND (?2 = 0 OR created_at < ?2)");
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, before);
        err = step_done(st, db, ctx, "deleting batch ids");
    }
    sqlite3_finalize(st);
    /* An input may be the bytes of a model, a delta or another sample: only what no row of
     * any table names is an orphan, decided here, before the commit. */
    for (size_t i = 0; err == MF_OK && i < all->n; i++) {
        char who[MF_STORE_BLOB_REF_MAX];

        err = blob_ref_locked(who, db, ctx, mf_store__shas_at(all, i));
        if (err == MF_OK && !who[0])
            err = mf_store__shas_add(gone, ctx, mf_store__shas_at(all, i));
    }
    return err;
}

int mf_sqlite__samples_delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                              const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                              void *payload)
{
    struct mf_store_shas all, gone;
    sqlite3 *db;
    int err;

    *deleted_out = 0;
    if (!device_id[0] && before <= 0)
        return mf_fail(ctx, MF_E_INVALID, "a sample deletion needs a device or a time");
    mf_store__shas_init(&all, ctx);
    mf_store__shas_init(&gone, ctx);
    db = mf_sqlite__lock(s);
    err = tx_begin(db, ctx);
    if (err == MF_OK)
        err = tx_end(db, ctx, delete_locked(deleted_out, &all, &gone, db, ctx, device_id, before));
    mf_sqlite__unlock(s);
    if (err < 0)
        *deleted_out = 0; /* rolled back */
    for (size_t i = 0; err == MF_OK && orphan_fn && i < gone.n; i++)
        err = orphan_fn(payload, "", mf_store__shas_at(&gone, i));
    mf_store__shas_free(&all);
    mf_store__shas_free(&gone);
    return err;
}

int mf_sqlite__blob_ref(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s, struct mf_ctx *ctx,
                        const char *sha256)
{
    sqlite3 *db = mf_sqlite__lock(s);
    int err = blob_ref_locked(who_out, db, ctx, sha256);

    mf_sqlite__unlock(s);
    return err;
}

int mf_sqlite__blob_released(int *released_out, struct mf_store *s, struct mf_ctx *ctx,
                             const char *sha256)
{
    sqlite3 *db = mf_sqlite__lock(s);
    sqlite3_stmt *st = NULL;
    int err = prepare(&st, db, ctx, mf_store__blob_released_sql);
    int rc;

    *released_out = 0;
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            *released_out = 1;
        else if (rc != SQLITE_DONE)
            err = db_fail(ctx, db, "checking a blob's release");
    }
    sqlite3_finalize(st);
    mf_sqlite__unlock(s);
    return err;
}

static int hist_add_locked(sqlite3 *db, struct mf_ctx *ctx, const struct mf_store_hist *h,
                           int replace)
{
    struct mf_store_hist cur;
    char text[MF_STORE_BINS_TEXT_MAX];
    sqlite3_stmt *st = NULL;
    int err, rc;

    memset(&cur, 0, sizeof(cur));
    err = prepare(&st, db, ctx,
                  "SELECT bins, asked, uncertain FROM offload_hists WHERE model = ? AND"
                  " version = ? AND method = ? AND source = ?");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, h->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, h->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, h->method, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, h->source);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && !replace) {
        err = mf_store__bins_parse(cur.bins, ctx, col_str(st, 0));
        cur.asked = (uint64_t)sqlite3_column_int64(st, 1);
        cur.uncertain = (uint64_t)sqlite3_column_int64(st, 2);
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        err = db_fail(ctx, db, "reading a histogram");
    }
    sqlite3_finalize(st);
    if (err < 0)
        return err;
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        cur.bins[i] += h->bins[i];
    mf_store__bins_format(text, cur.bins);
    err = prepare(&st, db, ctx,
                  "INSERT OR REPLACE INTO offload_hists(model, version, method, source, bins,"
                  " asked, uncertain, updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, h->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, h->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, h->method, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, h->source);
    sqlite3_bind_text(st, 5, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)(cur.asked + h->asked));
    sqlite3_bind_int64(st, 7, (int64_t)(cur.uncertain + h->uncertain));
    sqlite3_bind_int64(st, 8, h->updated_at);
    err = step_done(st, db, ctx, "storing a histogram");
    sqlite3_finalize(st);
    return err;
}

int mf_sqlite__hist_add(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_hist *h,
                        int replace)
{
    sqlite3 *db = mf_sqlite__lock(s);
    int err = tx_begin(db, ctx);

    if (err == MF_OK)
        err = tx_end(db, ctx, hist_add_locked(db, ctx, h, replace));
    mf_sqlite__unlock(s);
    return err;
}

int mf_sqlite__hists_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                          mf_store_hist_fn fn, void *payload)
{
    sqlite3 *db = mf_sqlite__lock(s);
    sqlite3_stmt *st = NULL;
    struct mf_store_hist h;
    int err = prepare(&st, db, ctx,
                      "SELECT model, version, method, source, bins, asked, uncertain, updated_at"
                      " FROM offload_hists WHERE (?1 = '' OR model = ?1)"
                      " ORDER BY model, version, method, source");

    if (err == MF_OK)
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    while (err == MF_OK) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, db, "listing histograms");
            break;
        }
        memset(&h, 0, sizeof(h));
        col_text(h.model, sizeof(h.model), st, 0);
        col_text(h.version, sizeof(h.version), st, 1);
        col_text(h.method, sizeof(h.method), st, 2);
        h.source = sqlite3_column_int(st, 3);
        err = mf_store__bins_parse(h.bins, ctx, col_str(st, 4));
        h.asked = (uint64_t)sqlite3_column_int64(st, 5);
        h.uncertain = (uint64_t)sqlite3_column_int64(st, 6);
        h.updated_at = sqlite3_column_int64(st, 7);
        if (err == MF_OK)
            err = fn(payload, &h);
    }
    sqlite3_finalize(st);
    mf_sqlite__unlock(s);
    return err;
}
