/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL backend of struct mf_store_ops ("postgresql://..." or "postgres://..."): what
 * several mf-server nodes share. Same operations and semantics as sqlite.c; the connection
 * pool and query helpers are in pg_pool.c. Transactions run at READ COMMITTED, so every
 * read-check-write takes a row lock first (release_set locks the model's row) or is one
 * atomic statement (reserve_sequence's UPDATE ... RETURNING).
 */
#include "store/pg_store.h"

#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

/*
 * Numbered migrations, the same numbering as sqlite.c's (entry i brings the schema from
 * version i to i + 1) in PostgreSQL's dialect: BIGINT for every number, BIGSERIAL for row
 * ids, BYTEA for blobs. Only appended; a shipped entry never changes.
 */
static const char *const pg_migrations[] = {
    /* 1: tokens, devices, models and versions, per-device status and the event log */
    "CREATE TABLE tokens ("
    "  hash BYTEA PRIMARY KEY CHECK (length(hash) = 32),"
    "  kind BIGINT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  revoked BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE devices ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  device_id TEXT NOT NULL UNIQUE,"
    "  credential_hash BYTEA UNIQUE CHECK (length(credential_hash) = 32),"
    "  enrolled_at BIGINT NOT NULL,"
    "  last_seen BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE models ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE model_versions ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  model_id BIGINT NOT NULL REFERENCES models(id),"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
    "  size BIGINT NOT NULL CHECK (size >= 0),"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (model_id, version));"
    "CREATE TABLE device_models ("
    "  device_id BIGINT NOT NULL REFERENCES devices(id),"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  reported_at BIGINT NOT NULL,"
    "  PRIMARY KEY (device_id, model));"
    "CREATE TABLE events ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  device_id BIGINT NOT NULL REFERENCES devices(id),"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  created_at BIGINT NOT NULL);"
    "CREATE INDEX events_by_device ON events(device_id, id);",
    /* 2: the trust chain (see sqlite.c): release columns, trust documents, the director's
     * per-device assignment sequence. */
    "ALTER TABLE model_versions ADD COLUMN sequence BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE model_versions ADD COLUMN security_floor BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE model_versions ADD COLUMN release_digest TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE model_versions ADD COLUMN release BYTEA;"
    "CREATE UNIQUE INDEX model_versions_by_sequence ON model_versions(model_id, sequence)"
    "  WHERE sequence > 0;"
    "CREATE TABLE trust_docs ("
    "  kind BIGINT NOT NULL,"
    "  version BIGINT NOT NULL CHECK (version >= 1),"
    "  envelope BYTEA NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  PRIMARY KEY (kind, version));"
    "ALTER TABLE devices ADD COLUMN assign_seq BIGINT NOT NULL DEFAULT 0;",
    /* 3: the director's inputs, admin token roles, device revocation, jobs claimed across
     * nodes, precomputed deltas (see sqlite.c). `seq` keeps tokens in creation order, which
     * SQLite reads from its rowid. */
    "ALTER TABLE tokens ADD COLUMN role BIGINT NOT NULL DEFAULT 4;"
    "ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE tokens ADD COLUMN seq BIGSERIAL;"
    "ALTER TABLE devices ADD COLUMN channel TEXT NOT NULL DEFAULT 'stable';"
    "ALTER TABLE devices ADD COLUMN revoked BIGINT NOT NULL DEFAULT 0;"
    "CREATE TABLE device_groups ("
    "  device_id BIGINT NOT NULL REFERENCES devices(id),"
    "  grp TEXT NOT NULL,"
    "  PRIMARY KEY (device_id, grp));"
    "CREATE INDEX device_groups_by_group ON device_groups(grp);"
    "CREATE TABLE pins ("
    "  scope BIGINT NOT NULL CHECK (scope BETWEEN 1 AND 4),"
    "  target TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  PRIMARY KEY (scope, target, model));"
    "CREATE TABLE jobs ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  arg TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','running','done','failed')),"
    "  owner TEXT NOT NULL DEFAULT '',"
    "  lease_until BIGINT NOT NULL DEFAULT 0,"
    "  attempts BIGINT NOT NULL DEFAULT 0,"
    "  error TEXT NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL);"
    "CREATE UNIQUE INDEX jobs_pending ON jobs(kind, arg) WHERE state IN ('queued','running');"
    "CREATE TABLE deltas ("
    "  model TEXT NOT NULL,"
    "  from_sha256 TEXT NOT NULL CHECK (length(from_sha256) = 64),"
    "  to_sha256 TEXT NOT NULL CHECK (length(to_sha256) = 64),"
    "  delta_sha256 TEXT NOT NULL CHECK (length(delta_sha256) = 64),"
    "  size BIGINT NOT NULL,"
    "  format TEXT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  PRIMARY KEY (from_sha256, to_sha256));"
    "CREATE INDEX device_models_by_model ON device_models(model, sha256);",
    /* 4: offload: hard samples, uplink batch ids, score histograms (see sqlite.c). */
    "CREATE TABLE offload_samples ("
    "  seq BIGSERIAL PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE CHECK (length(id) = 32),"
    "  device_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  model_version TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('hard','audit')),"
    "  method TEXT NOT NULL,"
    "  score DOUBLE PRECISION NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  received_at BIGINT NOT NULL,"
    "  output_kind TEXT NOT NULL,"
    "  output TEXT NOT NULL,"
    "  input_sha256 TEXT NOT NULL CHECK (length(input_sha256) = 64),"
    "  input_size BIGINT NOT NULL,"
    "  teacher_version TEXT NOT NULL DEFAULT '',"
    "  teacher_output TEXT NOT NULL DEFAULT '',"
    "  teacher_confidence DOUBLE PRECISION NOT NULL DEFAULT 0,"
    "  labelled_at BIGINT NOT NULL DEFAULT 0);"
    "CREATE INDEX offload_samples_by_model ON offload_samples(model, seq);"
    "CREATE INDEX offload_samples_by_device ON offload_samples(device_id);"
    "CREATE INDEX offload_samples_by_input ON offload_samples(input_sha256);"
    "CREATE INDEX offload_samples_by_time ON offload_samples(received_at);"
    "CREATE TABLE offload_batches ("
    "  device_id TEXT NOT NULL,"
    "  batch_id TEXT NOT NULL CHECK (length(batch_id) = 32),"
    "  accepted BIGINT NOT NULL,"
    "  duplicates BIGINT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  PRIMARY KEY (device_id, batch_id));"
    "CREATE INDEX offload_batches_by_time ON offload_batches(created_at);"
    "CREATE TABLE offload_hists ("
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  method TEXT NOT NULL,"
    "  source BIGINT NOT NULL,"
    "  bins TEXT NOT NULL,"
    "  asked BIGINT NOT NULL,"
    "  uncertain BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  PRIMARY KEY (model, version, method, source));",
    /* 5: rollouts (see sqlite.c). */
    "CREATE TABLE telemetry ("
    "  device_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  report TEXT NOT NULL,"
    "  reported_at BIGINT NOT NULL,"
    "  PRIMARY KEY (model, device_id, version));"
    "CREATE TABLE rollouts ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  prev_version TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  wave BIGINT NOT NULL,"
    "  wave_started_at BIGINT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  plan TEXT NOT NULL,"
    "  breach TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX rollouts_by_model ON rollouts(model, id);"
    "CREATE TABLE rollout_events ("
    "  seq BIGSERIAL PRIMARY KEY,"
    "  rollout_id BIGINT NOT NULL,"
    "  at BIGINT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  detail TEXT NOT NULL);"
    "CREATE INDEX rollout_events_by_rollout ON rollout_events(rollout_id, seq);",
    /* 6: the check-in fast path, as sqlite.c's migration 6 (one statement-level trigger
     * per table: the generation only has to change, not count rows). */
    "CREATE TABLE store_meta ("
    "  id BIGINT PRIMARY KEY CHECK (id = 1),"
    "  epoch BIGINT NOT NULL,"
    "  generation BIGINT NOT NULL);"
    "INSERT INTO store_meta(id, epoch, generation) VALUES(1, 0, 1);"
    "CREATE FUNCTION mf_bump_generation() RETURNS trigger LANGUAGE plpgsql AS"
    "  $$BEGIN UPDATE store_meta SET generation = generation + 1 WHERE id = 1;"
    "  RETURN NULL; END$$;"
    "CREATE TRIGGER trust_docs_gen AFTER INSERT OR UPDATE OR DELETE ON trust_docs"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();"
    "CREATE TRIGGER models_gen AFTER INSERT OR UPDATE OR DELETE ON models"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();"
    "CREATE TRIGGER model_versions_gen AFTER INSERT OR UPDATE OR DELETE ON model_versions"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();"
    "CREATE TRIGGER deltas_gen AFTER INSERT OR UPDATE OR DELETE ON deltas"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();"
    "CREATE TRIGGER rollouts_gen AFTER INSERT OR UPDATE OR DELETE ON rollouts"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();",
    /* 7: distillation runs (see sqlite.c). */
    "CREATE TABLE distill_runs ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  model TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('queued','running','published','rejected','failed')),"
    "  trigger TEXT NOT NULL,"
    "  parent_version TEXT NOT NULL DEFAULT '',"
    "  version TEXT NOT NULL DEFAULT '',"
    "  rollout_id BIGINT NOT NULL DEFAULT 0,"
    "  samples_until BIGINT NOT NULL DEFAULT 0,"
    "  record TEXT NOT NULL DEFAULT '',"
    "  error TEXT NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL);"
    "CREATE INDEX distill_runs_by_model ON distill_runs(model, id);"
    "CREATE UNIQUE INDEX distill_runs_pending ON distill_runs(model)"
    "  WHERE state IN ('queued','running');",
    /* 8: pins raise the generation too (see sqlite.c). */
    "CREATE TRIGGER pins_gen AFTER INSERT OR UPDATE OR DELETE ON pins"
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();",

};

