/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's persistent state behind one backend-neutral interface (STYLE rule 4, like
 * curl's struct Curl_ssl). A backend embeds `struct mf_store` as its first member; callers
 * only ever go through `s->ops`, whose operations are grouped by domain: s->ops->auth (tokens,
 * device credentials, admin tokens), ->registry (versions, releases, trust documents,
 * deltas), ->devices (device listings and reports), ->checkin (the check-in fast path),
 * ->director (groups, channels, pins, directives), ->jobs, ->offload, ->rollout, ->distill.
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
 * so error messages never cross requests. Text fields are bounded by the protocol's name
 * syntax (64 characters), so rows come back in fixed-size structs.
 */
#ifndef MF_SERVER_STORE_H
#define MF_SERVER_STORE_H

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"

#include <stdint.h>

#define MF_STORE_NAME_SIZE 65          /* 64 characters + NUL */
#define MF_STORE_DETAIL_MAX 512        /* report detail, characters */
#define MF_STORE_CHECKIN_MAX_MODELS 64 /* models of one checkin_begin */
#define MF_STORE_CHECKIN_BATCH_MAX 64  /* check-ins the backends group in one statement */

struct mf_store_version {
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    int64_t created_at; /* Unix seconds */
    /* The signed release (docs/formats/manifest.md): sequence 0 and "" while the version is
     * only staged (blob uploaded, no verified release yet); such a version is never
     * assigned. */
    uint64_t sequence;
    uint64_t security_floor;
    char release_digest[MF_SHA256_HEX_LEN + 1]; /* SHA-256 of the release payload */
};

/* Trust documents the server stores and hands to devices (kinds of trust_put/trust_latest). */
enum mf_store_trust_kind { MF_STORE_TRUST_ROOT = 1, MF_STORE_TRUST_KEYS = 2 };

/* The largest envelope the store accepts (a release with many chunks). */
#define MF_STORE_ENVELOPE_MAX (1024u * 1024u)

struct mf_store_device {
    char device_id[MF_STORE_NAME_SIZE];
    int64_t enrolled_at;
    int64_t last_seen; /* 0: never checked in */
    /* Appended with migration 3 (filled by devices_list). */
    char channel[MF_STORE_NAME_SIZE]; /* "stable" unless ops set another */
    int revoked;                      /* credential revoked by ops (device_revoke) */
};

/*
 * Directives ops give the director (docs/operations.md, "Director"). One row per
 * (scope, target, model): the version `model` is held at for that target.
 *   DEVICE  target = device id         GROUP   target = group name
 *   CHANNEL target = channel name (the channel's default for the model; absent: the
 *           release with the highest sequence)
 *   FLEET   target = "*" (an active fleet rollback of the model)
 */
enum mf_store_pin_scope {
    MF_STORE_PIN_DEVICE = 1,
    MF_STORE_PIN_GROUP = 2,
    MF_STORE_PIN_CHANNEL = 3,
    MF_STORE_PIN_FLEET = 4
};

struct mf_store_pin {
    int scope; /* enum mf_store_pin_scope */
    char target[MF_STORE_NAME_SIZE];
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    int64_t created_at;
};

/* Everything the store knows that bears on one device's target for one model; each
 * version is "" when there is no such directive. */
/* What a node knew of the pins table before a check-in (director/checkin_cache.h): at
 * store generation `generation`, model i of the check-in had no pin of any scope when bit i
 * of `unpinned` is set. */
struct mf_store_pin_hint {
    uint64_t generation;
    uint64_t unpinned;
};

/* One check-in of checkin_begin: what it asks, what it gets. */
struct mf_store_checkin {
    struct mf_ctx *ctx; /* this check-in's error message */
    const char *device_id;
    const uint8_t *cred_hash; /* MF_SHA256_LEN bytes */
    unsigned n_seq;
    const char *const *models;
    size_t n_models;
    int64_t now;
    const struct mf_store_pin_hint *hint;
    /* Out: */
    struct mf_store_directives *dirs; /* n_models entries, the caller's */
    uint64_t generation, first;
    int err;
};

struct mf_store_directives {
    char device_pin[MF_STORE_NAME_SIZE];
    char group[MF_STORE_NAME_SIZE]; /* the group whose pin applies (first by name) */
    char group_pin[MF_STORE_NAME_SIZE];
    char fleet_rollback[MF_STORE_NAME_SIZE];
    char channel[MF_STORE_NAME_SIZE]; /* the device's channel */
    char channel_version[MF_STORE_NAME_SIZE];
};

/* Admin token roles (docs/operations.md, "Tokens and roles"); a bit set in the router. */
enum mf_store_role { MF_ROLE_OPS = 1, MF_ROLE_DATA = 2, MF_ROLE_ADMIN = 4 };

