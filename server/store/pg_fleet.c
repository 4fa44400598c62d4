/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL ops of schema migration 3 (semantics in store.h, same as sqlite.c): device
 * groups and channels, directives, admin tokens with roles, jobs claimed across nodes and
 * precomputed deltas. Job claims use FOR UPDATE SKIP LOCKED, so nodes claiming at the same
 * time take different jobs instead of queueing behind one another's row lock.
 */
#include "store/pg_store.h"

#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

static int device_exists(PGconn *c, struct mf_ctx *ctx, const char *device_id)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, device_id);
    /* FOR UPDATE: a concurrent re-enrolment cannot slip in between this and the writes. */
    err = mf_pg__query(&res, c, ctx, "SELECT 1 FROM devices WHERE device_id = $1 FOR UPDATE", &p,
                       "device lookup");
    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    PQclear(res);
    return err;
}

static int groups_set_tx(PGconn *c, struct mf_ctx *ctx, const char *device_id,
                         const char *const *groups, size_t n)
{
    struct mf_pg_params p = {0};
    int err = device_exists(c, ctx, device_id);

    mf_pg__param_text(&p, device_id);
    if (err == MF_OK)
        err = mf_pg__exec(c, ctx,
                          "DELETE FROM device_groups WHERE device_id ="
                          " (SELECT id FROM devices WHERE device_id = $1)",
                          &p, "clearing groups");
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        struct mf_pg_params q = {0};

        mf_pg__param_text(&q, groups[i]);
        mf_pg__param_text(&q, device_id);
        err = mf_pg__exec(c, ctx,
                          "INSERT INTO device_groups(device_id, grp) SELECT id, $1 FROM devices"
                          " WHERE device_id = $2 ON CONFLICT DO NOTHING",
                          &q, "adding a group");
    }
    return err;
}

int mf_pg__device_groups_set(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                             const char *const *groups, size_t n)
{
    PGconn *c = NULL;
    int err;

    MF_PG_IN_TRANSACTION(base, ctx, c, groups_set_tx(c, ctx, device_id, groups, n));
    return err;
}

/* A one-row UPDATE of a device keyed by $2 (or $1 without `value`). */
static int device_update(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                         const char *device_id, const char *value)
{
    struct mf_pg_params p = {0};
    char missing[MF_STORE_NAME_SIZE + 32];

    if (value)
        mf_pg__param_text(&p, value);
    mf_pg__param_text(&p, device_id);
    (void)snprintf(missing, sizeof(missing), "unknown device '%s'", device_id);
    return mf_pg__run_change(base, ctx, sql, &p, missing);
}

int mf_pg__device_channel_set(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                              const char *channel)
{
    return device_update(base, ctx, "UPDATE devices SET channel = $1 WHERE device_id = $2",
                         device_id, channel);
}

int mf_pg__device_revoke(struct mf_store *base, struct mf_ctx *ctx, const char *device_id)
{
    /* Dropping the hash is what revokes: auth looks devices up by it. */
    return device_update(base, ctx,
                         "UPDATE devices SET credential_hash = NULL, revoked = 1"
                         " WHERE device_id = $1",
                         device_id, NULL);
}

/* Row visitors hand one converted row to the caller's function. */
struct walk {
    void (*fn)(void);
    void *payload;
};

static int visit_pair(const PGresult *res, void *payload)
{
    struct walk *w = payload;
    char a[MF_STORE_NAME_SIZE], b[MF_STORE_NAME_SIZE];

    mf_pg__col_text(a, sizeof(a), res, 0, 0);
    mf_pg__col_text(b, sizeof(b), res, 0, 1);
    return ((mf_store_pair_fn)w->fn)(w->payload, a, b);
}

int mf_pg__groups_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_pair_fn fn,
                       void *payload)
{
    struct walk w = {(void (*)(void))fn, payload};

    /* COLLATE "C": byte order, as SQLite sorts, whatever the database's locale. */
    return mf_pg__store_walk(base, ctx,
                             "SELECT d.device_id, g.grp FROM device_groups g JOIN devices d"
                             " ON d.id = g.device_id"
                             " ORDER BY g.grp COLLATE \"C\", d.device_id COLLATE \"C\"",
                             NULL, visit_pair, &w);
}