#define PG_SCHEMA_LATEST ((int)(sizeof(pg_migrations) / sizeof(pg_migrations[0])))

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

static void pg_close(struct mf_store *base)
{
    struct mf_pg_store *s = to_pg(base);
    mf_allocator alloc;

    if (!s)
        return;
    mf_pg__pool_free(s->pool);
    alloc = s->alloc;
    mf_free(&alloc, s);
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

/* Runs `sql` and reads one bigint from its first row (MF_E_NOTFOUND with `missing` when
 * there is no row). */
static int query_i64(int64_t *out, PGconn *c, struct mf_ctx *ctx, const char *sql,
                     const struct mf_pg_params *p, const char *missing)
{
    PGresult *res = NULL;
    int err = mf_pg__query(&res, c, ctx, sql, p, missing);

    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "%s", missing);
    else if (err == MF_OK)
        *out = mf_pg__col_i64(res, 0, 0);
    PQclear(res);
    return err;
}

static int read_schema_version(int *out, PGconn *c, struct mf_ctx *ctx)
{
    int64_t v = 0;
    int err = query_i64(&v, c, ctx, "SELECT coalesce(max(version), 0) FROM schema_version", NULL,
                        "reading schema_version");

    *out = (int)v;
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
        err = mf_pg__exec(c, ctx,
                          "CREATE TABLE IF NOT EXISTS schema_version ("
                          " version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                          NULL, "creating schema_version");
    if (err == MF_OK)
        err = read_schema_version(&cur, c, ctx);
    if (err < 0)
        return err;
    if (cur > PG_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_STATE, "store schema version %d is newer than this server's %d",
                       cur, PG_SCHEMA_LATEST);
    for (int v = cur + 1; v <= target && err == MF_OK; v++) {
        struct mf_pg_params p = {0};

        err = mf_pg__exec_script(c, ctx, pg_migrations[v - 1], "migration");
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
    if (target < 1 || target > PG_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_INVALID, "no schema version %d (latest %d)", target,
                       PG_SCHEMA_LATEST);
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
    return mf_pg__migrate_to(applied_out, base, ctx, PG_SCHEMA_LATEST);
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

int mf_pg__run(PGresult **res_out, struct mf_store *base, struct mf_ctx *ctx, const char *sql,
               const struct mf_pg_params *p, const char *what)
{
    PGresult *res = NULL;
    PGconn *c;
    int err;

    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = mf_pg__query(&res, c, ctx, sql, p, what);
    mf_pg__put(base, c);
    if (res_out)
        *res_out = res;
    else
        PQclear(res);
    return err;
}

int mf_pg__run_change(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                      const struct mf_pg_params *p, const char *missing)
{
    PGresult *res = NULL;
    int err = mf_pg__run(&res, base, ctx, sql, p, missing);

    if (err == MF_OK && mf_pg__changes(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "%s", missing);
    PQclear(res);
    return err;
}

static int pg_token_count(int *count_out, struct mf_store *base, struct mf_ctx *ctx, int kind)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    *count_out = 0;
    mf_pg__param_i64(&p, kind);
    err = mf_pg__run(&res, base, ctx, "SELECT count(*) FROM tokens WHERE kind = $1 AND revoked = 0",
                     &p, "counting tokens");
    if (err == MF_OK)
        *count_out = (int)mf_pg__col_i64(res, 0, 0);
    PQclear(res);
    return err;
}

static int pg_token_insert(struct mf_store *base, struct mf_ctx *ctx, int kind,
                           const uint8_t hash[MF_SHA256_LEN], int64_t now)
{
    struct mf_pg_params p = {0};

    mf_pg__param_blob(&p, hash, MF_SHA256_LEN);
    mf_pg__param_i64(&p, kind);
    mf_pg__param_i64(&p, now);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO tokens(hash, kind, created_at) VALUES($1, $2, $3)", &p,
                      "inserting a token");
}

/* The index found the row by hash; the secret-derived bytes are compared in constant time
 * anyway so no code path branches on a partial match. */
static int hash_row_matches(const PGresult *res, int col, const uint8_t hash[MF_SHA256_LEN])
{
    return PQntuples(res) == 1 && PQgetlength(res, 0, col) == MF_SHA256_LEN &&
           mf_ct_memeq(PQgetvalue(res, 0, col), hash, MF_SHA256_LEN);
}

static int pg_token_check(struct mf_store *base, struct mf_ctx *ctx, int kind,
                          const uint8_t hash[MF_SHA256_LEN])
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_blob(&p, hash, MF_SHA256_LEN);
    mf_pg__param_i64(&p, kind);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT hash FROM tokens WHERE hash = $1 AND kind = $2 AND revoked = 0", &p,
                     "token lookup");
    if (err == MF_OK && !hash_row_matches(res, 0, hash))
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
    PQclear(res);
    return err;
}