#define MF_STORE_TOKEN_ID_LEN 16 /* hex of the first 8 bytes of the token's SHA-256 */

struct mf_store_token {
    char id[MF_STORE_TOKEN_ID_LEN + 1];
    char name[MF_STORE_NAME_SIZE];
    int role; /* enum mf_store_role */
    int64_t created_at;
    int revoked;
};

/* Background work claimed across nodes (jobs table). */
#define MF_STORE_JOB_ARG_MAX 160
#define MF_STORE_JOB_MAX_ATTEMPTS 3

struct mf_store_job {
    int64_t id;
    char kind[32]; /* "delta": arg is "<model>/<version>" of a new release */
    char arg[MF_STORE_JOB_ARG_MAX + 1];
    int attempts; /* including the current claim */
};

/* A precomputed delta blob (docs/formats/delta.md) from one blob to another. */
struct mf_store_delta {
    char model[MF_STORE_NAME_SIZE];
    char from_sha256[MF_SHA256_HEX_LEN + 1];
    char to_sha256[MF_SHA256_HEX_LEN + 1];
    char delta_sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    char format[16]; /* "mfdelta" or "bsdiff40" */
    int64_t created_at;
};

/* What a device last reported for one model (the event log keeps every report). */
struct mf_store_status {
    char device_id[MF_STORE_NAME_SIZE];
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    char sha256[MF_SHA256_HEX_LEN + 1];
    char status[16]; /* "installed" or "failed" */
    char detail[MF_STORE_DETAIL_MAX + 1];
    int64_t reported_at;
};

/* Row visitors for the listings; a negative return stops the walk and is returned. */
typedef int (*mf_store_version_fn)(void *payload, const struct mf_store_version *v);
typedef int (*mf_store_device_fn)(void *payload, const struct mf_store_device *d);
typedef int (*mf_store_status_fn)(void *payload, const struct mf_store_status *st);
typedef int (*mf_store_envelope_fn)(void *payload, uint64_t version, const void *env, size_t len);
typedef int (*mf_store_pin_fn)(void *payload, const struct mf_store_pin *p);
typedef int (*mf_store_token_fn)(void *payload, const struct mf_store_token *t);
/* A (device id, group) membership, or a distinct sha256 in fleet_sha256s (device_id ""). */
typedef int (*mf_store_pair_fn)(void *payload, const char *a, const char *b);

/* ---- Offload (migration 4): the hard-sample store and score histograms ---- */
#define MF_STORE_SAMPLE_ID_LEN 32 /* hex of 16 random bytes (docs/protocol-offload.md) */
#define MF_STORE_HIST_BINS 100    /* score histogram bins, as devices report them */

/* One uplinked sample with its provenance and, once labelled, the teacher's answer. The
 * output texts are JSON arrays of numbers, borrowed (valid for the call or the visit). */
struct mf_store_sample {
    int64_t seq; /* row order, set by the store: the export cursor */
    char id[MF_STORE_SAMPLE_ID_LEN + 1];
    char device_id[MF_STORE_NAME_SIZE];
    char model[MF_STORE_NAME_SIZE];
    char model_version[MF_STORE_NAME_SIZE];
    char kind[8];    /* "hard" or "audit" */
    char method[16]; /* "max_softmax", "margin" or "entropy" */
    double score;
    int64_t created_at;  /* device clock, Unix seconds; 0: the device had no clock */
    int64_t received_at; /* server clock */
    char output_kind[8]; /* "logits" or "probs" */
    const char *output;
    char input_sha256[MF_SHA256_HEX_LEN + 1]; /* the input bytes, a blob */
    uint64_t input_size;
    char teacher_version[MF_STORE_NAME_SIZE]; /* "": not labelled yet */
    const char *teacher_output;               /* "" until labelled: probabilities */
    double teacher_confidence;                /* the teacher's top probability */
    int64_t labelled_at;
};

/* What samples_walk returns: every non-empty / non-zero field filters. */
struct mf_store_sample_query {
    const char *model; /* "" any */
    const char *version;
    const char *kind;
    const char *device_id;
    int64_t since, until;  /* received_at in [since, until); 0: open */
    double min_confidence; /* > 0: labelled samples whose teacher confidence is >= it */
    int unlabelled;        /* 1: only samples without a label */
    int64_t after_seq;     /* rows with seq above it, ascending */
    int64_t limit;         /* rows at most; 0: no limit */
};

/* Score histogram of one (model, version, method): from device telemetry (summed over the
 * fleet) or from a calibration set uploaded with the release. */
enum mf_store_hist_source { MF_STORE_HIST_FLEET = 0, MF_STORE_HIST_CALIBRATION = 1 };

