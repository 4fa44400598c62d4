/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numbered migrations of both backends (see store_schema.h). Most are written once:
 * MIGRATION_n(T) spells each column type as T(INT), T(ID), T(BLOB), T(REAL), and the
 * table below expands it with each dialect's types (PostgreSQL: BIGINT for every number,
 * BIGSERIAL for row ids, BYTEA for blobs, DOUBLE PRECISION for reals), which gives the very
 * texts the backends shipped (test_store_schema pins them). T(KEY) is a primary key that
 * is not a row counter. The store generation's triggers (migrations 6 and 8), T(GEN)(table),
 * differ in kind: SQLite's are per row and per event, PostgreSQL's one function run per
 * statement for all three events (the generation only has to change, not count rows).
 */
#include "store/store_schema.h"

#define SQLITE(t) SQLITE_##t
#define SQLITE_ID "INTEGER PRIMARY KEY"
#define SQLITE_INT "INTEGER"
#define SQLITE_BLOB "BLOB"
#define SQLITE_REAL "REAL"
#define SQLITE_KEY "INTEGER PRIMARY KEY"
#define SQLITE_TOKEN_SEQ "" /* SQLite reads the tokens' creation order from the rowid */
#define SQLITE_GEN_FUNCTION ""
#define SQLITE_GEN(table)                                                                          \
    SQLITE_GEN_ON(table, "INSERT", "ins")                                                          \
    SQLITE_GEN_ON(table, "UPDATE", "upd") SQLITE_GEN_ON(table, "DELETE", "del")
#define SQLITE_GEN_ON(table, event, name)                                                          \
    "CREATE TRIGGER " #table "_gen_" name " AFTER " event " ON " #table " BEGIN"                   \
    "  UPDATE store_meta SET generation = generation + 1; END;"
#define PG(t) PG_##t
#define PG_ID "BIGSERIAL PRIMARY KEY"
#define PG_INT "BIGINT"
#define PG_BLOB "BYTEA"
#define PG_REAL "DOUBLE PRECISION"
#define PG_KEY "BIGINT PRIMARY KEY"
#define PG_TOKEN_SEQ "ALTER TABLE tokens ADD COLUMN seq BIGSERIAL;"
#define PG_GEN_FUNCTION                                                                            \
    "CREATE FUNCTION mf_bump_generation() RETURNS trigger LANGUAGE plpgsql AS"                     \
    "  $$BEGIN UPDATE store_meta SET generation = generation + 1 WHERE id = 1;"                    \
    "  RETURN NULL; END$$;"
#define PG_GEN(table)                                                                              \
    "CREATE TRIGGER " #table "_gen AFTER INSERT OR UPDATE OR DELETE ON " #table                    \
    "  FOR EACH STATEMENT EXECUTE FUNCTION mf_bump_generation();"
#define BOTH(m) .sqlite = m(SQLITE), .pg = m(PG)

const struct mf_store_migration mf_store__schema_table = {
    .n = 0,
    .sqlite = "CREATE TABLE IF NOT EXISTS schema_version ("
              " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
    .pg = "CREATE TABLE IF NOT EXISTS schema_version ("
          " version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
};

/* The migrations are data: their lines stay as the SQL reads, not as clang-format would
 * break the T(...) in them. */
/* clang-format off */
/* Of device_models and events: what a device reported. */
#define REPORT_COLUMNS \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  sha256 TEXT NOT NULL," \
    "  status TEXT NOT NULL," \
    "  detail TEXT NOT NULL,"