static int pg_device_enroll(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                            const uint8_t cred_hash[MF_SHA256_LEN], int64_t now)
{
    struct mf_pg_params p = {0};

    mf_pg__param_text(&p, device_id);
    mf_pg__param_blob(&p, cred_hash, MF_SHA256_LEN);
    mf_pg__param_i64(&p, now);
    /* Re-enrolment replaces the credential hash, which revokes the old credential. */
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO devices(device_id, credential_hash, enrolled_at)"
                      " VALUES($1, $2, $3) ON CONFLICT(device_id) DO UPDATE SET"
                      " credential_hash = excluded.credential_hash,"
                      " enrolled_at = excluded.enrolled_at, revoked = 0",
                      &p, "enrolling a device");
}

static int pg_device_auth(char device_id_out[MF_STORE_NAME_SIZE], struct mf_store *base,
                          struct mf_ctx *ctx, const uint8_t cred_hash[MF_SHA256_LEN])
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    device_id_out[0] = '\0';
    mf_pg__param_blob(&p, cred_hash, MF_SHA256_LEN);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT device_id, credential_hash FROM devices WHERE credential_hash = $1",
                     &p, "credential lookup");
    if (err == MF_OK && hash_row_matches(res, 1, cred_hash))
        mf_pg__col_text(device_id_out, MF_STORE_NAME_SIZE, res, 0, 0);
    else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked device credential");
    PQclear(res);
    return err;
}

