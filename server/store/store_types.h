/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows the store's operations (store.h) read and write, and their visitors: fixed-size
 * structs, as text fields are bounded by the protocol's name syntax (64 characters).
 */
#ifndef MF_SERVER_STORE_TYPES_H
#define MF_SERVER_STORE_TYPES_H

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"

#include <stdint.h>

#define MF_STORE_NAME_SIZE 65          /* 64 characters + NUL */
#define MF_STORE_DETAIL_MAX 512        /* report detail, characters */
#define MF_STORE_CHECKIN_MAX_MODELS 64 /* models of one checkin_begin */
#define MF_STORE_CHECKIN_BATCH_MAX 64  /* check-ins the backends group in one statement */
#define MF_STORE_BLOB_REF_MAX 64       /* "table.column" of blob_ref, with its NUL */

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
    /* Appended with migration 9: the promotion order within the model, 0 while the release
     * is published but not promoted. The channel default is the highest promoted release. */
    uint64_t promoted;
    /* Migration 13: the sha256 of the release's chunk list blob (32 bytes per chunk hash,
     * checked by devices against the signed chunks_root), "" when the release has no root. */
    char chunks_sha256[MF_SHA256_HEX_LEN + 1];
};

/* A variant of a model version (migration 12; docs/rollouts.md, "Model variants"): its own
 * blob and its own signed release, and what a device class needs to run it. */
#define MF_STORE_VARIANTS_MAX 8 /* variants of one version */

struct mf_store_variant_needs {
    uint64_t min_ram_mb, min_storage_mb;  /* 0: no bound */
    char accelerator[MF_STORE_NAME_SIZE]; /* "": runs without one; else that accelerator */
    int int8, fp16;                       /* needs int8 / fp16 kernels */
    char class_tag[MF_STORE_NAME_SIZE];   /* "": any class; else only that class tag */
};

struct mf_store_variant {
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    char variant[MF_STORE_NAME_SIZE];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    int64_t created_at;
    int64_t rank; /* 1 is the best: the director offers the lowest rank the class allows */
    struct mf_store_variant_needs needs;
    /* The variant's signed release: "" while staged (never assigned). */
    char release_digest[MF_SHA256_HEX_LEN + 1];
    int fallback; /* 1: the version's fallback variant (migration 14) */
};

/* Switches a device's degrade controller made, as its check-in reported them (migration 14;
 * docs/agent.md, "Runtime degradation"). */
