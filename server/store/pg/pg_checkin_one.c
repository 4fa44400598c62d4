/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL check-in path, one check-in at a time (pg_store.h): the store epoch each
 * database session raises before it issues sequence numbers without waiting for the WAL,
 * device_reserve_sequence, and a check-in's own statement (the device row's UPDATE and the
 * directives of its models, or the UPDATE alone when the node's cache knows them unpinned).
 * pg_checkin.c runs the check-ins that arrived together in one statement and falls back to
 * these.
 */
#include "store/pg/pg_store.h"

#include <stdio.h>
#include <string.h>

/* The directives of row `row` of a statement's result from column `col`
 * (MF_STORE_DIRECTIVE_COLUMNS). */
void mf_pg__directives_row(struct mf_store_directives *out, const PGresult *res, int row, int col)
{
    struct mf_store_cursor cur = mf_pg__cursor(res, row);

    mf_store__directives_row(out, &cur, col);
}

/* Raises the store epoch with a synchronous commit, once per database session, and keeps
 * the floor it gives in the session (mf.seq_floor) where the reservation reads it. A
 * reservation on a session that has not raised it fails instead of using a stale floor:
 * current_setting() without missing_ok errors out on a session that never set it. Per
 * session, not per node: asynchronous commits are lost only when the server stops, and a
 * stopped server ends every session, so each number issued afterwards comes from a session
 * that raised the epoch after the loss (docs/architecture.md, "Check-in path"). */
int mf_pg__raise_epoch(PGconn *c, struct mf_ctx *ctx)
{
    /* One statement, so a retry on a re-established connection (mf_pg__query) raises the
     * epoch again on the session that keeps the floor. */
    _Static_assert(MF_STORE_EPOCH_SHIFT == 32, "raise_epoch's SQL shifts by 32");
    struct mf_pg_session *sess = mf_pg__session(c);
    PGresult *res = NULL;
    uint64_t floor = 0;
    int err;

    if (sess && sess->floor_set)
        return MF_OK;
    err = mf_pg__query(&res, c, ctx,
                       "WITH e AS (UPDATE store_meta SET epoch = epoch + 1 WHERE id = 1"
                       " RETURNING epoch) SELECT epoch, set_config('mf.seq_floor',"
                       " ((epoch - 1) << 32)::text, false) FROM e",
                       NULL, "raising the store epoch");
    if (err == MF_OK && PQntuples(res) != 1)
        err = mf_fail(ctx, MF_E_STATE, "store_meta has no row: the store is not migrated");
    /* Checks the epoch's range; the floor the session keeps is the same number. */
    if (err == MF_OK)
        err = mf_store__epoch_floor(&floor, ctx, mf_pg__col_i64(res, 0, 0));
    PQclear(res);
    if (err == MF_OK && sess)
        sess->floor_set = 1;
    return err;
}

static int reserve_on(uint64_t *first_out, PGconn *c, struct mf_ctx *ctx, const char *device_id,
                      unsigned n)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err = mf_pg__raise_epoch(c, ctx);

    if (err < 0)
        return err;
    mf_pg__param_i64(&p, n);
    mf_pg__param_text(&p, device_id);
    /* One statement: the row lock of the UPDATE serialises concurrent check-ins of the same
     * device on every node, so blocks never overlap; its commit does not wait for the WAL
     * flush (see raise_epoch). */
    err = mf_pg__query(&res, c, ctx,
                       "WITH async AS (SELECT set_config('synchronous_commit', 'off', true))"
                       " UPDATE devices SET assign_seq = greatest(assign_seq,"
                       " current_setting('mf.seq_floor')::bigint) + $1 FROM async"
                       " WHERE device_id = $2 RETURNING assign_seq",
                       &p, "reserving assignment sequence numbers");
    if (err == MF_OK && PQntuples(res) == 1)
        *first_out = (uint64_t)mf_pg__col_i64(res, 0, 0) - n + 1;
    else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    PQclear(res);
    return err;
}

/* Whether `c`'s connection was re-established under the statement that just failed
 * (mf_pg__query retries once on a dropped connection): the new session has no floor yet,
 * so the caller raises it and goes again. */
static int lost_session(int err, PGconn *c)
{
    struct mf_pg_session *sess = mf_pg__session(c);

    return err == MF_E_IO && sess && !sess->floor_set && PQstatus(c) == CONNECTION_OK;
}

int mf_pg__device_reserve_sequence(uint64_t *first_out, struct mf_store *base, struct mf_ctx *ctx,
                                   const char *device_id, unsigned n)
{
    PGconn *c;
    int err;

    *first_out = 0;
    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = reserve_on(first_out, c, ctx, device_id, n);
    if (lost_session(err, c))
        err = reserve_on(first_out, c, ctx, device_id, n);
    mf_pg__put(base, c);
    return err;
}

