/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A per-connection cache of prepared SQLite statements, keyed by their SQL text. Parsing and
 * planning a statement costs more than running the indexed lookups a check-in makes, so each
 * statement is compiled once per connection and reset for the next use. The caller
 * serialises access to the connection (the store's lock), as it does for the statements.
 */
#ifndef MF_SERVER_STORE_SQLITE_STMT_H
#define MF_SERVER_STORE_SQLITE_STMT_H

#include "mf_ctx.h"

#include <sqlite3.h>
#include <stdint.h>

#define MF_SQLITE_STMT_CACHE 64 /* distinct statements kept; more are prepared per use */

struct mf_sqlite_stmts {
    sqlite3_stmt *st[MF_SQLITE_STMT_CACHE];
    uint32_t hash[MF_SQLITE_STMT_CACHE];
    unsigned char busy[MF_SQLITE_STMT_CACHE]; /* handed out and not yet given back */
};

/* The statement for `sql` on `db`, from the cache or freshly prepared (and kept when there is
 * room). The SQLite result code of the prepare; give the statement back with
 * mf_sqlite__stmt_put, never sqlite3_finalize. */
int mf_sqlite__stmt_get(sqlite3_stmt **out, struct mf_sqlite_stmts *c, sqlite3 *db,
                        const char *sql);
/* Resets a cached statement (bindings cleared) or finalizes one the cache does not hold.
 * NULL is a no-op. */
void mf_sqlite__stmt_put(struct mf_sqlite_stmts *c, sqlite3_stmt *st);
/* Finalizes every cached statement (before the connection closes). */
void mf_sqlite__stmts_free(struct mf_sqlite_stmts *c);

#endif /* MF_SERVER_STORE_SQLITE_STMT_H */
