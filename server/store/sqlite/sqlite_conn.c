/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite backend of struct mf_store_ops: the embedded default, so mf-server runs with no
 * other service. WAL mode, serialised by a mutex: multi-statement transactions stay atomic
 * while MHD's worker threads share the handles, and check-ins that arrive together share
 * one transaction (sqlite_checkin.c). This file holds the connections and their lock, the
 * engine the backend-neutral ops run on (store_engine.h) and the migrations; the ops
 * themselves are store_<domain>.c's.
 * One module with sqlite_checkin.c, the backend's check-in path, whose ops its table names.
 */
#include "store/sqlite/sqlite_store.h"

#include "store/store_schema.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

void mf_sqlite__lock(struct mf_sqlite_store *s)
{
    (void)pthread_mutex_lock(&s->lock);
}

void mf_sqlite__unlock(struct mf_sqlite_store *s)
{
    (void)pthread_mutex_unlock(&s->lock);
}

int mf_sqlite__fail(struct mf_ctx *ctx, struct mf_sqlite_store *s, const char *what)
{
    return mf_fail(ctx, MF_E_IO, "sqlite %s: %s", what, sqlite3_errmsg(s->c->db));
}

static int db_exec(struct mf_sqlite_store *s, struct mf_ctx *ctx, const char *sql)
{
    if (sqlite3_exec(s->c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return mf_sqlite__fail(ctx, s, sql);
    return MF_OK;
}

int mf_sqlite__prepare(sqlite3_stmt **out, struct mf_sqlite_store *s, struct mf_ctx *ctx,
                       const char *sql)
{
    if (mf_sqlite__stmt_get(out, &s->c->stmts, s->c->db, sql) != SQLITE_OK)
        return mf_sqlite__fail(ctx, s, "prepare");
    return MF_OK;
}

void mf_sqlite__finish(struct mf_sqlite_store *s, sqlite3_stmt *st)
{
    mf_sqlite__stmt_put(&s->c->stmts, st);
}

int mf_sqlite__run(struct mf_sqlite_store *s, struct mf_ctx *ctx, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int err = mf_sqlite__prepare(&st, s, ctx, sql);

    if (err == MF_OK && sqlite3_step(st) != SQLITE_DONE)
        err = mf_sqlite__fail(ctx, s, sql);
    mf_sqlite__finish(s, st);
    return err;
}

void mf_sqlite__text_col(char *dst, size_t size, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);

    (void)snprintf(dst, size, "%s", t ? (const char *)t : "");
}

/* ---- The engine: the cursor over a stepped statement, one statement, a transaction ---- */

static sqlite3_stmt *cursor_stmt(const struct mf_store_cursor *c)
{
    return (sqlite3_stmt *)c->impl;
}

static int64_t cursor_i64(const struct mf_store_cursor *c, int col)
{
    return sqlite3_column_int64(cursor_stmt(c), col);
}

static double cursor_f64(const struct mf_store_cursor *c, int col)
{
    return sqlite3_column_double(cursor_stmt(c), col);
}

static const char *cursor_text(const struct mf_store_cursor *c, int col)
{
    const unsigned char *t = sqlite3_column_text(cursor_stmt(c), col);

    return t ? (const char *)t : "";
}

static const void *cursor_blob(const struct mf_store_cursor *c, size_t *len_out, int col)
{
    const void *p = sqlite3_column_blob(cursor_stmt(c), col);

    *len_out = (size_t)sqlite3_column_bytes(cursor_stmt(c), col);
    return p;
}

static int cursor_null(const struct mf_store_cursor *c, int col)
{
    return sqlite3_column_type(cursor_stmt(c), col) == SQLITE_NULL;
}

/* clang-format off */
static const struct mf_store_cursor_ops sqlite_cursor = {
    .i64 = cursor_i64, .f64 = cursor_f64, .text = cursor_text, .blob = cursor_blob,
    .null = cursor_null,
};
/* clang-format on */

static void bind_params(sqlite3_stmt *st, const struct mf_store_params *p)
{
    /* The catalogue's texts and their callers' type strings agree (both dialects). */
    assert(sqlite3_bind_parameter_count(st) == (p ? p->n : 0));
    for (int i = 0; p && i < p->n; i++) {
        const struct mf_store_param *v = &p->v[i];

        /* Parameters outlive the statement's steps (mf_store__exec's caller holds them). */
        if (v->type == MF_STORE_P_TEXT)
            sqlite3_bind_text(st, i + 1, v->ptr, -1, SQLITE_STATIC);
        else if (v->type == MF_STORE_P_I64)
            sqlite3_bind_int64(st, i + 1, v->i64);
        else if (v->type == MF_STORE_P_F64)
            sqlite3_bind_double(st, i + 1, v->f64);
        else
            sqlite3_bind_blob(st, i + 1, v->ptr, (int)v->len, SQLITE_STATIC);
    }
}

/* The statement on s->c; the caller holds the lock. */
static int run_locked(int64_t *changes_out, struct mf_sqlite_store *s, struct mf_ctx *ctx,
                      const struct mf_sql *q, const struct mf_store_params *p, mf_store_row_fn fn,
                      void *payload)
{
    struct mf_store_cursor cur = {&sqlite_cursor, NULL, 0};
    sqlite3_stmt *st = NULL;
    int err = mf_sqlite__prepare(&st, s, ctx, q->sqlite);
    int rc = SQLITE_DONE;

    if (err < 0)
        return err;
    bind_params(st, p);
    cur.impl = st;
    while (err == MF_OK) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        if (fn)
            err = fn(payload, &cur);
    }
    if (err == MF_OK && rc == SQLITE_DONE && changes_out)
        *changes_out = sqlite3_changes(s->c->db);
    else if (err == MF_OK && (rc & 0xff) == SQLITE_CONSTRAINT)
        /* A unique or check constraint is the caller's conflict, not a storage failure. */
        err = mf_fail(ctx, MF_E_STATE, "sqlite constraint: %s", sqlite3_errmsg(s->c->db));
    else if (err == MF_OK && rc != SQLITE_DONE)
        err = mf_sqlite__fail(ctx, s, q->what);
    mf_sqlite__finish(s, st);
    return err;
}

