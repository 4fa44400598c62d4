/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite backend of struct mf_store_ops: the embedded default, so mf-server runs with no
 * other service. WAL mode, serialised by a mutex: multi-statement transactions stay atomic
 * while MHD's worker threads share the handles, and check-ins that arrive together share
 * one transaction (checkin_begin). Two connections, one durable and one for check-ins'
 * writes that need not wait for the disk (struct sqlite_store).
 */
#include "store/sqlite_store.h"

#include "store/sqlite_stmt.h"

#include "mf/ct.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A connection and its prepared statements. */
struct sqlite_conn {
    sqlite3 *db;
    struct mf_sqlite_stmts stmts;
};

/*
 * Two connections to the one database, both used only under `lock`, so they never contend
 * inside SQLite: `durable` (synchronous=FULL) for everything but check-ins, and `checkins`
 * (synchronous=NORMAL) for the writes that need not wait for the disk (docs/architecture.md,
 * "Check-in path"). A second connection instead of switching the level per transaction: a
 * PRAGMA is compiled anew each time it runs, which cost a check-in 4 % of its CPU. `c` is
 * the one statements run on: &durable but inside the check-in ops.
 */
struct sqlite_store {
    struct mf_store base; /* first: callers see only this */
    struct sqlite_conn durable, checkins, *c;
    char location[4096]; /* what was opened: the check-in connection opens it on first use */
    pthread_mutex_t lock;
    mf_allocator alloc;
    uint64_t floor; /* of this open store's epoch (epoch_locked), under `lock` */
    int floor_set;
};

/*
 * Numbered migrations: entry i brings the schema from version i to i + 1. Entries are only
 * ever appended; a shipped entry never changes (a fix is a new migration).
 */
static const char *const store_migrations[] = {
    /* 1: tokens, devices, models and versions, per-device status and the event log */
    "CREATE TABLE tokens ("
    "  hash BLOB PRIMARY KEY CHECK (length(hash) = 32),"
    "  kind INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  revoked INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE devices ("
    "  id INTEGER PRIMARY KEY,"
    "  device_id TEXT NOT NULL UNIQUE,"
    "  credential_hash BLOB UNIQUE CHECK (length(credential_hash) = 32),"
    "  enrolled_at INTEGER NOT NULL,"
    "  last_seen INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE models ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE model_versions ("
    "  id INTEGER PRIMARY KEY,"
    "  model_id INTEGER NOT NULL REFERENCES models(id),"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
    "  size INTEGER NOT NULL CHECK (size >= 0),"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (model_id, version));"
    "CREATE TABLE device_models ("
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  reported_at INTEGER NOT NULL,"
    "  PRIMARY KEY (device_id, model));"
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY,"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX events_by_device ON events(device_id, id);",
    /* 2: the trust chain. A version's release envelope and its sequence/floor/digest (a
     * version without a release is staged, never assigned); root and keys documents;
     * the director's per-device assignment sequence. */
    "ALTER TABLE model_versions ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE model_versions ADD COLUMN security_floor INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE model_versions ADD COLUMN release_digest TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE model_versions ADD COLUMN release BLOB;"
    "CREATE UNIQUE INDEX model_versions_by_sequence ON model_versions(model_id, sequence)"
    "  WHERE sequence > 0;"
    "CREATE TABLE trust_docs ("
    "  kind INTEGER NOT NULL,"
    "  version INTEGER NOT NULL CHECK (version >= 1),"
    "  envelope BLOB NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (kind, version));"
    "ALTER TABLE devices ADD COLUMN assign_seq INTEGER NOT NULL DEFAULT 0;",
    /* 3: the director's inputs (groups, channels, pins, fleet rollbacks), admin token roles,
     * device revocation, background jobs claimed across nodes, precomputed deltas. Tokens
     * made before keep full rights (role 4 = admin). */
    "ALTER TABLE tokens ADD COLUMN role INTEGER NOT NULL DEFAULT 4;"
    "ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE devices ADD COLUMN channel TEXT NOT NULL DEFAULT 'stable';"
    "ALTER TABLE devices ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE device_groups ("
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  grp TEXT NOT NULL,"
    "  PRIMARY KEY (device_id, grp));"
    "CREATE INDEX device_groups_by_group ON device_groups(grp);"
    "CREATE TABLE pins ("
    "  scope INTEGER NOT NULL CHECK (scope BETWEEN 1 AND 4),"
    "  target TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (scope, target, model));"
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  arg TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','running','done','failed')),"
    "  owner TEXT NOT NULL DEFAULT '',"
    "  lease_until INTEGER NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  error TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX jobs_pending ON jobs(kind, arg) WHERE state IN ('queued','running');"
    "CREATE TABLE deltas ("
    "  model TEXT NOT NULL,"
    "  from_sha256 TEXT NOT NULL CHECK (length(from_sha256) = 64),"
    "  to_sha256 TEXT NOT NULL CHECK (length(to_sha256) = 64),"
    "  delta_sha256 TEXT NOT NULL CHECK (length(delta_sha256) = 64),"
    "  size INTEGER NOT NULL,"
    "  format TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (from_sha256, to_sha256));"
    "CREATE INDEX device_models_by_model ON device_models(model, sha256);",
    /* 4: offload (docs/protocol-offload.md): the hard-sample store with provenance and the
     * teacher's label, the batch ids that make uplinks idempotent, score histograms. */
    "CREATE TABLE offload_samples ("
    "  seq INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE CHECK (length(id) = 32),"
    "  device_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  model_version TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('hard','audit')),"
    "  method TEXT NOT NULL,"
    "  score REAL NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  received_at INTEGER NOT NULL,"
    "  output_kind TEXT NOT NULL,"
    "  output TEXT NOT NULL,"
    "  input_sha256 TEXT NOT NULL CHECK (length(input_sha256) = 64),"
    "  input_size INTEGER NOT NULL,"
    "  teacher_version TEXT NOT NULL DEFAULT '',"
    "  teacher_output TEXT NOT NULL DEFAULT '',"
    "  teacher_confidence REAL NOT NULL DEFAULT 0,"
    "  labelled_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX offload_samples_by_model ON offload_samples(model, seq);"
    "CREATE INDEX offload_samples_by_device ON offload_samples(device_id);"
    "CREATE INDEX offload_samples_by_input ON offload_samples(input_sha256);"
    "CREATE INDEX offload_samples_by_time ON offload_samples(received_at);"
    "CREATE TABLE offload_batches ("
    "  device_id TEXT NOT NULL,"
    "  batch_id TEXT NOT NULL CHECK (length(batch_id) = 32),"
    "  accepted INTEGER NOT NULL,"
    "  duplicates INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (device_id, batch_id));"
    "CREATE INDEX offload_batches_by_time ON offload_batches(created_at);"
    "CREATE TABLE offload_hists ("
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  method TEXT NOT NULL,"
    "  source INTEGER NOT NULL,"
    "  bins TEXT NOT NULL,"
    "  asked INTEGER NOT NULL,"
    "  uncertain INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (model, version, method, source));",
    /* 5: rollouts (docs/rollouts.md): each device's newest cumulative runtime report per
     * (model, version), replaced and never added; rollouts with their wave state; the
     * events of each rollout (advances, pauses, the red line that halted it). */
    "CREATE TABLE telemetry ("
    "  device_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  report TEXT NOT NULL,"
    "  reported_at INTEGER NOT NULL,"
    "  PRIMARY KEY (model, device_id, version));"
    "CREATE TABLE rollouts ("
    "  id INTEGER PRIMARY KEY,"
    "  model TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  prev_version TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  wave INTEGER NOT NULL,"
    "  wave_started_at INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  plan TEXT NOT NULL,"
    "  breach TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX rollouts_by_model ON rollouts(model, id);"
    "CREATE TABLE rollout_events ("
    "  seq INTEGER PRIMARY KEY,"
    "  rollout_id INTEGER NOT NULL,"
    "  at INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  detail TEXT NOT NULL);"
    "CREATE INDEX rollout_events_by_rollout ON rollout_events(rollout_id, seq);",
    /* 6: the check-in fast path (docs/architecture.md, "Check-in path"). store_meta.epoch:
     * raised durably by each node before it issues assignment sequence numbers without
     * waiting for the disk; store_meta.generation: raised by every change to what nodes
     * cache for check-ins (trust documents, models and releases, deltas, rollouts). */
    "CREATE TABLE store_meta ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  epoch INTEGER NOT NULL,"
    "  generation INTEGER NOT NULL);"
    "INSERT INTO store_meta(id, epoch, generation) VALUES(1, 0, 1);"
    "CREATE TRIGGER trust_docs_gen_ins AFTER INSERT ON trust_docs BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER trust_docs_gen_upd AFTER UPDATE ON trust_docs BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER trust_docs_gen_del AFTER DELETE ON trust_docs BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER models_gen_ins AFTER INSERT ON models BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER models_gen_upd AFTER UPDATE ON models BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER models_gen_del AFTER DELETE ON models BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER model_versions_gen_ins AFTER INSERT ON model_versions BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER model_versions_gen_upd AFTER UPDATE ON model_versions BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER model_versions_gen_del AFTER DELETE ON model_versions BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER deltas_gen_ins AFTER INSERT ON deltas BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER deltas_gen_upd AFTER UPDATE ON deltas BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER deltas_gen_del AFTER DELETE ON deltas BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER rollouts_gen_ins AFTER INSERT ON rollouts BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER rollouts_gen_upd AFTER UPDATE ON rollouts BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER rollouts_gen_del AFTER DELETE ON rollouts BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;",
    /* 7: distillation runs (docs/distill.md): the loop's jobs with their provenance. At
     * most one queued or running run per model. */
    "CREATE TABLE distill_runs ("
    "  id INTEGER PRIMARY KEY,"
    "  model TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('queued','running','published','rejected','failed')),"
    "  trigger TEXT NOT NULL,"
    "  parent_version TEXT NOT NULL DEFAULT '',"
    "  version TEXT NOT NULL DEFAULT '',"
    "  rollout_id INTEGER NOT NULL DEFAULT 0,"
    "  samples_until INTEGER NOT NULL DEFAULT 0,"
    "  record TEXT NOT NULL DEFAULT '',"
    "  error TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE INDEX distill_runs_by_model ON distill_runs(model, id);"
    "CREATE UNIQUE INDEX distill_runs_pending ON distill_runs(model)"
    "  WHERE state IN ('queued','running');",
    /* 8: pins (device, group and channel pins, fleet rollbacks) raise the generation too, so
     * a node knows which models have none and a check-in skips their directive reads. */
    "CREATE TRIGGER pins_gen_ins AFTER INSERT ON pins BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER pins_gen_upd AFTER UPDATE ON pins BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;"
    "CREATE TRIGGER pins_gen_del AFTER DELETE ON pins BEGIN"
    "  UPDATE store_meta SET generation = generation + 1; END;",

};