#define MF_STORE_SWITCHES_KEEP 16
#define MF_STORE_SWITCH_REASON_SIZE 16
struct mf_store_switch {
    uint64_t seq;        /* the device's switch count after it: one row per (device, seq) */
    int64_t at;          /* the device's wall clock, Unix seconds; 0: it had none */
    int64_t received_at; /* when the check-in carrying it arrived */
    int degraded;        /* 1: to the fallback variant, 0: back */
    char reason[MF_STORE_SWITCH_REASON_SIZE];
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

/* What ops set per device group for its devices' check-ins (migration 9; docs/agent.md,
 * "Poll interval" and "Install window"). A device takes each setting from its first group
 * (by name) that has it. */
struct mf_store_group_settings {
    char group[MF_STORE_NAME_SIZE];
    int64_t poll_interval_s; /* 0: not set */
    int64_t poll_jitter_pct;
    int64_t window_start_min;      /* install window [start, end) in minutes of the day ... */
    int64_t window_end_min;        /* ... (end < start: it spans midnight); -1: not set */
    int64_t window_utc_offset_min; /* the day's clock: UTC + this many minutes */
    int64_t updated_at;
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
    /* statuses_list only (report_insert ignores it): the version the device runs, which
     * differs from `version` after a rollback or a failed install; "" when unknown. */
    char running_version[MF_STORE_NAME_SIZE];
};

/* Row visitors for the listings; a negative return stops the walk and is returned. */
typedef int (*mf_store_version_fn)(void *payload, const struct mf_store_version *v);
typedef int (*mf_store_variant_fn)(void *payload, const struct mf_store_variant *v);
typedef int (*mf_store_device_fn)(void *payload, const struct mf_store_device *d);
typedef int (*mf_store_status_fn)(void *payload, const struct mf_store_status *st);
typedef int (*mf_store_switch_fn)(void *payload, const struct mf_store_switch *sw);
typedef int (*mf_store_envelope_fn)(void *payload, uint64_t version, const void *env, size_t len);
typedef int (*mf_store_delta_fn)(void *payload, const struct mf_store_delta *d);
typedef int (*mf_store_pin_fn)(void *payload, const struct mf_store_pin *p);
typedef int (*mf_store_group_settings_fn)(void *payload, const struct mf_store_group_settings *g);
typedef int (*mf_store_token_fn)(void *payload, const struct mf_store_token *t);
/* A (device id, group) membership, or a distinct sha256 in fleet_sha256s (device_id ""). */
typedef int (*mf_store_pair_fn)(void *payload, const char *a, const char *b);
/* A (model, version) pair and how many rows have it (version_counts). */
typedef int (*mf_store_count_fn)(void *payload, const char *a, const char *b, int64_t n);

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
#define MF_STORE_TELEMETRY_MAX (48u * 1024u) /* one version's widest scorecard fits */

struct mf_store_telemetry {
    char device_id[MF_STORE_NAME_SIZE];
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    const char *report;
    int64_t reported_at;
    /* Appended with migration 12: the class tag the check-in declared ("": none). */
    char device_class[MF_STORE_NAME_SIZE];
};

#define MF_STORE_PLAN_MAX (8u * 1024u) /* a rollout plan's JSON text */
#define MF_STORE_BREACH_MAX 255        /* the breach record, one line */
#define MF_STORE_CONTROL_MAX 1023      /* a control group's figures, JSON (migration 9) */
#define MF_STORE_HALTED_CLASSES 8      /* classes one rollout halts on its own (migration 12) */
#define MF_STORE_HALTED_CLASSES_MAX (MF_STORE_HALTED_CLASSES * MF_STORE_NAME_SIZE)

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
    /* Appended with migration 9: when min_devices of the current wave first reported the
     * new version; 0 while the wave waits for that evidence (its soak has not started). */
    int64_t soak_started_at;
    /* The control group's figures when the current wave was admitted (JSON; "" before the
     * first advance): what relative lines compare with once no device is left outside the
     * admitted waves (a last wave of 100 %). */
    char control[MF_STORE_CONTROL_MAX + 1];
    /* Appended with migration 12: the device classes this rollout halted and rolled back
     * while the others go on (docs/rollouts.md, "Per-class halts"): tags joined by ','. */
    char halted_classes[MF_STORE_HALTED_CLASSES_MAX + 1];
};

struct mf_store_rollout_event {
    int64_t rollout_id;
    int64_t at;
    char kind[24];                        /* created, advanced, ..., halted, rollback_started */
    char detail[MF_STORE_BREACH_MAX + 1]; /* e.g. the line and its numbers */
};

typedef int (*mf_store_telemetry_fn)(void *payload, const struct mf_store_telemetry *t);
typedef int (*mf_store_rollout_fn)(void *payload, const struct mf_store_rollout *r);
typedef int (*mf_store_rollout_event_fn)(void *payload, const struct mf_store_rollout_event *e);

/* Migration 13 (docs/console.md): one red line of one evaluation of a watched rollout. */
#define MF_STORE_HISTORY_TICKS 512 /* evaluations kept per rollout (older ones thinned) */
#define MF_STORE_HISTORY_LINES 12  /* red lines of one evaluation (a plan's maximum) */

struct mf_store_history_line {
    int64_t rollout_id;
    int64_t at;                   /* the evaluation's time, Unix seconds */
    int line;                     /* the line's place in the plan, from 0 */
    char metric[64];              /* the figure's name: "p99_latency_us", "sustained_p99_us@5" */
    char kind[16];                /* relative, absolute */
    char state[16];               /* waiting, clean, breached */
    double value, bound, control; /* 0 while waiting; control only for relative lines */
    int64_t devices, control_devices;
};