int mf_pg__device_groups_get(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                             mf_store_pair_fn fn, void *payload)
{
    struct walk w = {(void (*)(void))fn, payload};
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, device_id);
    return mf_pg__store_walk(base, ctx,
                             "SELECT d.device_id, g.grp FROM devices d JOIN device_groups g"
                             " ON g.device_id = d.id WHERE d.device_id = $1"
                             " ORDER BY g.grp COLLATE \"C\"",
                             &p, visit_pair, &w);
}

int mf_pg__pin_set(struct mf_store *base, struct mf_ctx *ctx, const struct mf_store_pin *pin)
{
    struct mf_pg_params p = {0};

    mf_pg__param_i64(&p, pin->scope);
    mf_pg__param_text(&p, pin->target);
    mf_pg__param_text(&p, pin->model);
    mf_pg__param_text(&p, pin->version);
    mf_pg__param_i64(&p, pin->created_at);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO pins(scope, target, model, version, created_at)"
                      " VALUES($1, $2, $3, $4, $5) ON CONFLICT(scope, target, model) DO UPDATE"
                      " SET version = excluded.version, created_at = excluded.created_at",
                      &p, "setting a directive");
}

int mf_pg__pin_clear(struct mf_store *base, struct mf_ctx *ctx, int scope, const char *target,
                     const char *model)
{
    struct mf_pg_params p = {0};
    char missing[2 * MF_STORE_NAME_SIZE + 48];

    mf_pg__param_i64(&p, scope);
    mf_pg__param_text(&p, target);
    mf_pg__param_text(&p, model);
    (void)snprintf(missing, sizeof(missing), "no directive for model '%s' on '%s'", model, target);
    return mf_pg__run_change(
        base, ctx, "DELETE FROM pins WHERE scope = $1 AND target = $2 AND model = $3", &p, missing);
}

static int visit_pin(const PGresult *res, void *payload)
{
    struct walk *w = payload;
    struct mf_store_pin pin;

    pin.scope = (int)mf_pg__col_i64(res, 0, 0);
    mf_pg__col_text(pin.target, sizeof(pin.target), res, 0, 1);
    mf_pg__col_text(pin.model, sizeof(pin.model), res, 0, 2);
    mf_pg__col_text(pin.version, sizeof(pin.version), res, 0, 3);
    pin.created_at = mf_pg__col_i64(res, 0, 4);
    return ((mf_store_pin_fn)w->fn)(w->payload, &pin);
}

int mf_pg__pins_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_pin_fn fn, void *payload)
{
    struct walk w = {(void (*)(void))fn, payload};

    return mf_pg__store_walk(base, ctx,
                             "SELECT scope, target, model, version, created_at FROM pins"
                             " ORDER BY scope, target COLLATE \"C\", model COLLATE \"C\"",
                             NULL, visit_pin, &w);
}

void mf_pg__directives_row(struct mf_store_directives *out, const PGresult *res, int row, int col)
{
    char grp[2 * MF_STORE_NAME_SIZE];
    const char *slash;

    /* NULL columns (no such directive) read as "". */
    memset(out, 0, sizeof(*out));
    mf_pg__col_text(out->channel, sizeof(out->channel), res, row, col);
    mf_pg__col_text(out->device_pin, sizeof(out->device_pin), res, row, col + 1);
    mf_pg__col_text(grp, sizeof(grp), res, row, col + 2);
    mf_pg__col_text(out->channel_version, sizeof(out->channel_version), res, row, col + 3);
    mf_pg__col_text(out->fleet_rollback, sizeof(out->fleet_rollback), res, row, col + 4);
    /* Names never contain '/', so the first one splits group from version. */
    slash = strchr(grp, '/');
    if (slash) {
        (void)snprintf(out->group, sizeof(out->group), "%.*s", (int)(slash - grp), grp);
        (void)snprintf(out->group_pin, sizeof(out->group_pin), "%s", slash + 1);
    }
}