static int sqlite_run(int64_t *changes_out, struct mf_store *base, struct mf_store_tx *tx,
                      struct mf_ctx *ctx, const struct mf_sql *q, const struct mf_store_params *p,
                      mf_store_row_fn fn, void *payload)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    int err;

    if (changes_out)
        *changes_out = 0;
    if (!q->sqlite)
        return MF_OK; /* nothing to do in this dialect (struct mf_sql) */
    if (tx)
        return run_locked(changes_out, s, ctx, q, p, fn, payload);
    mf_sqlite__lock(s);
    err = run_locked(changes_out, s, ctx, q, p, fn, payload);
    mf_sqlite__unlock(s);
    return err;
}

/* BEGIN IMMEDIATE takes the write lock first, so two processes on one file cannot both read
 * a row before either updates it. The caller holds the lock. */
static int tx_locked(struct mf_sqlite_store *s, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg)
{
    int err = db_exec(s, ctx, "BEGIN IMMEDIATE");

    if (err < 0)
        return err;
    err = fn(&s->base, mf_sqlite__tx(s), ctx, arg);
    if (err == MF_OK)
        err = db_exec(s, ctx, "COMMIT");
    if (err < 0)
        (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

static int sqlite_in_tx(struct mf_store *base, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    int err;

    mf_sqlite__lock(s);
    err = tx_locked(s, ctx, fn, arg);
    mf_sqlite__unlock(s);
    return err;
}

static const struct mf_store_engine sqlite_engine = {.run = sqlite_run, .in_tx = sqlite_in_tx};

/* ---- Open, close ---- */

static void sqlite_close(struct mf_store *base)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    mf_allocator alloc;

    if (!s)
        return;
    mf_sqlite__stmts_free(&s->checkins.stmts);
    (void)sqlite3_close(s->checkins.db);
    mf_sqlite__stmts_free(&s->durable.stmts);
    (void)sqlite3_close(s->durable.db);
    (void)pthread_mutex_destroy(&s->lock);
    alloc = s->alloc;
    mf_free(&alloc, s);
}

static int sqlite_open(struct mf_store **out, struct mf_ctx *ctx, const char *location, int create)
{
    struct mf_sqlite_store *s;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
    int rc, err;

    *out = NULL;
    s = mf_calloc(&ctx->alloc, 1, sizeof(*s));
    if (!s)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory opening store '%s'", location);
    s->base.ops = &mf_store__sqlite_ops;
    s->base.engine = &sqlite_engine;
    s->alloc = ctx->alloc;
    s->c = &s->durable;
    if (snprintf(s->location, sizeof(s->location), "%s", location) >= (int)sizeof(s->location)) {
        mf_free(&ctx->alloc, s);
        return mf_fail(ctx, MF_E_LIMIT, "store location too long");
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        mf_free(&ctx->alloc, s);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the store mutex");
    }
    if (create)
        flags |= SQLITE_OPEN_CREATE;
    rc = sqlite3_open_v2(location, &s->c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        err = mf_fail(ctx, rc == SQLITE_CANTOPEN ? MF_E_NOTFOUND : MF_E_IO,
                      "cannot open store '%s': %s", location,
                      s->c->db ? sqlite3_errmsg(s->c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    (void)sqlite3_busy_timeout(s->c->db, 5000);
    /* WAL lets readers run while a publish commits; FULL makes a committed version
     * survive power loss, which is what "visible only after commit" promises. */
    err = db_exec(s, ctx,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                  " PRAGMA foreign_keys=ON;");
    if (err < 0)
        goto fail;
    *out = &s->base;
    return MF_OK;
fail:
    sqlite_close(&s->base);
    return err;
}

/* ---- Migrations (store_schema.c) ---- */

static int read_version(void *payload, const struct mf_store_cursor *row)
{
    *(int *)payload = (int)mf_store__col_i64(row, 0);
    return MF_OK;
}

static const struct mf_sql sql_schema_version =
    MF_SQL("SELECT coalesce(max(version), 0) FROM schema_version", "reading schema_version");

static int read_schema_version(int *out, struct mf_sqlite_store *s, struct mf_ctx *ctx)
{
    return run_locked(NULL, s, ctx, &sql_schema_version, NULL, read_version, out);
}

struct migrate_args {
    int *applied_out;
    int target;
};

static int migrate_locked(struct mf_store *base, struct mf_store_tx *tx, struct mf_ctx *ctx,
                          void *arg)
{
    static const struct mf_sql record =
        MF_SQL("INSERT INTO schema_version(version, applied_at) VALUES(?, strftime('%s'))",
               "recording the migration");
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    struct migrate_args *a = arg;
    int cur = 0, err;

    (void)tx; /* s itself, locked, in a transaction */
    err = db_exec(s, ctx, mf_store__schema_table.sqlite);
    if (err < 0)
        return err;
    err = read_schema_version(&cur, s, ctx);
    if (err == MF_OK)
        err = mf_store__schema_known(ctx, cur);
    if (err < 0)
        return err;
    for (int v = cur + 1; v <= a->target && err == MF_OK; v++) {
        struct mf_store_params p;

        mf_store__params(&p, "i", (int64_t)v);
        err = db_exec(s, ctx, mf_store__migrations[v - 1].sqlite);
        if (err == MF_OK)
            err = run_locked(NULL, s, ctx, &record, &p, NULL, NULL);
        if (err == MF_OK)
            (*a->applied_out)++;
    }
    return err;
}

int mf_store__sqlite_migrate_to(int *applied_out, struct mf_store *base, struct mf_ctx *ctx,
                                int target)
{
    struct migrate_args a = {applied_out, target};
    int err;

    *applied_out = 0;
    if (target < 0 || target > MF_STORE_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_INVALID, "no schema version %d (latest %d)", target,
                       MF_STORE_SCHEMA_LATEST);
    /* IMMEDIATE: two servers starting on one file cannot both apply migration N. */
    err = sqlite_in_tx(base, ctx, migrate_locked, &a);
    if (err < 0)
        *applied_out = 0; /* rolled back: nothing was applied */
    return err;
}

static int sqlite_migrate(int *applied_out, struct mf_store *base, struct mf_ctx *ctx)
{
    return mf_store__sqlite_migrate_to(applied_out, base, ctx, MF_STORE_SCHEMA_LATEST);
}

static int sqlite_schema_version(int *version_out, struct mf_store *base, struct mf_ctx *ctx)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    int err;

    *version_out = 0;
    mf_sqlite__lock(s);
    err = read_schema_version(version_out, s, ctx);
    mf_sqlite__unlock(s);
    return err;
}

const struct mf_store_ops mf_store__sqlite_ops = {
    .scheme = "sqlite",
    .default_threads = 4,
    .open = sqlite_open,
    .close = sqlite_close,
    .migrate = sqlite_migrate,
    .schema_version = sqlite_schema_version,
    .checkin = &mf_store__sqlite_checkin_ops,
    MF_STORE_NEUTRAL_DOMAINS,
};
