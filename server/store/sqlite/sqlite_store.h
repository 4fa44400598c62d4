/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the SQLite store: its handle and what sqlite_conn.c (connections, locking, the
 * engine, migrations) gives sqlite_checkin.c (the check-in path). Every statement runs under
 * the store's one lock, on one of its two connections.
 */
#ifndef MF_SERVER_STORE_SQLITE_STORE_H
#define MF_SERVER_STORE_SQLITE_STORE_H

#include "store/sqlite/sqlite_stmt.h"
#include "store/store_engine.h"

#include <pthread.h>
#include <sqlite3.h>

/* A connection and its prepared statements. */
struct mf_sqlite_conn {
    sqlite3 *db;
    struct mf_sqlite_stmts stmts;
};

/*
 * Two connections to the one database, both used only under `lock`, so they never contend
 * inside SQLite: `durable` (synchronous=FULL) for everything but check-ins, and `checkins`
 * (synchronous=NORMAL) for the writes that need not wait for the disk (docs/architecture.md,
 * "Check-in path"). A second connection instead of switching the level per transaction: a
 * PRAGMA is compiled anew each time it runs, a cost on every check-in
 * (bench/server/README.md, "Store design figures"). `c` is the one statements run on: &durable but
 * inside the check-in ops.
 */
struct mf_sqlite_store {
    struct mf_store base; /* first: callers see only this */
    struct mf_sqlite_conn durable, checkins, *c;
    char location[4096]; /* what was opened: the check-in connection opens it on first use */
    pthread_mutex_t lock;
    mf_allocator alloc;
    uint64_t floor; /* of this open store's epoch (sqlite_checkin.c), under `lock` */
    int floor_set;
};

static inline struct mf_sqlite_store *mf_sqlite__from(struct mf_store *s)
{
    return (struct mf_sqlite_store *)s;
}

/* The transaction handle of the engine: the store itself, its lock held and a transaction
 * begun on s->c (sqlite_checkin.c runs the directive reads of its batch so). */
static inline struct mf_store_tx *mf_sqlite__tx(struct mf_sqlite_store *s)
{
    return (struct mf_store_tx *)s;
}

void mf_sqlite__lock(struct mf_sqlite_store *s);
void mf_sqlite__unlock(struct mf_sqlite_store *s);
/* Under the lock, on s->c: an MF_E_IO message naming `what` and SQLite's own. */
int mf_sqlite__fail(struct mf_ctx *ctx, struct mf_sqlite_store *s, const char *what);
/* A statement from the connection's cache (prepared once per SQL text), and giving it back
 * (reset, bindings cleared; NULL is a no-op). */
int mf_sqlite__prepare(sqlite3_stmt **out, struct mf_sqlite_store *s, struct mf_ctx *ctx,
                       const char *sql);
void mf_sqlite__finish(struct mf_sqlite_store *s, sqlite3_stmt *st);
/* A statement without parameters or rows that runs often (BEGIN, COMMIT), prepared once. */
int mf_sqlite__run(struct mf_sqlite_store *s, struct mf_ctx *ctx, const char *sql);
/* Copies a text column into dst (truncating), "" for NULL. */
void mf_sqlite__text_col(char *dst, size_t size, sqlite3_stmt *st, int col);

/* sqlite_checkin.c: the check-in ops (semantics in store.h). */
extern const struct mf_store_checkin_ops mf_store__sqlite_checkin_ops;

#endif /* MF_SERVER_STORE_SQLITE_STORE_H */