/* 1: tokens, devices, models and versions, per-device status and the event log */
#define MIGRATION_1(T) \
    "CREATE TABLE tokens (" \
    "  hash " T(BLOB) " PRIMARY KEY CHECK (length(hash) = 32)," \
    "  kind " T(INT) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  revoked " T(INT) " NOT NULL DEFAULT 0);" \
    "CREATE TABLE devices (" \
    "  id " T(ID) "," \
    "  device_id TEXT NOT NULL UNIQUE," \
    "  credential_hash " T(BLOB) " UNIQUE CHECK (length(credential_hash) = 32)," \
    "  enrolled_at " T(INT) " NOT NULL," \
    "  last_seen " T(INT) " NOT NULL DEFAULT 0);" \
    "CREATE TABLE models (" \
    "  id " T(ID) "," \
    "  name TEXT NOT NULL UNIQUE," \
    "  created_at " T(INT) " NOT NULL);" \
    "CREATE TABLE model_versions (" \
    "  id " T(ID) "," \
    "  model_id " T(INT) " NOT NULL REFERENCES models(id)," \
    "  version TEXT NOT NULL," \
    "  sha256 TEXT NOT NULL CHECK (length(sha256) = 64)," \
    "  size " T(INT) " NOT NULL CHECK (size >= 0)," \
    "  created_at " T(INT) " NOT NULL," \
    "  UNIQUE (model_id, version));" \
    "CREATE TABLE device_models (" \
    "  device_id " T(INT) " NOT NULL REFERENCES devices(id)," \
    REPORT_COLUMNS \
    "  reported_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (device_id, model));" \
    "CREATE TABLE events (" \
    "  id " T(ID) "," \
    "  device_id " T(INT) " NOT NULL REFERENCES devices(id)," \
    REPORT_COLUMNS \
    "  created_at " T(INT) " NOT NULL);" \
    "CREATE INDEX events_by_device ON events(device_id, id);"

/* 2: the trust chain. A version's release envelope and its sequence/floor/digest (a
 * version without a release is staged, never assigned); root and keys documents;
 * the director's per-device assignment sequence. */
#define MIGRATION_2(T) \
    "ALTER TABLE model_versions ADD COLUMN sequence " T(INT) " NOT NULL DEFAULT 0;" \
    "ALTER TABLE model_versions ADD COLUMN security_floor " T(INT) " NOT NULL DEFAULT 0;" \
    "ALTER TABLE model_versions ADD COLUMN release_digest TEXT NOT NULL DEFAULT '';" \
    "ALTER TABLE model_versions ADD COLUMN release " T(BLOB) ";" \
    "CREATE UNIQUE INDEX model_versions_by_sequence ON model_versions(model_id, sequence)" \
    "  WHERE sequence > 0;" \
    "CREATE TABLE trust_docs (" \
    "  kind " T(INT) " NOT NULL," \
    "  version " T(INT) " NOT NULL CHECK (version >= 1)," \
    "  envelope " T(BLOB) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (kind, version));" \
    "ALTER TABLE devices ADD COLUMN assign_seq " T(INT) " NOT NULL DEFAULT 0;"

/* 3: the director's inputs (groups, channels, pins, fleet rollbacks), admin token roles,
 * device revocation, background jobs claimed across nodes, precomputed deltas. Tokens
 * made before keep full rights (role 4 = admin). */
#define MIGRATION_3(T) \
    "ALTER TABLE tokens ADD COLUMN role " T(INT) " NOT NULL DEFAULT 4;" \
    "ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';" \
    T(TOKEN_SEQ) \
    "ALTER TABLE devices ADD COLUMN channel TEXT NOT NULL DEFAULT 'stable';" \
    "ALTER TABLE devices ADD COLUMN revoked " T(INT) " NOT NULL DEFAULT 0;" \
    "CREATE TABLE device_groups (" \
    "  device_id " T(INT) " NOT NULL REFERENCES devices(id)," \
    "  grp TEXT NOT NULL," \
    "  PRIMARY KEY (device_id, grp));" \
    "CREATE INDEX device_groups_by_group ON device_groups(grp);" \
    "CREATE TABLE pins (" \
    "  scope " T(INT) " NOT NULL CHECK (scope BETWEEN 1 AND 4)," \
    "  target TEXT NOT NULL," \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (scope, target, model));" \
    "CREATE TABLE jobs (" \
    "  id " T(ID) "," \
    "  kind TEXT NOT NULL," \
    "  arg TEXT NOT NULL," \
    "  state TEXT NOT NULL DEFAULT 'queued'" \
    " CHECK (state IN ('queued','running','done','failed'))," \
    "  owner TEXT NOT NULL DEFAULT ''," \
    "  lease_until " T(INT) " NOT NULL DEFAULT 0," \
    "  attempts " T(INT) " NOT NULL DEFAULT 0," \
    "  error TEXT NOT NULL DEFAULT ''," \
    "  created_at " T(INT) " NOT NULL);" \
    "CREATE UNIQUE INDEX jobs_pending ON jobs(kind, arg) WHERE state IN ('queued','running');" \
    "CREATE TABLE deltas (" \
    "  model TEXT NOT NULL," \
    "  from_sha256 TEXT NOT NULL CHECK (length(from_sha256) = 64)," \
    "  to_sha256 TEXT NOT NULL CHECK (length(to_sha256) = 64)," \
    "  delta_sha256 TEXT NOT NULL CHECK (length(delta_sha256) = 64)," \
    "  size " T(INT) " NOT NULL," \
    "  format TEXT NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (from_sha256, to_sha256));" \
    "CREATE INDEX device_models_by_model ON device_models(model, sha256);"

