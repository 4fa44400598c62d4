/* SPDX-License-Identifier: Apache-2.0 */
/* libpq connection pool and query helpers of the PostgreSQL store (see pg_pool.h). */
#include "store/pg/pg_pool.h"

#include "store/store_engine.h"

#include "mf/ct.h"

#include <assert.h>
#include <libpq-events.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct mf_pg_pool {
    mf_allocator alloc;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    char url[MF_PG_URL_MAX];
    PGconn *idle[MF_PG_POOL_MAX];
    size_t n_idle;
    size_t n_open; /* idle + lent out + being connected */
};

/* Length of a libpq message without its trailing newline(s). */
static int msg_len(const char *m)
{
    size_t n = strlen(m);

    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == '\r'))
        n--;
    return (int)n;
}

/* Server notices ("relation already exists, skipping") are not errors; libpq would print
 * them on stderr. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* libpq event procedure that owns each connection's struct mf_pg_session. */
static int session_event(PGEventId id, void *info, void *pass)
{
    mf_allocator *alloc = pass;

    if (id == PGEVT_REGISTER) {
        PGconn *c = ((PGEventRegister *)info)->conn;
        struct mf_pg_session *s = mf_calloc(alloc, 1, sizeof(*s));

        return s && PQsetInstanceData(c, session_event, s);
    }
    if (id == PGEVT_CONNRESET) {
        struct mf_pg_session *s = PQinstanceData(((PGEventConnReset *)info)->conn, session_event);

        if (s)
            memset(s, 0, sizeof(*s)); /* a new server session: nothing is prepared on it */
    } else if (id == PGEVT_CONNDESTROY) {
        mf_free(alloc, PQinstanceData(((PGEventConnDestroy *)info)->conn, session_event));
    }
    return 1;
}

struct mf_pg_session *mf_pg__session(PGconn *conn)
{
    return PQinstanceData(conn, session_event);
}

static int connect_one(PGconn **out, struct mf_pg_pool *p, struct mf_ctx *ctx)
{
    /* The URL comes last so its own connect_timeout, if any, overrides our bound: a dead
     * server must not hang a request thread forever. */
    static const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *values[] = {"10", "mf-server", p->url, NULL};
    PGconn *c = PQconnectdbParams(keys, values, 1);
    const char *m;
    int err;

    *out = NULL;
    if (!c)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory connecting to PostgreSQL");
    if (PQstatus(c) == CONNECTION_OK) {
        (void)PQsetNoticeProcessor(c, ignore_notice, NULL);
        if (!PQregisterEventProc(c, session_event, "mf-session", &p->alloc)) {
            PQfinish(c);
            return mf_fail(ctx, MF_E_NOMEM, "out of memory connecting to PostgreSQL");
        }
        *out = c;
        return MF_OK;
    }
    /* The URL may hold a password: name the server's complaint, never the URL. libpq gives
     * no SQLSTATE for a failed connection, so a missing database is told by its message
     * (the C locale the server's messages use by default). */
    m = PQerrorMessage(c);
    err = strstr(m, "does not exist") ? MF_E_NOTFOUND : MF_E_IO;
    err = mf_fail(ctx, err, "cannot connect to PostgreSQL: %.*s", msg_len(m), m);
    PQfinish(c);
    return err;
}

int mf_pg__pool_new(struct mf_pg_pool **out, struct mf_ctx *ctx, const char *url)
{
    struct mf_pg_pool *p;
    PGconn *c = NULL;
    int n, err;

    *out = NULL;
    p = mf_calloc(&ctx->alloc, 1, sizeof(*p));
    if (!p)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory opening the PostgreSQL store");
    p->alloc = ctx->alloc;
    n = snprintf(p->url, sizeof(p->url), "%s", url);
    if (n < 0 || (size_t)n >= sizeof(p->url)) {
        mf_free(&ctx->alloc, p);
        return mf_fail(ctx, MF_E_LIMIT, "PostgreSQL URL longer than %d bytes", MF_PG_URL_MAX - 1);
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        mf_free(&ctx->alloc, p);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the store mutex");
    }
    if (pthread_cond_init(&p->freed, NULL) != 0) {
        (void)pthread_mutex_destroy(&p->lock);
        mf_free(&ctx->alloc, p);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the store condition variable");
    }
    /* One connection now, so a wrong URL fails at startup rather than at the first request. */
    err = connect_one(&c, p, ctx);
    if (err < 0) {
        mf_pg__pool_free(p);
        return err;
    }
    p->idle[p->n_idle++] = c;
    p->n_open = 1;
    *out = p;
    return MF_OK;
}