#define STORE_SCHEMA_LATEST ((int)(sizeof(store_migrations) / sizeof(store_migrations[0])))

static struct sqlite_store *to_sqlite(struct mf_store *s)
{
    return (struct sqlite_store *)s;
}

static int db_fail(struct mf_ctx *ctx, struct sqlite_store *s, const char *what)
{
    return mf_fail(ctx, MF_E_IO, "sqlite %s: %s", what, sqlite3_errmsg(s->c->db));
}

static int db_exec(struct sqlite_store *s, struct mf_ctx *ctx, const char *sql)
{
    if (sqlite3_exec(s->c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(ctx, s, sql);
    return MF_OK;
}

static int db_prepare(sqlite3_stmt **out, struct sqlite_store *s, struct mf_ctx *ctx,
                      const char *sql)
{
    if (mf_sqlite__stmt_get(out, &s->c->stmts, s->c->db, sql) != SQLITE_OK)
        return db_fail(ctx, s, "prepare");
    return MF_OK;
}

/* Gives back a statement of db_prepare (NULL is a no-op). */
static void db_finish(struct sqlite_store *s, sqlite3_stmt *st)
{
    mf_sqlite__stmt_put(&s->c->stmts, st);
}

/* db_exec for a statement without parameters or rows that runs often (prepared once). */
static int db_run(struct sqlite_store *s, struct mf_ctx *ctx, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx, sql);

    if (err == MF_OK && sqlite3_step(st) != SQLITE_DONE)
        err = db_fail(ctx, s, sql);
    db_finish(s, st);
    return err;
}

void mf_sqlite__text_col(char *dst, size_t size, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);

    (void)snprintf(dst, size, "%s", t ? (const char *)t : "");
}

/* Runs a statement that returns no rows. */
static int db_step_done(sqlite3_stmt *st, struct sqlite_store *s, struct mf_ctx *ctx)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_DONE)
        return MF_OK;
    if (rc == SQLITE_CONSTRAINT)
        return mf_fail(ctx, MF_E_STATE, "sqlite constraint: %s", sqlite3_errmsg(s->c->db));
    return db_fail(ctx, s, "step");
}

static void store_lock(struct sqlite_store *s)
{
    (void)pthread_mutex_lock(&s->lock);
}

static void store_unlock(struct sqlite_store *s)
{
    (void)pthread_mutex_unlock(&s->lock);
}

/* Runs `call` inside BEGIN IMMEDIATE ... COMMIT under the store lock (ROLLBACK on failure). */
#define IN_TRANSACTION(s, ctx, call)                                                               \
    do {                                                                                           \
        store_lock(s);                                                                             \
        err = db_exec(s, ctx, "BEGIN IMMEDIATE");                                                  \
        if (err == MF_OK) {                                                                        \
            err = (call);                                                                          \
            if (err == MF_OK)                                                                      \
                err = db_exec(s, ctx, "COMMIT");                                                   \
            if (err < 0)                                                                           \
                (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);                        \
        }                                                                                          \
        store_unlock(s);                                                                           \
    } while (0)

static void sqlite_close(struct mf_store *base)
{
    struct sqlite_store *s = to_sqlite(base);
    mf_allocator alloc;

    if (!s)
        return;
    mf_sqlite__stmts_free(&s->checkins.stmts);
    (void)sqlite3_close(s->checkins.db);
    mf_sqlite__stmts_free(&s->durable.stmts);
    (void)sqlite3_close(s->durable.db);
    (void)pthread_mutex_destroy(&s->lock);
    alloc = s->alloc;
    mf_free(&alloc, s);
}