static int pg_device_touch(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                           int64_t now)
{
    struct mf_pg_params p = {0};

    mf_pg__param_i64(&p, now);
    mf_pg__param_text(&p, device_id);
    /* last_seen is informational and written on every check-in, so its commit does not wait
     * for the WAL flush: set_config(..., true) lasts until the end of this statement's own
     * transaction, whose commit reads it (a crash loses at most the last fraction of a
     * second of last_seen, never consistency). One round trip, where BEGIN / SET LOCAL /
     * UPDATE / COMMIT would take four. Every other write keeps synchronous commit. */
    return mf_pg__run(NULL, base, ctx,
                      "WITH async AS (SELECT set_config('synchronous_commit', 'off', true))"
                      " UPDATE devices SET last_seen = $1 FROM async WHERE device_id = $2",
                      &p, "touching a device");
}

static int version_insert_tx(PGconn *c, struct mf_ctx *ctx, const struct mf_store_version *v)
{
    struct mf_pg_params p = {0};
    int err;

    mf_pg__param_text(&p, v->model);
    mf_pg__param_i64(&p, v->created_at);
    err = mf_pg__exec(c, ctx,
                      "INSERT INTO models(name, created_at) VALUES($1, $2)"
                      " ON CONFLICT(name) DO NOTHING",
                      &p, "inserting a model");
    if (err < 0)
        return err;
    memset(&p, 0, sizeof(p));
    mf_pg__param_text(&p, v->version);
    mf_pg__param_text(&p, v->sha256);
    mf_pg__param_i64(&p, (int64_t)v->size);
    mf_pg__param_i64(&p, v->created_at);
    mf_pg__param_text(&p, v->model);
    err = mf_pg__exec(c, ctx,
                      "INSERT INTO model_versions(model_id, version, sha256, size, created_at)"
                      " SELECT id, $1, $2, $3, $4 FROM models WHERE name = $5",
                      &p, "inserting a version");
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "version '%s' of model '%s' exists already", v->version,
                       v->model);
    return err;
}

static int pg_version_insert(struct mf_store *base, struct mf_ctx *ctx,
                             const struct mf_store_version *v)
{
    PGconn *c = NULL;
    int err;

    MF_PG_IN_TRANSACTION(base, ctx, c, version_insert_tx(c, ctx, v));
    return err;
}

/* Every version row is read through this one SELECT (read_version_row's column order). */
#define VERSION_SELECT                                                                             \
    "SELECT m.name, v.version, v.sha256, v.size, v.created_at, v.sequence, v.security_floor,"      \
    " v.release_digest FROM model_versions v JOIN models m ON m.id = v.model_id"

