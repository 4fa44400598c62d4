/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's persistent state behind one backend-neutral interface (STYLE rule 4, like
 * curl's struct Curl_ssl). A backend embeds `struct mf_store` as its first member; callers
 * only ever go through `s->ops`, whose operations are grouped by domain: s->ops->auth (tokens,
 * device credentials, admin tokens), ->registry (versions, releases, trust documents,
 * deltas), ->devices (device listings and reports), ->checkin (the check-in fast path),
 * ->director (groups, channels, pins, directives), ->jobs, ->offload, ->rollout, ->distill,
 * ->blobs (who refers to a blob), ->audit (the audit log), ->webhooks (URLs and outbox),
 * ->variants (model variants per device class).
 * Backends are picked from a static table by URL scheme (store.c): "sqlite:<path>" (or a
 * bare path) and "postgresql://..." / "postgres://...".
 *
 * Layout (server/store/README.md): the operations of every domain but the check-in path are
 * written once, in store_<domain>.c, over a small engine each backend gives
 * (store_engine.h: run one statement, walk its rows through a cursor, run a transaction);
 * their SQL is one statement catalogue with `?` placeholders, with a dialect's own text only
 * where SQLite and PostgreSQL really differ. sqlite/ and pg/ hold each backend's connection
 * handling, its engine and its check-in path. The schema is one migrations table driving
 * both backends (store_schema.c).
 *
 * Every op is safe to call from several threads at once; each takes the request's own ctx
 * so error messages never cross requests. The rows they read and write are store_types.h's.
 */
#ifndef MF_SERVER_STORE_H
#define MF_SERVER_STORE_H

#include "store/store_types.h"

struct mf_store;

/* Tokens, device credentials and admin tokens. */
struct mf_store_auth_ops {
    /* Tokens (kind: enum mf_token_kind), by SHA-256 only. check: MF_OK or MF_E_AUTH. */
    int (*token_count)(int *count_out, struct mf_store *s, struct mf_ctx *ctx, int kind);
    int (*token_insert)(struct mf_store *s, struct mf_ctx *ctx, int kind,
                        const uint8_t hash[MF_SHA256_LEN], int64_t now);
    int (*token_check)(struct mf_store *s, struct mf_ctx *ctx, int kind,
                       const uint8_t hash[MF_SHA256_LEN]);

    /* Devices. enroll creates or re-keys a device (the old credential stops working).
     * auth: MF_OK with the device id, or MF_E_AUTH for an unknown/revoked credential. */
    int (*device_enroll)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                         const uint8_t cred_hash[MF_SHA256_LEN], int64_t now);
    int (*device_auth)(char device_id_out[MF_STORE_NAME_SIZE], struct mf_store *s,
                       struct mf_ctx *ctx, const uint8_t cred_hash[MF_SHA256_LEN]);
    /* Revokes the device's credential (auth answers MF_E_AUTH until it re-enrolls).
     * MF_E_NOTFOUND for an unknown device. */
    int (*device_revoke)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id);

    /* Admin tokens with a role. insert: MF_E_STATE for a duplicate hash. auth: the role and name
     * of an unrevoked admin token (constant-time hash compare), MF_E_AUTH otherwise. Tokens
     * made before migration 3 have the role admin. revoke: by id (hex of the hash's first 8
     * bytes); MF_E_NOTFOUND when no unrevoked token has it. list: oldest first. */
    int (*admin_token_insert)(struct mf_store *s, struct mf_ctx *ctx,
                              const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                              int64_t now);
    int (*admin_token_auth)(int *role_out, char name_out[MF_STORE_NAME_SIZE], struct mf_store *s,
                            struct mf_ctx *ctx, const uint8_t hash[MF_SHA256_LEN]);
    int (*admin_token_revoke)(struct mf_store *s, struct mf_ctx *ctx, const char *id);
    int (*admin_tokens_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_token_fn fn,
                             void *payload);
};