static int sqlite_open(struct mf_store **out, struct mf_ctx *ctx, const char *location, int create)
{
    struct sqlite_store *s;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
    int rc, err;

    *out = NULL;
    s = mf_calloc(&ctx->alloc, 1, sizeof(*s));
    if (!s)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory opening store '%s'", location);
    s->base.ops = &mf_store__sqlite_ops;
    s->alloc = ctx->alloc;
    s->c = &s->durable;
    if (snprintf(s->location, sizeof(s->location), "%s", location) >= (int)sizeof(s->location)) {
        mf_free(&ctx->alloc, s);
        return mf_fail(ctx, MF_E_LIMIT, "store location too long");
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        mf_free(&ctx->alloc, s);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the store mutex");
    }
    if (create)
        flags |= SQLITE_OPEN_CREATE;
    rc = sqlite3_open_v2(location, &s->c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        err = mf_fail(ctx, rc == SQLITE_CANTOPEN ? MF_E_NOTFOUND : MF_E_IO,
                      "cannot open store '%s': %s", location,
                      s->c->db ? sqlite3_errmsg(s->c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    (void)sqlite3_busy_timeout(s->c->db, 5000);
    /* WAL lets readers run while a publish commits; FULL makes a committed version
     * survive power loss, which is what "visible only after commit" promises. */
    err = db_exec(s, ctx,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                  " PRAGMA foreign_keys=ON;");
    if (err < 0)
        goto fail;
    *out = &s->base;
    return MF_OK;
fail:
    sqlite_close(&s->base);
    return err;
}

static int read_schema_version(int *out, struct sqlite_store *s, struct mf_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    int err;

    err = db_prepare(&st, s, ctx, "SELECT coalesce(max(version), 0) FROM schema_version");
    if (err < 0)
        return err;
    if (sqlite3_step(st) != SQLITE_ROW) {
        err = db_fail(ctx, s, "reading schema_version");
    } else {
        *out = sqlite3_column_int(st, 0);
        err = MF_OK;
    }
    db_finish(s, st);
    return err;
}

static int migrate_locked(int *applied_out, struct sqlite_store *s, struct mf_ctx *ctx, int target)
{
    sqlite3_stmt *st = NULL;
    int cur = 0, err;

    err = db_exec(s, ctx,
                  "CREATE TABLE IF NOT EXISTS schema_version ("
                  " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)");
    if (err < 0)
        return err;
    err = read_schema_version(&cur, s, ctx);
    if (err < 0)
        return err;
    if (cur > STORE_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_STATE, "store schema version %d is newer than this server's %d",
                       cur, STORE_SCHEMA_LATEST);
    err = db_prepare(&st, s, ctx,
                     "INSERT INTO schema_version(version, applied_at) VALUES(?, strftime('%s'))");
    if (err < 0)
        return err;
    for (int v = cur + 1; v <= target; v++) {
        err = db_exec(s, ctx, store_migrations[v - 1]);
        if (err < 0)
            break;
        sqlite3_reset(st);
        sqlite3_bind_int(st, 1, v);
        err = db_step_done(st, s, ctx);
        if (err < 0)
            break;
        (*applied_out)++;
    }
    db_finish(s, st);
    return err;
}

int mf_store__sqlite_migrate_to(int *applied_out, struct mf_store *base, struct mf_ctx *ctx,
                                int target)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    *applied_out = 0;
    if (target < 0 || target > STORE_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_INVALID, "no schema version %d (latest %d)", target,
                       STORE_SCHEMA_LATEST);
    /* IMMEDIATE: two servers starting on one file cannot both apply migration N. */
    IN_TRANSACTION(s, ctx, migrate_locked(applied_out, s, ctx, target));
    if (err < 0)
        *applied_out = 0; /* rolled back: nothing was applied */
    return err;
}

static int sqlite_migrate(int *applied_out, struct mf_store *base, struct mf_ctx *ctx)
{
    return mf_store__sqlite_migrate_to(applied_out, base, ctx, STORE_SCHEMA_LATEST);
}

static int sqlite_schema_version(int *version_out, struct mf_store *base, struct mf_ctx *ctx)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    *version_out = 0;
    store_lock(s);
    err = read_schema_version(version_out, s, ctx);
    store_unlock(s);
    return err;
}

static int sqlite_token_count(int *count_out, struct mf_store *base, struct mf_ctx *ctx, int kind)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    *count_out = 0;
    store_lock(s);
    err = db_prepare(&st, s, ctx, "SELECT count(*) FROM tokens WHERE kind = ? AND revoked = 0");
    if (err == MF_OK) {
        sqlite3_bind_int(st, 1, kind);
        if (sqlite3_step(st) == SQLITE_ROW)
            *count_out = sqlite3_column_int(st, 0);
        else
            err = db_fail(ctx, s, "counting tokens");
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_token_insert(struct mf_store *base, struct mf_ctx *ctx, int kind,
                               const uint8_t hash[MF_SHA256_LEN], int64_t now)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    store_lock(s);
    err = db_prepare(&st, s, ctx, "INSERT INTO tokens(hash, kind, created_at) VALUES(?, ?, ?)");
    if (err == MF_OK) {
        sqlite3_bind_blob(st, 1, hash, MF_SHA256_LEN, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, kind);
        sqlite3_bind_int64(st, 3, now);
        err = db_step_done(st, s, ctx);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_token_check(struct mf_store *base, struct mf_ctx *ctx, int kind,
                              const uint8_t hash[MF_SHA256_LEN])
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT hash FROM tokens WHERE hash = ? AND kind = ? AND revoked = 0");
    if (err == MF_OK) {
        sqlite3_bind_blob(st, 1, hash, MF_SHA256_LEN, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, kind);
        rc = sqlite3_step(st);
        /* The index found the row by hash; compare the secret-derived bytes in constant
         * time anyway so no code path branches on a partial match. */
        if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == MF_SHA256_LEN &&
            mf_ct_memeq(sqlite3_column_blob(st, 0), hash, MF_SHA256_LEN))
            err = MF_OK;
        else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
        else
            err = db_fail(ctx, s, "token lookup");
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_device_enroll(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                                const uint8_t cred_hash[MF_SHA256_LEN], int64_t now)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    store_lock(s);
    /* Re-enrolment replaces the credential hash, which revokes the old credential. */
    err = db_prepare(&st, s, ctx,
                     "INSERT INTO devices(device_id, credential_hash, enrolled_at)"
                     " VALUES(?, ?, ?) ON CONFLICT(device_id) DO UPDATE SET"
                     " credential_hash = excluded.credential_hash,"
                     " enrolled_at = excluded.enrolled_at, revoked = 0");
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, cred_hash, MF_SHA256_LEN, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        err = db_step_done(st, s, ctx);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_device_auth(char device_id_out[MF_STORE_NAME_SIZE], struct mf_store *base,
                              struct mf_ctx *ctx, const uint8_t cred_hash[MF_SHA256_LEN])
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    device_id_out[0] = '\0';
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT device_id, credential_hash FROM devices WHERE credential_hash = ?");
    if (err == MF_OK) {
        sqlite3_bind_blob(st, 1, cred_hash, MF_SHA256_LEN, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 1) == MF_SHA256_LEN &&
            mf_ct_memeq(sqlite3_column_blob(st, 1), cred_hash, MF_SHA256_LEN)) {
            mf_sqlite__text_col(device_id_out, MF_STORE_NAME_SIZE, st, 0);
            err = MF_OK;
        } else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
            err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked device credential");
        } else {
            err = db_fail(ctx, s, "credential lookup");
        }
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_device_touch(struct mf_store *base, struct mf_ctx *ctx, const char *device_id,
                               int64_t now)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    store_lock(s);
    err = db_prepare(&st, s, ctx, "UPDATE devices SET last_seen = ? WHERE device_id = ?");
    if (err == MF_OK) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
        err = db_step_done(st, s, ctx);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int version_insert_locked(struct sqlite_store *s, struct mf_ctx *ctx,
                                 const struct mf_store_version *v)
{
    sqlite3_stmt *st = NULL;
    int err;

    err = db_prepare(&st, s, ctx,
                     "INSERT INTO models(name, created_at) VALUES(?, ?)"
                     " ON CONFLICT(name) DO NOTHING");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, v->model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v->created_at);
    err = db_step_done(st, s, ctx);
    db_finish(s, st);
    if (err < 0)
        return err;
    err = db_prepare(&st, s, ctx,
                     "INSERT INTO model_versions(model_id, version, sha256, size, created_at)"
                     " SELECT id, ?, ?, ?, ? FROM models WHERE name = ?");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, v->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, v->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)v->size);
    sqlite3_bind_int64(st, 4, v->created_at);
    sqlite3_bind_text(st, 5, v->model, -1, SQLITE_STATIC);
    err = db_step_done(st, s, ctx);
    db_finish(s, st);
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "version '%s' of model '%s' exists already", v->version,
                       v->model);
    return err;
}

static int sqlite_version_insert(struct mf_store *base, struct mf_ctx *ctx,
                                 const struct mf_store_version *v)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    IN_TRANSACTION(s, ctx, version_insert_locked(s, ctx, v));
    return err;
}

#define VERSION_COLUMNS                                                                            \
    "m.name, v.version, v.sha256, v.size, v.created_at, v.sequence, v.security_floor,"             \
    " v.release_digest"

static void read_version_row(struct mf_store_version *out, sqlite3_stmt *st)
{
    mf_sqlite__text_col(out->model, sizeof(out->model), st, 0);
    mf_sqlite__text_col(out->version, sizeof(out->version), st, 1);
    mf_sqlite__text_col(out->sha256, sizeof(out->sha256), st, 2);
    out->size = (uint64_t)sqlite3_column_int64(st, 3);
    out->created_at = sqlite3_column_int64(st, 4);
    out->sequence = (uint64_t)sqlite3_column_int64(st, 5);
    out->security_floor = (uint64_t)sqlite3_column_int64(st, 6);
    mf_sqlite__text_col(out->release_digest, sizeof(out->release_digest), st, 7);
}

/* Runs `sql` with up to two text parameters and reads its first row as a version. */
static int version_query(struct mf_store_version *out, struct mf_store *base, struct mf_ctx *ctx,
                         const char *sql, const char *p1, const char *p2)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    store_lock(s);
    err = db_prepare(&st, s, ctx, sql);
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, p1, -1, SQLITE_STATIC);
        if (p2)
            sqlite3_bind_text(st, 2, p2, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            read_version_row(out, st);
        else if (rc == SQLITE_DONE)
            err = mf_fail(ctx, MF_E_NOTFOUND, "no such version of model '%s'", p1);
        else
            err = db_fail(ctx, s, "version lookup");
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_version_get(struct mf_store_version *out, struct mf_store *base,
                              struct mf_ctx *ctx, const char *model, const char *version)
{
    return version_query(out, base, ctx,
                         "SELECT " VERSION_COLUMNS " FROM model_versions v JOIN models m"
                         " ON m.id = v.model_id WHERE m.name = ? AND v.version = ?",
                         model, version);
}

static int sqlite_version_latest(struct mf_store_version *out, struct mf_store *base,
                                 struct mf_ctx *ctx, const char *model)
{
    /* Publish order (the row id), not the version string, decides what "newest" means. */
    return version_query(out, base, ctx,
                         "SELECT " VERSION_COLUMNS " FROM model_versions v JOIN models m"
                         " ON m.id = v.model_id WHERE m.name = ? ORDER BY v.id DESC LIMIT 1",
                         model, NULL);
}

static int sqlite_release_latest(struct mf_store_version *out, struct mf_store *base,
                                 struct mf_ctx *ctx, const char *model)
{
    /* The release sequence, signed by the data team, decides what "newest" means. */
    return version_query(out, base, ctx,
                         "SELECT " VERSION_COLUMNS " FROM model_versions v JOIN models m"
                         " ON m.id = v.model_id WHERE m.name = ? AND v.sequence > 0"
                         " ORDER BY v.sequence DESC LIMIT 1",
                         model, NULL);
}

static int release_set_locked(struct sqlite_store *s, struct mf_ctx *ctx,
                              const struct mf_store_version *v, const void *env, size_t len)
{
    sqlite3_stmt *st = NULL;
    uint64_t top = 0;
    int err;

    err = db_prepare(&st, s, ctx,
                     "SELECT coalesce(max(v.sequence), 0) FROM model_versions v JOIN models m"
                     " ON m.id = v.model_id WHERE m.name = ?");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, v->model, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        top = (uint64_t)sqlite3_column_int64(st, 0);
    else
        err = db_fail(ctx, s, "reading the release sequence");
    db_finish(s, st);
    if (err < 0)
        return err;
    if (v->sequence <= top)
        return mf_fail(ctx, MF_E_STATE,
                       "release sequence %llu of model '%s' is not above the released %llu",
                       (unsigned long long)v->sequence, v->model, (unsigned long long)top);
    err = db_prepare(&st, s, ctx,
                     "UPDATE model_versions SET sequence = ?, security_floor = ?,"
                     " release_digest = ?, release = ? WHERE version = ? AND sequence = 0"
                     " AND model_id = (SELECT id FROM models WHERE name = ?)");
    if (err < 0)
        return err;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)v->sequence);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)v->security_floor);
    sqlite3_bind_text(st, 3, v->release_digest, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, env, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, v->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, v->model, -1, SQLITE_STATIC);
    err = db_step_done(st, s, ctx);
    if (err == MF_OK && sqlite3_changes(s->c->db) == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no staged version '%s' of model '%s'", v->version,
                      v->model);
    db_finish(s, st);
    return err;
}

