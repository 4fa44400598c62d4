/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL backend of struct mf_store_ops ("postgresql://..." or "postgres://..."): what
 * several mf-server nodes share. Same operations and semantics as the SQLite backend: both
 * run the backend-neutral ops of store_<domain>.c; this file gives them the engine
 * (store_engine.h) on the connection pool of pg_pool.c, and runs the migrations.
 * Transactions run at READ COMMITTED, so every read-check-write takes a row lock first (the
 * catalogue's PostgreSQL-only FOR UPDATE statements) or is one atomic statement.
 * One module with pg_checkin.c, the backend's check-in path, whose ops its table names.
 */
#include "store/pg/pg_store.h"

#include "store/store_schema.h"

#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

/* pg_advisory_xact_lock key serialising migrations across nodes ("mfmigrat" in ASCII). */
#define PG_MIGRATE_LOCK "7882411618358407540"

static struct mf_pg_store *to_pg(struct mf_store *s)
{
    return (struct mf_pg_store *)s;
}

int mf_pg__get(PGconn **out, struct mf_store *base, struct mf_ctx *ctx)
{
    return mf_pg__acquire(out, to_pg(base)->pool, ctx);
}

void mf_pg__put(struct mf_store *base, PGconn *c)
{
    mf_pg__release(to_pg(base)->pool, c);
}

/* ---- The engine: a cursor over a binary result row, one statement, a transaction ---- */

static const PGresult *cursor_res(const struct mf_store_cursor *c)
{
    return (const PGresult *)c->impl;
}

static int64_t cursor_i64(const struct mf_store_cursor *c, int col)
{
    return mf_pg__col_i64(cursor_res(c), c->row, col);
}

static double cursor_f64(const struct mf_store_cursor *c, int col)
{
    return mf_pg__col_f64(cursor_res(c), c->row, col);
}

static const char *cursor_text(const struct mf_store_cursor *c, int col)
{
    return PQgetvalue(cursor_res(c), c->row, col); /* libpq NUL-terminates every value */
}

static const void *cursor_blob(const struct mf_store_cursor *c, size_t *len_out, int col)
{
    *len_out = (size_t)PQgetlength(cursor_res(c), c->row, col);
    return PQgetvalue(cursor_res(c), c->row, col);
}

static int cursor_null(const struct mf_store_cursor *c, int col)
{
    return PQgetisnull(cursor_res(c), c->row, col);
}

/* clang-format off */
static const struct mf_store_cursor_ops pg_cursor = {
    .i64 = cursor_i64, .f64 = cursor_f64, .text = cursor_text, .blob = cursor_blob,
    .null = cursor_null,
};
/* clang-format on */

struct mf_store_cursor mf_pg__cursor(const PGresult *res, int row)
{
    return (struct mf_store_cursor){&pg_cursor, res, row};
}

/* The neutral parameters as libpq's (numbers as decimal text, blobs binary). */
static void pg_params(struct mf_pg_params *out, const struct mf_store_params *p)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; p && i < p->n; i++) {
        const struct mf_store_param *v = &p->v[i];

        if (v->type == MF_STORE_P_TEXT)
            mf_pg__param_text(out, v->ptr);
        else if (v->type == MF_STORE_P_I64)
            mf_pg__param_i64(out, v->i64);
        else if (v->type == MF_STORE_P_F64)
            mf_pg__param_f64(out, v->f64);
        else
            mf_pg__param_blob(out, v->ptr, v->len);
    }
}

struct walk_rows {
    mf_store_row_fn fn;
    void *payload;
};

static int visit_single_row(const PGresult *res, void *payload)
{
    struct walk_rows *w = payload;
    struct mf_store_cursor cur = mf_pg__cursor(res, 0);

    return w->fn(w->payload, &cur);
}