static void read_version_row(struct mf_store_version *out, const PGresult *res, int row)
{
    mf_pg__col_text(out->model, sizeof(out->model), res, row, 0);
    mf_pg__col_text(out->version, sizeof(out->version), res, row, 1);
    mf_pg__col_text(out->sha256, sizeof(out->sha256), res, row, 2);
    out->size = (uint64_t)mf_pg__col_i64(res, row, 3);
    out->created_at = mf_pg__col_i64(res, row, 4);
    out->sequence = (uint64_t)mf_pg__col_i64(res, row, 5);
    out->security_floor = (uint64_t)mf_pg__col_i64(res, row, 6);
    mf_pg__col_text(out->release_digest, sizeof(out->release_digest), res, row, 7);
}

/* Runs `sql` with one or two text parameters and reads its first row as a version. */
static int version_query(struct mf_store_version *out, struct mf_store *base, struct mf_ctx *ctx,
                         const char *sql, const char *p1, const char *p2)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, p1);
    if (p2)
        mf_pg__param_text(&p, p2);
    err = mf_pg__run(&res, base, ctx, sql, &p, "version lookup");
    if (err == MF_OK && PQntuples(res) > 0)
        read_version_row(out, res, 0);
    else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no such version of model '%s'", p1);
    PQclear(res);
    return err;
}

static int pg_version_get(struct mf_store_version *out, struct mf_store *base, struct mf_ctx *ctx,
                          const char *model, const char *version)
{
    return version_query(out, base, ctx, VERSION_SELECT " WHERE m.name = $1 AND v.version = $2",
                         model, version);
}

static int pg_version_latest(struct mf_store_version *out, struct mf_store *base,
                             struct mf_ctx *ctx, const char *model)
{
    /* Publish order (the row id), not the version string, decides what "newest" means. */
    return version_query(out, base, ctx,
                         VERSION_SELECT " WHERE m.name = $1 ORDER BY v.id DESC LIMIT 1", model,
                         NULL);
}

static int pg_release_latest(struct mf_store_version *out, struct mf_store *base,
                             struct mf_ctx *ctx, const char *model)
{
    /* The release sequence, signed by the data team, decides what "newest" means. */
    return version_query(out, base, ctx,
                         VERSION_SELECT " WHERE m.name = $1 AND v.sequence > 0"
                                        " ORDER BY v.sequence DESC LIMIT 1",
                         model, NULL);
}

static int release_set_tx(PGconn *c, struct mf_ctx *ctx, const struct mf_store_version *v,
                          const void *env, size_t len)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int64_t top = 0;
    int err;

    /* Lock the model's row so two releases of one model cannot both pass the check below
     * (READ COMMITTED would let them); a model that does not exist locks nothing and the
     * UPDATE finds no staged version. */
    mf_pg__param_text(&p, v->model);
    err = mf_pg__exec(c, ctx, "SELECT id FROM models WHERE name = $1 FOR UPDATE", &p,
                      "locking the model");
    if (err == MF_OK)
        err = query_i64(&top, c, ctx,
                        "SELECT coalesce(max(v.sequence), 0) FROM model_versions v JOIN models m"
                        " ON m.id = v.model_id WHERE m.name = $1",
                        &p, "reading the release sequence");
    if (err < 0)
        return err;
    if (v->sequence <= (uint64_t)top)
        return mf_fail(ctx, MF_E_STATE,
                       "release sequence %llu of model '%s' is not above the released %llu",
                       (unsigned long long)v->sequence, v->model, (unsigned long long)top);
    memset(&p, 0, sizeof(p));
    mf_pg__param_i64(&p, (int64_t)v->sequence);
    mf_pg__param_i64(&p, (int64_t)v->security_floor);
    mf_pg__param_text(&p, v->release_digest);
    mf_pg__param_blob(&p, env, len);
    mf_pg__param_text(&p, v->version);
    mf_pg__param_text(&p, v->model);
    err = mf_pg__query(&res, c, ctx,
                       "UPDATE model_versions SET sequence = $1, security_floor = $2,"
                       " release_digest = $3, release = $4 WHERE version = $5 AND sequence = 0"
                       " AND model_id = (SELECT id FROM models WHERE name = $6)",
                       &p, "attaching a release");
    if (err == MF_OK && mf_pg__changes(res) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no staged version '%s' of model '%s'", v->version,
                      v->model);
    PQclear(res);
    return err;
}