static int sqlite_release_set(struct mf_store *base, struct mf_ctx *ctx,
                              const struct mf_store_version *v, const void *env, size_t len)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "release envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    IN_TRANSACTION(s, ctx, release_set_locked(s, ctx, v, env, len));
    return err;
}

/* Copies column `col` of the current row into `out` (bounded by MF_STORE_ENVELOPE_MAX). */
static int col_blob(struct mf_dynbuf *out, struct mf_ctx *ctx, sqlite3_stmt *st, int col)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);

    mf_dynbuf__init(out, &ctx->alloc, MF_STORE_ENVELOPE_MAX + 1);
    if (mf_dynbuf__append(out, p, (size_t)n) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading an envelope of %d bytes", n);
    return MF_OK;
}

/* Reads the one blob column of the first row of `st` (bound already) into `out`. */
static int query_blob(struct mf_dynbuf *out, struct sqlite_store *s, struct mf_ctx *ctx,
                      sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_BLOB)
        return col_blob(out, ctx, st, 0);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return mf_fail(ctx, MF_E_NOTFOUND, "no %s", what);
    return db_fail(ctx, s, what);
}

static int sqlite_release_get(struct mf_dynbuf *out, struct mf_store *base, struct mf_ctx *ctx,
                              const char *model, const char *version)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    mf_dynbuf__init(out, &ctx->alloc, 1);
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT v.release FROM model_versions v JOIN models m ON m.id = v.model_id"
                     " WHERE m.name = ? AND v.version = ? AND v.sequence > 0");
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, version, -1, SQLITE_STATIC);
        err = query_blob(out, s, ctx, st, "release");
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int trust_put_locked(struct sqlite_store *s, struct mf_ctx *ctx, int kind, uint64_t version,
                            const void *env, size_t len)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx,
                         "INSERT INTO trust_docs(kind, version, envelope, created_at)"
                         " VALUES(?, ?, ?, strftime('%s'))");

    if (err < 0)
        return err;
    sqlite3_bind_int(st, 1, kind);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)version);
    sqlite3_bind_blob(st, 3, env, (int)len, SQLITE_STATIC);
    err = db_step_done(st, s, ctx);
    db_finish(s, st);
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "trust document version %llu exists already",
                       (unsigned long long)version);
    return err;
}

static int sqlite_trust_put(struct mf_store *base, struct mf_ctx *ctx, int kind, uint64_t version,
                            const void *env, size_t len)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "trust envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    IN_TRANSACTION(s, ctx, trust_put_locked(s, ctx, kind, version, env, len));
    return err;
}

static int sqlite_trust_latest(uint64_t *version_out, struct mf_dynbuf *out, struct mf_store *base,
                               struct mf_ctx *ctx, int kind)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    *version_out = 0;
    mf_dynbuf__init(out, &ctx->alloc, 1);
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT envelope, version FROM trust_docs WHERE kind = ?"
                     " ORDER BY version DESC LIMIT 1");
    if (err == MF_OK) {
        sqlite3_bind_int(st, 1, kind);
        err = query_blob(out, s, ctx, st, kind == MF_STORE_TRUST_ROOT ? "root" : "keys document");
        if (err == MF_OK)
            *version_out = (uint64_t)sqlite3_column_int64(st, 1);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_trust_roots_after(struct mf_store *base, struct mf_ctx *ctx, uint64_t after,
                                    size_t max, mf_store_envelope_fn fn, void *payload)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT version, envelope FROM trust_docs WHERE kind = ? AND version > ?"
                     " ORDER BY version LIMIT ?");
    if (err == MF_OK) {
        sqlite3_bind_int(st, 1, MF_STORE_TRUST_ROOT);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)after);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
    }
    while (err == MF_OK) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, s, "listing roots");
            break;
        }
        err = fn(payload, (uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
                 (size_t)sqlite3_column_bytes(st, 1));
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

/* Under the lock: opens the check-in connection (synchronous=NORMAL) on first use. Its
 * commits checkpoint the WAL only past 10000 pages (about 40 MiB) instead of 1000: the
 * checkpoint (two fsyncs) runs under the store lock, and with a check-in commit per batch
 * the default stalled every check-in several times a second (+3 % check-ins/s). */
static int checkins_conn_locked(struct sqlite_store *s, struct mf_ctx *ctx)
{
    int rc;

    if (s->checkins.db)
        return MF_OK;
    rc = sqlite3_open_v2(s->location, &s->checkins.db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc == SQLITE_OK) {
        (void)sqlite3_busy_timeout(s->checkins.db, 5000);
        rc = sqlite3_exec(
            s->checkins.db,
            "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=10000;",
            NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        return MF_OK;
    (void)mf_fail(ctx, MF_E_IO, "cannot open the check-in connection to '%s': %s", s->location,
                  s->checkins.db ? sqlite3_errmsg(s->checkins.db) : sqlite3_errstr(rc));
    (void)sqlite3_close(s->checkins.db);
    s->checkins.db = NULL;
    return MF_E_IO;
}

/* Runs `call` on the check-in connection, whose commits do not wait for the disk (WAL,
 * synchronous=NORMAL): what it writes survives a crash of the process but may be lost with
 * the machine's power, which the caller's data tolerates (docs/architecture.md, "Check-in
 * path"). The next durable commit makes it durable too: fsync covers the whole WAL file. */
#define NOT_DURABLE(s, ctx, call)                                                                  \
    do {                                                                                           \
        err = checkins_conn_locked(s, ctx);                                                        \
        if (err == MF_OK) {                                                                        \
            (s)->c = &(s)->checkins;                                                               \
            err = (call);                                                                          \
            (s)->c = &(s)->durable;                                                                \
        }                                                                                          \
    } while (0)

/* Raises the store's epoch with a durable commit, once per open store, before the first
 * sequence number it issues without waiting for the disk: every number it issues is then
 * above any number issued under an earlier epoch, whether or not that one reached the disk. */
static int epoch_locked(struct sqlite_store *s, struct mf_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    int err, rc;

    if (s->floor_set)
        return MF_OK;
    err = db_exec(s, ctx, "BEGIN IMMEDIATE");
    if (err < 0)
        return err;
    err = db_prepare(&st, s, ctx,
                     "UPDATE store_meta SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch");
    if (err == MF_OK) {
        rc = sqlite3_step(st);
        err = rc == SQLITE_ROW ? mf_store__epoch_floor(&s->floor, ctx, sqlite3_column_int64(st, 0))
                               : db_fail(ctx, s, "raising the store epoch");
    }
    db_finish(s, st);
    if (err == MF_OK)
        err = db_exec(s, ctx, "COMMIT");
    if (err < 0)
        (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);
    else
        s->floor_set = 1;
    return err;
}

static int reserve_locked(uint64_t *first_out, struct sqlite_store *s, struct mf_ctx *ctx,
                          const char *device_id, unsigned n)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx,
                         "UPDATE devices SET assign_seq = max(assign_seq, ?3) + ?1"
                         " WHERE device_id = ?2 RETURNING assign_seq");
    int rc;

    if (err < 0)
        return err;
    sqlite3_bind_int(st, 1, (int)n);
    sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)s->floor);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *first_out = (uint64_t)sqlite3_column_int64(st, 0) - n + 1;
    else if (rc == SQLITE_DONE)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    else
        err = db_fail(ctx, s, "reserving assignment sequence numbers");
    db_finish(s, st);
    return err;
}