static int run_on(int64_t *changes_out, PGconn *c, struct mf_ctx *ctx, const struct mf_sql *q,
                  const char *sql, const struct mf_pg_params *p, mf_store_row_fn fn, void *payload)
{
    struct walk_rows w = {fn, payload};
    PGresult *res = NULL;
    int err;

    /* Listings stream (a million devices never sit in memory at once); lookups and writes
     * run prepared and read their few rows from the whole result. */
    if (q->stream && fn)
        return mf_pg__walk(c, ctx, sql, p, visit_single_row, &w);
    err = mf_pg__query(&res, c, ctx, sql, p, q->what);
    for (int r = 0; err == MF_OK && fn && r < PQntuples(res); r++) {
        struct mf_store_cursor cur = mf_pg__cursor(res, r);

        err = fn(payload, &cur);
    }
    if (err == MF_OK && changes_out)
        *changes_out = (int64_t)mf_pg__changes(res);
    PQclear(res);
    return err;
}

static int pg_run(int64_t *changes_out, struct mf_store *base, struct mf_store_tx *tx,
                  struct mf_ctx *ctx, const struct mf_sql *q, const struct mf_store_params *p,
                  mf_store_row_fn fn, void *payload)
{
    const char *sql = q->pg ? q->pg : q->sqlite;
    struct mf_pg_params pp;
    PGconn *c;
    int err;

    if (changes_out)
        *changes_out = 0;
    pg_params(&pp, p);
    if (tx)
        return run_on(changes_out, (PGconn *)tx, ctx, q, sql, &pp, fn, payload);
    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = run_on(changes_out, c, ctx, q, sql, &pp, fn, payload);
    mf_pg__put(base, c);
    return err;
}

/* A failure rolls back and keeps the callee's message. */
static int pg_in_tx(struct mf_store *base, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg)
{
    PGconn *c;
    int err = mf_pg__get(&c, base, ctx);

    if (err < 0)
        return err;
    err = mf_pg__begin(c, ctx);
    if (err == MF_OK)
        err = mf_pg__end(c, ctx, fn(base, (struct mf_store_tx *)c, ctx, arg));
    mf_pg__put(base, c);
    return err;
}

static const struct mf_store_engine pg_engine = {.run = pg_run, .in_tx = pg_in_tx};

/* ---- Open, close ---- */

static void pg_close(struct mf_store *base)
{
    if (base) {
        struct mf_pg_store *s = to_pg(base);
        mf_allocator alloc = s->alloc; /* the handle's own, freed with it */

        mf_pg__pool_free(s->pool);
        mf_free(&alloc, s);
    }
}

/* `location` is what follows "postgresql:" or "postgres:" in the store URL. `create` does not
 * matter: the database is made by ops (createdb), the tables by migrate. */
static int pg_open_as(struct mf_store **out, struct mf_ctx *ctx, const char *scheme,
                      const char *location, const struct mf_store_ops *ops)
{
    char url[MF_PG_URL_MAX];
    struct mf_pg_store *s;
    int n, err;

    *out = NULL;
    n = snprintf(url, sizeof(url), "%s:%s", scheme, location);
    if (n < 0 || (size_t)n >= sizeof(url))
        return mf_fail(ctx, MF_E_LIMIT, "PostgreSQL URL longer than %d bytes", MF_PG_URL_MAX - 1);
    s = mf_calloc(&ctx->alloc, 1, sizeof(*s));
    if (!s) {
        mf_secure_zero(url, sizeof(url));
        return mf_fail(ctx, MF_E_NOMEM, "out of memory opening the PostgreSQL store");
    }
    s->base.ops = ops;
    s->base.engine = &pg_engine;
    s->alloc = ctx->alloc;
    err = mf_pg__pool_new(&s->pool, ctx, url);
    mf_secure_zero(url, sizeof(url)); /* may hold a password */
    if (err < 0) {
        pg_close(&s->base);
        return err;
    }
    *out = &s->base;
    return MF_OK;
}

static int pg_open(struct mf_store **out, struct mf_ctx *ctx, const char *location, int create)
{
    (void)create;
    return pg_open_as(out, ctx, "postgresql", location, &mf_store__pg_ops);
}