void mf_pg__pool_free(struct mf_pg_pool *p)
{
    mf_allocator alloc;

    if (!p)
        return;
    for (size_t i = 0; i < p->n_idle; i++)
        PQfinish(p->idle[i]);
    (void)pthread_cond_destroy(&p->freed);
    (void)pthread_mutex_destroy(&p->lock);
    mf_secure_zero(p->url, sizeof(p->url)); /* may hold a password */
    alloc = p->alloc;
    mf_free(&alloc, p);
}

int mf_pg__acquire(PGconn **out, struct mf_pg_pool *p, struct mf_ctx *ctx)
{
    PGconn *c = NULL;
    int err;

    *out = NULL;
    (void)pthread_mutex_lock(&p->lock);
    while (p->n_idle == 0 && p->n_open >= MF_PG_POOL_MAX)
        (void)pthread_cond_wait(&p->freed, &p->lock);
    if (p->n_idle > 0)
        c = p->idle[--p->n_idle];
    else
        p->n_open++; /* reserve the slot; connect outside the lock */
    (void)pthread_mutex_unlock(&p->lock);
    if (c && PQstatus(c) != CONNECTION_OK)
        PQreset(c); /* dropped while idle (server restart, idle timeout): reconnect */
    if (c && PQstatus(c) == CONNECTION_OK) {
        *out = c;
        return MF_OK;
    }
    if (c) {
        const char *m = PQerrorMessage(c);

        err = mf_fail(ctx, MF_E_IO, "cannot reconnect to PostgreSQL: %.*s", msg_len(m), m);
        PQfinish(c);
    } else {
        err = connect_one(out, p, ctx);
        if (err == MF_OK)
            return MF_OK;
    }
    (void)pthread_mutex_lock(&p->lock);
    p->n_open--;
    (void)pthread_cond_signal(&p->freed);
    (void)pthread_mutex_unlock(&p->lock);
    return err;
}

void mf_pg__release(struct mf_pg_pool *p, PGconn *conn)
{
    /* A connection left inside a transaction (a bug) or broken is closed, not reused: the
     * next borrower must start from a clean session. */
    int reusable = PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;

    if (!reusable)
        PQfinish(conn);
    (void)pthread_mutex_lock(&p->lock);
    if (reusable)
        p->idle[p->n_idle++] = conn;
    else
        p->n_open--;
    (void)pthread_cond_signal(&p->freed);
    (void)pthread_mutex_unlock(&p->lock);
}

static void param_add(struct mf_pg_params *p, const char *v, int len, int format)
{
    assert(p->n < MF_PG_PARAMS_MAX);
    p->values[p->n] = v;
    p->lengths[p->n] = len;
    p->formats[p->n] = format;
    p->n++;
}

void mf_pg__param_text(struct mf_pg_params *p, const char *s)
{
    param_add(p, s, 0, 0);
}

void mf_pg__param_i64(struct mf_pg_params *p, int64_t v)
{
    char *d = p->digits[p->n];

    (void)snprintf(d, sizeof(p->digits[0]), "%lld", (long long)v);
    param_add(p, d, 0, 0);
}

void mf_pg__param_f64(struct mf_pg_params *p, double v)
{
    char *d = p->digits[p->n];

    (void)snprintf(d, sizeof(p->digits[0]), "%.17g", v);
    param_add(p, d, 0, 0);
}

void mf_pg__param_blob(struct mf_pg_params *p, const void *data, size_t len)
{
    param_add(p, data, (int)len, 1);
}

static int result_fail(struct mf_ctx *ctx, const PGresult *res, PGconn *conn, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *m = res ? PQresultErrorMessage(res) : PQerrorMessage(conn);

    if (!m || !m[0])
        m = PQerrorMessage(conn);
    /* Class 23 (unique, foreign key, check): the caller's data clashes with stored state. */
    if (state && strncmp(state, "23", 2) == 0)
        return mf_fail(ctx, MF_E_STATE, "postgresql constraint: %.*s", msg_len(m), m);
    return mf_fail(ctx, MF_E_IO, "postgresql %s: %.*s", what, msg_len(m), m);
}