/* 4: offload (docs/protocol-offload.md): the hard-sample store with provenance and the
 * teacher's label, the batch ids that make uplinks idempotent, score histograms. */
#define MIGRATION_4(T) \
    "CREATE TABLE offload_samples (" \
    "  seq " T(ID) "," \
    "  id TEXT NOT NULL UNIQUE CHECK (length(id) = 32)," \
    "  device_id TEXT NOT NULL," \
    "  model TEXT NOT NULL," \
    "  model_version TEXT NOT NULL," \
    "  kind TEXT NOT NULL CHECK (kind IN ('hard','audit'))," \
    "  method TEXT NOT NULL," \
    "  score " T(REAL) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  received_at " T(INT) " NOT NULL," \
    "  output_kind TEXT NOT NULL," \
    "  output TEXT NOT NULL," \
    "  input_sha256 TEXT NOT NULL CHECK (length(input_sha256) = 64)," \
    "  input_size " T(INT) " NOT NULL," \
    "  teacher_version TEXT NOT NULL DEFAULT ''," \
    "  teacher_output TEXT NOT NULL DEFAULT ''," \
    "  teacher_confidence " T(REAL) " NOT NULL DEFAULT 0," \
    "  labelled_at " T(INT) " NOT NULL DEFAULT 0);" \
    "CREATE INDEX offload_samples_by_model ON offload_samples(model, seq);" \
    "CREATE INDEX offload_samples_by_device ON offload_samples(device_id);" \
    "CREATE INDEX offload_samples_by_input ON offload_samples(input_sha256);" \
    "CREATE INDEX offload_samples_by_time ON offload_samples(received_at);" \
    "CREATE TABLE offload_batches (" \
    "  device_id TEXT NOT NULL," \
    "  batch_id TEXT NOT NULL CHECK (length(batch_id) = 32)," \
    "  accepted " T(INT) " NOT NULL," \
    "  duplicates " T(INT) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (device_id, batch_id));" \
    "CREATE INDEX offload_batches_by_time ON offload_batches(created_at);" \
    "CREATE TABLE offload_hists (" \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  method TEXT NOT NULL," \
    "  source " T(INT) " NOT NULL," \
    "  bins TEXT NOT NULL," \
    "  asked " T(INT) " NOT NULL," \
    "  uncertain " T(INT) " NOT NULL," \
    "  updated_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (model, version, method, source));"

/* 5: rollouts (docs/rollouts.md): each device's newest cumulative runtime report per
 * (model, version), replaced and never added; rollouts with their wave state; the
 * events of each rollout (advances, pauses, the red line that halted it). */
#define MIGRATION_5(T) \
    "CREATE TABLE telemetry (" \
    "  device_id TEXT NOT NULL," \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  report TEXT NOT NULL," \
    "  reported_at " T(INT) " NOT NULL," \
    "  PRIMARY KEY (model, device_id, version));" \
    "CREATE TABLE rollouts (" \
    "  id " T(ID) "," \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  prev_version TEXT NOT NULL," \
    "  state TEXT NOT NULL," \
    "  wave " T(INT) " NOT NULL," \
    "  wave_started_at " T(INT) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  updated_at " T(INT) " NOT NULL," \
    "  plan TEXT NOT NULL," \
    "  breach TEXT NOT NULL DEFAULT '');" \
    "CREATE INDEX rollouts_by_model ON rollouts(model, id);" \
    "CREATE TABLE rollout_events (" \
    "  seq " T(ID) "," \
    "  rollout_id " T(INT) " NOT NULL," \
    "  at " T(INT) " NOT NULL," \
    "  kind TEXT NOT NULL," \
    "  detail TEXT NOT NULL);" \
    "CREATE INDEX rollout_events_by_rollout ON rollout_events(rollout_id, seq);"

