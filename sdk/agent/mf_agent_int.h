/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the agent handle and the functions its files share. One file per job:
 *   agent.c          public API and the step loop
 *   agent_rpc.c      JSON requests to the server, JSON string escaping
 *   agent_json.c     typed field readers shared by every JSON parser of the agent
 *   agent_store.c    small durable files over the platform port
 *   agent_state.c    per-model state file (active/previous slot)
 *   agent_enroll.c   credential load and enrollment
 *   agent_checkin.c  check-in request and answer parsing
 *   agent_trust.c    the trust chain: state, root/keys updates, assignment verification
 *   agent_verify.c   running digests: signed chunk hashes, whole sha256, prefix replay
 *   agent_progress.c the crash-safe progress record next to a .part
 *   agent_download.c resumable blob download (Range/If-Range) into a .part, verified
 *   agent_delta.c    delta apply into the inactive slot, checkpointed for power cuts
 *   agent_install.c  slot choice, delta-or-full, activation, ready/health callback
 *   agent_health.c   pending/confirm, rollback, pins, rolled-back holds
 *   agent_retry.c    backoff with jitter between failed attempts
 *   agent_report.c   install reports
 *   agent_fallback.c the fallback variant's slot beside the active one: install, keep, GC
 *   agent_degrade.c  the way down: the degrade controller, its triggers, the switch report
 */
#ifndef MF_AGENT_INT_H
#define MF_AGENT_INT_H

#include "mf/agent.h"
#include "mf/ct.h"
#include "mf/trust.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"
#include "mf_http.h"
#include "mf_sha256.h"

/* "mfd_" + 64 hex digits today; room for longer credentials later. */
#define MF_AGENT_CRED_MAX 128
/* Longest blob path accepted from a check-in ("/v1/blobs/" + 64 hex today). */
#define MF_AGENT_BLOB_PATH_MAX 160
/* Longest state file or credential file read back. */
#define MF_AGENT_SMALL_FILE_MAX 8192
/* A release envelope, in a check-in answer or kept for a slot (mf_trust's own cap). */
#define MF_AGENT_RELEASE_MAX (1024u * 1024u)
/* Longest storage name the agent builds ("models/<64>/slot-a.part" and such). */
#define MF_AGENT_STORE_NAME_MAX 112
/* Read buffer for replaying a prefix or reading a delta from storage. */
#define MF_AGENT_IO_BUF (16u * 1024u)
/* A download syncs its .part and records its verified progress at most this often (ms):
 * an fsync per chunk would bound throughput by the storage's sync rate. A crash of the
 * process loses nothing verified (the resume re-verifies whatever the .part holds); a
 * power cut loses at most this much transfer time. */
#define MF_AGENT_PERSIST_MS 1000u
/* A delta apply saves its checkpoint at most this often (ms, at block boundaries). */
#define MF_AGENT_CKPT_MS 250u
/* Rolled-back versions remembered per model (and sent in the check-in). */
#define MF_AGENT_MAX_ROLLED_BACK 8
#define MF_AGENT_REASON_MAX 128
/* Deltas considered per assignment. */
#define MF_AGENT_MAX_DELTAS 4
/* Root rotations accepted from one check-in (mf_trust's default walk bound). */
#define MF_AGENT_MAX_ROOTS 16
/* Largest trust.state read back: two 32 KiB envelopes, floors, header. */
#define MF_AGENT_TRUST_STATE_MAX (80u * 1024u)
/* Check-in nonce: 16 random bytes in hex. */
#define MF_AGENT_NONCE_LEN 32

/* One installed copy of a model; slot 0 means "none". */
struct mf_agent_slot {
    char slot; /* 'a' or 'b' */
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    uint64_t sequence; /* release sequence, 0 when unknown (older state files) */
    /* The release digest of the slot's release, whose envelope is kept in slot-<x>.release
     * (agent_trust.c); "" when unknown (older state files): check-ins then ask for it. */
    char release[MF_SHA256_HEX_LEN + 1];
};

/* A version this device reverted; not retried until a release with a higher sequence. */
struct mf_agent_rolled_back {
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t sequence;
    char reason[MF_AGENT_REASON_MAX];
    int reported; /* the server got the "failed: rolled back" report (survives restarts) */
};