int mf_pg__directives_get(struct mf_store_directives *out, struct mf_store *base,
                          struct mf_ctx *ctx, const char *device_id, const char *model)
{
    /* One statement, one round trip per model (as sqlite.c); check-ins read them with
     * checkin_begin instead. */
    static const char sql[] =
        "SELECT " MF_PG_DIRECTIVE_COLUMNS("$2") " FROM devices d WHERE d.device_id = $1";
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, model);
    err = mf_pg__run(&res, base, ctx, sql, &p, "reading directives");
    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    if (err == MF_OK)
        mf_pg__directives_row(out, res, 0, 0);
    PQclear(res);
    return err;
}

int mf_pg__admin_token_insert(struct mf_store *base, struct mf_ctx *ctx,
                              const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                              int64_t now)
{
    struct mf_pg_params p = {0};

    mf_pg__param_blob(&p, hash, MF_SHA256_LEN);
    mf_pg__param_i64(&p, now);
    mf_pg__param_i64(&p, role);
    mf_pg__param_text(&p, name);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO tokens(hash, kind, created_at, role, name)"
                      " VALUES($1, 0, $2, $3, $4)",
                      &p, "inserting an admin token");
}

int mf_pg__admin_token_auth(int *role_out, struct mf_store *base, struct mf_ctx *ctx,
                            const uint8_t hash[MF_SHA256_LEN])
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    *role_out = 0;
    mf_pg__param_blob(&p, hash, MF_SHA256_LEN);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT hash, role FROM tokens WHERE hash = $1 AND kind = 0 AND revoked = 0",
                     &p, "token lookup");
    /* Found by the index; compared in constant time anyway (as every credential). */
    if (err == MF_OK && PQntuples(res) == 1 && PQgetlength(res, 0, 0) == MF_SHA256_LEN &&
        mf_ct_memeq(PQgetvalue(res, 0, 0), hash, MF_SHA256_LEN))
        *role_out = (int)mf_pg__col_i64(res, 0, 1);
    else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
    PQclear(res);
    return err;
}

int mf_pg__admin_token_revoke(struct mf_store *base, struct mf_ctx *ctx, const char *id)
{
    struct mf_pg_params p = {0};
    char missing[MF_STORE_NAME_SIZE + 40];

    mf_pg__param_text(&p, id);
    (void)snprintf(missing, sizeof(missing), "no active admin token with id '%.*s'",
                   MF_STORE_NAME_SIZE - 1, id);
    return mf_pg__run_change(base, ctx,
                             "UPDATE tokens SET revoked = 1 WHERE kind = 0 AND revoked = 0"
                             " AND encode(substring(hash FROM 1 FOR 8), 'hex') = lower($1)",
                             &p, missing);
}

static int visit_token(const PGresult *res, void *payload)
{
    struct walk *w = payload;
    struct mf_store_token t;

    mf_pg__col_text(t.id, sizeof(t.id), res, 0, 0);
    mf_pg__col_text(t.name, sizeof(t.name), res, 0, 1);
    t.role = (int)mf_pg__col_i64(res, 0, 2);
    t.created_at = mf_pg__col_i64(res, 0, 3);
    t.revoked = (int)mf_pg__col_i64(res, 0, 4);
    return ((mf_store_token_fn)w->fn)(w->payload, &t);
}

int mf_pg__admin_tokens_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_token_fn fn,
                             void *payload)
{
    struct walk w = {(void (*)(void))fn, payload};

    return mf_pg__store_walk(base, ctx,
                             "SELECT encode(substring(hash FROM 1 FOR 8), 'hex'), name, role,"
                             " created_at, revoked FROM tokens WHERE kind = 0"
                             " ORDER BY created_at, seq",
                             NULL, visit_token, &w);
}

int mf_pg__job_enqueue(struct mf_store *base, struct mf_ctx *ctx, const char *kind, const char *arg,
                       int64_t now)
{
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, kind);
    mf_pg__param_text(&p, arg);
    mf_pg__param_i64(&p, now);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO jobs(kind, arg, created_at) VALUES($1, $2, $3)"
                      " ON CONFLICT(kind, arg) WHERE state IN ('queued','running') DO NOTHING",
                      &p, "enqueueing a job");
}