/* Model versions, releases, trust documents and deltas: what check-ins are answered from. */
struct mf_store_registry_ops {
    /* Model versions. insert: MF_E_STATE when (model, version) exists already.
     * get/latest: MF_E_NOTFOUND when there is none. list: by model name, then oldest
     * first. */
    int (*version_insert)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_version *v);
    int (*version_get)(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version);
    int (*version_latest)(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *model);
    int (*versions_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_version_fn fn,
                         void *payload);

    /* Releases. release_set attaches a verified release envelope to a staged version and
     * makes it assignable: MF_E_NOTFOUND without the version, MF_E_STATE when `sequence`
     * is not above every released sequence of the model (checked in the same transaction).
     * release_get: the envelope into `out` (MF_E_NOTFOUND when none). release_latest: the
     * released version with the highest sequence (MF_E_NOTFOUND when none). */
    int (*release_set)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_version *v,
                       const void *env, size_t len);
    int (*release_get)(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version);
    int (*release_latest)(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *model);

    /* Trust documents (enum mf_store_trust_kind). put: MF_E_STATE when `version` exists
     * already. latest: MF_E_NOTFOUND when there is none. roots_after: each root with a
     * version above `after`, ascending, at most `max`. */
    int (*trust_put)(struct mf_store *s, struct mf_ctx *ctx, int kind, uint64_t version,
                     const void *env, size_t len);
    int (*trust_latest)(uint64_t *version_out, struct mf_dynbuf *out, struct mf_store *s,
                        struct mf_ctx *ctx, int kind);
    int (*trust_roots_after)(struct mf_store *s, struct mf_ctx *ctx, uint64_t after, size_t max,
                             mf_store_envelope_fn fn, void *payload);

    /* Deltas. insert: idempotent for the same (from, to). find: MF_E_NOTFOUND when none.
     * count: every stored delta (metrics). */
    int (*delta_insert)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_delta *d);
    int (*delta_find)(struct mf_store_delta *out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *from_sha256, const char *to_sha256);
    int (*delta_count)(int64_t *count_out, struct mf_store *s, struct mf_ctx *ctx);
    /* The deltas stored for `model`, newest first, at most `max` (the console's Models view). */
    int (*deltas_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model, size_t max,
                       mf_store_delta_fn fn, void *payload);

    /* Release lifecycle (migration 9; docs/rollouts.md): a release is published, not
     * deployed, until it is promoted. release_set promotes the first release of a model (there
     * is nothing to protect yet). release_promote makes released `version` the model's newest
     * promotion (a no-op when it is already): MF_E_NOTFOUND when it is not released.
     * promoted_latest: the release promoted last, which is the channel default
     * (MF_E_NOTFOUND when none). */
    int (*release_promote)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                           const char *version);
    int (*promoted_latest)(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                           const char *model);
};