/* Model names never contain '/' (protocol names), so one text parameter carries them all. */
static int join_models(char *out, size_t size, struct mf_ctx *ctx, const char *const *models,
                       size_t n)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(out + len, size - len, "%s%s", i ? "/" : "", models[i]);

        if (k < 0 || (size_t)k >= size - len)
            return mf_fail(ctx, MF_E_LIMIT, "more models than a check-in carries");
        len += (size_t)k;
    }
    return MF_OK;
}

/* A check-in's models, one text parameter (join_models), as rows m(model, ord) in their order;
 * and each one's directives (MF_STORE_DIRECTIVE_COLUMNS after its ord). */
#define MODELS_OF(param)                                                                           \
    "unnest(string_to_array((SELECT " param "::text), '/')) WITH ORDINALITY AS m(model, ord)"      \
    " ON true"
#define MODEL_DIRECTIVES "m.ord, " MF_STORE_DIRECTIVE_COLUMNS("m.model", MF_SQL_C)

/* The generation (column gen_col of the first row) and the directives of each model (from
 * column dir_col, a row each) of a result that must hold `rows` rows. */
static int take_directives(uint64_t *generation_out, struct mf_store_directives *dirs_out,
                           struct mf_ctx *ctx, const PGresult *res, size_t rows, size_t n_models,
                           int gen_col, int dir_col)
{
    if ((size_t)PQntuples(res) != rows)
        return mf_fail(ctx, MF_E_STATE, "check-in of %zu models read %d directive rows", n_models,
                       PQntuples(res));
    *generation_out = (uint64_t)mf_pg__col_i64(res, 0, gen_col);
    for (size_t i = 0; i < n_models; i++)
        mf_pg__directives_row(&dirs_out[i], res, (int)i, dir_col);
    return MF_OK;
}

/* $1..$4 of a check-in's own statement (begin_full, begin_unpinned): the device row's UPDATE. */
static void begin_params(struct mf_pg_params *p, int64_t now, const char *device_id, unsigned n_seq,
                         const uint8_t *cred_hash)
{
    memset(p, 0, sizeof(*p));
    mf_pg__param_i64(p, now);
    mf_pg__param_text(p, device_id);
    mf_pg__param_i64(p, n_seq);
    mf_pg__param_blob(p, cred_hash, MF_SHA256_LEN);
}

static int begin_full(uint64_t *generation_out, uint64_t *first_out,
                      struct mf_store_directives *dirs_out, PGconn *c, struct mf_ctx *ctx,
                      const char *device_id, const uint8_t *cred_hash, unsigned n_seq,
                      const char *models, size_t n_models, int64_t now)
{
    /* The device row's UPDATE (last_seen, the sequence block above the session's floor,
     * without waiting for the WAL flush: see raise_epoch), then one row per model with its
     * directives, in model order; no model: one row with NULL directives. The models come
     * through a sub-select so the planner never sees their value: its estimate is then the
     * same for every call, and the prepared statement settles on one generic plan instead
     * of planning each check-in anew. */
    static const char sql[] =
        "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"
        " d AS (UPDATE devices SET last_seen = $1, assign_seq = greatest(assign_seq,"
        "  current_setting('mf.seq_floor')::bigint) + $3 FROM async WHERE device_id = $2"
        "  AND credential_hash = $4"
        "  RETURNING id, device_id, channel, assign_seq)"
        " SELECT d.assign_seq, (SELECT generation FROM store_meta WHERE id = 1), " MODEL_DIRECTIVES
        " FROM d LEFT JOIN " MODELS_OF("$5") " ORDER BY m.ord";
    struct mf_pg_params p;
    PGresult *res = NULL;
    int err;

    begin_params(&p, now, device_id, n_seq, cred_hash);
    mf_pg__param_text(&p, models);
    err = mf_pg__query(&res, c, ctx, sql, &p, "beginning a check-in");
    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    if (err == MF_OK)
        err = take_directives(generation_out, dirs_out, ctx, res, n_models ? n_models : 1, n_models,
                              1, 3);
    if (err == MF_OK)
        *first_out = (uint64_t)mf_pg__col_i64(res, 0, 0) - n_seq + 1;
    PQclear(res);
    return err;
}

/* The directives of each model and the generation, read in one snapshot (after the device's
 * row was written by begin_unpinned or the batch's statement). */