/* `kind` NULL: any kind. */
static int claim_tx(struct mf_store_job *out, PGconn *c, struct mf_ctx *ctx, const char *kind,
                    const char *owner, int64_t now, int64_t lease_s)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    /* Jobs whose lease ran out with no attempts left stop here instead of looping. */
    mf_pg__param_i64(&p, now);
    mf_pg__param_i64(&p, MF_STORE_JOB_MAX_ATTEMPTS);
    err = mf_pg__exec(c, ctx,
                      "UPDATE jobs SET state = 'failed', error = 'attempts exhausted'"
                      " WHERE state = 'running' AND lease_until <= $1 AND attempts >= $2",
                      &p, "failing exhausted jobs");
    if (err < 0)
        return err;
    memset(&p, 0, sizeof(p));
    mf_pg__param_text(&p, owner);
    mf_pg__param_i64(&p, now);
    mf_pg__param_i64(&p, lease_s);
    mf_pg__param_text(&p, kind ? kind : "");
    /* SKIP LOCKED: a row another node is claiming right now is passed over, so each job
     * goes to exactly one claimer and nobody waits. */
    err = mf_pg__query(&res, c, ctx,
                       "UPDATE jobs SET state = 'running', owner = $1, lease_until = $2 + $3,"
                       " attempts = attempts + 1 WHERE id = (SELECT id FROM jobs"
                       " WHERE (state = 'queued' OR (state = 'running' AND lease_until <= $2))"
                       " AND ($4 = '' OR kind = $4) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)"
                       " RETURNING id, kind, arg, attempts",
                       &p, "claiming a job");
    if (err == MF_OK && PQntuples(res) == 1) {
        out->id = mf_pg__col_i64(res, 0, 0);
        mf_pg__col_text(out->kind, sizeof(out->kind), res, 0, 1);
        mf_pg__col_text(out->arg, sizeof(out->arg), res, 0, 2);
        out->attempts = (int)mf_pg__col_i64(res, 0, 3);
    } else if (err == MF_OK) {
        err = mf_fail(ctx, MF_E_NOTFOUND, "no job to claim");
    }
    PQclear(res);
    return err;
}

int mf_pg__job_claim(struct mf_store_job *out, struct mf_store *base, struct mf_ctx *ctx,
                     const char *owner, int64_t now, int64_t lease_s)
{
    PGconn *c = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    MF_PG_IN_TRANSACTION(base, ctx, c, claim_tx(out, c, ctx, NULL, owner, now, lease_s));
    return err;
}

int mf_pg__job_claim_kind(struct mf_store_job *out, struct mf_store *base, struct mf_ctx *ctx,
                          const char *kind, const char *owner, int64_t now, int64_t lease_s)
{
    PGconn *c = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    MF_PG_IN_TRANSACTION(base, ctx, c, claim_tx(out, c, ctx, kind, owner, now, lease_s));
    return err;
}

/* Ends a claimed job: `sql` ($1 id, $2 owner[, $3 error]) updates it only while `owner`
 * still holds it. */
static int job_end(struct mf_store *base, struct mf_ctx *ctx, const char *sql, int64_t id,
                   const char *owner, const char *error)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_i64(&p, id);
    mf_pg__param_text(&p, owner);
    if (error)
        mf_pg__param_text(&p, error);
    err = mf_pg__run(&res, base, ctx, sql, &p, "ending a job");
    if (err == MF_OK && mf_pg__changes(res) == 0)
        err = mf_fail(ctx, MF_E_STATE, "job %lld is not held by '%s'", (long long)id, owner);
    PQclear(res);
    return err;
}

int mf_pg__job_complete(struct mf_store *base, struct mf_ctx *ctx, int64_t id, const char *owner)
{
    return job_end(base, ctx,
                   "UPDATE jobs SET state = 'done', lease_until = 0 WHERE id = $1 AND owner = $2"
                   " AND state = 'running'",
                   id, owner, NULL);
}

