/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite ops of the rollout migration (semantics in store.h): device runtime reports kept
 * newest-only per (device, model, version), rollouts with their wave state, and the events
 * of each rollout. Every op is one statement on the store's connection under its lock, so
 * each is atomic without an explicit transaction.
 */
#include "store/sqlite_store.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ROLLOUT_COLUMNS                                                                            \
    "id, model, version, prev_version, state, wave, wave_started_at, created_at, updated_at,"      \
    " plan, breach"

/* Prepares `sql` (the store's statement cache) and binds its parameters from `types`:
 * 't' text, 'i' int64. */
static int bind_stmt(sqlite3_stmt **out, struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                     const char *types, va_list ap)
{
    int err = mf_sqlite__prepare(out, base, ctx, sql);

    if (err < 0)
        return err;
    for (int i = 0; types[i]; i++) {
        if (types[i] == 't')
            sqlite3_bind_text(*out, i + 1, va_arg(ap, const char *), -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(*out, i + 1, va_arg(ap, int64_t));
    }
    return MF_OK;
}

/* Runs one write. *changes_out (may be NULL) gets the rows it changed, *id_out (may be
 * NULL) the rowid an INSERT made. */
int mf_sqlite__write(int *changes_out, int64_t *id_out, struct mf_store *base, struct mf_ctx *ctx,
                     const char *sql, const char *types, ...)
{
    sqlite3 *db = mf_sqlite__lock(base);
    sqlite3_stmt *st = NULL;
    va_list ap;
    int err;

    va_start(ap, types);
    err = bind_stmt(&st, base, ctx, sql, types, ap);
    va_end(ap);
    if (err == MF_OK && sqlite3_step(st) != SQLITE_DONE)
        /* A unique or check constraint is the caller's conflict, not a storage failure. */
        err = mf_fail(ctx, sqlite3_errcode(db) == SQLITE_CONSTRAINT ? MF_E_STATE : MF_E_IO,
                      "sqlite write: %s", sqlite3_errmsg(db));
    if (err == MF_OK && changes_out)
        *changes_out = sqlite3_changes(db);
    if (err == MF_OK && id_out)
        *id_out = sqlite3_last_insert_rowid(db);
    mf_sqlite__finish(base, st);
    mf_sqlite__unlock(base);
    return err;
}

/* Visits the rows of one query; a visitor's negative return stops the walk. */
int mf_sqlite__walk(struct mf_store *base, struct mf_ctx *ctx, mf_sqlite_row_fn visit, void *fn,
                    void *payload, const char *sql, const char *types, ...)
{
    sqlite3 *db = mf_sqlite__lock(base);
    sqlite3_stmt *st = NULL;
    va_list ap;
    int err, rc;

    va_start(ap, types);
    err = bind_stmt(&st, base, ctx, sql, types, ap);
    va_end(ap);
    while (err == MF_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = mf_fail(ctx, MF_E_IO, "sqlite listing: %s", sqlite3_errmsg(db));
            break;
        }
        err = visit(st, fn, payload);
    }
    mf_sqlite__finish(base, st);
    mf_sqlite__unlock(base);
    return err;
}

int mf_sqlite__telemetry_put(struct mf_store *base, struct mf_ctx *ctx,
                             const struct mf_store_telemetry *t)
{
    if (strlen(t->report) > MF_STORE_TELEMETRY_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "telemetry report of '%s' is over %u bytes", t->device_id,
                       MF_STORE_TELEMETRY_MAX);
    /* Replace, never add: the report is the device's cumulative total. */
    return mf_sqlite__write(
        NULL, NULL, base, ctx,
        "INSERT INTO telemetry(device_id, model, version, report, reported_at)"
        " VALUES(?, ?, ?, ?, ?) ON CONFLICT(model, device_id, version) DO UPDATE"
        " SET report = excluded.report, reported_at = excluded.reported_at",
        "tttti", t->device_id, t->model, t->version, t->report, t->reported_at);
}

static int visit_telemetry(sqlite3_stmt *st, void *fn, void *payload)
{
    struct mf_store_telemetry t;
    const unsigned char *report = sqlite3_column_text(st, 3);

    mf_sqlite__text_col(t.device_id, sizeof(t.device_id), st, 0);
    mf_sqlite__text_col(t.model, sizeof(t.model), st, 1);
    mf_sqlite__text_col(t.version, sizeof(t.version), st, 2);
    t.report = report ? (const char *)report : "";
    t.reported_at = sqlite3_column_int64(st, 4);
    return ((mf_store_telemetry_fn)fn)(payload, &t);
}

int mf_sqlite__telemetry_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                              mf_store_telemetry_fn fn, void *payload)
{
    return mf_sqlite__walk(base, ctx, visit_telemetry, (void *)fn, payload,
                           "SELECT device_id, model, version, report, reported_at FROM telemetry"
                           " WHERE model = ? ORDER BY device_id, version",
                           "t", model);
}

