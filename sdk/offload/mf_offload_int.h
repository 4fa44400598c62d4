/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the offload handle and the pieces it is built from, one file each: scores
 * (offload_score.c), policy parsing and caching (offload_policy.c), budgets and the
 * decision (offload_decide.c), the durable uplink queue (offload_queue.c), the wire
 * encoding (offload_wire.c), sync asks (offload_ask.c), batch uplink (offload_uplink.c)
 * and telemetry (offload_telemetry.c).
 */
#ifndef MF_OFFLOAD_INT_H
#define MF_OFFLOAD_INT_H

/* The budget internals of mf/offload.h are this library's own. */
#ifndef MF_STATIC_LINKING_ONLY
#define MF_STATIC_LINKING_ONLY
#endif
#include "mf/offload.h"
#include "mf_crc32.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_http.h"

#include <stdint.h>

/* Storage names: offload/<model>/{policy.json,queue.meta,q-XXXXXXXX}. */
#define MF_OFFLOAD_STORE_NAME_MAX 128
#define MF_OFFLOAD_POLICY_JSON_MAX 4096
#define MF_OFFLOAD_ID_LEN 16
#define MF_OFFLOAD_ID_HEX (2 * MF_OFFLOAD_ID_LEN)
#define MF_OFFLOAD_CREDENTIAL_MAX 128
/* Scores seen before a threshold is derived from a target rate alone. */
#define MF_OFFLOAD_MIN_QUANTILE_SAMPLES 500

/* sample kinds as stored and sent */
enum { MF_OFFLOAD_KIND_HARD = 0, MF_OFFLOAD_KIND_AUDIT = 1 };

/* ---- hashing (offload_hash.c; the queue's record CRC is mf_crc32.h's) ---- */
uint64_t mf_offload__fnv1a64(const void *p, size_t n);
/* splitmix64 step: fast, well-mixed values for audit draws and jitter (not for secrets). */
uint64_t mf_offload__rng_next(uint64_t *state);

/* ---- policy (offload_policy.c) ---- */
/* 1 when `s` matches [A-Za-z0-9._-]{1,64} and is neither "." nor "..". */
int mf_offload__name_ok(const char *s);
/* Strict parse of a policy object; the message names the offending field. */
int mf_offload__policy_parse(struct mf_ctx *ctx, mf_offload_policy *out, const char *json,
                             size_t len);

/* ---- one decoded queue record ---- */
struct mf_offload_record {
    int kind;
    int method;
    int output_kind;
    uint32_t n_classes;
    int64_t created_s; /* -1: no trusted clock when queued */
    uint64_t hash;
    uint8_t id[MF_OFFLOAD_ID_LEN];
    float score;
    char model_version[MF_OFFLOAD_NAME_MAX + 1];
    const uint8_t *input; /* points into the queue's record buffer */
    uint32_t input_len;
    const uint8_t *output; /* n_classes little-endian float32 */
};

/* ---- record payload (offload_record.c): little-endian, versioned ---- */
size_t mf_offload__record_size(size_t input_len, size_t n_classes, size_t version_len);
/* Encodes `r` with `outputs` (host floats) into `buf`; MF_E_LIMIT when it does not fit. */
int mf_offload__record_encode(uint8_t *buf, size_t cap, size_t *len_out,
                              const struct mf_offload_record *r, const float *outputs);
/* Decodes a payload; `r` points into `buf`. MF_E_INVALID for a malformed payload. */
int mf_offload__record_decode(struct mf_offload_record *r, const uint8_t *buf, size_t len);
float mf_offload__get_f32(const uint8_t *p);
uint8_t *mf_offload__put_u32(uint8_t *p, uint32_t v);
uint8_t *mf_offload__put_u64(uint8_t *p, uint64_t v);
uint32_t mf_offload__get_u32(const uint8_t *p);
uint64_t mf_offload__get_u64(const uint8_t *p);

/* ---- wire (offload_wire.c) ---- */
/* Appends one sample object ({"id":...,"input":"<base64>"}) to `b`. */
int mf_offload__wire_sample(struct mf_dynbuf *b, const char *model,
                            const struct mf_offload_record *r);