/* 7: distillation runs (docs/distill.md): the loop's jobs with their provenance. At
 * most one queued or running run per model. */
#define MIGRATION_7(T) \
    "CREATE TABLE distill_runs (" \
    "  id " T(ID) "," \
    "  model TEXT NOT NULL," \
    "  state TEXT NOT NULL" \
    " CHECK (state IN ('queued','running','published','rejected','failed'))," \
    "  trigger TEXT NOT NULL," \
    "  parent_version TEXT NOT NULL DEFAULT ''," \
    "  version TEXT NOT NULL DEFAULT ''," \
    "  rollout_id " T(INT) " NOT NULL DEFAULT 0," \
    "  samples_until " T(INT) " NOT NULL DEFAULT 0," \
    "  record TEXT NOT NULL DEFAULT ''," \
    "  error TEXT NOT NULL DEFAULT ''," \
    "  created_at " T(INT) " NOT NULL," \
    "  updated_at " T(INT) " NOT NULL);" \
    "CREATE INDEX distill_runs_by_model ON distill_runs(model, id);" \
    "CREATE UNIQUE INDEX distill_runs_pending ON distill_runs(model)" \
    "  WHERE state IN ('queued','running');"

/* 6: the check-in fast path (docs/architecture.md, "Check-in path"). store_meta.epoch: raised
 * durably by each node before it issues assignment sequence numbers without waiting for the
 * disk; store_meta.generation: raised by every change to what nodes cache for check-ins
 * (trust documents, models and releases, deltas, rollouts): T(GEN)(table) (see above). */
#define MIGRATION_6(T) \
    "CREATE TABLE store_meta (" \
    "  id " T(KEY) " CHECK (id = 1)," \
    "  epoch " T(INT) " NOT NULL," \
    "  generation " T(INT) " NOT NULL);" \
    "INSERT INTO store_meta(id, epoch, generation) VALUES(1, 0, 1);" \
    T(GEN_FUNCTION) \
    T(GEN)(trust_docs) T(GEN)(models) T(GEN)(model_versions) T(GEN)(deltas) T(GEN)(rollouts)

/* 8: pins (device, group and channel pins, fleet rollbacks) raise the generation too, so a
 * node knows which models have none and a check-in skips their directive reads. */
#define MIGRATION_8(T) T(GEN)(pins)

/* 9: what ops set per device group for its devices' check-ins: the poll interval with its
 * jitter, and the install window (NULL: not set). Check-ins cache whether any group has a
 * setting, so its changes raise the generation. */
#define MIGRATION_9(T) \
    "CREATE TABLE group_settings (" \
    "  grp TEXT PRIMARY KEY," \
    "  poll_interval_s " T(INT) "," \
    "  poll_jitter_pct " T(INT) "," \
    "  window_start_min " T(INT) "," \
    "  window_end_min " T(INT) "," \
    "  window_utc_offset_min " T(INT) "," \
    "  updated_at " T(INT) " NOT NULL);" \
    T(GEN)(group_settings)

/* 10: the audit log (docs/operations.md, "Audit log"): who did what to which target, when,
 * and what the server answered; automatic rollout events too (actor rollout-engine). Bounded
 * by age and rows (mf_store audit_prune). Webhooks ops registered (the secret is kept: the
 * server signs with it) and the durable outbox of their deliveries, one row per (webhook,
 * event), claimed under a lease like jobs. */