static int sqlite_device_reserve_sequence(uint64_t *first_out, struct mf_store *base,
                                          struct mf_ctx *ctx, const char *device_id, unsigned n)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    *first_out = 0;
    store_lock(s);
    err = epoch_locked(s, ctx);
    if (err == MF_OK)
        NOT_DURABLE(s, ctx, reserve_locked(first_out, s, ctx, device_id, n));
    store_unlock(s);
    return err;
}

static int directives_locked(struct mf_store_directives *out, struct sqlite_store *s,
                             struct mf_ctx *ctx, const char *device_id, const char *model);

/* last_seen and the sequence block in one statement (one commit), with the generation and
 * the device's channel (into `channel`, MF_STORE_NAME_SIZE bytes). */
static int begin_locked(uint64_t *generation_out, uint64_t *first_out, char *channel,
                        struct sqlite_store *s, struct mf_ctx *ctx, const char *device_id,
                        const uint8_t cred_hash[MF_SHA256_LEN], unsigned n_seq, int64_t now)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx,
                         "UPDATE devices SET last_seen = ?1, assign_seq = max(assign_seq, ?3) + ?4"
                         " WHERE device_id = ?2 AND credential_hash = ?5 RETURNING assign_seq,"
                         " (SELECT generation FROM store_meta WHERE id = 1), channel");
    int rc;

    if (err < 0)
        return err;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)s->floor);
    sqlite3_bind_int(st, 4, (int)n_seq);
    sqlite3_bind_blob(st, 5, cred_hash, MF_SHA256_LEN, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *first_out = (uint64_t)sqlite3_column_int64(st, 0) - n_seq + 1;
        *generation_out = (uint64_t)sqlite3_column_int64(st, 1);
        mf_sqlite__text_col(channel, MF_STORE_NAME_SIZE, st, 2);
    } else if (rc == SQLITE_DONE) {
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    } else {
        err = db_fail(ctx, s, "beginning a check-in");
    }
    db_finish(s, st);
    return err;
}

/* Inside the batch's transaction: begin_locked and the directives of each model. */
static int begin_one_locked(struct sqlite_store *s, struct mf_store_checkin *c)
{
    char channel[MF_STORE_NAME_SIZE] = "";
    int err = begin_locked(&c->generation, &c->first, channel, s, c->ctx, c->device_id,
                           c->cred_hash, c->n_seq, c->now);

    for (size_t i = 0; err == MF_OK && i < c->n_models; i++) {
        const struct mf_store_pin_hint *h = c->hint;

        /* Read in this transaction, the generation says no pin changed since the hint's. */
        if (h && h->generation == c->generation && (h->unpinned >> i & 1u)) {
            memset(&c->dirs[i], 0, sizeof(c->dirs[i]));
            (void)snprintf(c->dirs[i].channel, sizeof(c->dirs[i].channel), "%s", channel);
        } else {
            err = directives_locked(&c->dirs[i], s, c->ctx, c->device_id, c->models[i]);
        }
    }
    return err;
}

/* Fails every item that still counts as done: their writes went with the transaction. */
static void fail_done(struct mf_store_checkin *items, size_t n, int err, const char *msg)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].err == MF_OK)
            items[i].err = mf_fail(items[i].ctx, err, "check-in not recorded: %s", msg);
    }
}

/*
 * All the check-ins of a batch in one transaction: one round of the WAL's locks, one WAL
 * write and one switch of the synchronous level for all of them. Each item's UPDATE is one
 * statement, so an item that fails (a credential no longer the device's) leaves nothing
 * behind and the others go on; an error that ends the whole transaction, or its COMMIT
 * failing, fails every item.
 */
/* The batch's transaction on the check-in connection (sqlite_checkin_begin); a message
 * for the whole batch into `msg` when it failed as a whole. */
static int begin_batch_locked(struct sqlite_store *s, struct mf_store_checkin *items, size_t n,
                              char *msg, size_t msg_size)
{
    struct mf_ctx *ctx = items[0].ctx, *cause = ctx; /* ctx: the batch's own statements */
    int err = db_run(s, ctx, "BEGIN IMMEDIATE");

    for (size_t i = 0; err == MF_OK && i < n; i++) {
        items[i].err = begin_one_locked(s, &items[i]);
        /* SQLite rolled the transaction back (I/O error, full disk): all is lost. */
        if (items[i].err < 0 && sqlite3_get_autocommit(s->c->db)) {
            err = items[i].err;
            cause = items[i].ctx;
        }
    }
    if (err == MF_OK && db_run(s, ctx, "COMMIT") < 0) {
        err = MF_E_IO;
        (void)snprintf(msg, msg_size, "%s", mf_ctx__errmsg(ctx));
        (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);
    }
    if (err < 0 && !msg[0])
        (void)snprintf(msg, msg_size, "%s", mf_ctx__errmsg(cause));
    return err;
}

static int sqlite_checkin_begin(struct mf_store *base, struct mf_store_checkin *items, size_t n)
{
    struct sqlite_store *s = to_sqlite(base);
    char msg[256] = "";
    int err;

    for (size_t i = 0; i < n; i++) {
        items[i].generation = items[i].first = 0;
        items[i].err = MF_OK;
    }
    store_lock(s);
    err = epoch_locked(s, items[0].ctx);
    if (err < 0)
        (void)snprintf(msg, sizeof(msg), "%s", mf_ctx__errmsg(items[0].ctx));
    else
        NOT_DURABLE(s, items[0].ctx, begin_batch_locked(s, items, n, msg, sizeof(msg)));
    if (err < 0 && !msg[0])
        (void)snprintf(msg, sizeof(msg), "%s", mf_ctx__errmsg(items[0].ctx));
    store_unlock(s);
    if (err < 0)
        fail_done(items, n, err, msg);
    for (size_t i = 0; i < n; i++) {
        if (items[i].err < 0)
            return items[i].err;
    }
    return MF_OK;
}

static int report_insert_locked(struct sqlite_store *s, struct mf_ctx *ctx,
                                const struct mf_store_status *r)
{
    static const char *const sql[] = {
        "INSERT INTO device_models(device_id, model, version, sha256, status, detail,"
        " reported_at) SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM devices WHERE device_id = ?1"
        " ON CONFLICT(device_id, model) DO UPDATE SET version = excluded.version,"
        " sha256 = excluded.sha256, status = excluded.status, detail = excluded.detail,"
        " reported_at = excluded.reported_at",
        "INSERT INTO events(device_id, model, version, sha256, status, detail, created_at)"
        " SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM devices WHERE device_id = ?1",
    };
    int err = MF_OK;

    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]) && err == MF_OK; i++) {
        sqlite3_stmt *st = NULL;

        err = db_prepare(&st, s, ctx, sql[i]);
        if (err < 0)
            break;
        sqlite3_bind_text(st, 1, r->device_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->model, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->sha256, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, r->status, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, r->detail, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, r->reported_at);
        err = db_step_done(st, s, ctx);
        if (err == MF_OK && sqlite3_changes(s->c->db) == 0)
            err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", r->device_id);
        db_finish(s, st);
    }
    return err;
}

static int sqlite_report_insert(struct mf_store *base, struct mf_ctx *ctx,
                                const struct mf_store_status *r)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    IN_TRANSACTION(s, ctx, report_insert_locked(s, ctx, r));
    return err;
}

/* Walks every row of `sql`, converting each with `read` into `row` and passing it to
 * `visit`; a negative visitor result stops the walk and is returned unchanged. */
typedef void (*any_fn)(void);
typedef int (*row_visit_fn)(sqlite3_stmt *st, void *row, any_fn fn, void *payload);

static int walk_rows(struct mf_store *base, struct mf_ctx *ctx, const char *sql, void *row,
                     row_visit_fn visit, any_fn fn, void *payload)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    store_lock(s);
    err = db_prepare(&st, s, ctx, sql);
    while (err == MF_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, s, "listing");
            break;
        }
        err = visit(st, row, fn, payload);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int visit_version(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    read_version_row(row, st);
    return ((mf_store_version_fn)fn)(payload, row);
}

static int visit_device(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    struct mf_store_device *d = row;

    mf_sqlite__text_col(d->device_id, sizeof(d->device_id), st, 0);
    d->enrolled_at = sqlite3_column_int64(st, 1);
    d->last_seen = sqlite3_column_int64(st, 2);
    mf_sqlite__text_col(d->channel, sizeof(d->channel), st, 3);
    d->revoked = sqlite3_column_int(st, 4);
    return ((mf_store_device_fn)fn)(payload, d);
}