static int result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);

    return res && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
}

/* FNV-1a, 64 bits: names a statement by its text (a clash among a few hundred statements
 * is out of reach). */
static uint64_t sql_hash(const char *sql)
{
    uint64_t h = 14695981039346656037u;

    for (const unsigned char *q = (const unsigned char *)sql; *q; q++)
        h = (h ^ *q) * 1099511628211u;
    return h;
}

/* The text PostgreSQL is sent for `sql`: `sql` itself without `?` placeholders, else its
 * rewriting into `room` (mf_store__sql_to_pg). NULL when it does not fit. */
#define SQL_ROOM 8192
static const char *pg_text(char room[SQL_ROOM], const char *sql)
{
    if (!strchr(sql, '?'))
        return sql;
    return mf_store__sql_to_pg(room, SQL_ROOM, sql) == MF_OK ? room : NULL;
}

/* Prepares `sql` as statement `name` on the connection's session unless it is already.
 * 1: it is prepared; 0: run it unprepared (no session state, or the session is full);
 * -1: the prepare failed (*fail holds the server's answer, NULL for a statement too long to
 * rewrite). */
static int prepare_once(PGresult **fail, PGconn *conn, const char *name, uint64_t h,
                        const char *sql, int n_params)
{
    struct mf_pg_session *s = mf_pg__session(conn);
    char room[SQL_ROOM];
    const char *text;
    PGresult *res;

    if (!s)
        return 0;
    for (size_t i = 0; i < s->n_prepared; i++) {
        if (s->prepared[i] == h)
            return 1;
    }
    if (s->n_prepared == MF_PG_PREPARED_MAX)
        return 0;
    text = pg_text(room, sql);
    if (!text) {
        *fail = NULL;
        return -1;
    }
    res = PQprepare(conn, name, text, n_params, NULL);
    if (!result_ok(res)) {
        *fail = res;
        return -1;
    }
    PQclear(res);
    s->prepared[s->n_prepared++] = h;
    return 1;
}

static PGresult *run(PGconn *conn, const char *sql, const struct mf_pg_params *params)
{
    static const struct mf_pg_params none;
    PGresult *fail = NULL;
    char name[24], room[SQL_ROOM];
    const char *text;
    uint64_t h;
    int prepared = 0;

    if (!params)
        params = &none;
    /* Statements with parameters are the ones requests repeat; BEGIN / COMMIT and the
     * like stay plain. A prepared statement is named by the hash of the text the store
     * wrote, so running it again needs no rewriting. */
    if (params->n > 0) {
        h = sql_hash(sql);
        (void)snprintf(name, sizeof(name), "mf_%016llx", (unsigned long long)h);
        prepared = prepare_once(&fail, conn, name, h, sql, params->n);
    }
    if (prepared < 0)
        return fail;
    if (prepared)
        return PQexecPrepared(conn, name, params->n, params->values, params->lengths,
                              params->formats, 1);
    text = pg_text(room, sql);
    if (!text)
        return NULL;
    return PQexecParams(conn, text, params->n, NULL, params->values, params->lengths,
                        params->formats, 1);
}

int mf_pg__query(PGresult **out, PGconn *conn, struct mf_ctx *ctx, const char *sql,
                 const struct mf_pg_params *params, const char *what)
{
    int idle = PQtransactionStatus(conn) == PQTRANS_IDLE;
    PGresult *res = run(conn, sql, params);
    int err;

    *out = NULL;
    /* A statement outside a transaction that met a dropped connection (server restart,
     * failover, pg_terminate_backend) had no effect; run it once more on a fresh one. */
    if (!result_ok(res) && idle && PQstatus(conn) == CONNECTION_BAD) {
        PQclear(res);
        PQreset(conn);
        res = PQstatus(conn) == CONNECTION_OK ? run(conn, sql, params) : NULL;
    }
    if (result_ok(res)) {
        *out = res;
        return MF_OK;
    }
    err = result_fail(ctx, res, conn, what);
    PQclear(res);
    return err;
}