/* Parses an ask answer; fills probs (n) when not NULL, label, confidence, teacher version. */
int mf_offload__wire_parse_answer(struct mf_ctx *ctx, mf_offload_answer *ans, float *probs,
                                  size_t n, const char *request_id, const char *body, size_t len);
/* Checks a batch ack echoes `batch_id`. */
int mf_offload__wire_parse_ack(struct mf_ctx *ctx, const char *batch_id, const char *body,
                               size_t len);

/* ---- queue (offload_queue.c) ---- */
struct mf_offload_queue {
    struct mf_ctx *ctx;
    const mf_platform_ops *plat;
    char dir[MF_OFFLOAD_STORE_NAME_MAX - 32]; /* leaves room for "/queue.meta.tmp" */
    uint64_t max_bytes;
    uint32_t seg_bytes, ttl_s, sync_every;
    /* persisted in queue.meta */
    uint32_t first_seq, last_seq; /* live segments; last is where appends go */
    uint32_t cur_seq;             /* read cursor: first record not yet acknowledged */
    uint64_t cur_off;
    int inflight; /* a batch was (maybe) sent: [cur, end) under batch_id */
    uint32_t end_seq;
    uint64_t end_off;
    uint8_t batch_id[MF_OFFLOAD_ID_LEN];
    /* runtime */
    mf_platform_file *wf; /* open segment last_seq, NULL until the first append */
    mf_platform_file *rf; /* cached reader of segment rf_seq */
    uint32_t rf_seq;
    uint64_t w_off;
    uint32_t unsynced;
    uint64_t bytes; /* bytes from the cursor to the end */
    uint64_t count; /* records from the cursor to the end */
    uint64_t *dedup;
    uint32_t dedup_cap, dedup_len, dedup_pos;
    uint8_t *rec; /* one record, rec_cap bytes */
    size_t rec_cap;
};

struct mf_offload_queue_config {
    const char *dir;
    uint64_t max_bytes;
    uint32_t seg_bytes, ttl_s, sync_every, dedup_window;
    size_t max_record;
    uint8_t *scratch; /* one encoded record, max_record bytes */
    /* The record a drain reads from the queue (offload_uplink.c). On the handle, not in the
     * drain's frame: inlined there it took mf_offload_drain() to 528 bytes on AArch64, over
     * the 512-byte bound of device code. */
    struct mf_offload_record drain_rec;
};

/* Opens the queue in `dir`, recovering from the cursor (torn tails dropped). */
int mf_offload__queue_open(struct mf_offload_queue *q, struct mf_ctx *ctx,
                           const mf_platform_ops *plat, const struct mf_offload_queue_config *cfg);
void mf_offload__queue_close(struct mf_offload_queue *q);
/* Appends one encoded payload. MF_OK (queued), MF_AGAIN (duplicate of a recent input with
 * content hash `hash`: not queued), MF_E_LIMIT (larger than the queue allows), < 0. */
int mf_offload__queue_append(struct mf_offload_queue *q, const uint8_t *payload, size_t len,
                             uint64_t hash);

/* A read position, and iteration over records from the cursor. */
struct mf_offload_qpos {
    uint32_t seq;
    uint64_t off;
};
/* Next record at or after `pos`, before `end` (NULL: the end of the queue). MF_OK with the
 * record decoded and `pos` moved past it; MF_AGAIN at the end; < 0 on I/O failure. */
int mf_offload__queue_next(struct mf_offload_queue *q, struct mf_offload_qpos *pos,
                           struct mf_offload_record *r, const struct mf_offload_qpos *end);
/* 1 when the record is past its TTL at wall time `now_s`. */
int mf_offload__queue_expired(const struct mf_offload_queue *q, const struct mf_offload_record *r,
                              int64_t now_s);
/* Persists an in-flight batch [cursor, end) under `id`. */
int mf_offload__queue_begin(struct mf_offload_queue *q, const uint8_t *id,
                            const struct mf_offload_qpos *end, uint64_t n_records);