static int visit_status(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    struct mf_store_status *r = row;

    mf_sqlite__text_col(r->device_id, sizeof(r->device_id), st, 0);
    mf_sqlite__text_col(r->model, sizeof(r->model), st, 1);
    mf_sqlite__text_col(r->version, sizeof(r->version), st, 2);
    mf_sqlite__text_col(r->sha256, sizeof(r->sha256), st, 3);
    mf_sqlite__text_col(r->status, sizeof(r->status), st, 4);
    mf_sqlite__text_col(r->detail, sizeof(r->detail), st, 5);
    r->reported_at = sqlite3_column_int64(st, 6);
    return ((mf_store_status_fn)fn)(payload, r);
}

static int sqlite_versions_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_version_fn fn,
                                void *payload)
{
    struct mf_store_version row;

    return walk_rows(base, ctx,
                     "SELECT " VERSION_COLUMNS " FROM model_versions v JOIN models m"
                     " ON m.id = v.model_id ORDER BY m.name, v.id",
                     &row, visit_version, (any_fn)fn, payload);
}

static int sqlite_devices_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_device_fn fn,
                               void *payload)
{
    struct mf_store_device row;

    return walk_rows(base, ctx,
                     "SELECT device_id, enrolled_at, last_seen, channel, revoked FROM devices"
                     " ORDER BY device_id",
                     &row, visit_device, (any_fn)fn, payload);
}

static int sqlite_statuses_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_status_fn fn,
                                void *payload)
{
    struct mf_store_status row;

    return walk_rows(base, ctx,
                     "SELECT d.device_id, s.model, s.version, s.sha256, s.status, s.detail,"
                     " s.reported_at FROM device_models s JOIN devices d ON d.id = s.device_id"
                     " ORDER BY d.device_id, s.model",
                     &row, visit_status, (any_fn)fn, payload);
}

/* ---- Migration 3 ops: director inputs, roles, jobs, deltas (semantics in store.h) ---- */

/*
 * Binds parameters from `types` ('t' text, 'i' int64, 'h' 32-byte hash) in order, steps a
 * statement that returns no rows and reports how many rows it changed. The caller holds
 * the lock. Most ops below are one statement; this keeps each of them to its SQL.
 */
static int run_locked(int *changes_out, struct sqlite_store *s, struct mf_ctx *ctx, const char *sql,
                      const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx, sql);

    for (int i = 0; err == MF_OK && types[i]; i++) {
        if (types[i] == 't')
            sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else if (types[i] == 'i')
            sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        else
            sqlite3_bind_blob(st, i + 1, va_arg(ap, const uint8_t *), MF_SHA256_LEN,
                              SQLITE_TRANSIENT);
    }
    if (err == MF_OK)
        err = db_step_done(st, s, ctx);
    if (err == MF_OK && changes_out)
        *changes_out = sqlite3_changes(s->c->db);
    db_finish(s, st);
    return err;
}

/* run_locked() under the lock, as one implicit transaction. */
static int run1(int *changes_out, struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                const char *types, ...)
{
    struct sqlite_store *s = to_sqlite(base);
    va_list ap;
    int err;

    va_start(ap, types);
    store_lock(s);
    err = run_locked(changes_out, s, ctx, sql, types, ap);
    store_unlock(s);
    va_end(ap);
    return err;
}

static int run_tx(int *changes_out, struct sqlite_store *s, struct mf_ctx *ctx, const char *sql,
                  const char *types, ...)
{
    va_list ap;
    int err;

    va_start(ap, types);
    err = run_locked(changes_out, s, ctx, sql, types, ap);
    va_end(ap);
    return err;
}

static int device_exists_locked(struct sqlite_store *s, struct mf_ctx *ctx, const char *device_id)
{
    sqlite3_stmt *st = NULL;
    int err = db_prepare(&st, s, ctx, "SELECT 1 FROM devices WHERE device_id = ?");
    int rc;

    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    else if (rc != SQLITE_ROW)
        err = db_fail(ctx, s, "device lookup");
    db_finish(s, st);
    return err;
}

static int groups_set_locked(struct sqlite_store *s, struct mf_ctx *ctx, const char *device_id,
                             const char *const *groups, size_t n)
{
    int err = device_exists_locked(s, ctx, device_id);

    if (err == MF_OK)
        err = run_tx(NULL, s, ctx,
                     "DELETE FROM device_groups WHERE device_id ="
                     " (SELECT id FROM devices WHERE device_id = ?)",
                     "t", device_id);
    for (size_t i = 0; err == MF_OK && i < n; i++)
        err = run_tx(NULL, s, ctx,
                     "INSERT INTO device_groups(device_id, grp) SELECT id, ? FROM devices"
                     " WHERE device_id = ? ON CONFLICT DO NOTHING",
                     "tt", groups[i], device_id);
    return err;
}

static int sqlite_device_groups_set(struct mf_store *base, struct mf_ctx *ctx,
                                    const char *device_id, const char *const *groups, size_t n)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    IN_TRANSACTION(s, ctx, groups_set_locked(s, ctx, device_id, groups, n));
    return err;
}

/* A one-row UPDATE of a device: MF_E_NOTFOUND when no device has `device_id`. */
static int device_update(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                         const char *device_id, const char *value)
{
    int changes = 0;
    int err = value ? run1(&changes, base, ctx, sql, "tt", value, device_id)
                    : run1(&changes, base, ctx, sql, "t", device_id);

    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    return err;
}

static int sqlite_device_channel_set(struct mf_store *base, struct mf_ctx *ctx,
                                     const char *device_id, const char *channel)
{
    return device_update(base, ctx, "UPDATE devices SET channel = ? WHERE device_id = ?", device_id,
                         channel);
}

static int sqlite_device_revoke(struct mf_store *base, struct mf_ctx *ctx, const char *device_id)
{
    /* Dropping the hash is what revokes: auth looks devices up by it. */
    return device_update(base, ctx,
                         "UPDATE devices SET credential_hash = NULL, revoked = 1"
                         " WHERE device_id = ?",
                         device_id, NULL);
}

struct pair_row {
    char a[MF_STORE_NAME_SIZE];
    char b[MF_STORE_NAME_SIZE];
};

static int visit_pair(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    struct pair_row *p = row;

    mf_sqlite__text_col(p->a, sizeof(p->a), st, 0);
    mf_sqlite__text_col(p->b, sizeof(p->b), st, 1);
    return ((mf_store_pair_fn)fn)(payload, p->a, p->b);
}

static int sqlite_groups_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_pair_fn fn,
                              void *payload)
{
    struct pair_row row;

    return walk_rows(base, ctx,
                     "SELECT d.device_id, g.grp FROM device_groups g JOIN devices d"
                     " ON d.id = g.device_id ORDER BY g.grp, d.device_id",
                     &row, visit_pair, (any_fn)fn, payload);
}

static int visit_group(sqlite3_stmt *st, void *fn, void *payload)
{
    char device_id[MF_STORE_NAME_SIZE], group[MF_STORE_NAME_SIZE];

    mf_sqlite__text_col(device_id, sizeof(device_id), st, 0);
    mf_sqlite__text_col(group, sizeof(group), st, 1);
    return ((mf_store_pair_fn)fn)(payload, device_id, group);
}

static int sqlite_device_groups_get(struct mf_store *base, struct mf_ctx *ctx,
                                    const char *device_id, mf_store_pair_fn fn, void *payload)
{
    return mf_sqlite__walk(base, ctx, visit_group, (void *)fn, payload,
                           "SELECT d.device_id, g.grp FROM devices d JOIN device_groups g"
                           " ON g.device_id = d.id WHERE d.device_id = ? ORDER BY g.grp",
                           "t", device_id);
}

static int sqlite_pin_set(struct mf_store *base, struct mf_ctx *ctx, const struct mf_store_pin *p)
{
    return run1(NULL, base, ctx,
                "INSERT INTO pins(scope, target, model, version, created_at)"
                " VALUES(?, ?, ?, ?, ?) ON CONFLICT(scope, target, model) DO UPDATE SET"
                " version = excluded.version, created_at = excluded.created_at",
                "itttii", (int64_t)p->scope, p->target, p->model, p->version, p->created_at);
}

static int sqlite_pin_clear(struct mf_store *base, struct mf_ctx *ctx, int scope,
                            const char *target, const char *model)
{
    int changes = 0;
    int err =
        run1(&changes, base, ctx, "DELETE FROM pins WHERE scope = ? AND target = ? AND model = ?",
             "itt", (int64_t)scope, target, model);

    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no directive for model '%s' on '%s'", model, target);
    return err;
}

static int visit_pin(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    struct mf_store_pin *p = row;

    p->scope = sqlite3_column_int(st, 0);
    mf_sqlite__text_col(p->target, sizeof(p->target), st, 1);
    mf_sqlite__text_col(p->model, sizeof(p->model), st, 2);
    mf_sqlite__text_col(p->version, sizeof(p->version), st, 3);
    p->created_at = sqlite3_column_int64(st, 4);
    return ((mf_store_pin_fn)fn)(payload, p);
}