/* The fleet as devices report it. */
struct mf_store_devices_ops {
    /* Sets the device's last_seen (informational: its commit does not wait for the disk on
     * PostgreSQL). */
    int (*device_touch)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id, int64_t now);
    /* Reports: keeps the latest per device and model, appends an event. MF_E_NOTFOUND for
     * an unknown device. */
    int (*report_insert)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_status *st);
    /* Listings. devices and statuses: by device id (statuses then by model), so callers can
     * merge the two walks. statuses also give what each device runs (running_version). */
    int (*devices_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_device_fn fn,
                        void *payload);
    int (*statuses_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_status_fn fn,
                         void *payload);
    /* The distinct sha256s devices reported installed for `model` (fn's first argument is
     * "", the second the sha256). */
    int (*fleet_sha256s)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         mf_store_pair_fn fn, void *payload);
    /* Appended: the devices that reported each (model, version) installed, by model then
     * version (/metrics). */
    int (*version_counts)(struct mf_store *s, struct mf_ctx *ctx, mf_store_count_fn fn,
                          void *payload);
    /* Appended with migration 13 (docs/console.md): version_counts into bin `bin_at`
     * unless that bin has a snapshot already (*taken_out: 1 when this call took it, and
     * then bins before `drop_before` are deleted); fleet_bins visits `model`'s bins from
     * `since` on, by bin then version. */
    int (*fleet_snapshot)(int *taken_out, struct mf_store *s, struct mf_ctx *ctx, int64_t bin_at,
                          int64_t drop_before);
    int (*fleet_bins)(struct mf_store *s, struct mf_ctx *ctx, const char *model, int64_t since,
                      mf_store_fleet_bin_fn fn, void *payload);
    /* Appended with migration 13: the devices that sent a runtime report under class tag
     * `device_class` (devices_list's order and rows), and per class tag ("" left out) the
     * devices that did (fn's second argument is ""), by tag: the Fleet view's classes. */
    int (*devices_of_class)(struct mf_store *s, struct mf_ctx *ctx, const char *device_class,
                            mf_store_device_fn fn, void *payload);
    int (*class_counts)(struct mf_store *s, struct mf_ctx *ctx, mf_store_count_fn fn,
                        void *payload);
    /* Appended with migration 13: the device's failed reports (rollbacks and failed
     * installs with their detail, reported_at their time), newest first, at most `limit`. */
    int (*device_failures)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                           int64_t limit, mf_store_status_fn fn, void *payload);
    /* Appended with migration 14: the degrade switches a device reported. switches_add
     * keeps one row per (device, seq) (a switch sent again replaces its row) and the newest
     * MF_STORE_SWITCHES_KEEP rows of the device, in one transaction; MF_E_NOTFOUND for an
     * unknown device. switches_list: the device's rows, newest first. */
    int (*switches_add)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                        const struct mf_store_switch *sw, size_t n);
    int (*switches_list)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                         mf_store_switch_fn fn, void *payload);
};

/* The check-in fast path: each backend's own (sqlite/sqlite_checkin.c, pg/pg_checkin.c). */
struct mf_store_checkin_ops {
    /* Director sequence: reserves `n` consecutive numbers of the device's assignment
     * sequence and returns the first. Numbers never repeat and only grow, across restarts
     * and nodes, even though the reservation does not wait for the disk: before its first
     * reservation each node (PostgreSQL: each database session) durably raises the store
     * epoch, and numbers are then at least mf_store__epoch_floor of it (1 on a new store;
     * docs/architecture.md, "Check-in path"). MF_E_NOTFOUND for an unknown device. */
    int (*device_reserve_sequence)(uint64_t *first_out, struct mf_store *s, struct mf_ctx *ctx,
                                   const char *device_id, unsigned n);

    /* The store work of check-ins before their answers, `n` (>= 1) check-ins in one go (the
     * check-ins that arrived together, director/checkin_batch.h): for each, sets last_seen,
     * reserves `n_seq` numbers of the device's assignment sequence (device_reserve_sequence;
     * n_seq may be 0, `first` is then the next number), reads the directives of each of
     * `models` (n_models valid names, at most MF_STORE_CHECKIN_MAX_MODELS) into dirs[i] as
     * directives_get does, and returns the store generation: a number every committed change
     * to trust documents, models, versions and releases, deltas or rollouts raises in its own
     * transaction, so a node may keep what it read of those while the generation it reads
     * stays the same (director/checkin_cache.h; pins since migration 8). With a `hint` (NULL:
     * none) whose generation is the one the statement reads, the directives of the models the
     * hint names unpinned may be left unread: empty but for the device's channel, as the read
     * would have found them (PostgreSQL skips the reads only when it names every model). Its
     * writes do not wait for the disk (last_seen is informational; the sequence as
     * device_reserve_sequence says). Only while `cred_hash` is still the device's credential
     * (not re-enrolled or revoked since the request was authenticated): MF_E_AUTH and nothing
     * written for that check-in otherwise, or for an unknown device. The same device may
     * appear more than once: its check-ins get blocks that never overlap. Every item's
     * `err` is set (its message in its own ctx); returns the first item's error, MF_OK when
     * all succeeded. */
    int (*checkin_begin)(struct mf_store *s, struct mf_store_checkin *items, size_t n);
};