static int pg_release_set(struct mf_store *base, struct mf_ctx *ctx,
                          const struct mf_store_version *v, const void *env, size_t len)
{
    PGconn *c = NULL;
    int err;

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "release envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    MF_PG_IN_TRANSACTION(base, ctx, c, release_set_tx(c, ctx, v, env, len));
    return err;
}

/* Copies the bytea at (0, col) of `res` into `out` (bounded by MF_STORE_ENVELOPE_MAX);
 * MF_E_NOTFOUND naming `what` when there is no row or the value is NULL. */
static int read_blob(struct mf_dynbuf *out, struct mf_ctx *ctx, const PGresult *res, int col,
                     const char *what)
{
    int n;

    if (PQntuples(res) == 0 || PQgetisnull(res, 0, col))
        return mf_fail(ctx, MF_E_NOTFOUND, "no %s", what);
    n = PQgetlength(res, 0, col);
    mf_dynbuf__init(out, &ctx->alloc, MF_STORE_ENVELOPE_MAX + 1);
    if (mf_dynbuf__append(out, PQgetvalue(res, 0, col), (size_t)n) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading an envelope of %d bytes", n);
    return MF_OK;
}

static int pg_release_get(struct mf_dynbuf *out, struct mf_store *base, struct mf_ctx *ctx,
                          const char *model, const char *version)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_dynbuf__init(out, &ctx->alloc, 1);
    mf_pg__param_text(&p, model);
    mf_pg__param_text(&p, version);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT v.release FROM model_versions v JOIN models m ON m.id = v.model_id"
                     " WHERE m.name = $1 AND v.version = $2 AND v.sequence > 0",
                     &p, "release lookup");
    if (err == MF_OK)
        err = read_blob(out, ctx, res, 0, "release");
    PQclear(res);
    return err;
}

static int pg_trust_put(struct mf_store *base, struct mf_ctx *ctx, int kind, uint64_t version,
                        const void *env, size_t len)
{
    struct mf_pg_params p = {0};
    int err;

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "trust envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    mf_pg__param_i64(&p, kind);
    mf_pg__param_i64(&p, (int64_t)version);
    mf_pg__param_blob(&p, env, len);
    err = mf_pg__run(NULL, base, ctx,
                     "INSERT INTO trust_docs(kind, version, envelope, created_at)"
                     " VALUES($1, $2, $3, extract(epoch FROM now())::bigint)",
                     &p, "storing a trust document");
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "trust document version %llu exists already",
                       (unsigned long long)version);
    return err;
}

static int pg_trust_latest(uint64_t *version_out, struct mf_dynbuf *out, struct mf_store *base,
                           struct mf_ctx *ctx, int kind)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    *version_out = 0;
    mf_dynbuf__init(out, &ctx->alloc, 1);
    mf_pg__param_i64(&p, kind);
    err = mf_pg__run(&res, base, ctx,
                     "SELECT envelope, version FROM trust_docs WHERE kind = $1"
                     " ORDER BY version DESC LIMIT 1",
                     &p, "trust document lookup");
    if (err == MF_OK)
        err = read_blob(out, ctx, res, 0, kind == MF_STORE_TRUST_ROOT ? "root" : "keys document");
    if (err == MF_OK)
        *version_out = (uint64_t)mf_pg__col_i64(res, 0, 1);
    PQclear(res);
    return err;
}

struct roots_walk {
    mf_store_envelope_fn fn;
    void *payload;
};

static int visit_root(const PGresult *res, void *payload)
{
    struct roots_walk *w = payload;

    return w->fn(w->payload, (uint64_t)mf_pg__col_i64(res, 0, 0), PQgetvalue(res, 0, 1),
                 (size_t)PQgetlength(res, 0, 1));
}

int mf_pg__store_walk(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                      const struct mf_pg_params *p, mf_pg_row_fn visit, void *payload)
{
    PGconn *c;
    int err;

    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = mf_pg__walk(c, ctx, sql, p, visit, payload);
    mf_pg__put(base, c);
    return err;
}