struct mf_store_hist {
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    char method[16];
    int source; /* enum mf_store_hist_source */
    uint64_t bins[MF_STORE_HIST_BINS];
    uint64_t asked, uncertain; /* fleet counters (realised rate = uncertain / asked) */
    int64_t updated_at;
};

typedef int (*mf_store_sample_fn)(void *payload, const struct mf_store_sample *smp);
typedef int (*mf_store_hist_fn)(void *payload, const struct mf_store_hist *h);

/* ---- Rollouts (docs/rollouts.md): device runtime reports, rollouts and their events ---- */

/* One device's newest cumulative report of one (model, version): the JSON object of one
 * entry of the check-in's telemetry "versions" array (docs/protocol.md), as text, bounded
 * by MF_STORE_TELEMETRY_MAX. Borrowed in visits. */
#define MF_STORE_TELEMETRY_MAX (16u * 1024u)

struct mf_store_telemetry {
    char device_id[MF_STORE_NAME_SIZE];
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    const char *report;
    int64_t reported_at;
};

#define MF_STORE_PLAN_MAX (8u * 1024u) /* a rollout plan's JSON text */
#define MF_STORE_BREACH_MAX 255        /* the breach record, one line */

/* A rollout of `version` of `model`, replacing `prev_version` (docs/rollouts.md). */
struct mf_store_rollout {
    int64_t id; /* set by rollout_put on insert */
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    char prev_version[MF_STORE_NAME_SIZE];
    char state[16]; /* running, paused, done, aborted, halted, rolled_back */
    int wave;       /* waves 0..wave are admitted */
    int64_t wave_started_at;
    int64_t created_at, updated_at;
    char plan[MF_STORE_PLAN_MAX + 1];
    char breach[MF_STORE_BREACH_MAX + 1]; /* "" unless halted by a red line */
};

struct mf_store_rollout_event {
    int64_t rollout_id;
    int64_t at;
    char kind[16];                        /* created, advanced, paused, ..., halted */
    char detail[MF_STORE_BREACH_MAX + 1]; /* e.g. the line and its numbers */
};

typedef int (*mf_store_telemetry_fn)(void *payload, const struct mf_store_telemetry *t);
typedef int (*mf_store_rollout_fn)(void *payload, const struct mf_store_rollout *r);
typedef int (*mf_store_rollout_event_fn)(void *payload, const struct mf_store_rollout_event *e);

/* ---- Distillation runs (docs/distill.md): one row per job of the loop, with its
 * provenance record once it ends ---- */
#define MF_STORE_DISTILL_RECORD_MAX (4u * 1024u * 1024u) /* the record's JSON text */
#define MF_STORE_DISTILL_ERROR_MAX 255

struct mf_store_distill_run {
    int64_t id; /* set by distill_run_put on insert */
    char model[MF_STORE_NAME_SIZE];
    char state[16];                          /* queued, running, published, rejected, failed */
    char trigger[16];                        /* manual or auto */
    char parent_version[MF_STORE_NAME_SIZE]; /* "" for the seed student */
    char version[MF_STORE_NAME_SIZE];        /* the version it published, else "" */
    int64_t rollout_id;                      /* its canary rollout, else 0 */
    int64_t samples_until; /* highest sample seq the run may use (auto-trigger cursor) */
    const char *record;    /* JSON object text ("" until the run ends), borrowed */
    char error[MF_STORE_DISTILL_ERROR_MAX + 1];
    int64_t created_at, updated_at;
};

typedef int (*mf_store_distill_run_fn)(void *payload, const struct mf_store_distill_run *r);

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

    /* Admin tokens with a role. insert: MF_E_STATE for a duplicate hash. auth: the role of
     * an unrevoked admin token (constant-time hash compare), MF_E_AUTH otherwise. Tokens
     * made before migration 3 have the role admin. revoke: by id (hex of the hash's first 8
     * bytes); MF_E_NOTFOUND when no unrevoked token has it. list: oldest first. */
    int (*admin_token_insert)(struct mf_store *s, struct mf_ctx *ctx,
                              const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                              int64_t now);
    int (*admin_token_auth)(int *role_out, struct mf_store *s, struct mf_ctx *ctx,
                            const uint8_t hash[MF_SHA256_LEN]);
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
     * merge the two walks. */
    int (*devices_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_device_fn fn,
                        void *payload);
    int (*statuses_list)(struct mf_store *s, struct mf_ctx *ctx, mf_store_status_fn fn,
                         void *payload);
    /* The distinct sha256s devices reported installed for `model` (fn's first argument is
     * "", the second the sha256). */
    int (*fleet_sha256s)(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         mf_store_pair_fn fn, void *payload);
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
     * commit, `orphan_fn` (may be NULL) gets ("", sha256) for each input no sample refers
     * to any more, so the caller can remove the blob. */
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