int mf_sqlite__rollout_put(struct mf_store *base, struct mf_ctx *ctx, struct mf_store_rollout *r,
                           const char *expect_state)
{
    int changes = 0;
    int err;

    if (r->id == 0)
        return mf_sqlite__write(NULL, &r->id, base, ctx,
                                "INSERT INTO rollouts(model, version, prev_version, state, wave,"
                                " wave_started_at, created_at, updated_at, plan, breach)"
                                " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                "ttttiiiitt", r->model, r->version, r->prev_version, r->state,
                                (int64_t)r->wave, r->wave_started_at, r->created_at, r->updated_at,
                                r->plan, r->breach);
    err = mf_sqlite__write(&changes, NULL, base, ctx,
                           "UPDATE rollouts SET state = ?, wave = ?, wave_started_at = ?,"
                           " updated_at = ?, breach = ? WHERE id = ? AND (? = '' OR state = ?)",
                           "tiiititt", r->state, (int64_t)r->wave, r->wave_started_at,
                           r->updated_at, r->breach, r->id, expect_state, expect_state);
    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, expect_state[0] ? MF_E_STATE : MF_E_NOTFOUND,
                      "rollout %lld is unknown or no longer %s", (long long)r->id,
                      expect_state[0] ? expect_state : "there");
    return err;
}

static void read_rollout(struct mf_store_rollout *r, sqlite3_stmt *st)
{
    r->id = sqlite3_column_int64(st, 0);
    mf_sqlite__text_col(r->model, sizeof(r->model), st, 1);
    mf_sqlite__text_col(r->version, sizeof(r->version), st, 2);
    mf_sqlite__text_col(r->prev_version, sizeof(r->prev_version), st, 3);
    mf_sqlite__text_col(r->state, sizeof(r->state), st, 4);
    r->wave = sqlite3_column_int(st, 5);
    r->wave_started_at = sqlite3_column_int64(st, 6);
    r->created_at = sqlite3_column_int64(st, 7);
    r->updated_at = sqlite3_column_int64(st, 8);
    mf_sqlite__text_col(r->plan, sizeof(r->plan), st, 9);
    mf_sqlite__text_col(r->breach, sizeof(r->breach), st, 10);
}

static int copy_rollout(sqlite3_stmt *st, void *fn, void *payload)
{
    (void)fn;
    read_rollout(payload, st); /* the id is unique: at most one row */
    return MF_OK;
}

int mf_sqlite__rollout_get(struct mf_store_rollout *out, struct mf_store *base, struct mf_ctx *ctx,
                           int64_t id)
{
    int err;

    out->id = 0;
    err = mf_sqlite__walk(base, ctx, copy_rollout, NULL, out,
                          "SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE id = ?", "i", id);
    if (err < 0)
        return err;
    if (out->id == 0)
        return mf_fail(ctx, MF_E_NOTFOUND, "no rollout %lld", (long long)id);
    return MF_OK;
}

static int visit_rollout(sqlite3_stmt *st, void *fn, void *payload)
{
    struct mf_store_rollout r; /* server thread: an 8 KiB plan fits its stack */

    read_rollout(&r, st);
    return ((mf_store_rollout_fn)fn)(payload, &r);
}

int mf_sqlite__rollouts_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                             mf_store_rollout_fn fn, void *payload)
{
    return mf_sqlite__walk(base, ctx, visit_rollout, (void *)fn, payload,
                           "SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE ? = '' OR model = ?"
                           " ORDER BY id DESC",
                           "tt", model, model);
}

int mf_sqlite__rollout_event_add(struct mf_store *base, struct mf_ctx *ctx,
                                 const struct mf_store_rollout_event *e)
{
    return mf_sqlite__write(
        NULL, NULL, base, ctx,
        "INSERT INTO rollout_events(rollout_id, at, kind, detail) VALUES(?, ?, ?, ?)", "iitt",
        e->rollout_id, e->at, e->kind, e->detail);
}

static int visit_event(sqlite3_stmt *st, void *fn, void *payload)
{
    struct mf_store_rollout_event e;

    e.rollout_id = sqlite3_column_int64(st, 0);
    e.at = sqlite3_column_int64(st, 1);
    mf_sqlite__text_col(e.kind, sizeof(e.kind), st, 2);
    mf_sqlite__text_col(e.detail, sizeof(e.detail), st, 3);
    return ((mf_store_rollout_event_fn)fn)(payload, &e);
}

int mf_sqlite__rollout_events_list(struct mf_store *base, struct mf_ctx *ctx, int64_t rollout_id,
                                   mf_store_rollout_event_fn fn, void *payload)
{
    return mf_sqlite__walk(
        base, ctx, visit_event, (void *)fn, payload,
        "SELECT rollout_id, at, kind, detail FROM rollout_events WHERE rollout_id = ?"
        " ORDER BY seq",
        "i", rollout_id);
}