/* The director's inputs: groups, channels and directives (pins, fleet rollbacks). */
struct mf_store_director_ops {
    /* Replaces the device's groups with `groups` (n names, each valid, n <= 32; 0 clears
     * them). MF_E_NOTFOUND for an unknown device. Atomic. */
    int (*device_groups_set)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                             const char *const *groups, size_t n);
    /* Sets the device's channel. MF_E_NOTFOUND for an unknown device. */
    int (*device_channel_set)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                              const char *channel);
    /* Every (device id, group) membership, by group then device id. */
    int (*groups_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_pair_fn fn, void *payload);
    /* The groups of one device as (device id, group) pairs, by group (groups_list's rows
     * of that device); none for an unknown device. */
    int (*device_groups_get)(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                             mf_store_pair_fn fn, void *payload);

    /* Creates or replaces the directive (scope, target, model) -> version. The version is
     * not checked against the registry here (the handler does). */
    int (*pin_set)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_pin *p);
    /* Removes it: MF_E_NOTFOUND when there is none. */
    int (*pin_clear)(struct mf_store *s, struct mf_ctx *ctx, int scope, const char *target,
                     const char *model);
    /* Every directive, by scope, target, model. */
    int (*pins_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_pin_fn fn, void *payload);
    /* The directives that bear on (device, model) in one read: the device's pin, the pin of
     * its first group (by name) that has one, the fleet rollback, the device's channel and
     * that channel's version. MF_E_NOTFOUND for an unknown device. */
    int (*directives_get)(struct mf_store_directives *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *device_id, const char *model);

    /* Group settings (migration 9, struct mf_store_group_settings). poll_set: sets the
     * group's poll interval and jitter (interval_s 0 clears them); window_set: its install
     * window (start_min -1 clears it); each keeps the other setting. Setting needs a group
     * with a member (MF_E_NOTFOUND "unknown group" otherwise); clearing one that is not set
     * is MF_E_NOTFOUND. A group left with no setting loses its row. */
    int (*group_poll_set)(struct mf_store *s, struct mf_ctx *ctx, const char *group,
                          int64_t interval_s, int64_t jitter_pct, int64_t now);
    int (*group_window_set)(struct mf_store *s, struct mf_ctx *ctx, const char *group,
                            int64_t start_min, int64_t end_min, int64_t utc_offset_min,
                            int64_t now);
    /* Every group's settings, by group name. */
    int (*group_settings_list)(struct mf_store *s, struct mf_ctx *ctx,
                               mf_store_group_settings_fn fn, void *payload);
    /* The settings that apply to `device_id`, each from its first group (by name) that has
     * it: `out->group` names the poll interval's group ("" when none sets one), unset ones
     * read 0 / -1. An unknown device or one in no such group gets nothing set. */
    int (*device_settings_get)(struct mf_store_group_settings *out, struct mf_store *s,
                               struct mf_ctx *ctx, const char *device_id);
};

