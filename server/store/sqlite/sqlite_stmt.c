/* SPDX-License-Identifier: Apache-2.0 */
/* The per-connection prepared-statement cache (see sqlite_stmt.h). */
#include "store/sqlite/sqlite_stmt.h"

#include <string.h>

/* FNV-1a: a cheap filter before the exact text compare. */
static uint32_t sql_hash(const char *sql)
{
    uint32_t h = 2166136261u;

    for (const unsigned char *p = (const unsigned char *)sql; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

int mf_sqlite__stmt_get(sqlite3_stmt **out, struct mf_sqlite_stmts *c, sqlite3 *db, const char *sql)
{
    uint32_t h = sql_hash(sql);
    int free_slot = -1;
    int rc;

    for (int i = 0; i < MF_SQLITE_STMT_CACHE; i++) {
        if (!c->st[i]) {
            if (free_slot < 0)
                free_slot = i;
            continue;
        }
        /* A statement in use (a walk calling back into the same op) gets a private copy. */
        if (c->hash[i] == h && !c->busy[i] && strcmp(sqlite3_sql(c->st[i]), sql) == 0) {
            c->busy[i] = 1;
            *out = c->st[i];
            return SQLITE_OK;
        }
    }
    rc = sqlite3_prepare_v3(db, sql, -1, free_slot >= 0 ? SQLITE_PREPARE_PERSISTENT : 0, out, NULL);
    if (rc == SQLITE_OK && free_slot >= 0) {
        c->st[free_slot] = *out;
        c->hash[free_slot] = h;
        c->busy[free_slot] = 1;
    }
    return rc;
}

void mf_sqlite__stmt_put(struct mf_sqlite_stmts *c, sqlite3_stmt *st)
{
    if (!st)
        return;
    for (int i = 0; i < MF_SQLITE_STMT_CACHE; i++) {
        if (c->st[i] == st) {
            /* reset also ends the statement's read transaction, as finalize would */
            (void)sqlite3_reset(st);
            (void)sqlite3_clear_bindings(st);
            c->busy[i] = 0;
            return;
        }
    }
    (void)sqlite3_finalize(st);
}

void mf_sqlite__stmts_free(struct mf_sqlite_stmts *c)
{
    for (int i = 0; i < MF_SQLITE_STMT_CACHE; i++) {
        (void)sqlite3_finalize(c->st[i]);
        c->st[i] = NULL;
        c->busy[i] = 0;
    }
}