/* The fallback variant installed beside the active slot (models/<name>/fallback, described
 * by models/<name>/fallback.state); variant "" means none. */
struct mf_agent_fallback {
    char variant[MF_AGENT_NAME_MAX + 1];
    char version[MF_AGENT_NAME_MAX + 1]; /* the version it is a variant of */
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
};

/* The fallback a check-in assignment offers (docs/protocol.md, "Fallback variant"): unsigned
 * hints plus the variant's release envelope, verified before any download. Every string is
 * borrowed from the check-in answer's tree (checked by the parser). */
struct mf_agent_fallback_ref {
    const char *variant; /* NULL: none offered */
    const char *sha256;
    uint64_t size;
    const char *blob;        /* NULL with no release: the device holds those bytes */
    const char *release_env; /* NULL: left out */
    size_t release_len;
};

/* One switch of the degrade controller not yet acknowledged by a check-in answer. */
struct mf_agent_switch {
    uint64_t seq; /* the controller's switch count after it (unique per device) */
    int64_t at_s; /* wall clock when trustworthy, else 0 */
    int degraded; /* 1: to the fallback */
    int reason;   /* mf_degrade_reason */
};

/* Content of models/<name>/state.json. */
struct mf_agent_model_state {
    struct mf_agent_slot active;
    struct mf_agent_slot previous;   /* kept for rollback */
    int pending;                     /* active not yet confirmed healthy by the app */
    uint32_t starts;                 /* agent starts while pending */
    char pin[MF_AGENT_NAME_MAX + 1]; /* pinned version, "" when not pinned */
    struct mf_agent_rolled_back rolled_back[MF_AGENT_MAX_ROLLED_BACK]; /* newest first */
    size_t n_rolled_back;
};

