/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the PostgreSQL store: its handle and what pg_conn.c (open, the engine the
 * backend-neutral ops run on, migrations) gives pg_checkin.c (the check-in path). The
 * connection pool and libpq helpers are pg_pool.c's.
 */
#ifndef MF_SERVER_STORE_PG_STORE_H
#define MF_SERVER_STORE_PG_STORE_H

#include "store/pg/pg_pool.h"
#include "store/store_engine.h"

struct mf_pg_store {
    struct mf_store base; /* first: callers see only this */
    struct mf_pg_pool *pool;
    mf_allocator alloc;
};

/* Borrows a connection for one op; every op pairs it with mf_pg__put. */
int mf_pg__get(PGconn **out, struct mf_store *base, struct mf_ctx *ctx);
void mf_pg__put(struct mf_store *base, PGconn *c);

/* A cursor over row `row` of a binary result (the engine's, and pg_checkin.c's reads of
 * its statements' directive columns through mf_store__directives_row). */
struct mf_store_cursor mf_pg__cursor(const PGresult *res, int row);

/* Applies the pending migrations up to schema `target` (migrate is this up to the latest);
 * tests use it to build a store as an older release left it. MF_E_INVALID for a target
 * beyond the latest. */
int mf_pg__migrate_to(int *applied_out, struct mf_store *base, struct mf_ctx *ctx, int target);

/* pg_checkin_one.c: one check-in on its own statements (pg_checkin.c falls back to them).
 * raise_epoch: once per database session, before the session issues sequence numbers without
 * waiting for the WAL (its comment says why). checkin_one: checkin_begin of one item, its
 * err left to the caller. checkin_directives: the directives of c's models and the generation
 * in one snapshot, after its device row was written. hinted_unpinned: whether c's hint names
 * every model unpinned. directives_row: MF_STORE_DIRECTIVE_COLUMNS from column `col` of row
 * `row`. */
int mf_pg__raise_epoch(PGconn *c, struct mf_ctx *ctx);
int mf_pg__device_reserve_sequence(uint64_t *first_out, struct mf_store *base, struct mf_ctx *ctx,
                                   const char *device_id, unsigned n);
int mf_pg__checkin_one(struct mf_store_checkin *c, PGconn *conn);
int mf_pg__checkin_directives(struct mf_store_checkin *c, PGconn *conn);
int mf_pg__hinted_unpinned(const struct mf_store_checkin *c);
void mf_pg__directives_row(struct mf_store_directives *out, const PGresult *res, int row, int col);

/* pg_checkin.c: the check-in ops (semantics in store.h), and the check-ins that went
 * through a batch's one statement so far, in this process (a statement that fails falls
 * back to one statement each, silently but for this). */
extern const struct mf_store_checkin_ops mf_store__pg_checkin_ops;
uint64_t mf_pg__checkin_batched(void);

#endif /* MF_SERVER_STORE_PG_STORE_H */