#define MIGRATION_10(T) \
    "CREATE TABLE audit_log (" \
    "  seq " T(ID) "," \
    "  at " T(INT) " NOT NULL," \
    "  actor_id TEXT NOT NULL," \
    "  actor TEXT NOT NULL," \
    "  action TEXT NOT NULL," \
    "  target TEXT NOT NULL," \
    "  status " T(INT) " NOT NULL," \
    "  detail TEXT NOT NULL);" \
    "CREATE INDEX audit_log_by_at ON audit_log(at);" \
    "CREATE TABLE webhooks (" \
    "  id " T(ID) "," \
    "  url TEXT NOT NULL UNIQUE," \
    "  secret TEXT NOT NULL," \
    "  created_at " T(INT) " NOT NULL);" \
    "CREATE TABLE webhook_outbox (" \
    "  id " T(ID) "," \
    "  webhook_id " T(INT) " NOT NULL," \
    "  event_id TEXT NOT NULL," \
    "  body TEXT NOT NULL," \
    "  state TEXT NOT NULL DEFAULT 'pending'" \
    " CHECK (state IN ('pending','sending','delivered','failed'))," \
    "  attempts " T(INT) " NOT NULL DEFAULT 0," \
    "  next_at " T(INT) " NOT NULL," \
    "  owner TEXT NOT NULL DEFAULT ''," \
    "  lease_until " T(INT) " NOT NULL DEFAULT 0," \
    "  last_error TEXT NOT NULL DEFAULT ''," \
    "  created_at " T(INT) " NOT NULL," \
    "  delivered_at " T(INT) " NOT NULL DEFAULT 0," \
    "  UNIQUE (webhook_id, event_id));" \
    "CREATE INDEX webhook_outbox_due ON webhook_outbox(state, next_at);"

/* 11: published is not deployed (docs/rollouts.md, "Release lifecycle"). model_versions.promoted:
 * the promotion order within the model (0: released, never promoted); the channel default is
 * the highest promoted release, no longer the highest sequence. Releases made before keep what
 * they did then: the highest sequence stays the default. rollouts.soak_started_at: when enough
 * of the wave first reported the new version (0: waiting for evidence); rollouts.control: the
 * control group's figures when the current wave was admitted. */
#define MIGRATION_11(T) \
    "ALTER TABLE model_versions ADD COLUMN promoted " T(INT) " NOT NULL DEFAULT 0;" \
    "UPDATE model_versions SET promoted = sequence WHERE sequence > 0;" \
    "ALTER TABLE rollouts ADD COLUMN soak_started_at " T(INT) " NOT NULL DEFAULT 0;" \
    "ALTER TABLE rollouts ADD COLUMN control TEXT NOT NULL DEFAULT '';"

/* 12: model variants per device class (docs/rollouts.md, "Model variants"). A variant of a
 * version is its own blob with its own signed release and what a device class needs to run
 * it; the director offers each device the best-ranked variant its declared class allows.
 * telemetry.device_class: the class tag of the check-in that carried the report, so red
 * lines and rollbacks apply per class; rollouts.halted_classes: the classes a rollout halted
 * and rolled back while the others go on (comma-separated tags). */
#define MIGRATION_12(T) \
    "CREATE TABLE model_variants (" \
    "  id " T(ID) "," \
    "  model TEXT NOT NULL," \
    "  version TEXT NOT NULL," \
    "  variant TEXT NOT NULL," \
    "  sha256 TEXT NOT NULL," \
    "  size " T(INT) " NOT NULL," \
    "  created_at " T(INT) " NOT NULL," \
    "  variant_rank " T(INT) " NOT NULL," \
    "  min_ram_mb " T(INT) " NOT NULL," \
    "  min_storage_mb " T(INT) " NOT NULL," \
    "  accelerator TEXT NOT NULL," \
    "  int8 " T(INT) " NOT NULL," \
    "  fp16 " T(INT) " NOT NULL," \
    "  class_tag TEXT NOT NULL," \
    "  release_digest TEXT NOT NULL DEFAULT ''," \
    "  release " T(BLOB) "," \
    "  UNIQUE (model, version, variant));" \
    "CREATE INDEX model_variants_by_sha256 ON model_variants(sha256);" \
    T(GEN)(model_variants) \
    "ALTER TABLE telemetry ADD COLUMN device_class TEXT NOT NULL DEFAULT '';" \
    "ALTER TABLE rollouts ADD COLUMN halted_classes TEXT NOT NULL DEFAULT '';"