static int sqlite_pins_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_pin_fn fn,
                            void *payload)
{
    struct mf_store_pin row;

    return walk_rows(base, ctx,
                     "SELECT scope, target, model, version, created_at FROM pins"
                     " ORDER BY scope, target, model",
                     &row, visit_pin, (any_fn)fn, payload);
}

/* One statement: a check-in reads this on every model. Scopes: 1 device, 2 group,
 * 3 channel, 4 fleet. The caller holds the lock. */
static int directives_locked(struct mf_store_directives *out, struct sqlite_store *s,
                             struct mf_ctx *ctx, const char *device_id, const char *model)
{
    static const char sql[] =
        "SELECT d.channel,"
        " (SELECT version FROM pins WHERE scope = 1 AND target = d.device_id AND model = ?2),"
        " (SELECT p.target || '/' || p.version FROM pins p JOIN device_groups g"
        "   ON g.grp = p.target AND g.device_id = d.id WHERE p.scope = 2 AND p.model = ?2"
        "   ORDER BY p.target LIMIT 1),"
        " (SELECT version FROM pins WHERE scope = 3 AND target = d.channel AND model = ?2),"
        " (SELECT version FROM pins WHERE scope = 4 AND target = '*' AND model = ?2)"
        " FROM devices d WHERE d.device_id = ?1";
    sqlite3_stmt *st = NULL;
    char grp[2 * MF_STORE_NAME_SIZE] = "";
    int err, rc;

    memset(out, 0, sizeof(*out));
    err = db_prepare(&st, s, ctx, sql);
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, device_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            mf_sqlite__text_col(out->channel, sizeof(out->channel), st, 0);
            mf_sqlite__text_col(out->device_pin, sizeof(out->device_pin), st, 1);
            mf_sqlite__text_col(grp, sizeof(grp), st, 2);
            mf_sqlite__text_col(out->channel_version, sizeof(out->channel_version), st, 3);
            mf_sqlite__text_col(out->fleet_rollback, sizeof(out->fleet_rollback), st, 4);
        } else if (rc == SQLITE_DONE) {
            err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
        } else {
            err = db_fail(ctx, s, "reading directives");
        }
    }
    db_finish(s, st);
    if (err == MF_OK && grp[0]) {
        /* Names never contain '/', so the first one splits group from version. */
        const char *slash = strchr(grp, '/');

        if (slash) {
            (void)snprintf(out->group, sizeof(out->group), "%.*s", (int)(slash - grp), grp);
            (void)snprintf(out->group_pin, sizeof(out->group_pin), "%s", slash + 1);
        }
    }
    return err;
}

static int sqlite_directives_get(struct mf_store_directives *out, struct mf_store *base,
                                 struct mf_ctx *ctx, const char *device_id, const char *model)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    store_lock(s);
    err = directives_locked(out, s, ctx, device_id, model);
    store_unlock(s);
    return err;
}

static int sqlite_admin_token_insert(struct mf_store *base, struct mf_ctx *ctx,
                                     const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                                     int64_t now)
{
    return run1(NULL, base, ctx,
                "INSERT INTO tokens(hash, kind, created_at, role, name) VALUES(?, 0, ?, ?, ?)",
                "hiit", hash, now, (int64_t)role, name);
}

static int sqlite_admin_token_auth(int *role_out, struct mf_store *base, struct mf_ctx *ctx,
                                   const uint8_t hash[MF_SHA256_LEN])
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    *role_out = 0;
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT hash, role FROM tokens WHERE hash = ? AND kind = 0 AND revoked = 0");
    if (err == MF_OK) {
        sqlite3_bind_blob(st, 1, hash, MF_SHA256_LEN, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == MF_SHA256_LEN &&
            mf_ct_memeq(sqlite3_column_blob(st, 0), hash, MF_SHA256_LEN))
            *role_out = sqlite3_column_int(st, 1);
        else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
        else
            err = db_fail(ctx, s, "token lookup");
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_admin_token_revoke(struct mf_store *base, struct mf_ctx *ctx, const char *id)
{
    int changes = 0;
    int err = run1(&changes, base, ctx,
                   "UPDATE tokens SET revoked = 1 WHERE kind = 0 AND revoked = 0"
                   " AND lower(hex(substr(hash, 1, 8))) = lower(?)",
                   "t", id);

    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no active admin token with id '%s'", id);
    return err;
}

static int visit_token(sqlite3_stmt *st, void *row, any_fn fn, void *payload)
{
    struct mf_store_token *t = row;

    mf_sqlite__text_col(t->id, sizeof(t->id), st, 0);
    mf_sqlite__text_col(t->name, sizeof(t->name), st, 1);
    t->role = sqlite3_column_int(st, 2);
    t->created_at = sqlite3_column_int64(st, 3);
    t->revoked = sqlite3_column_int(st, 4);
    return ((mf_store_token_fn)fn)(payload, t);
}

static int sqlite_admin_tokens_list(struct mf_store *base, struct mf_ctx *ctx, mf_store_token_fn fn,
                                    void *payload)
{
    struct mf_store_token row;

    return walk_rows(base, ctx,
                     "SELECT lower(hex(substr(hash, 1, 8))), name, role, created_at, revoked"
                     " FROM tokens WHERE kind = 0 ORDER BY created_at, rowid",
                     &row, visit_token, (any_fn)fn, payload);
}

static int sqlite_job_enqueue(struct mf_store *base, struct mf_ctx *ctx, const char *kind,
                              const char *arg, int64_t now)
{
    return run1(NULL, base, ctx,
                "INSERT INTO jobs(kind, arg, created_at) VALUES(?, ?, ?)"
                " ON CONFLICT(kind, arg) WHERE state IN ('queued','running') DO NOTHING",
                "tti", kind, arg, now);
}

/* `kind` NULL: any kind. */
static int claim_locked(struct mf_store_job *out, struct sqlite_store *s, struct mf_ctx *ctx,
                        const char *kind, const char *owner, int64_t now, int64_t lease_s)
{
    sqlite3_stmt *st = NULL;
    int err, rc;

    /* Jobs whose lease ran out with no attempts left stop here instead of looping. */
    err = run_tx(NULL, s, ctx,
                 "UPDATE jobs SET state = 'failed', error = 'attempts exhausted'"
                 " WHERE state = 'running' AND lease_until <= ? AND attempts >= ?",
                 "ii", now, (int64_t)MF_STORE_JOB_MAX_ATTEMPTS);
    if (err < 0)
        return err;
    err = db_prepare(&st, s, ctx,
                     "UPDATE jobs SET state = 'running', owner = ?1, lease_until = ?2 + ?3,"
                     " attempts = attempts + 1 WHERE id = (SELECT id FROM jobs"
                     " WHERE (state = 'queued' OR (state = 'running' AND lease_until <= ?2))"
                     " AND (?4 IS NULL OR kind = ?4)"
                     " ORDER BY id LIMIT 1) RETURNING id, kind, arg, attempts");
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int64(st, 3, lease_s);
    if (kind)
        sqlite3_bind_text(st, 4, kind, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, 0);
        mf_sqlite__text_col(out->kind, sizeof(out->kind), st, 1);
        mf_sqlite__text_col(out->arg, sizeof(out->arg), st, 2);
        out->attempts = sqlite3_column_int(st, 3);
    } else if (rc == SQLITE_DONE) {
        err = mf_fail(ctx, MF_E_NOTFOUND, "no job to claim");
    } else {
        err = db_fail(ctx, s, "claiming a job");
    }
    db_finish(s, st);
    return err;
}

static int sqlite_job_claim(struct mf_store_job *out, struct mf_store *base, struct mf_ctx *ctx,
                            const char *owner, int64_t now, int64_t lease_s)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    memset(out, 0, sizeof(*out));
    /* BEGIN IMMEDIATE takes the write lock first, so two processes on one file cannot
     * both read the same queued row before either updates it. */
    IN_TRANSACTION(s, ctx, claim_locked(out, s, ctx, NULL, owner, now, lease_s));
    return err;
}

static int sqlite_job_claim_kind(struct mf_store_job *out, struct mf_store *base,
                                 struct mf_ctx *ctx, const char *kind, const char *owner,
                                 int64_t now, int64_t lease_s)
{
    struct sqlite_store *s = to_sqlite(base);
    int err;

    memset(out, 0, sizeof(*out));
    IN_TRANSACTION(s, ctx, claim_locked(out, s, ctx, kind, owner, now, lease_s));
    return err;
}

/* Ends a claimed job: `sql` updates it only while `owner` still holds it. */
static int job_end(struct mf_store *base, struct mf_ctx *ctx, const char *sql, int64_t id,
                   const char *owner, const char *error)
{
    int changes = 0;
    int err = error ? run1(&changes, base, ctx, sql, "tit", error, id, owner)
                    : run1(&changes, base, ctx, sql, "it", id, owner);

    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, MF_E_STATE, "job %lld is not held by '%s'", (long long)id, owner);
    return err;
}