int mf_pg__exec(PGconn *conn, struct mf_ctx *ctx, const char *sql,
                const struct mf_pg_params *params, const char *what)
{
    PGresult *res = NULL;
    int err = mf_pg__query(&res, conn, ctx, sql, params, what);

    PQclear(res);
    return err;
}

int mf_pg__exec_script(PGconn *conn, struct mf_ctx *ctx, const char *sql, const char *what)
{
    PGresult *res = PQexec(conn, sql);
    int err = MF_OK;

    if (!result_ok(res))
        err = result_fail(ctx, res, conn, what);
    PQclear(res);
    return err;
}

int mf_pg__begin(PGconn *conn, struct mf_ctx *ctx)
{
    return mf_pg__exec(conn, ctx, "BEGIN", NULL, "BEGIN");
}

int mf_pg__end(PGconn *conn, struct mf_ctx *ctx, int err)
{
    PGresult *res;

    if (err == MF_OK)
        return mf_pg__exec(conn, ctx, "COMMIT", NULL, "COMMIT");
    /* The callee's message stays; a failed ROLLBACK leaves the connection unusable, and
     * mf_pg__release() then closes it. */
    res = PQexec(conn, "ROLLBACK");
    PQclear(res);
    return err;
}

int mf_pg__walk(PGconn *conn, struct mf_ctx *ctx, const char *sql,
                const struct mf_pg_params *params, mf_pg_row_fn visit, void *payload)
{
    static const struct mf_pg_params none;
    char room[SQL_ROOM];
    const char *text = pg_text(room, sql);
    PGresult *res;
    int err = MF_OK;

    if (!params)
        params = &none;
    if (!text)
        return mf_fail(ctx, MF_E_LIMIT, "statement of %zu bytes is too long to send", strlen(sql));
    if (!PQsendQueryParams(conn, text, params->n, NULL, params->values, params->lengths,
                           params->formats, 1) ||
        !PQsetSingleRowMode(conn))
        return result_fail(ctx, NULL, conn, "listing");
    /* Every result is read even after the visitor stopped the walk: the connection is only
     * reusable once libpq has seen the end of the query. */
    for (res = PQgetResult(conn); res; res = PQgetResult(conn)) {
        ExecStatusType st = PQresultStatus(res);

        if (st == PGRES_SINGLE_TUPLE && err == MF_OK)
            err = visit(res, payload);
        else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && err == MF_OK)
            err = result_fail(ctx, res, conn, "listing");
        PQclear(res);
    }
    return err;
}

int64_t mf_pg__col_i64(const PGresult *res, int row, int col)
{
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, row, col);
    int len = PQgetlength(res, row, col);
    uint64_t v = 0;

    if (PQgetisnull(res, row, col))
        return 0;
    assert(len == 2 || len == 4 || len == 8);
    for (int i = 0; i < len; i++)
        v = (v << 8) | p[i];
    /* Sign-extend the narrower binary integers (network byte order, two's complement). */
    if (len < 8 && (p[0] & 0x80))
        v |= ~(uint64_t)0 << (8 * len);
    return (int64_t)v;
}

double mf_pg__col_f64(const PGresult *res, int row, int col)
{
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, row, col);
    int len = PQgetlength(res, row, col);
    uint64_t v = 0;
    double d;
    float f;

    if (PQgetisnull(res, row, col))
        return 0;
    assert(len == 4 || len == 8);
    /* IEEE 754 in network byte order. */
    for (int i = 0; i < len; i++)
        v = (v << 8) | p[i];
    if (len == 4) {
        uint32_t w = (uint32_t)v;

        memcpy(&f, &w, sizeof(f));
        return f;
    }
    memcpy(&d, &v, sizeof(d));
    return d;
}

void mf_pg__col_text(char *dst, size_t size, const PGresult *res, int row, int col)
{
    (void)snprintf(dst, size, "%.*s", PQgetlength(res, row, col), PQgetvalue(res, row, col));
}

uint64_t mf_pg__changes(const PGresult *res)
{
    const char *n = PQcmdTuples((PGresult *)res);
    uint64_t v = 0;

    while (*n >= '0' && *n <= '9')
        v = v * 10 + (uint64_t)(*n++ - '0');
    return v;
}
