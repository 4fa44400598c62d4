/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PostgreSQL backend's plumbing (pg_pool.c): a small pool of libpq connections shared by
 * MHD's worker threads, and query helpers that run parameterised statements with binary
 * results and turn failures into mf_fail messages. pg_conn.c runs the store's ops on top of it.
 *
 * A connection belongs to one thread between mf_pg__acquire() and mf_pg__release(); libpq
 * connections are not safe to share, the pool is. Connections are opened lazily up to
 * MF_PG_POOL_MAX and re-established after the server dropped them.
 *
 * Statements may be written with `?` placeholders (the store's catalogue,
 * store_engine.h): they are turned into $1..$n when the statement is prepared or sent, never
 * on the path that runs a statement already prepared on the session.
 */
#ifndef MF_SERVER_STORE_PG_POOL_H
#define MF_SERVER_STORE_PG_POOL_H

#include "mf_ctx.h"

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#define MF_PG_POOL_MAX 16   /* connections per mf-server node (MHD runs 4 threads by default) */
#define MF_PG_URL_MAX 1024  /* a postgresql:// URL, bytes */
#define MF_PG_PARAMS_MAX 16 /* parameters of one statement */

struct mf_pg_pool;

/* Opens the pool and one connection to check the URL. MF_E_NOTFOUND when the database does
 * not exist, MF_E_IO when the server cannot be reached, MF_E_LIMIT for an over-long URL.
 * Ownership: release with mf_pg__pool_free(). */
int mf_pg__pool_new(struct mf_pg_pool **out, struct mf_ctx *ctx, const char *url);
void mf_pg__pool_free(struct mf_pg_pool *p); /* NULL is a no-op; every conn must be released */

/* Takes a connection (waits while all MF_PG_POOL_MAX are busy). MF_E_IO when none can be
 * made. Ownership: give it back with mf_pg__release(). */
int mf_pg__acquire(PGconn **out, struct mf_pg_pool *p, struct mf_ctx *ctx);
void mf_pg__release(struct mf_pg_pool *p, PGconn *conn);

/*
 * What one database session of a pooled connection holds besides the connection: the
 * statements prepared on it (mf_pg__query prepares each parameterised statement once per
 * session, so the server parses and plans it once) and the store's use of it (pg_checkin_one.c: the
 * epoch floor the session raised). libpq forgets none of this by itself, so it is cleared
 * when libpq re-establishes the connection (PQreset), where the server forgot it.
 */
#define MF_PG_PREPARED_MAX 128 /* statements prepared per session; more run unprepared */

struct mf_pg_session {
    uint64_t prepared[MF_PG_PREPARED_MAX]; /* hashes of the SQL texts prepared */
    size_t n_prepared;
    int floor_set; /* pg_checkin_one.c: this session raised the store epoch */
};

/* The session state of a connection the pool made; NULL for any other connection. */
struct mf_pg_session *mf_pg__session(PGconn *conn);

/* Statement parameters: text, numbers (sent as decimal text: a double with 17 significant
 * digits, which reads back exactly) and binary blobs. */
struct mf_pg_params {
    const char *values[MF_PG_PARAMS_MAX];
    int lengths[MF_PG_PARAMS_MAX];
    int formats[MF_PG_PARAMS_MAX];
    char digits[MF_PG_PARAMS_MAX][32];
    int n;
};

void mf_pg__param_text(struct mf_pg_params *p, const char *s);
void mf_pg__param_i64(struct mf_pg_params *p, int64_t v);
void mf_pg__param_f64(struct mf_pg_params *p, double v);
void mf_pg__param_blob(struct mf_pg_params *p, const void *data, size_t len);

/*
 * Runs one statement with binary results. MF_OK with *out set (free with PQclear), or
 * MF_E_STATE for a constraint violation (SQLSTATE class 23), MF_E_IO otherwise; `what` names
 * the step in the message. Outside a transaction a statement that found its connection
 * dropped is retried once on a fresh one.
 */
int mf_pg__query(PGresult **out, PGconn *conn, struct mf_ctx *ctx, const char *sql,
                 const struct mf_pg_params *params, const char *what);
/* Same, for statements whose rows are not needed. */
int mf_pg__exec(PGconn *conn, struct mf_ctx *ctx, const char *sql,
                const struct mf_pg_params *params, const char *what);
/* Runs `sql` (may hold several statements, no parameters) with PQexec. */
int mf_pg__exec_script(PGconn *conn, struct mf_ctx *ctx, const char *sql, const char *what);

/* BEGIN; and the matching end: COMMIT when `err` is MF_OK, ROLLBACK otherwise. Returns `err`,
 * or the COMMIT's failure. */
int mf_pg__begin(PGconn *conn, struct mf_ctx *ctx);
int mf_pg__end(PGconn *conn, struct mf_ctx *ctx, int err);

/* Streams the rows of `sql` one at a time (libpq single-row mode: a listing of a million
 * devices never sits in memory at once) into `visit`; a negative return stops the walk
 * and is returned unchanged. */
typedef int (*mf_pg_row_fn)(const PGresult *res, void *payload);
int mf_pg__walk(PGconn *conn, struct mf_ctx *ctx, const char *sql,
                const struct mf_pg_params *params, mf_pg_row_fn visit, void *payload);

/* Column readers for binary results. */
int64_t mf_pg__col_i64(const PGresult *res, int row, int col); /* int2/4/8; NULL reads 0 */
double mf_pg__col_f64(const PGresult *res, int row, int col);  /* float4/8; NULL reads 0 */
void mf_pg__col_text(char *dst, size_t size, const PGresult *res, int row, int col);
/* Rows changed by an INSERT/UPDATE/DELETE result. */
uint64_t mf_pg__changes(const PGresult *res);

#endif /* MF_SERVER_STORE_PG_POOL_H */