static int sqlite_job_complete(struct mf_store *base, struct mf_ctx *ctx, int64_t id,
                               const char *owner)
{
    return job_end(base, ctx,
                   "UPDATE jobs SET state = 'done', lease_until = 0 WHERE id = ? AND owner = ?"
                   " AND state = 'running'",
                   id, owner, NULL);
}

static int sqlite_job_fail(struct mf_store *base, struct mf_ctx *ctx, int64_t id, const char *owner,
                           const char *error)
{
    return job_end(base, ctx,
                   "UPDATE jobs SET error = ?1, lease_until = 0, state = CASE WHEN attempts >= "
                   "3 THEN 'failed' ELSE 'queued' END" /* 3: MF_STORE_JOB_MAX_ATTEMPTS */
                   " WHERE id = ?2 AND owner = ?3 AND state = 'running'",
                   id, owner, error);
}

static int sqlite_job_counts(int64_t *queued_out, int64_t *running_out, struct mf_store *base,
                             struct mf_ctx *ctx, int64_t now)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    *queued_out = *running_out = 0;
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT coalesce(sum(state = 'queued' OR (state = 'running' AND"
                     " lease_until <= ?1)), 0), coalesce(sum(state = 'running' AND"
                     " lease_until > ?1), 0) FROM jobs");
    if (err == MF_OK) {
        sqlite3_bind_int64(st, 1, now);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *queued_out = sqlite3_column_int64(st, 0);
            *running_out = sqlite3_column_int64(st, 1);
        } else {
            err = db_fail(ctx, s, "counting jobs");
        }
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_delta_insert(struct mf_store *base, struct mf_ctx *ctx,
                               const struct mf_store_delta *d)
{
    return run1(NULL, base, ctx,
                "INSERT INTO deltas(model, from_sha256, to_sha256, delta_sha256, size, format,"
                " created_at) VALUES(?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(from_sha256, to_sha256) DO NOTHING",
                "ttttiti", d->model, d->from_sha256, d->to_sha256, d->delta_sha256,
                (int64_t)d->size, d->format, d->created_at);
}

static int sqlite_delta_find(struct mf_store_delta *out, struct mf_store *base, struct mf_ctx *ctx,
                             const char *from_sha256, const char *to_sha256)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err, rc;

    memset(out, 0, sizeof(*out));
    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT model, from_sha256, to_sha256, delta_sha256, size, format, created_at"
                     " FROM deltas WHERE from_sha256 = ? AND to_sha256 = ?");
    if (err == MF_OK) {
        sqlite3_bind_text(st, 1, from_sha256, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, to_sha256, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            mf_sqlite__text_col(out->model, sizeof(out->model), st, 0);
            mf_sqlite__text_col(out->from_sha256, sizeof(out->from_sha256), st, 1);
            mf_sqlite__text_col(out->to_sha256, sizeof(out->to_sha256), st, 2);
            mf_sqlite__text_col(out->delta_sha256, sizeof(out->delta_sha256), st, 3);
            out->size = (uint64_t)sqlite3_column_int64(st, 4);
            mf_sqlite__text_col(out->format, sizeof(out->format), st, 5);
            out->created_at = sqlite3_column_int64(st, 6);
        } else if (rc == SQLITE_DONE) {
            err = mf_fail(ctx, MF_E_NOTFOUND, "no delta");
        } else {
            err = db_fail(ctx, s, "delta lookup");
        }
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_delta_count(int64_t *count_out, struct mf_store *base, struct mf_ctx *ctx)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    *count_out = 0;
    store_lock(s);
    err = db_prepare(&st, s, ctx, "SELECT count(*) FROM deltas");
    if (err == MF_OK && sqlite3_step(st) == SQLITE_ROW)
        *count_out = sqlite3_column_int64(st, 0);
    else if (err == MF_OK)
        err = db_fail(ctx, s, "counting deltas");
    db_finish(s, st);
    store_unlock(s);
    return err;
}

static int sqlite_fleet_sha256s(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                                mf_store_pair_fn fn, void *payload)
{
    struct sqlite_store *s = to_sqlite(base);
    sqlite3_stmt *st = NULL;
    int err;

    store_lock(s);
    err = db_prepare(&st, s, ctx,
                     "SELECT DISTINCT sha256 FROM device_models WHERE model = ?"
                     " AND status = 'installed' ORDER BY sha256");
    if (err == MF_OK)
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    while (err == MF_OK) {
        int rc = sqlite3_step(st);
        char sha[MF_SHA256_HEX_LEN + 1];

        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            err = db_fail(ctx, s, "listing fleet versions");
            break;
        }
        mf_sqlite__text_col(sha, sizeof(sha), st, 0);
        err = fn(payload, "", sha);
    }
    db_finish(s, st);
    store_unlock(s);
    return err;
}

/* sqlite_offload.c runs its ops on this connection, under this lock. */
int mf_sqlite__prepare(sqlite3_stmt **out, struct mf_store *base, struct mf_ctx *ctx,
                       const char *sql)
{
    return db_prepare(out, to_sqlite(base), ctx, sql);
}

void mf_sqlite__finish(struct mf_store *base, sqlite3_stmt *st)
{
    db_finish(to_sqlite(base), st);
}

sqlite3 *mf_sqlite__lock(struct mf_store *base)
{
    store_lock(to_sqlite(base));
    return to_sqlite(base)->c->db;
}

void mf_sqlite__unlock(struct mf_store *base)
{
    store_unlock(to_sqlite(base));
}

const struct mf_store_ops mf_store__sqlite_ops = {
    .scheme = "sqlite",
    .open = sqlite_open,
    .default_threads = 4,
    .close = sqlite_close,
    .migrate = sqlite_migrate,
    .schema_version = sqlite_schema_version,
    .token_count = sqlite_token_count,
    .token_insert = sqlite_token_insert,
    .token_check = sqlite_token_check,
    .device_enroll = sqlite_device_enroll,
    .device_auth = sqlite_device_auth,
    .device_touch = sqlite_device_touch,
    .version_insert = sqlite_version_insert,
    .version_get = sqlite_version_get,
    .version_latest = sqlite_version_latest,
    .release_set = sqlite_release_set,
    .release_get = sqlite_release_get,
    .release_latest = sqlite_release_latest,
    .trust_put = sqlite_trust_put,
    .trust_latest = sqlite_trust_latest,
    .trust_roots_after = sqlite_trust_roots_after,
    .device_reserve_sequence = sqlite_device_reserve_sequence,
    .report_insert = sqlite_report_insert,
    .versions_list = sqlite_versions_list,
    .devices_list = sqlite_devices_list,
    .statuses_list = sqlite_statuses_list,
    .device_groups_set = sqlite_device_groups_set,
    .device_channel_set = sqlite_device_channel_set,
    .groups_list = sqlite_groups_list,
    .device_revoke = sqlite_device_revoke,
    .pin_set = sqlite_pin_set,
    .pin_clear = sqlite_pin_clear,
    .pins_list = sqlite_pins_list,
    .directives_get = sqlite_directives_get,
    .admin_token_insert = sqlite_admin_token_insert,
    .admin_token_auth = sqlite_admin_token_auth,
    .admin_token_revoke = sqlite_admin_token_revoke,
    .admin_tokens_list = sqlite_admin_tokens_list,
    .job_enqueue = sqlite_job_enqueue,
    .job_claim = sqlite_job_claim,
    .job_complete = sqlite_job_complete,
    .job_fail = sqlite_job_fail,
    .job_counts = sqlite_job_counts,
    .delta_insert = sqlite_delta_insert,
    .delta_find = sqlite_delta_find,
    .delta_count = sqlite_delta_count,
    .fleet_sha256s = sqlite_fleet_sha256s,
    .sample_batch_put = mf_sqlite__sample_batch_put,
    .sample_label = mf_sqlite__sample_label,
    .samples_walk = mf_sqlite__samples_walk,
    .samples_delete = mf_sqlite__samples_delete,
    .hist_add = mf_sqlite__hist_add,
    .hists_list = mf_sqlite__hists_list,
    .job_claim_kind = sqlite_job_claim_kind,
    .telemetry_put = mf_sqlite__telemetry_put,
    .telemetry_list = mf_sqlite__telemetry_list,
    .rollout_put = mf_sqlite__rollout_put,
    .rollout_get = mf_sqlite__rollout_get,
    .rollouts_list = mf_sqlite__rollouts_list,
    .rollout_event_add = mf_sqlite__rollout_event_add,
    .rollout_events_list = mf_sqlite__rollout_events_list,
    .checkin_begin = sqlite_checkin_begin,
    .device_groups_get = sqlite_device_groups_get,
    .distill_run_put = mf_sqlite__distill_run_put,
    .distill_run_get = mf_sqlite__distill_run_get,
    .distill_runs_list = mf_sqlite__distill_runs_list,
    .blob_ref = mf_sqlite__blob_ref,
    .blob_released = mf_sqlite__blob_released,
};