static int pg_trust_roots_after(struct mf_store *base, struct mf_ctx *ctx, uint64_t after,
                                size_t max, mf_store_envelope_fn fn, void *payload)
{
    struct roots_walk w = {fn, payload};
    struct mf_pg_params p = {0};

    mf_pg__param_i64(&p, MF_STORE_TRUST_ROOT);
    mf_pg__param_i64(&p, (int64_t)after);
    mf_pg__param_i64(&p, (int64_t)max);
    return mf_pg__store_walk(
        base, ctx,
        "SELECT version, envelope FROM trust_docs WHERE kind = $1 AND version > $2"
        " ORDER BY version LIMIT $3",
        &p, visit_root, &w);
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

static int pg_device_reserve_sequence(uint64_t *first_out, struct mf_store *base,
                                      struct mf_ctx *ctx, const char *device_id, unsigned n)
{
    struct mf_pg_session *sess;
    PGconn *c;
    int err;

    *first_out = 0;
    err = mf_pg__get(&c, base, ctx);
    if (err < 0)
        return err;
    err = reserve_on(first_out, c, ctx, device_id, n);
    /* The connection was re-established under the statement (mf_pg__query retries once on
     * a dropped connection): the new session has no floor yet, so raise it and go again. */
    sess = mf_pg__session(c);
    if (err == MF_E_IO && sess && !sess->floor_set && PQstatus(c) == CONNECTION_OK)
        err = reserve_on(first_out, c, ctx, device_id, n);
    mf_pg__put(base, c);
    return err;
}

static int report_insert_tx(PGconn *c, struct mf_ctx *ctx, const struct mf_store_status *r)
{
    static const char *const sql[] = {
        "INSERT INTO device_models(device_id, model, version, sha256, status, detail,"
        " reported_at) SELECT id, $2, $3, $4, $5, $6, $7 FROM devices WHERE device_id = $1"
        " ON CONFLICT(device_id, model) DO UPDATE SET version = excluded.version,"
        " sha256 = excluded.sha256, status = excluded.status, detail = excluded.detail,"
        " reported_at = excluded.reported_at",
        "INSERT INTO events(device_id, model, version, sha256, status, detail, created_at)"
        " SELECT id, $2, $3, $4, $5, $6, $7 FROM devices WHERE device_id = $1",
    };
    struct mf_pg_params p = {0};
    int err = MF_OK;

    mf_pg__param_text(&p, r->device_id);
    mf_pg__param_text(&p, r->model);
    mf_pg__param_text(&p, r->version);
    mf_pg__param_text(&p, r->sha256);
    mf_pg__param_text(&p, r->status);
    mf_pg__param_text(&p, r->detail);
    mf_pg__param_i64(&p, r->reported_at);
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]) && err == MF_OK; i++) {
        PGresult *res = NULL;

        err = mf_pg__query(&res, c, ctx, sql[i], &p, "recording a report");
        if (err == MF_OK && mf_pg__changes(res) == 0)
            err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", r->device_id);
        PQclear(res);
    }
    return err;
}

static int pg_report_insert(struct mf_store *base, struct mf_ctx *ctx,
                            const struct mf_store_status *r)
{
    PGconn *c = NULL;
    int err;

    MF_PG_IN_TRANSACTION(base, ctx, c, report_insert_tx(c, ctx, r));
    return err;
}

/* Row visitors of the listings: convert one row and hand it to the caller's function. */
struct list_walk {
    void (*fn)(void);
    void *payload;
};

static int visit_version(const PGresult *res, void *payload)
{
    struct list_walk *w = payload;
    struct mf_store_version v;

    read_version_row(&v, res, 0);
    return ((mf_store_version_fn)w->fn)(w->payload, &v);
}

static int visit_device(const PGresult *res, void *payload)
{
    struct list_walk *w = payload;
    struct mf_store_device d;

    mf_pg__col_text(d.device_id, sizeof(d.device_id), res, 0, 0);
    d.enrolled_at = mf_pg__col_i64(res, 0, 1);
    d.last_seen = mf_pg__col_i64(res, 0, 2);
    mf_pg__col_text(d.channel, sizeof(d.channel), res, 0, 3);
    d.revoked = (int)mf_pg__col_i64(res, 0, 4);
    return ((mf_store_device_fn)w->fn)(w->payload, &d);
}

static int visit_status(const PGresult *res, void *payload)
{
    struct list_walk *w = payload;
    struct mf_store_status r;

    mf_pg__col_text(r.device_id, sizeof(r.device_id), res, 0, 0);
    mf_pg__col_text(r.model, sizeof(r.model), res, 0, 1);
    mf_pg__col_text(r.version, sizeof(r.version), res, 0, 2);
    mf_pg__col_text(r.sha256, sizeof(r.sha256), res, 0, 3);
    mf_pg__col_text(r.status, sizeof(r.status), res, 0, 4);
    mf_pg__col_text(r.detail, sizeof(r.detail), res, 0, 5);
    r.reported_at = mf_pg__col_i64(res, 0, 6);
    return ((mf_store_status_fn)w->fn)(w->payload, &r);
}

static int pg_versions_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_version_fn fn,
                            void *payload)
{
    struct list_walk w = {(void (*)(void))fn, payload};

    return mf_pg__store_walk(base, ctx, VERSION_SELECT " ORDER BY m.name COLLATE \"C\", v.id", NULL,
                             visit_version, &w);
}