/* 13: the console's history (docs/console.md). rollout_history: the red lines of each
 * evaluation of a watched rollout, one row per (tick, line); at most
 * MF_STORE_HISTORY_TICKS ticks per rollout (when full, the older half is thinned to every
 * second tick). fleet_versions: the devices that report each (model, version) installed,
 * one snapshot per bin of MF_STORE_FLEET_BIN_S, kept MF_STORE_FLEET_KEEP_S.
 * telemetry_by_class: the devices of a class (the Fleet view's filter, its counts). */
#define MIGRATION_13(T) \
    "CREATE TABLE rollout_history (" \
    "  rollout_id " T(INT) " NOT NULL," \
    "  at " T(INT) " NOT NULL," \
    "  line " T(INT) " NOT NULL," \
    "  metric TEXT NOT NULL," \
    "  kind TEXT NOT NULL," \
    "  state TEXT NOT NULL," \
    "  value " T(REAL) " NOT NULL," \
    "  bound " T(REAL) " NOT NULL," \
    "  control " T(REAL) " NOT NULL," \
    "  devices " T(INT) " NOT NULL," \
    "  control_devices " T(INT) " NOT NULL," \
    "  UNIQUE (rollout_id, at, line));" \
    "CREATE TABLE fleet_versions (" \
    "  model TEXT NOT NULL," \
    "  bin_at " T(INT) " NOT NULL," \
    "  version TEXT NOT NULL," \
    "  devices " T(INT) " NOT NULL," \
    "  UNIQUE (model, bin_at, version));" \
    "CREATE INDEX fleet_versions_by_bin ON fleet_versions(bin_at);" \
    "CREATE INDEX telemetry_by_class ON telemetry(device_class, device_id);"

/* 14: the way down on the device (docs/agent.md, "Runtime degradation").
 * model_variants.fallback: 1 for the variant a release names as its fallback (at most one
 * per version), which check-ins offer beside the assigned variant. device_switches: the
 * degrade/restore switches devices report, one row per (device, seq), the newest
 * MF_STORE_SWITCHES_KEEP per device. */
#define MIGRATION_14(T) \
    "ALTER TABLE model_variants ADD COLUMN fallback " T(INT) " NOT NULL DEFAULT 0;" \
    "CREATE TABLE device_switches (" \
    "  id " T(ID) "," \
    "  device_id " T(INT) " NOT NULL REFERENCES devices(id)," \
    "  seq " T(INT) " NOT NULL," \
    "  at " T(INT) " NOT NULL," \
    "  received_at " T(INT) " NOT NULL," \
    "  degraded " T(INT) " NOT NULL," \
    "  reason TEXT NOT NULL," \
    "  UNIQUE (device_id, seq));"

/* 15: the chunk list of a chunk-tree release as a blob of its own (docs/formats/manifest.md,
 * "Chunk tree"): its sha256, '' when the release carries no chunks_root. */
#define MIGRATION_15(T) \
    "ALTER TABLE model_versions ADD COLUMN chunks_sha256 TEXT NOT NULL DEFAULT '';"
/* clang-format on */

const struct mf_store_migration mf_store__migrations[] = {
    {.n = 1, BOTH(MIGRATION_1)},   {.n = 2, BOTH(MIGRATION_2)},   {.n = 3, BOTH(MIGRATION_3)},
    {.n = 4, BOTH(MIGRATION_4)},   {.n = 5, BOTH(MIGRATION_5)},   {.n = 6, BOTH(MIGRATION_6)},
    {.n = 7, BOTH(MIGRATION_7)},   {.n = 8, BOTH(MIGRATION_8)},   {.n = 9, BOTH(MIGRATION_9)},
    {.n = 10, BOTH(MIGRATION_10)}, {.n = 11, BOTH(MIGRATION_11)}, {.n = 12, BOTH(MIGRATION_12)},
    {.n = 13, BOTH(MIGRATION_13)}, {.n = 14, BOTH(MIGRATION_14)}, {.n = 15, BOTH(MIGRATION_15)},
};