/* Background work claimed across nodes (jobs table). */
struct mf_store_jobs_ops {
    /* Jobs run once across every node sharing the store. enqueue: idempotent on
     * (kind, arg) while the job is not done. claim: atomically takes the oldest job that is
     * queued or whose lease ran out (now >= lease end), sets its lease to now + lease_s
     * under `owner` and counts the attempt; MF_E_NOTFOUND when there is none. A job whose
     * attempts reached MF_STORE_JOB_MAX_ATTEMPTS fails instead of being claimed again.
     * claim_kind: the same, restricted to jobs of `kind`, so a worker never burns a kind it
     * does not run. complete / fail: only by the current owner (MF_E_STATE otherwise, e.g.
     * the lease was lost); fail re-queues the job until its attempts run out, then marks it
     * failed with `error`. counts: queued (incl. expired leases) and running jobs. */
    int (*job_enqueue)(struct mf_store *s, struct mf_ctx *ctx, const char *kind, const char *arg,
                       int64_t now);
    int (*job_claim)(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *owner, int64_t now, int64_t lease_s);
    int (*job_claim_kind)(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *kind, const char *owner, int64_t now, int64_t lease_s);
    int (*job_complete)(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner);
    int (*job_fail)(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                    const char *error);
    int (*job_counts)(int64_t *queued_out, int64_t *running_out, struct mf_store *s,
                      struct mf_ctx *ctx, int64_t now);
};

/* Offload (migration 4): hard samples and score histograms. */
struct mf_store_offload_ops {
    /* Stores `n` samples of one device in one transaction. With a `batch_id` (NULL for a
     * sync ask): a batch id the device already stored stores nothing and sets *replayed_out
     * with the counts of that first time; otherwise the batch id is recorded with the
     * counts in the same transaction. Samples whose id is stored already are skipped and
     * counted in *dups_out; the others in *accepted_out. */
    int (*sample_batch_put)(int *replayed_out, int *accepted_out, int *dups_out, struct mf_store *s,
                            struct mf_ctx *ctx, const char *device_id, const char *batch_id,
                            const struct mf_store_sample *rows, size_t n);
    /* Sets a sample's teacher label (version, output, confidence, labelled_at = now);
     * MF_E_NOTFOUND for an unknown id. */
    int (*sample_label)(struct mf_store *s, struct mf_ctx *ctx, const char *id,
                        const char *teacher_version, const char *teacher_output, double confidence,
                        int64_t now);
    /* Visits the samples `q` selects, by seq. */
    int (*samples_walk)(struct mf_store *s, struct mf_ctx *ctx,
                        const struct mf_store_sample_query *q, mf_store_sample_fn fn,
                        void *payload);
    /* Deletes the samples of `device_id` ("" any) received before `before` (0: any time);
     * at least one of the two must be given (MF_E_INVALID otherwise). Atomic. After the
     * commit, `orphan_fn` (may be NULL) gets ("", sha256) for each input that no row of any
     * table refers to any more (blob_ref, decided inside the deleting transaction), so the
     * caller can remove the blob. */
    int (*samples_delete)(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                          void *payload);
    /* Adds h's bins and counters to the stored histogram of (model, version, method,
     * source), or replaces it when `replace`; updated_at = h->updated_at. Atomic. */
    int (*hist_add)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_hist *h,
                    int replace);
    /* Visits the histograms of `model` ("" every model), by model, version, method,
     * source. */
    int (*hists_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                      mf_store_hist_fn fn, void *payload);
};

