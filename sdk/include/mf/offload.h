/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/offload.h
 * @brief Confidence-based offload, device side (library mf_offload).
 *
 * The app runs its small "student" model, hands the output to mf_offload_ask() and gets an
 * answer with routing metadata. Each sample is scored (max-softmax, margin or entropy,
 * after the model's temperature); a server policy decides whether an uncertain sample asks
 * the cloud teacher within a deadline (falling back to the local answer), is queued for
 * asynchronous uplink as a hard sample, or whether a confident one is uplinked anyway as a
 * random audit sample. Hard rate caps and a byte budget bound what leaves the device; an
 * edge-only policy (the default until a server policy arrives) sends nothing.
 *
 * Scores are confidences in [0, 1]: higher means more confident, and a sample is uncertain
 * when its score is below the policy threshold. Wire format: docs/protocol-offload.md;
 * guide: docs/offload.md.
 *
 * Storage (policy cache and uplink queue) goes only through the platform port, under
 * `offload/<model>/` in the port's state directory. A handle is not thread-safe: call it
 * from one thread (or serialise the calls).
 */
#ifndef MF_OFFLOAD_H
#define MF_OFFLOAD_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/error.h"
#include "mf/log.h"
#include "mf/sys/platform.h"

MF_BEGIN_DECLS

/** Most classes a scored output may have. */
#define MF_OFFLOAD_MAX_CLASSES 4096
/** Longest model name or version string, in bytes (names match [A-Za-z0-9._-]{1,64}). */
#define MF_OFFLOAD_NAME_MAX 64
/** Bins of the score histogram: bin i counts scores in [i/N, (i+1)/N), the last bin adds 1.0. */
#define MF_OFFLOAD_HIST_BINS 100
/** Rate cap value meaning "no cap on this window". */
#define MF_OFFLOAD_UNLIMITED 0xffffffffu
/** Largest daily byte budget a policy may set. */
#define MF_OFFLOAD_MAX_BYTES_PER_DAY (64ull * 1024 * 1024 * 1024)
/** Model versions whose telemetry one handle keeps between two check-ins. */
#define MF_OFFLOAD_TELEMETRY_SLOTS 4

/** Confidence score methods. */
typedef enum mf_offload_method {
    MF_OFFLOAD_MAX_SOFTMAX = 0, /**< largest probability p1 */
    MF_OFFLOAD_MARGIN = 1,      /**< p1 - p2, top-1 minus top-2 probability */
    MF_OFFLOAD_ENTROPY = 2      /**< 1 - H(p) / ln(n): 1 for one-hot, 0 for uniform */
} mf_offload_method;

/** What the student's output vector holds. */
typedef enum mf_offload_output_kind {
    MF_OFFLOAD_LOGITS = 0, /**< unnormalised logits; softmax(z / T) is taken */
    MF_OFFLOAD_PROBS = 1   /**< probabilities (>= 0, renormalised); p^(1/T) is renormalised */
} mf_offload_output_kind;

/** What an offload-enabled link may carry when it is metered. */
typedef enum mf_offload_metered {
    MF_OFFLOAD_METERED_ALLOW = 0, /**< treat it like any link */
    MF_OFFLOAD_METERED_DEFER = 1, /**< no sync asks; queue, and drain only when unmetered */
    MF_OFFLOAD_METERED_DENY = 2   /**< nothing is offloaded or queued while metered */
} mf_offload_metered;

/** How uncertain samples reach the teacher. */
typedef enum mf_offload_mode {
    MF_OFFLOAD_MODE_SYNC = 0, /**< ask within the deadline, fall back to local and queue */
    MF_OFFLOAD_MODE_ASYNC = 1 /**< answer locally, queue for uplink */
} mf_offload_mode;

/** The link state the app reports with mf_offload_set_link(). */
typedef enum mf_offload_link {
    MF_OFFLOAD_LINK_UNMETERED = 0,
    MF_OFFLOAD_LINK_METERED = 1,
    MF_OFFLOAD_LINK_OFFLINE = 2
} mf_offload_link;

/** Where a sample goes. */
typedef enum mf_offload_route {
    MF_OFFLOAD_ROUTE_LOCAL = 0, /**< answered locally, nothing leaves the device */
    MF_OFFLOAD_ROUTE_SYNC = 1,  /**< ask the teacher now, within the deadline */
    MF_OFFLOAD_ROUTE_QUEUE = 2, /**< answered locally, queued as a hard sample */
    MF_OFFLOAD_ROUTE_AUDIT = 3  /**< confident, answered locally, queued as a random audit sample */
} mf_offload_route;

/** Why a sample was routed (or answered) the way it was. */
typedef enum mf_offload_reason {
    MF_OFFLOAD_REASON_CONFIDENT = 0,     /**< score >= threshold, not drawn for audit */
    MF_OFFLOAD_REASON_UNCERTAIN = 1,     /**< score < threshold */
    MF_OFFLOAD_REASON_AUDIT = 2,         /**< confident, drawn for the random audit slice */
    MF_OFFLOAD_REASON_NO_POLICY = 3,     /**< no server policy yet: edge-only */
    MF_OFFLOAD_REASON_EDGE_ONLY = 4,     /**< the policy (or the app) disables offload */
    MF_OFFLOAD_REASON_POLICY_STALE = 5,  /**< the policy names another model version */
    MF_OFFLOAD_REASON_NO_THRESHOLD = 6,  /**< target rate only, too few scores to derive one */
    MF_OFFLOAD_REASON_RATE_CAP = 7,      /**< a per-minute/hour/day cap is exhausted */
    MF_OFFLOAD_REASON_BYTE_BUDGET = 8,   /**< the daily byte budget is exhausted */
    MF_OFFLOAD_REASON_METERED = 9,       /**< metered link and the policy says deny */
    MF_OFFLOAD_REASON_OFFLINE = 10,      /**< the app reported the link offline */
    MF_OFFLOAD_REASON_TIMEOUT = 11,      /**< no teacher answer within the deadline */
    MF_OFFLOAD_REASON_SERVER_ERROR = 12, /**< unreachable server, error status, bad reply */
    MF_OFFLOAD_REASON_TEACHER = 13       /**< the teacher answered */
} mf_offload_reason;

/** Version of mf_offload_policy described by this header; fields are only appended. */
#define MF_OFFLOAD_POLICY_VERSION 1

/**
 * The offload policy. The server sends it in the check-in (docs/protocol-offload.md); the
 * app may pass its own as a ceiling that can only make the server's stricter.
 */
typedef struct mf_offload_policy {
    unsigned int version;       /**< MF_OFFLOAD_POLICY_VERSION */
    int enabled;                /**< 0: edge-only, nothing leaves the device */
    mf_offload_method method;   /**< score method */
    mf_offload_mode mode;       /**< sync or async */
    float threshold;            /**< uncertain when score < threshold; < 0: derive from target */
    float target_rate;          /**< wanted offload share in [0, 1]; 0: none stated */
    float temperature;          /**< > 0; 1 leaves the output unchanged */
    uint32_t per_minute;        /**< rate caps on samples leaving the device ... */
    uint32_t per_hour;          /**< ... MF_OFFLOAD_UNLIMITED for none ... */
    uint32_t per_day;           /**< ... 0 lets nothing through */
    uint64_t bytes_per_day;     /**< uplink byte budget; UINT64_MAX: none */
    float audit_fraction;       /**< share of confident samples uplinked anyway, [0, 1] */
    mf_offload_metered metered; /**< what a metered link may carry */
    uint32_t deadline_ms;       /**< sync ask deadline, 1..60000 */
    char model_version[MF_OFFLOAD_NAME_MAX + 1]; /**< "" or the version it was fitted for */
} mf_offload_policy;

/**
 * @brief The least strict policy: enabled, sync, max-softmax, threshold 1 (everything is
 * uncertain), T = 1, no caps, audit 1, metered allowed, deadline 60 s. Start app limits
 * from this and tighten fields.
 * @param p policy to fill.
 * @param version MUST be MF_OFFLOAD_POLICY_VERSION.
 * @return MF_OK, MF_E_INVALID for an unknown version.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_policy_init(mf_offload_policy *p,
                                                           unsigned int version);

/**
 * @brief Combines a server policy with the app's limits so that only the stricter value of
 * each field survives: enabled only if both are, the lower threshold, target rate, caps,
 * byte budget, audit fraction and deadline, the stricter metered rule, async if either is.
 * Method, temperature and model version always come from the server.
 * @param out receives the result (may alias `server`).
 */
MF_EXTERN void mf_offload_policy_restrict(mf_offload_policy *out, const mf_offload_policy *server,
                                          const mf_offload_policy *app);

/**
 * @brief Computes the confidence score of one output vector.
 * @param score_out receives the score in [0, 1].
 * @param method the score method.
 * @param kind what `output` holds.
 * @param output `n` finite values (probabilities: >= 0 with a positive maximum).
 * @param n 2..MF_OFFLOAD_MAX_CLASSES.
 * @param temperature > 0 and finite.
 * @return MF_OK, MF_E_INVALID for a bad argument or a non-finite value.
 * Cost: one pass for the maximum, one exp per class; no allocation, no table.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_score(float *score_out, mf_offload_method method,
                                                     mf_offload_output_kind kind,
                                                     const float *output, size_t n,
                                                     float temperature);

/** @return a short static name of an mf_offload_reason ("uncertain", "timeout", ...). */
MF_EXTERN const char *mf_offload_reason_name(mf_offload_reason reason);

/** Per model version counters and score histogram, reported in the check-in. */
typedef struct mf_offload_telemetry {
    char model_version[MF_OFFLOAD_NAME_MAX + 1];
    uint32_t hist[MF_OFFLOAD_HIST_BINS]; /**< scores of every asked sample */
    uint64_t asked;                      /**< mf_offload_ask() calls with a valid sample */
    uint64_t uncertain;                  /**< of which below the threshold */
    uint64_t teacher;                    /**< answered by the teacher */
    uint64_t fell_back;  /**< sync asks answered locally (timeout, offline, error) */
    uint64_t queued;     /**< samples written to the uplink queue */
    uint64_t audit;      /**< of which audit samples */
    uint64_t capped;     /**< refused by a rate cap or the byte budget */
    uint64_t bytes_up;   /**< request bodies sent (ask and batches) */
    uint64_t bytes_down; /**< response bodies received */
} mf_offload_telemetry;

/** @brief Adds `src`'s counts and histogram into `dst` (same version; saturating). */
MF_EXTERN void mf_offload_telemetry_merge(mf_offload_telemetry *dst,
                                          const mf_offload_telemetry *src);

/**
 * @brief The score at or below which a share `rate` of the histogram's scores lies (linear
 * within a bin): the threshold that offloads `rate` of this distribution.
 * @return the quantile in [0, 1], or -1 when the histogram is empty.
 */
MF_EXTERN float mf_offload_hist_quantile(const uint32_t hist[MF_OFFLOAD_HIST_BINS], float rate);

/* ---- the handle ---- */

/** Version of mf_offload_options described by this header; fields are only appended.
 *  Version 1 ends at `request_timeout_ms`; version 2 adds the error buffer. */
#define MF_OFFLOAD_OPTIONS_VERSION 2

typedef struct mf_offload mf_offload;

/** Options of mf_offload_new(); initialise with mf_offload_options_init(). */
typedef struct mf_offload_options {
    unsigned int version;            /**< MF_OFFLOAD_OPTIONS_VERSION */
    const char *model;               /**< required: model name, [A-Za-z0-9._-]{1,64} */
    const char *model_version;       /**< required: version the app runs */
    const char *server_url;          /**< "http://host:port"; NULL: no network (queue only) */
    const char *credential;          /**< device credential "mfd_..."; copied, wiped on free */
    const mf_platform_ops *platform; /**< required; copied, its payload must outlive the handle */
    const mf_allocator *allocator;   /**< NULL: libc */
    mf_log_fn log_fn;                /**< NULL: no logging */
    void *log_payload;
    const mf_offload_policy *app_limits; /**< NULL: none; else the server's is restricted to it */
    size_t max_input_bytes;              /**< largest sample input; default 64 KiB */
    uint64_t queue_max_bytes;   /**< uplink queue cap, oldest evicted first; default 4 MiB */
    uint32_t queue_ttl_s;       /**< queued samples older than this are dropped; default 7 days */
    uint32_t segment_bytes;     /**< queue segment size; default 64 KiB */
    uint32_t sync_every;        /**< fsync the queue every N appends; default 1 (each record) */
    uint32_t dedup_window;      /**< recent inputs checked for duplicates; default 256 */
    uint32_t batch_max_samples; /**< per uplink batch; default 32 */
    size_t batch_max_bytes;     /**< per uplink batch body; default 256 KiB */
    uint32_t backoff_min_ms;    /**< first retry delay after a failed batch; default 1000 */
    uint32_t backoff_max_ms;    /**< delay ceiling; default 300000 */
    long connect_timeout_ms;    /**< batches; default 10000 (sync asks use the deadline) */
    long request_timeout_ms;    /**< batches; default 30000 */
    /* ---- version 2 ---- */
    /** NULL, or a buffer that receives the one-line message (NUL-terminated, truncated to
     *  `errbuf_size`) when mf_offload_new() fails; untouched on success. */
    char *errbuf;
    size_t errbuf_size; /**< bytes of `errbuf`; 0 with NULL */
} mf_offload_options;

/**
 * @brief Sets every option to its default.
 * @param version MUST be MF_OFFLOAD_OPTIONS_VERSION.
 * @return MF_OK, MF_E_INVALID for an unknown version.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_options_init(mf_offload_options *opts,
                                                            unsigned int version);

/**
 * @brief Creates a handle: loads the cached policy (if any) and recovers the uplink queue
 * (torn tail records are dropped).
 * @return MF_OK; MF_E_INVALID for bad options; MF_E_NOMEM; MF_E_IO for storage failures.
 * On failure the message goes to `opts->log_fn` at MF_LOG_ERROR and `*out` is NULL.
 * Ownership: `*out` belongs to the caller; release with mf_offload_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_new(mf_offload **out,
                                                   const mf_offload_options *opts);

/** @brief Releases the handle and wipes its credential. mf_offload_free(NULL) is a no-op. */
MF_EXTERN void mf_offload_free(mf_offload *o);

/** @return the message of the handle's last failure, "" if none. Borrowed from `o`. */
MF_EXTERN const char *mf_offload_errmsg(const mf_offload *o);

/**
 * @brief Installs the policy object of a check-in answer: validates it strictly, restricts
 * it to the app limits, caches it durably (atomic replace) and resets the budgets.
 * @param json the policy object, `len` bytes (not necessarily NUL-terminated).
 * @return MF_OK; MF_E_INVALID (the message names the field) leaving the old policy active;
 * MF_E_IO when the cache cannot be written (the new policy is active anyway).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_set_policy_json(mf_offload *o, const char *json,
                                                               size_t len);

/**
 * @brief The effective policy (server restricted by the app), or NULL before any policy.
 * Borrowed; valid until the next mf_offload_set_policy_json().
 */
MF_EXTERN const mf_offload_policy *mf_offload_policy_get(const mf_offload *o);

/**
 * @brief Records a model update: later samples carry `version`; a policy fitted to another
 * version stops offloading (reason POLICY_STALE) until the next one arrives.
 * @return MF_OK, MF_E_INVALID for a malformed version.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_set_model_version(mf_offload *o,
                                                                 const char *version);

/** @brief Tells the handle what the link is now. */
MF_EXTERN void mf_offload_set_link(mf_offload *o, mf_offload_link link);

/** One inference of the student, as given to mf_offload_ask(). */
typedef struct mf_offload_sample {
    const void *input;                  /**< the model input bytes (what the teacher needs) */
    size_t input_len;                   /**< 1..max_input_bytes */
    const float *output;                /**< the student's output vector */
    size_t n_classes;                   /**< 2..MF_OFFLOAD_MAX_CLASSES */
    mf_offload_output_kind output_kind; /**< what `output` holds */
} mf_offload_sample;

/** Routing metadata and result of one mf_offload_ask(). */
typedef struct mf_offload_answer {
    mf_offload_route route;   /**< the route the policy chose */
    mf_offload_reason reason; /**< why the final answer is what it is */
    int by_teacher;           /**< 1: label/confidence come from the teacher; 0: local */
    int queued;               /**< 1: the sample was written to the uplink queue */
    int label;                /**< argmax class of the answering model */
    float score;              /**< the student's confidence score */
    float confidence;         /**< the answering model's top probability */
    uint32_t latency_ms;      /**< time spent in the sync ask, 0 when none */
    char model_version[MF_OFFLOAD_NAME_MAX + 1];   /**< student version */
    char teacher_version[MF_OFFLOAD_NAME_MAX + 1]; /**< "" unless by_teacher */
} mf_offload_answer;

/**
 * @brief Scores a sample, routes it and answers: locally, from the teacher (within the
 * policy's deadline), or locally after a fallback whose reason is in `out->reason`.
 * Network and queue failures are not errors here: the local answer comes back, with the
 * failure in the reason and in mf_offload_errmsg().
 * @param out receives the answer.
 * @param teacher_probs when not NULL, receives the teacher's probabilities (n_classes of
 *        them) if it answered.
 * @param o the handle.
 * @param s the sample; not retained.
 * @return MF_OK; MF_E_INVALID for a malformed sample (no answer).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_ask(mf_offload_answer *out, float *teacher_probs,
                                                   mf_offload *o, const mf_offload_sample *s);

/**
 * @brief Uplinks queued samples in batches of idempotent ids, until the queue is empty,
 * `max_batches` have been sent, or a batch fails (then retries back off exponentially with
 * jitter). A batch interrupted by a crash is resent with the same id after restart.
 * @return MF_OK (queue empty), MF_AGAIN (more left, or backing off: call again later),
 * MF_E_NET / MF_E_AUTH / MF_E_IO on a failed batch (backoff armed).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_drain(mf_offload *o, unsigned int max_batches);

/** @return samples waiting in the uplink queue. */
MF_EXTERN uint64_t mf_offload_queue_count(const mf_offload *o);

/** @return monotonic ms before which mf_offload_drain() will not try the network (backoff). */
MF_EXTERN uint64_t mf_offload_next_drain_ms(const mf_offload *o);

/**
 * @brief Writes the telemetry object for the check-in (docs/protocol-offload.md) into
 * `buf` (NUL-terminated).
 * @param len_out receives the length without the NUL.
 * @return MF_OK, MF_E_LIMIT when `cap` is too small (8 KiB always suffices).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_offload_telemetry_json(size_t *len_out, char *buf,
                                                              size_t cap, const mf_offload *o);

/** @brief Forgets the reported telemetry (call after the check-in that carried it). */
MF_EXTERN void mf_offload_telemetry_reset(mf_offload *o);

/**
 * @brief Telemetry of the current model version (the first slot). Borrowed from `o`.
 */
MF_EXTERN const mf_offload_telemetry *mf_offload_telemetry_get(const mf_offload *o);

MF_END_DECLS

#endif /* MF_OFFLOAD_H */

/*
 * Budget internals (zstd's ZSTD_STATIC_LINKING_ONLY practice): the rate-cap state and the
 * pure routing function the handle runs. Their layout may change in any release, so they
 * are only visible to code that defines MF_STATIC_LINKING_ONLY before including this header
 * and links mf_offload statically (the library's own files and its unit tests). Apps use
 * the handle, which applies the caps itself.
 */
#if defined(MF_STATIC_LINKING_ONLY) && !defined(MF_OFFLOAD_H_STATIC)
#define MF_OFFLOAD_H_STATIC

MF_BEGIN_DECLS

/** Sub-windows of a rate cap's sliding window (see mf_offload_budget_init()). */
#define MF_OFFLOAD_CAP_SLOTS 61

/** One sliding-window cap; private fields. */
typedef struct mf_offload_bucket {
    uint64_t cap;                        /**< samples (or bytes) allowed per window */
    uint64_t used;                       /**< sum of slot[] */
    uint64_t slot[MF_OFFLOAD_CAP_SLOTS]; /**< use per sub-window, ring indexed by sub-window */
    uint64_t cur;                        /**< absolute index of the newest sub-window */
    uint32_t grain_ms; /**< sub-window length: window / (MF_OFFLOAD_CAP_SLOTS - 1) */
    int unlimited;
} mf_offload_bucket;

/** Budgets of one handle: per-minute/hour/day sample caps and the daily byte budget. */
typedef struct mf_offload_budget {
    mf_offload_bucket minute, hour, day, bytes;
} mf_offload_budget;

/**
 * @brief Sets up the caps of `p`, all unused, at time `now_ms`. The guarantee is a hard
 * one: in ANY interval of one window (minute, hour, day) at most `cap` samples (bytes)
 * pass. A burst may use the whole cap at once. Use is counted in sub-windows of 1/60 of the
 * window and the last 61 are summed, so capacity comes back gradually, fully after 61/60 of
 * a window. Integer arithmetic only.
 */
MF_EXTERN void mf_offload_budget_init(mf_offload_budget *b, const mf_offload_policy *p,
                                      uint64_t now_ms);

/** The result of mf_offload_decide(). */
typedef struct mf_offload_decision {
    mf_offload_route route;
    mf_offload_reason reason;
} mf_offload_decision;

/**
 * @brief Decides where one scored sample goes, and takes its tokens from `b` when it
 * leaves the device. Pure: no I/O, no clock, no allocation.
 * @param out receives the route and the reason.
 * @param p the effective policy, or NULL when none has arrived (edge-only).
 * @param b the handle's budgets (updated).
 * @param score the sample's confidence.
 * @param threshold the effective threshold (see mf_offload_policy.threshold; < 0: none).
 * @param bytes uplink size of the sample, charged to the byte budget.
 * @param now_ms monotonic milliseconds.
 * @param random_u32 a uniformly random value for the audit draw.
 * @param link the link state.
 */
MF_EXTERN void mf_offload_decide(mf_offload_decision *out, const mf_offload_policy *p,
                                 mf_offload_budget *b, float score, float threshold, size_t bytes,
                                 uint64_t now_ms, uint32_t random_u32, mf_offload_link link);

MF_END_DECLS

#endif /* MF_STATIC_LINKING_ONLY */