/* A delta offered by the check-in (unsigned: the output is verified, docs/protocol.md). */
struct mf_agent_delta_ref {
    char from_sha256[MF_SHA256_HEX_LEN + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    char blob[MF_AGENT_BLOB_PATH_MAX + 1];
    uint64_t size;
};

/*
 * One assignment of a check-in answer. version/sha256/size start as the answer's unsigned
 * hints (enough to name the model in a failure report) and are replaced by the verified
 * release's values before anything is downloaded.
 */
struct mf_agent_assignment {
    char model[MF_AGENT_NAME_MAX + 1];
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    char blob[MF_AGENT_BLOB_PATH_MAX + 1];
    const char *release_env; /* borrowed from the check-in answer's tree, or release_kept */
    size_t release_len;
    /* The answer left the release out: the device holds it (its active slot's). */
    int release_held;
    struct mf_dynbuf release_kept; /* that envelope, read from storage when release_held */
    const char *assignment_env;    /* borrowed from the check-in answer's tree */
    size_t assignment_len;
    mf_manifest_assignment *verified; /* owned; NULL until mf_agent__trust_verify() */
    struct mf_agent_delta_ref deltas[MF_AGENT_MAX_DELTAS]; /* unsigned offers, check-in */
    size_t n_deltas;
    struct mf_agent_fallback_ref fallback; /* the fallback variant offered, if any */
    const char *chunk_list; /* "chunk_list" blob path, borrowed from the answer's tree; NULL */
};

/* The trust documents of a check-in answer, borrowed from its tree. */
struct mf_agent_trust_docs {
    const char *roots[MF_AGENT_MAX_ROOTS];
    size_t root_len[MF_AGENT_MAX_ROOTS];
    size_t n_roots;
    const char *keys; /* NULL: none sent */
    size_t keys_len;
};

struct agent_model {
    char name[MF_AGENT_NAME_MAX + 1];
    struct mf_agent_model_state state;
    int up_to_date;
    int report_pending; /* an "installed" report still has to reach the server */
    int last_error;
    char last_errmsg[MF_ERRMSG_MAX];
    uint64_t release_sequence; /* of the last verified release assigned */
    /* retries (agent_retry.c): consecutive failures and when the next attempt may start */
    unsigned int failures;
    uint64_t retry_at_ms;
    int report_rollback; /* a "failed: rolled back" report still has to be sent */
    int held;            /* the assignment is held back (pin or rolled back) */
    char hold_reason[MF_AGENT_REASON_MAX];
    uint64_t dl_done, dl_total; /* progress of the running or interrupted download */
    char dl_kind[8];            /* "model" or "delta" */
    mf_offload *offload;        /* this model's offload handle, or NULL */
    int owns_offload;           /* 1: created from offload_options, freed with the agent */
    /* An install deferred to the window (agent_install.c): the verified image of this
     * release waits in slot `deferred_slot`'s .part, built by this process. */
    int deferred;
    char deferred_sha256[65];
    char deferred_version[MF_AGENT_NAME_MAX + 1];
    char deferred_slot;
    int deferred_reported; /* its "pending_install" report reached the server */
};

/* Transfer counters, for tests and benchmarks (mf_agent_stats). */
struct agent_counters {
    uint64_t requests;       /* blob GETs sent */
    uint64_t bytes_received; /* blob body bytes received, including re-sent ones */
    uint64_t delta_installs, full_installs, delta_fallbacks, resumes;
};

/* `rel` when it carries the flat list of signed chunk hashes, else NULL: a chunk-tree
 * release's bytes are checked against its signed sha256 as a whole (agent_verify.c). */
const mf_manifest_release *mf_agent__rel_chunks(const mf_manifest_release *rel);

/* Verifier of one object's bytes (agent_verify.c). */
struct mf_agent_vfy {
    struct mf_ctx *ctx;
    const char *what;               /* names the object in messages */
    const mf_manifest_release *rel; /* signed chunk hashes, or NULL (delta blobs) */
    uint64_t size;
    uint8_t sha256[MF_SHA256_LEN];
    struct mf_sha256 whole; /* without chunk hashes only */
    struct mf_sha256 chunk; /* with: the running chunk */
    uint64_t got;           /* bytes hashed */
    uint64_t verified;      /* bytes whose chunks matched their signed hashes */
    uint32_t in_chunk;
    size_t chunk_index;
};

/* The progress record of a .part (agent_progress.c). */
struct mf_agent_progress {
    uint8_t sha256[MF_SHA256_LEN];
    uint64_t size;
    uint64_t verified;
    char etag[MF_HTTP_ETAG_MAX + 1];
};

/* One object to download (agent_download.c). */
struct agent_model;
struct mf_agent_fetch {
    struct agent_model *m; /* its dl_* progress fields are kept current */
    const char *model;
    const char *kind; /* "model" or "delta" (progress callback) */
    const char *what; /* "model detector v2" (messages) */
    const char *blob; /* server path */
    const char *part; /* storage name */
    uint64_t size;
    const uint8_t *sha256;          /* 32 bytes */
    const mf_manifest_release *rel; /* chunk hashes, or NULL */
};

struct mf_agent {
    struct mf_ctx ctx;
    mf_platform_ops plat;
    struct mf_http http;
    char *server_url; /* without trailing '/' */
    char *device_id;
    char *enroll_token; /* NULL when none was given; wiped on free */
    char *state_dir;
    char *ca_file;
    char credential[MF_AGENT_CRED_MAX + 1]; /* "" until enrolled; wiped on free */
    struct agent_model *models;
    const char **model_names; /* models[i].name, for the check-in parser */
    size_t n_models;
    struct mf_agent_assignment *assignments; /* n_models entries, filled by check-in */
    size_t n_assignments;
    struct cJSON *checkin_doc;          /* the last check-in answer; assignments borrow from it */
    char nonce[MF_AGENT_NONCE_LEN + 1]; /* sent with the last check-in */
    mf_trust *trust;
    mf_telemetry *telemetry;  /* the app's runtime reports, or NULL */
    long poll_interval_s;     /* the next wait, jitter applied (mf_agent__poll_pick) */
    long own_poll_interval_s; /* options' poll_interval_s: 0 = the server's */
    /* The device class every check-in declares (options version 6), copied. */
    int has_class, class_int8, class_fp16;
    char class_tag[MF_AGENT_NAME_MAX + 1], class_accel[MF_AGENT_NAME_MAX + 1];
    uint64_t class_ram_mb, class_storage_mb;
    int window_start_min, window_end_min; /* the last answer's install window; -1: none */
    mf_agent_idle_fn idle_fn;             /* may install outside the window when it says so */
    void *idle_payload;
    mf_agent_ready_fn ready_fn;
    void *ready_payload;
    mf_agent_health_fn health_fn;
    void *health_payload;
    mf_agent_progress_fn progress_fn;
    void *progress_payload;
    unsigned int max_unconfirmed_starts;
    int metered;
    long long max_recv_bytes_per_s;
    long retry_base_ms, retry_max_ms;
    size_t max_patch_window;
    size_t download_buffer; /* options' download_buffer: write-behind and libcurl buffer */
    int control_only;
    struct agent_counters stats;
    /* Runtime degradation (options version 8, agent_degrade.c); NULL: off (and no fallback
     * is installed: its heap is taken only by agents that degrade). */
    struct agent_degrade *dg;
};

/* What runtime degradation adds to an agent, allocated only when it is on. */
struct agent_degrade {
    mf_degrade *ctl;
    mf_agent_squeeze_fn squeeze_fn;
    void *squeeze_payload;
    struct mf_agent_switch switches[MF_DEGRADE_EVENTS]; /* unacknowledged, oldest first */
    size_t n_switches;
    size_t switches_sent;           /* how many of them the check-in in flight carries */
    struct mf_agent_fallback fb[1]; /* per tracked model, n_models of them */
};

/* The check-in answer's settings (docs/protocol.md, "Poll interval", "Install window"). */
struct mf_agent_settings {
    long interval_s;      /* poll_interval_s: 0 = none sent */
    long jitter_pct;      /* poll_jitter_pct, 0..MF_AGENT_POLL_JITTER_MAX */
    int by_group;         /* poll_group sent: ops set the interval for the device's group */
    int window_start_min; /* install_window in minutes of the UTC day, [start, end) ... */
    int window_end_min;   /* ... wrapping past midnight when end < start; -1: none */
};
#define MF_AGENT_POLL_JITTER_MAX 50

/* agent_retry.c: the wait until the next check-in from the answer's fields: a group's
 * interval, else the app's own (options' poll_interval_s), else the server's; then moved
 * by a random amount within +-jitter_pct % (never below 1 s) so a fleet does not check in
 * in lockstep. */
long mf_agent__poll_pick(struct mf_agent *a, const struct mf_agent_settings *p);

/* 1 when `s` matches [A-Za-z0-9._-]{1,64} and is not "." or ".." (names, versions, ids). */
int mf_agent__name_ok(const char *s);

/* agent_rpc.c */
int mf_agent__json_str(struct mf_dynbuf *b, const char *s);
/*
 * POSTs `body` (JSON) to server_url + `path` with the credential when `auth` is 1; any
 * status but 2xx is an error (`what` names the call in messages). On MF_OK the answer is
 * in resp->body.
 */
int mf_agent__post_json(struct mf_agent *a, struct mf_http_response *resp, const char *path,
                        const struct mf_dynbuf *body, int auth, const char *what);
int mf_agent__url(struct mf_agent *a, struct mf_dynbuf *url, const char *path);

/* agent_json.c: each reads `key` of object `obj`, validates it and fails naming `what`.key */
struct cJSON;
int mf_agent__json_name(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                        const char *what);
int mf_agent__json_sha256(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                          const char *what);
int mf_agent__json_u64(struct mf_ctx *ctx, uint64_t *out, const struct cJSON *obj, const char *key,
                       uint64_t max, const char *what);

/* agent_store.c: whole small files, written atomically (temp + sync + durable rename). */
int mf_agent__store_write(struct mf_agent *a, const char *name, const void *data, size_t len,
                          int secret);
/* Reads `name` into `out` (at most `max` - 1 bytes); MF_E_NOTFOUND if absent. */
int mf_agent__store_read(struct mf_agent *a, struct mf_dynbuf *out, const char *name, size_t max);
int mf_agent__store_name(struct mf_agent *a, char *out, const char *model, const char *leaf);
/* Full path of a storage name, for the app callbacks (caller frees with mf_dynbuf__free). */
int mf_agent__path(struct mf_agent *a, struct mf_dynbuf *out, const char *name);

/* agent_state.c */
int mf_agent__state_parse(struct mf_ctx *ctx, struct mf_agent_model_state *out, const char *json,
                          size_t len);
int mf_agent__state_format(struct mf_dynbuf *out, const struct mf_agent_model_state *st);
int mf_agent__state_load(struct mf_agent *a, struct agent_model *m);
int mf_agent__state_save(struct mf_agent *a, struct agent_model *m,
                         const struct mf_agent_model_state *st);
/* A heap copy of m->state to edit (kilobytes: never on the stack); NULL after mf_fail().
 * Release with mf_ctx__free(). */
struct mf_agent_model_state *mf_agent__state_copy(struct mf_agent *a, const struct agent_model *m);

/* agent_enroll.c */
int mf_agent__credential_load(struct mf_agent *a);
int mf_agent__enroll(struct mf_agent *a);
void mf_agent__credential_drop(struct mf_agent *a);

/* agent_checkin.c: check in, then bring the trust state up to date (roots, keys). */
int mf_agent__checkin(struct mf_agent *a, size_t *n_out);
/* Releases the last answer and the verified assignments that borrow from it. */
void mf_agent__checkin_drop(struct mf_agent *a);
/*
 * Parses a check-in answer into `out` (room for n_models entries, one per tracked model),
 * `poll_out` (fields the answer leaves out keep their value) and `trust`; assignments for models
 * not in `models` are skipped. Strings in `out` and `trust` borrow from `*doc_out`, which the
 * caller releases with cJSON_Delete() (NULL on failure). MF_E_INVALID for malformed JSON, a wrong
 * nonce or bad fields.
 */
int mf_agent__checkin_parse(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                            struct mf_agent_settings *poll_out, struct mf_agent_trust_docs *trust,
                            struct cJSON **doc_out, const char *json, size_t len, const char *nonce,
                            const char *const *models, size_t n_models);

/* agent_trust.c */
/* Loads trust.state, or bootstraps from the provisioned root and saves it. */
int mf_agent__trust_open(struct mf_agent *a, const void *root, size_t root_len);
/* Applies the answer's root rotations and keys document, saving the state if it changed. */
int mf_agent__trust_update(struct mf_agent *a, const struct mf_agent_trust_docs *docs);
/* Verifies `as` (assignment + release envelopes) for this device and a->nonce; on success
 * as->verified is set, version/sha256/size are the release's and the state is saved. */
int mf_agent__trust_verify(struct mf_agent *a, struct mf_agent_assignment *as);
/* Verifies a release envelope alone (a fallback variant's: signed by the release keys, at or
 * above the model's floor); the caller checks it names the model and version it runs. */
int mf_agent__trust_release(struct mf_agent *a, mf_manifest_release **out, const char *env,
                            size_t len);
/* Raises the model's floor to the installed release's and saves the state (idempotent). */
int mf_agent__trust_commit(struct mf_agent *a, const mf_manifest_release *r);
/* Reads the release envelope kept for `m`'s active slot into as->release_kept and points
 * as->release_env at it (an answer that left the release out). MF_E_INVALID when none is
 * kept, the storage's error when it cannot be read. */
int mf_agent__release_load(struct mf_agent *a, struct agent_model *m,
                           struct mf_agent_assignment *as);
/* Keeps verified `as`'s release envelope for slot `slot` of `m` (slot-<x>.release, written
 * durably) and its digest in `out` (64 hex and NUL), before a state file names it. */
int mf_agent__release_keep(char *out, struct mf_agent *a, const struct agent_model *m, char slot,
                           const struct mf_agent_assignment *as);

/* agent_verify.c */
void mf_agent__vfy_init(struct mf_agent_vfy *v, struct mf_ctx *ctx, const char *what,
                        const mf_manifest_release *rel, uint64_t size, const uint8_t *sha256);
void mf_agent__vfy_reset(struct mf_agent_vfy *v);
/* Back to the last verified boundary (drops the partial chunk). */
void mf_agent__vfy_rewind(struct mf_agent_vfy *v);
void mf_agent__vfy_free(struct mf_agent_vfy *v);
/* MF_E_SIGNATURE for a chunk that does not match, MF_E_LIMIT past the size. */
int mf_agent__vfy_update(struct mf_agent_vfy *v, const void *data, size_t len);
/* All bytes there and the whole digest right: MF_OK; MF_E_NET short, MF_E_SIGNATURE. */
int mf_agent__vfy_finish(struct mf_agent_vfy *v);
/* Resets `v` and feeds it the first `upto` bytes of the storage object `name`. `tolerant`:
 * stop quietly at a short read or a chunk that does not verify, and end on the last
 * verified boundary (a resume keeps the longest verified prefix). */
int mf_agent__vfy_replay(struct mf_agent_vfy *v, struct mf_agent *a, const char *name,
                         uint64_t upto, int tolerant);

/* agent_progress.c (and the little-endian fields of the records next to a .part) */
void mf_agent__put_u64(uint8_t *p, uint64_t v);
uint64_t mf_agent__get_u64(const uint8_t *p);
int mf_agent__progress_name(struct mf_agent *a, char *out, const char *part);
int mf_agent__progress_save(struct mf_agent *a, const char *part,
                            const struct mf_agent_progress *pr);
int mf_agent__progress_load(struct mf_agent *a, struct mf_agent_progress *out, const char *part);
/* Removes the record (and the .part when `with_part`); missing files are fine. */
void mf_agent__progress_drop(struct mf_agent *a, const char *part, int with_part);

/* agent_download.c: resumable download of `f` into f->part, verified as it arrives.
 * MF_OK leaves a complete, verified, synced .part and its record (the caller drops both
 * once done with it; a complete one is not fetched again); MF_E_NET keeps a verified
 * prefix and its progress record for the next call; other errors remove both. */
int mf_agent__fetch(struct mf_agent *a, const struct mf_agent_fetch *f);

/* agent_chunks.c: the chunk hashes a download of `rel` is verified against. A chunk-tree
 * release (no flat list) whose check-in named a chunk_list gets the list fetched (at most
 * MF_AGENT_CHUNK_LIST_MAX hashes, in memory; small enough to fetch again on every attempt)
 * and held to the signed chunks_root with mf_trust_check_chunk_list() first. *out is `rel`
 * itself or a copy of it in `c` that carries the list (without any chunk hashes the verifier
 * holds the bytes to the whole sha256, agent_verify.c). Free `c` with mf_agent__chunks_free.
 * MF_E_SIGNATURE for a list that is refused, MF_E_NOTFOUND, MF_E_NET, MF_E_LIMIT. */
#define MF_AGENT_CHUNK_LIST_MAX 8192
struct mf_agent_chunks {
    /* NULL, or one allocation: the release's copy that names the list, then the list */
    mf_manifest_release *rel;
};
int mf_agent__chunks_get(const mf_manifest_release **out, struct mf_agent_chunks *c,
                         struct mf_agent *a, const struct mf_agent_assignment *as,
                         const mf_manifest_release *rel);
void mf_agent__chunks_free(struct mf_agent *a, struct mf_agent_chunks *c);

/* agent_delta.c: builds `part` (the new image of as's release) from the active slot
 * `old_name` and the downloaded delta `delta_part`, checkpointed in "<part>.ckpt";
 * every output chunk is checked against the chunk hashes of `rel` (mf_agent__chunks_get). */
int mf_agent__delta_apply(struct mf_agent *a, const char *part, const char *old_name,
                          const char *delta_part, const struct mf_agent_assignment *as,
                          const struct mf_agent_delta_ref *dr, const mf_manifest_release *rel);

/* agent_install.c */
int mf_agent__install(int *deferred_out, struct mf_agent *a, struct agent_model *m,
                      const struct mf_agent_assignment *as);
/* 1 when `as` may be installed now: no install window, inside it, or the app's idle_fn says
 * the device is idle (agent_install.c). */
int mf_agent__install_allowed(struct mf_agent *a, const struct agent_model *m,
                              const struct mf_agent_assignment *as);

/* agent_health.c */
/* After an activation: asks the app (health_fn / ready_fn) and confirms or reverts. */
int mf_agent__after_activate(struct mf_agent *a, struct agent_model *m);
/* Makes the previous slot active again and remembers why (`reason`). */
int mf_agent__revert(struct mf_agent *a, struct agent_model *m, const char *reason);
/* Counts one start for every pending model; reverts those unconfirmed too often. */
int mf_agent__count_start(struct mf_agent *a);
/* 1 when the verified assignment must not be installed now (pin, rolled back). */
int mf_agent__held(struct mf_agent *a, struct agent_model *m, const struct mf_agent_assignment *as);

/* agent_retry.c */
/* 1 while the model waits out its backoff. */
int mf_agent__retry_waiting(struct mf_agent *a, const struct agent_model *m);
void mf_agent__retry_failed(struct mf_agent *a, struct agent_model *m);
void mf_agent__retry_ok(struct agent_model *m);
/* Milliseconds until the earliest pending retry, or -1 when none waits. */
long long mf_agent__retry_next_ms(const struct mf_agent *a);

/* agent_report.c */
int mf_agent__report(struct mf_agent *a, const char *model, const char *version, const char *sha256,
                     const char *status, const char *detail);

/* agent_offload.c: the offload handles' side of the check-in. */
/* Appends `,"offload":[telemetry, ...]` when any tracked model has an offload handle. */
int mf_agent__offload_request(struct mf_agent *a, struct mf_dynbuf *b);
/* After an answered check-in: installs each model's policy, forgets reported telemetry. */
void mf_agent__offload_answer(struct mf_agent *a);
/* Tells every offload handle the model version that is active now. */
void mf_agent__offload_versions(struct mf_agent *a);
/* Creates the handles of options version 4's offload_options (after the credential load). */
int mf_agent__offload_open(struct mf_agent *a, const mf_agent_options *o);
/* Hands every offload handle the current credential ("" after a drop): called whenever the
 * agent's credential changes, so the app never reads it. */
void mf_agent__offload_credential(struct mf_agent *a);
/* Frees the handles the agent created. */
void mf_agent__offload_close(struct mf_agent *a);

/* agent_telemetry.c: the runtime reports' side of the check-in and of install results. */
/* Appends `,"telemetry":{...}` to a model's check-in entry when the app's handle has any. */
int mf_agent__telemetry_member(struct mf_agent *a, struct mf_dynbuf *b, const char *model);
void mf_agent__telemetry_install(struct mf_agent *a, const char *model, const char *version,
                                 int ok);
void mf_agent__telemetry_rollback(struct mf_agent *a, const char *model, const char *version,
                                  const char *reason);

/* agent_fallback.c */
/* The fallback slot of `m`, NULL when degradation is off. */
struct mf_agent_fallback *mf_agent__fallback_of(const struct mf_agent *a,
                                                const struct agent_model *m);
/* Loads models/<m>/fallback.state (a missing or damaged one: no fallback). */
void mf_agent__fallback_load(struct mf_agent *a, struct agent_model *m);
/* After an assignment was handled: installs the fallback it offers for the release the
 * model runs (verified, resumable), or removes a fallback that is no longer the active
 * version's (GC). Never fails the step: a failure is logged and retried next time. */
void mf_agent__fallback_sync(struct mf_agent *a, struct agent_model *m,
                             const struct mf_agent_assignment *as);
/* 1 when `m` has a fallback of the version it runs. */
int mf_agent__fallback_usable(const struct mf_agent *a, const struct agent_model *m);

/* agent_degrade.c */
int mf_agent__degrade_open(struct mf_agent *a, const mf_agent_options *o);
void mf_agent__degrade_close(struct mf_agent *a);
/* Appends `"degrade":{...},` (state and unacknowledged switches) when degradation is on. */
int mf_agent__degrade_request(struct mf_agent *a, struct mf_dynbuf *b);
/* After an answered check-in: the switches it carried are acknowledged. */
void mf_agent__degrade_answer(struct mf_agent *a);

#endif /* MF_AGENT_INT_H */