/* Rollouts (docs/rollouts.md): device runtime reports, rollouts and their events. */
struct mf_store_rollout_ops {
    /* Stores the report of (device, model, version), replacing the one stored (cumulative
     * totals: never added). MF_E_LIMIT beyond MF_STORE_TELEMETRY_MAX bytes. */
    int (*telemetry_put)(struct mf_store *s, struct mf_ctx *ctx,
                         const struct mf_store_telemetry *t);
    /* Visits the reports of `model`, by device id then version. */
    int (*telemetry_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                          mf_store_telemetry_fn fn, void *payload);
    /* Visits one device's reports of `model`, by version (its scorecard in the console). */
    int (*telemetry_device)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                            const char *device_id, mf_store_telemetry_fn fn, void *payload);
    /* Inserts a rollout when r->id is 0 (sets r->id) or updates rollout r->id; an update
     * with `expect_state` non-empty changes the row only while its state is that one
     * (MF_E_STATE otherwise), so an admin action and the evaluation never overwrite each
     * other. MF_E_NOTFOUND for an unknown id. */
    int (*rollout_put)(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                       const char *expect_state);
    /* MF_E_NOTFOUND for an unknown id. */
    int (*rollout_get)(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id);
    /* Visits the rollouts of `model` ("" every model), newest first. */
    int (*rollouts_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         mf_store_rollout_fn fn, void *payload);
    /* Appends an event to a rollout's history; events_list visits them oldest first. */
    int (*rollout_event_add)(struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_store_rollout_event *e);
    int (*rollout_events_list)(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id,
                               mf_store_rollout_event_fn fn, void *payload);
    /* Appended with migration 13 (docs/console.md): records the `n` red lines (at most
     * MF_STORE_HISTORY_LINES) of one evaluation of their rollout at lines[0].at in one
     * transaction (an evaluation of the same second replaces it); beyond
     * MF_STORE_HISTORY_TICKS evaluations the older half is thinned to every second one, so a
     * rollout keeps a bounded history of its whole life. history_list visits a rollout's
     * lines from time `since` on, by time then line. */
    int (*history_add)(struct mf_store *s, struct mf_ctx *ctx,
                       const struct mf_store_history_line *lines, size_t n);
    int (*history_list)(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id, int64_t since,
                        mf_store_history_fn fn, void *payload);
};

/* Distillation runs (migration 7, docs/distill.md). */
struct mf_store_distill_ops {
    /* Inserts a run when r->id is 0 (sets r->id) or updates run r->id (state, versions,
     * rollout, cursor, record, error, updated_at); an update with `expect_state` non-empty
     * changes the row only while its state is that one (MF_E_STATE otherwise).
     * MF_E_NOTFOUND for an unknown id; MF_E_LIMIT for a record over the maximum. */
    int (*distill_run_put)(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_distill_run *r,
                           const char *expect_state);
    /* Visits run `id` (fn called once) or MF_E_NOTFOUND. */
    int (*distill_run_get)(struct mf_store *s, struct mf_ctx *ctx, int64_t id,
                           mf_store_distill_run_fn fn, void *payload);
    /* Visits the runs of `model` ("" every model), newest first, at most `limit` (0: all;
     * records can be megabytes: the newest alone is one row). */
    int (*distill_runs_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                             int64_t limit, mf_store_distill_run_fn fn, void *payload);
};

/* Blob lifetime by reference (no schema change; store_blobref.h): a blob file is shared by
 * content, so only what no row names may go. */
struct mf_store_blobs_ops {
    /* Who refers to blob `sha256`: "table.column" of a row naming it into `who_out`, or ""
     * when no row of any table does (the blob may then be removed). */
    int (*blob_ref)(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s, struct mf_ctx *ctx,
                    const char *sha256);
    /* *released_out 1 when a released version names blob `sha256` (its model blob or a delta
     * towards it: what devices may download), else 0. */
    int (*blob_released)(int *released_out, struct mf_store *s, struct mf_ctx *ctx,
                         const char *sha256);
};

/* The audit log (migration 9, docs/operations.md "Audit log"). */
struct mf_store_audit_ops {
    /* Appends a row (a->seq is ignored). */
    int (*audit_add)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_audit *a);
    /* Visits the rows `q` selects, newest first, at most q->limit. */
    int (*audit_list)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_audit_query *q,
                      mf_store_audit_fn fn, void *payload);
    /* Deletes the rows older than `before` (Unix seconds) and those beyond the newest `keep`;
     * *deleted_out counts them. */
    int (*audit_prune)(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx, int64_t before,
                       int64_t keep);
    /* Appends rollout event `e` (as rollout_event_add), audit row `a` (NULL: none) and one
     * outbox row of `body` under `event_id` for every registered webhook (webhooks ops), in
     * one transaction: all or nothing. */
    int (*event_record)(struct mf_store *s, struct mf_ctx *ctx,
                        const struct mf_store_rollout_event *e, const struct mf_store_audit *a,
                        const char *event_id, const char *body, int64_t now);
};