static int pg_open_short(struct mf_store **out, struct mf_ctx *ctx, const char *location,
                         int create)
{
    (void)create;
    return pg_open_as(out, ctx, "postgres", location, &mf_store__postgres_ops);
}

/* ---- Migrations (store_schema.c) ---- */

static int read_schema_version(int *out, PGconn *c, struct mf_ctx *ctx)
{
    PGresult *res = NULL;
    int err = mf_pg__query(&res, c, ctx, "SELECT coalesce(max(version), 0) FROM schema_version",
                           NULL, "reading schema_version");

    *out = err == MF_OK && PQntuples(res) > 0 ? (int)mf_pg__col_i64(res, 0, 0) : 0;
    PQclear(res);
    return err;
}

static int migrate_locked(int *applied_out, PGconn *c, struct mf_ctx *ctx, int target)
{
    int cur = 0, err;

    /* The advisory lock comes first: two nodes starting together would otherwise race even
     * on CREATE TABLE IF NOT EXISTS. It is released by COMMIT or ROLLBACK. */
    err = mf_pg__exec(c, ctx, "SELECT pg_advisory_xact_lock(" PG_MIGRATE_LOCK ")", NULL,
                      "taking the migration lock");
    if (err == MF_OK)
        err = mf_pg__exec(c, ctx, mf_store__schema_table.pg, NULL, "creating schema_version");
    if (err == MF_OK)
        err = read_schema_version(&cur, c, ctx);
    if (err == MF_OK)
        err = mf_store__schema_known(ctx, cur);
    if (err < 0)
        return err;
    for (int v = cur + 1; v <= target && err == MF_OK; v++) {
        struct mf_pg_params p = {0};

        err = mf_pg__exec_script(c, ctx, mf_store__migrations[v - 1].pg, "migration");
        mf_pg__param_i64(&p, v);
        if (err == MF_OK)
            err = mf_pg__exec(c, ctx,
                              "INSERT INTO schema_version(version, applied_at)"
                              " VALUES($1, extract(epoch FROM now())::bigint)",
                              &p, "recording the migration");
        if (err == MF_OK)
            (*applied_out)++;
    }
    return err;
}

int mf_pg__migrate_to(int *applied_out, struct mf_store *base, struct mf_ctx *ctx, int target)
{
    PGconn *c;
    int err;

    *applied_out = 0;
    if (target < 1 || target > MF_STORE_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_INVALID, "no schema version %d (latest %d)", target,
                       MF_STORE_SCHEMA_LATEST);
    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = mf_pg__begin(c, ctx);
    if (err == MF_OK)
        err = mf_pg__end(c, ctx, migrate_locked(applied_out, c, ctx, target));
    if (err < 0)
        *applied_out = 0;
    mf_pg__put(base, c);
    return err;
}

static int pg_migrate(int *applied_out, struct mf_store *base, struct mf_ctx *ctx)
{
    return mf_pg__migrate_to(applied_out, base, ctx, MF_STORE_SCHEMA_LATEST);
}

static int pg_schema_version(int *version_out, struct mf_store *base, struct mf_ctx *ctx)
{
    PGconn *c;
    int err;

    *version_out = 0;
    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = read_schema_version(version_out, c, ctx);
    mf_pg__put(base, c);
    return err;
}

/* Both URL schemes libpq accepts select this backend; one list of ops serves both. */
#define PG_OPS(scheme_name, open_fn)                                                               \
    {                                                                                              \
        .scheme = scheme_name, .default_threads = MF_PG_POOL_MAX, .open = open_fn,                 \
        .close = pg_close, .migrate = pg_migrate, .schema_version = pg_schema_version,             \
        .checkin = &mf_store__pg_checkin_ops, MF_STORE_NEUTRAL_DOMAINS,                            \
    }

const struct mf_store_ops mf_store__pg_ops = PG_OPS("postgresql", pg_open);
const struct mf_store_ops mf_store__postgres_ops = PG_OPS("postgres", pg_open_short);