/* The in-flight batch was acknowledged: the cursor moves to its end. */
int mf_offload__queue_commit(struct mf_offload_queue *q, uint64_t n_records);

/* ---- telemetry (offload_telemetry.c) ---- */
mf_offload_telemetry *mf_offload__telemetry_slot(mf_offload *o);

/* ---- score histograms (offload_hist.c) ---- */
void mf_offload__hist_add(uint32_t hist[MF_OFFLOAD_HIST_BINS], float score);

/* ---- policy installation and cache (offload_policy_cache.c) ---- */
/* "offload/<model>[/<leaf>]" into `out` (MF_OFFLOAD_STORE_NAME_MAX). */
int mf_offload__store_name(const mf_offload *o, char *out, const char *leaf);
/* Replaces `name` atomically with buf[0..len): writes `tmp` (opened with
 * MF_PLATFORM_OPEN_WRITE | `open_flags`), syncs it, renames it durably over `name`; on a
 * failure `tmp` is removed and the message names the file. The policy cache and the
 * queue's meta file both rely on it: a power cut leaves the old or the new file. */
int mf_offload__write_atomic(const mf_platform_ops *pl, struct mf_ctx *ctx, const char *tmp,
                             const char *name, int open_flags, const void *buf, size_t len);
/* Makes `server` (restricted to the app limits) the effective policy. */
void mf_offload__policy_apply(mf_offload *o, const mf_offload_policy *server);
int mf_offload__policy_cache_write(mf_offload *o, const char *json, size_t len);
/* Loads the cache; a missing or unusable one leaves the handle edge-only (MF_OK). */
int mf_offload__policy_cache_load(mf_offload *o);

/* ---- the handle ---- */
struct mf_offload {
    struct mf_ctx ctx;
    mf_platform_ops plat;
    char model[MF_OFFLOAD_NAME_MAX + 1];
    char model_version[MF_OFFLOAD_NAME_MAX + 1];
    char *server_url; /* without trailing '/', NULL: no network */
    char *ask_url;    /* server_url + "/v1/offload/ask" */
    char *batch_url;  /* server_url + "/v1/offload/batch" */
    char credential[MF_OFFLOAD_CREDENTIAL_MAX];
    mf_offload_options opts;
    mf_offload_policy limits;
    int has_limits;
    mf_offload_policy policy; /* effective (server restricted to limits) */
    int has_policy;
    mf_offload_budget budget;
    int link;
    uint64_t rng;
    mf_offload_telemetry tele[MF_OFFLOAD_TELEMETRY_SLOTS];
    struct mf_offload_queue queue;
    struct mf_http http;
    int http_ready;
    uint32_t calib[MF_OFFLOAD_HIST_BINS]; /* scores of this version, for a derived threshold */
    uint64_t next_drain_ms;
    uint32_t backoff_ms;
    size_t max_record;
    uint8_t *scratch; /* one encoded record, max_record bytes */
    /* The record a drain reads from the queue (offload_uplink.c). On the handle, not in the
     * drain's frame: inlined there it took mf_offload_drain() to 528 bytes on AArch64, over
     * the 512-byte bound of device code. */
    struct mf_offload_record drain_rec;
};

/* Lazily creates the libcurl handle. */
int mf_offload__http(mf_offload *o);
/* The handle's effective threshold (server's, or derived from the target rate), < 0: none. */
float mf_offload__threshold(mf_offload *o);
/* Encodes a sample with fresh identity (id, time, hash, version) into o->scratch and
 * decodes it into `r` (pointing into o->scratch); `*len_out` is the payload size. */
int mf_offload__record_fill(mf_offload *o, struct mf_offload_record *r, size_t *len_out,
                            const mf_offload_sample *s, int kind, int method, float score);
/* Sync ask; fills `ans` (teacher) or returns < 0 with the reason in `*reason`. */
int mf_offload__ask_teacher(mf_offload *o, mf_offload_answer *ans, float *probs, int *reason,
                            const struct mf_offload_record *r);

#endif /* MF_OFFLOAD_INT_H */