/* Webhooks and their outbox (migration 9, docs/operations.md "Webhooks"). */
struct mf_store_webhooks_ops {
    /* add: sets w->id; MF_E_STATE when the URL is registered already. remove: with its
     * outbox rows; MF_E_NOTFOUND for an unknown id. list: by id, with the outbox counts. */
    int (*webhook_add)(int64_t *id_out, struct mf_store *s, struct mf_ctx *ctx, const char *url,
                       const char *secret, int64_t now);
    int (*webhook_remove)(struct mf_store *s, struct mf_ctx *ctx, int64_t id);
    int (*webhooks_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_webhook_fn fn,
                         void *payload);
    /* Takes the oldest outbox row that is due (pending with next_at <= now, or sending with
     * its lease run out) under `owner` until now + lease_s and counts the attempt, atomically
     * across nodes (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: BEGIN IMMEDIATE);
     * MF_E_NOTFOUND when none is due. */
    int (*delivery_claim)(struct mf_store_delivery *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *owner, int64_t now, int64_t lease_s);
    /* done: delivered at `now`. retry: due again at next_at, or failed for good when its
     * attempts reached `max_attempts`, with `error`. Both only while `owner` holds the lease
     * (MF_E_STATE otherwise). */
    int (*delivery_done)(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                         int64_t now);
    int (*delivery_retry)(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                          int64_t next_at, int max_attempts, const char *error);
};

/* Variants of model versions (migration 12; docs/rollouts.md, "Model variants"). */
struct mf_store_variants_ops {
    /* insert: a staged variant of an existing version (MF_E_NOTFOUND without the version,
     * MF_E_STATE when the variant exists already). get: MF_E_NOTFOUND when there is none.
     * list: the variants of `model` (of `version` only, unless it is NULL), by version
     * upload order, then rank, then name; `released_only` leaves staged ones out. */
    int (*variant_insert)(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_variant *v);
    int (*variant_get)(struct mf_store_variant *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version, const char *variant);
    int (*variants_list)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         const char *version, int released_only, mf_store_variant_fn fn,
                         void *payload);
    /* release_set: attaches a verified release envelope (digest in v->release_digest) to a
     * staged variant: MF_E_NOTFOUND without it, MF_E_STATE when it has a release already.
     * release_get: the envelope into `out` (MF_E_NOTFOUND when none). */
    int (*variant_release_set)(struct mf_store *s, struct mf_ctx *ctx,
                               const struct mf_store_variant *v, const void *env, size_t len);
    int (*variant_release_get)(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx,
                               const char *model, const char *version, const char *variant);
};

/*
 * A backend: its lifecycle and schema ops, and a table per domain. Every backend fills every
 * slot (test_store_pg and test_server_store check). The domain tables other than `checkin`
 * are the backend-neutral ones of store_<domain>.c, which run on the backend's engine.
 */
struct mf_store_ops {
    const char *scheme; /* URL scheme this backend serves */
    /* Worker threads a node runs on this backend unless told otherwise: SQLite does its
     * work in the calling thread, so a few threads keep the cores busy; on PostgreSQL a
     * check-in thread mostly waits for its round trips, so one per pooled connection. */
    unsigned default_threads;
    /* `create` 0: the store must already exist (serve); 1: create it (init). */
    int (*open)(struct mf_store **out, struct mf_ctx *ctx, const char *location, int create);
    void (*close)(struct mf_store *s); /* NULL is a no-op */
    /* Applies pending numbered migrations (store_schema.c) in one transaction; *applied_out
     * counts them. */
    int (*migrate)(int *applied_out, struct mf_store *s, struct mf_ctx *ctx);
    int (*schema_version)(int *version_out, struct mf_store *s, struct mf_ctx *ctx);