typedef int (*mf_store_history_fn)(void *payload, const struct mf_store_history_line *l);

/* Migration 13: the devices that reported (model, version) installed in one time bin. */
#define MF_STORE_FLEET_BIN_S 60           /* one snapshot per bin */
#define MF_STORE_FLEET_KEEP_S (7 * 86400) /* bins older than this are dropped */

struct mf_store_fleet_bin {
    char model[MF_STORE_NAME_SIZE];
    char version[MF_STORE_NAME_SIZE];
    int64_t bin_at; /* the bin's start, a multiple of MF_STORE_FLEET_BIN_S */
    int64_t devices;
};

typedef int (*mf_store_fleet_bin_fn)(void *payload, const struct mf_store_fleet_bin *b);

/* ---- Audit log (migration 9, docs/operations.md "Audit log"): one row per admin request
 * (written by the router for every admin route) and per automatic rollout event ---- */
#define MF_STORE_AUDIT_ACTION_MAX 127 /* "PUT /v1/admin/pins/{}/{}/{}" or "rollout.halted" */
#define MF_STORE_AUDIT_TARGET_MAX 255 /* the route's ids joined by '/', or "rollout/<id>" */
#define MF_STORE_AUDIT_ENGINE "rollout-engine" /* the actor of automatic rollout events */

struct mf_store_audit {
    int64_t seq; /* set by the store; the listing's order and page cursor */
    int64_t at;  /* Unix seconds (UTC) */
    /* Who: the admin token's id and name; "" and "-" when the request had no valid admin
     * token (its 401 is recorded too); "" and MF_STORE_AUDIT_ENGINE for the rollout engine. */
    char actor_id[MF_STORE_TOKEN_ID_LEN + 1];
    char actor[MF_STORE_NAME_SIZE];
    char action[MF_STORE_AUDIT_ACTION_MAX + 1];
    char target[MF_STORE_AUDIT_TARGET_MAX + 1];
    int status;                           /* the HTTP status answered; 0 for engine events */
    char detail[MF_STORE_BREACH_MAX + 1]; /* engine events: the event's detail */
};

/* What audit_list selects; rows newest first. */
struct mf_store_audit_query {
    int64_t since, until; /* at in [since, until); 0: open */
    const char *token;    /* "" any; else the actor's token id or name */
    const char *action;   /* "" any; else a prefix of the action ("PUT ", "rollout.") */
    int64_t before_seq;   /* 0: from the newest; else rows with seq below it */
    int64_t limit;        /* rows at most (>= 1) */
};

typedef int (*mf_store_audit_fn)(void *payload, const struct mf_store_audit *a);

/* ---- Webhooks (migration 9, docs/operations.md "Webhooks"): the URLs ops registered and
 * the outbox of signed deliveries, one row per (webhook, event) ---- */
#define MF_STORE_WEBHOOK_URL_MAX 512
#define MF_STORE_WEBHOOK_SECRET_MAX 256
#define MF_STORE_EVENT_ID_LEN 32 /* hex of 16 random bytes */
#define MF_STORE_WEBHOOK_BODY_MAX 4096

struct mf_store_webhook {
    int64_t id;
    char url[MF_STORE_WEBHOOK_URL_MAX + 1];
    int64_t created_at;
    int64_t pending, failed, delivered; /* its outbox rows by state (pending: also sending) */
};

/* One outbox row as a sender claimed it, with the webhook's URL and secret. */
struct mf_store_delivery {
    int64_t id;
    int64_t webhook_id;
    char url[MF_STORE_WEBHOOK_URL_MAX + 1];
    char secret[MF_STORE_WEBHOOK_SECRET_MAX + 1]; /* wipe after use */
    char event_id[MF_STORE_EVENT_ID_LEN + 1];
    char body[MF_STORE_WEBHOOK_BODY_MAX + 1];
    int attempts; /* counting this one */
};

typedef int (*mf_store_webhook_fn)(void *payload, const struct mf_store_webhook *w);

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

#endif /* MF_SERVER_STORE_TYPES_H */