static int pg_devices_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_device_fn fn,
                           void *payload)
{
    struct list_walk w = {(void (*)(void))fn, payload};

    /* COLLATE "C": byte order, the same as SQLite's, whatever the database's locale. */
    return mf_pg__store_walk(
        base, ctx,
        "SELECT device_id, enrolled_at, last_seen, channel, revoked FROM devices"
        " ORDER BY device_id COLLATE \"C\"",
        NULL, visit_device, &w);
}

static int pg_statuses_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_status_fn fn,
                            void *payload)
{
    struct list_walk w = {(void (*)(void))fn, payload};

    return mf_pg__store_walk(
        base, ctx,
        "SELECT d.device_id, s.model, s.version, s.sha256, s.status, s.detail,"
        " s.reported_at FROM device_models s JOIN devices d ON d.id = s.device_id"
        " ORDER BY d.device_id COLLATE \"C\", s.model COLLATE \"C\"",
        NULL, visit_status, &w);
}

/* Both URL schemes libpq accepts select this backend; one list of ops serves both. */
#define PG_OPS(scheme_name, open_fn)                                                               \
    {                                                                                              \
        .scheme = scheme_name, .default_threads = MF_PG_POOL_MAX, .open = open_fn,                 \
        .close = pg_close, .migrate = pg_migrate, .schema_version = pg_schema_version,             \
        .token_count = pg_token_count, .token_insert = pg_token_insert,                            \
        .token_check = pg_token_check, .device_enroll = pg_device_enroll,                          \
        .device_auth = pg_device_auth, .device_touch = pg_device_touch,                            \
        .version_insert = pg_version_insert, .version_get = pg_version_get,                        \
        .version_latest = pg_version_latest, .release_set = pg_release_set,                        \
        .release_get = pg_release_get, .release_latest = pg_release_latest,                        \
        .trust_put = pg_trust_put, .trust_latest = pg_trust_latest,                                \
        .trust_roots_after = pg_trust_roots_after,                                                 \
        .device_reserve_sequence = pg_device_reserve_sequence, .report_insert = pg_report_insert,  \
        .versions_list = pg_versions_list, .devices_list = pg_devices_list,                        \
        .statuses_list = pg_statuses_list, .device_groups_set = mf_pg__device_groups_set,          \
        .device_channel_set = mf_pg__device_channel_set, .groups_list = mf_pg__groups_list,        \
        .device_revoke = mf_pg__device_revoke, .pin_set = mf_pg__pin_set,                          \
        .pin_clear = mf_pg__pin_clear, .pins_list = mf_pg__pins_list,                              \
        .directives_get = mf_pg__directives_get, .admin_token_insert = mf_pg__admin_token_insert,  \
        .admin_token_auth = mf_pg__admin_token_auth,                                               \
        .admin_token_revoke = mf_pg__admin_token_revoke,                                           \
        .admin_tokens_list = mf_pg__admin_tokens_list, .job_enqueue = mf_pg__job_enqueue,          \
        .job_claim = mf_pg__job_claim, .job_complete = mf_pg__job_complete,                        \
        .job_fail = mf_pg__job_fail, .job_counts = mf_pg__job_counts,                              \
        .delta_insert = mf_pg__delta_insert, .delta_find = mf_pg__delta_find,                      \
        .delta_count = mf_pg__delta_count, .fleet_sha256s = mf_pg__fleet_sha256s,                  \
        .sample_batch_put = mf_pg__sample_batch_put, .sample_label = mf_pg__sample_label,          \
        .samples_walk = mf_pg__samples_walk, .samples_delete = mf_pg__samples_delete,              \
        .hist_add = mf_pg__hist_add, .hists_list = mf_pg__hists_list,                              \
        .job_claim_kind = mf_pg__job_claim_kind, .telemetry_put = mf_pg__telemetry_put,            \
        .telemetry_list = mf_pg__telemetry_list, .rollout_put = mf_pg__rollout_put,                \
        .rollout_get = mf_pg__rollout_get, .rollouts_list = mf_pg__rollouts_list,                  \
        .rollout_event_add = mf_pg__rollout_event_add,                                             \
        .rollout_events_list = mf_pg__rollout_events_list, .checkin_begin = mf_pg__checkin_begin,  \
        .distill_run_put = mf_pg__distill_run_put, .distill_run_get = mf_pg__distill_run_get,      \
        .distill_runs_list = mf_pg__distill_runs_list,                                             \
        .device_groups_get = mf_pg__device_groups_get, .blob_ref = mf_pg__blob_ref,                \
        .blob_released = mf_pg__blob_released,                                                     \
    }

const struct mf_store_ops mf_store__pg_ops = PG_OPS("postgresql", pg_open);
const struct mf_store_ops mf_store__postgres_ops = PG_OPS("postgres", pg_open_short);