int mf_pg__job_fail(struct mf_store *base, struct mf_ctx *ctx, int64_t id, const char *owner,
                    const char *error)
{
    _Static_assert(MF_STORE_JOB_MAX_ATTEMPTS == 3, "the CASE below spells the limit out");
    return job_end(base, ctx,
                   "UPDATE jobs SET error = $3, lease_until = 0, state = CASE WHEN attempts >= 3"
                   " THEN 'failed' ELSE 'queued' END"
                   " WHERE id = $1 AND owner = $2 AND state = 'running'",
                   id, owner, error);
}

int mf_pg__job_counts(int64_t *queued_out, int64_t *running_out, struct mf_store *base,
                      struct mf_ctx *ctx, int64_t now)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    *queued_out = *running_out = 0;
    mf_pg__param_i64(&p, now);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT count(*) FILTER (WHERE state = 'queued' OR (state = 'running'"
                     " AND lease_until <= $1)), count(*) FILTER (WHERE state = 'running'"
                     " AND lease_until > $1) FROM jobs",
                     &p, "counting jobs");
    if (err == MF_OK) {
        *queued_out = mf_pg__col_i64(res, 0, 0);
        *running_out = mf_pg__col_i64(res, 0, 1);
    }
    PQclear(res);
    return err;
}

int mf_pg__delta_insert(struct mf_store *base, struct mf_ctx *ctx, const struct mf_store_delta *d)
{
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, d->model);
    mf_pg__param_text(&p, d->from_sha256);
    mf_pg__param_text(&p, d->to_sha256);
    mf_pg__param_text(&p, d->delta_sha256);
    mf_pg__param_i64(&p, (int64_t)d->size);
    mf_pg__param_text(&p, d->format);
    mf_pg__param_i64(&p, d->created_at);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO deltas(model, from_sha256, to_sha256, delta_sha256, size,"
                      " format, created_at) VALUES($1, $2, $3, $4, $5, $6, $7)"
                      " ON CONFLICT(from_sha256, to_sha256) DO NOTHING",
                      &p, "storing a delta");
}

int mf_pg__delta_find(struct mf_store_delta *out, struct mf_store *base, struct mf_ctx *ctx,
                      const char *from_sha256, const char *to_sha256)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    mf_pg__param_text(&p, from_sha256);
    mf_pg__param_text(&p, to_sha256);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT model, from_sha256, to_sha256, delta_sha256, size, format,"
                     " created_at FROM deltas WHERE from_sha256 = $1 AND to_sha256 = $2",
                     &p, "delta lookup");
    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no delta");
    if (err == MF_OK) {
        mf_pg__col_text(out->model, sizeof(out->model), res, 0, 0);
        mf_pg__col_text(out->from_sha256, sizeof(out->from_sha256), res, 0, 1);
        mf_pg__col_text(out->to_sha256, sizeof(out->to_sha256), res, 0, 2);
        mf_pg__col_text(out->delta_sha256, sizeof(out->delta_sha256), res, 0, 3);
        out->size = (uint64_t)mf_pg__col_i64(res, 0, 4);
        mf_pg__col_text(out->format, sizeof(out->format), res, 0, 5);
        out->created_at = mf_pg__col_i64(res, 0, 6);
    }
    PQclear(res);
    return err;
}

int mf_pg__delta_count(int64_t *count_out, struct mf_store *base, struct mf_ctx *ctx)
{
    PGresult *res = NULL;
    int err = mf_pg__run(&res, base, ctx, "SELECT count(*) FROM deltas", NULL, "counting deltas");

    *count_out = err == MF_OK ? mf_pg__col_i64(res, 0, 0) : 0;
    PQclear(res);
    return err;
}

static int visit_sha(const PGresult *res, void *payload)
{
    struct walk *w = payload;
    char sha[MF_SHA256_HEX_LEN + 1];

    mf_pg__col_text(sha, sizeof(sha), res, 0, 0);
    return ((mf_store_pair_fn)w->fn)(w->payload, "", sha);
}

int mf_pg__fleet_sha256s(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                         mf_store_pair_fn fn, void *payload)
{
    struct walk w = {(void (*)(void))fn, payload};
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, model);
    return mf_pg__store_walk(base, ctx,
                             "SELECT DISTINCT sha256 FROM device_models WHERE model = $1"
                             " AND status = 'installed' ORDER BY sha256",
                             &p, visit_sha, &w);
}