    const struct mf_store_auth_ops *auth;
    const struct mf_store_registry_ops *registry;
    const struct mf_store_devices_ops *devices;
    const struct mf_store_checkin_ops *checkin;
    const struct mf_store_director_ops *director;
    const struct mf_store_jobs_ops *jobs;
    const struct mf_store_offload_ops *offload;
    const struct mf_store_rollout_ops *rollout;
    const struct mf_store_distill_ops *distill;
    const struct mf_store_blobs_ops *blobs;
    const struct mf_store_audit_ops *audit;       /* appended with migration 9 */
    const struct mf_store_webhooks_ops *webhooks; /* appended with migration 9 */
    const struct mf_store_variants_ops *variants; /* appended with migration 12 */
};

struct mf_store_engine; /* store_engine.h: how the backend-neutral ops reach this backend */

struct mf_store {
    const struct mf_store_ops *ops;
    const struct mf_store_engine *engine;
};

/*
 * The lowest assignment sequence number a node may issue under store epoch `epoch` (>= 1):
 * (epoch - 1) << MF_STORE_EPOCH_SHIFT, so a new store starts at 1 and each epoch leaves
 * 2^32 numbers per device to the ones before it. Numbers stay below 2^53, the largest a
 * JSON number carries exactly: MF_E_LIMIT beyond MF_STORE_EPOCH_MAX epochs.
 */
#define MF_STORE_EPOCH_SHIFT 32
#define MF_STORE_EPOCH_MAX ((int64_t)1 << (53 - MF_STORE_EPOCH_SHIFT))
int mf_store__epoch_floor(uint64_t *floor_out, struct mf_ctx *ctx, int64_t epoch);

/*
 * Opens the store named by `url` ("sqlite:/path/store.db"; a bare path means sqlite) with
 * the backend its scheme selects. MF_E_INVALID for an unknown scheme; otherwise what the
 * backend's open returns. Ownership: close with mf_store__close().
 */
int mf_store__open(struct mf_store **out, struct mf_ctx *ctx, const char *url, int create);
void mf_store__close(struct mf_store *s);

/* The name of admin token role `role` ("ops", "data", "admin"; "unknown" for any other
 * value), and the role a name spells (0 for none): one table for the router's log lines, the
 * token routes' bodies and their answers. */
const char *mf_store__role_name(int role);
int mf_store__role_of(const char *name);

/* A trust state (manifests/verify) holding the store's newest root and, when `need_keys`,
 * its newest keys document: what the server judges incoming documents with. MF_E_NOTFOUND
 * when the store has none yet. Ownership: release with mf_trust_free(). */
typedef struct mf_trust mf_trust;
int mf_store__trust_load(mf_trust **out, struct mf_store *s, struct mf_ctx *ctx, int need_keys);
/* checkin_begin of one check-in, with its fields as arguments: its error. */
int mf_store__checkin_begin(uint64_t *generation_out, uint64_t *first_out,
                            struct mf_store_directives *dirs_out, struct mf_store *s,
                            struct mf_ctx *ctx, const char *device_id,
                            const uint8_t cred_hash[MF_SHA256_LEN], unsigned n_seq,
                            const char *const *models, size_t n_models, int64_t now,
                            const struct mf_store_pin_hint *hint);

extern const struct mf_store_ops mf_store__sqlite_ops;   /* sqlite: (sqlite/sqlite_conn.c) */
extern const struct mf_store_ops mf_store__pg_ops;       /* postgresql:// (pg/pg_conn.c) */
extern const struct mf_store_ops mf_store__postgres_ops; /* postgres://, the same backend */

/* SQLite only: applies the migrations up to schema `target` (tests build a store of an
 * earlier schema with it, then check that migrate carries its data forward). */
int mf_store__sqlite_migrate_to(int *applied_out, struct mf_store *s, struct mf_ctx *ctx,
                                int target);

#endif /* MF_SERVER_STORE_H */