static int directives_now(uint64_t *generation_out, struct mf_store_directives *dirs_out, PGconn *c,
                          struct mf_ctx *ctx, const char *device_id, const char *models,
                          size_t n_models)
{
    static const char sql[] =
        "SELECT (SELECT generation FROM store_meta WHERE id = 1), " MODEL_DIRECTIVES
        " FROM devices d JOIN " MODELS_OF("$2") " WHERE d.device_id = $1 ORDER BY m.ord";
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, models);
    err = mf_pg__query(&res, c, ctx, sql, &p, "reading a check-in's directives");
    if (err == MF_OK)
        err = take_directives(generation_out, dirs_out, ctx, res, n_models, n_models, 0, 2);
    PQclear(res);
    return err;
}

/*
 * begin_full for a check-in whose models the hint names all unpinned: the same UPDATE
 * without the pin reads. PostgreSQL starts every sub-plan of a statement on each execution
 * whether it runs or not, so only a statement without them saves their cost
 * (bench/server/README.md, "Store design figures"). Should the store have moved past the hint's
 * generation, the directives and the new generation are read afterwards, in one snapshot.
 */
static int begin_unpinned(uint64_t *generation_out, uint64_t *first_out,
                          struct mf_store_directives *dirs_out, PGconn *c, struct mf_ctx *ctx,
                          const char *device_id, const uint8_t *cred_hash, unsigned n_seq,
                          const char *models, size_t n_models, int64_t now,
                          const struct mf_store_pin_hint *hint)
{
    static const char sql[] =
        "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"
        " d AS (UPDATE devices SET last_seen = $1, assign_seq = greatest(assign_seq,"
        "  current_setting('mf.seq_floor')::bigint) + $3 FROM async WHERE device_id = $2"
        "  AND credential_hash = $4 RETURNING channel, assign_seq)"
        " SELECT d.assign_seq, (SELECT generation FROM store_meta WHERE id = 1), d.channel"
        " FROM d";
    char channel[MF_STORE_NAME_SIZE];
    struct mf_pg_params p;
    PGresult *res = NULL;
    int err;

    begin_params(&p, now, device_id, n_seq, cred_hash);
    err = mf_pg__query(&res, c, ctx, sql, &p, "beginning a check-in");
    if (err == MF_OK && PQntuples(res) != 1)
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    if (err == MF_OK) {
        *first_out = (uint64_t)mf_pg__col_i64(res, 0, 0) - n_seq + 1;
        *generation_out = (uint64_t)mf_pg__col_i64(res, 0, 1);
        mf_pg__col_text(channel, sizeof(channel), res, 0, 2);
    }
    PQclear(res);
    if (err == MF_OK && *generation_out != hint->generation)
        return directives_now(generation_out, dirs_out, c, ctx, device_id, models, n_models);
    for (size_t i = 0; err == MF_OK && i < n_models; i++)
        mf_store__directives_unpinned(&dirs_out[i], channel);
    return err;
}

int mf_pg__hinted_unpinned(const struct mf_store_checkin *c)
{
    uint64_t all = c->n_models >= 64 ? UINT64_MAX : (UINT64_C(1) << c->n_models) - 1;

    return c->hint && c->n_models > 0 && (c->hint->unpinned & all) == all;
}

static int begin_on(struct mf_store_checkin *c, PGconn *conn, const char *models)
{
    int err = mf_pg__raise_epoch(conn, c->ctx);

    if (err < 0)
        return err;
    if (mf_pg__hinted_unpinned(c))
        return begin_unpinned(&c->generation, &c->first, c->dirs, conn, c->ctx, c->device_id,
                              c->cred_hash, c->n_seq, models, c->n_models, c->now, c->hint);
    return begin_full(&c->generation, &c->first, c->dirs, conn, c->ctx, c->device_id, c->cred_hash,
                      c->n_seq, models, c->n_models, c->now);
}

int mf_pg__checkin_one(struct mf_store_checkin *c, PGconn *conn)
{
    char names[MF_STORE_CHECKIN_MAX_MODELS * MF_STORE_NAME_SIZE];
    int err = join_models(names, sizeof(names), c->ctx, c->models, c->n_models);

    if (err < 0)
        return err;
    err = begin_on(c, conn, names);
    if (lost_session(err, conn))
        err = begin_on(c, conn, names);
    return err;
}

int mf_pg__checkin_directives(struct mf_store_checkin *c, PGconn *conn)
{
    char names[MF_STORE_CHECKIN_MAX_MODELS * MF_STORE_NAME_SIZE];
    int err = join_models(names, sizeof(names), c->ctx, c->models, c->n_models);

    if (err == MF_OK)
        err =
            directives_now(&c->generation, c->dirs, conn, c->ctx, c->device_id, names, c->n_models);
    return err;
}
