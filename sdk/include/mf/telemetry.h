/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/telemetry.h
 * @brief Device runtime reports: what each model version does in the field.
 *
 * Per model version the handle keeps a log-bucketed inference latency histogram (one call
 * per inference), the peak memory the app reports, health-check and install results,
 * rollbacks with the newest reason, teacher agreement, and the offload counters and
 * confidence histogram of mf/offload.h (merged with mf_offload_telemetry_merge(), not a
 * second histogram). The record calls never allocate and never touch storage, so they are
 * cheap enough for the inference path.
 *
 * Counters are **cumulative** per version since the device first recorded it. The
 * check-in carries the totals (docs/protocol.md, "Check-in field for telemetry") and the
 * server keeps the newest report per device and version instead of adding reports up, so a
 * lost answer or a repeated check-in never loses or double counts anything. mf_telemetry_save()
 * persists the totals through the platform port (write a temporary object, sync, rename),
 * so a restart resumes from the last save. A slot is recycled for a new version only once
 * its totals went out in a check-in the server acknowledged (mf_telemetry_ack()).
 *
 * Histograms merge exactly by adding buckets; percentiles are read from a (merged)
 * histogram, never averaged. Bucket i of the latency histogram covers
 * [mf_telemetry_bucket_low(i), mf_telemetry_bucket_high(i)] microseconds: exact below 16 us,
 * then 8 buckets per power of two (at most 12.5 % wide).
 *
 * Thread safety: one handle is used by one thread at a time.
 */
#ifndef MF_TELEMETRY_H
#define MF_TELEMETRY_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/offload.h"
#include "mf/sys/platform.h"

MF_BEGIN_DECLS

/** Buckets of the latency histogram (microseconds up to 2^32 - 1). */
#define MF_TELEMETRY_LAT_BUCKETS 240
/** Model versions one handle keeps (across all models). */
#define MF_TELEMETRY_MAX_VERSIONS 4
/** Longest rollback reason kept, in bytes. */
#define MF_TELEMETRY_REASON_MAX 95
/** Largest JSON mf_telemetry_checkin_json() writes for one model (every slot full). */
#define MF_TELEMETRY_JSON_MAX (32u * 1024u)

/** Totals of one model version. */
typedef struct mf_telemetry_version {
    char model[MF_OFFLOAD_NAME_MAX + 1];             /**< "" for a free slot */
    char version[MF_OFFLOAD_NAME_MAX + 1];           /**< model version */
    uint32_t latency[MF_TELEMETRY_LAT_BUCKETS];      /**< inference latency histogram */
    uint64_t inferences;                             /**< latencies recorded */
    uint64_t peak_memory;                            /**< largest value the app reported, bytes */
    uint64_t health_ok, health_failed;               /**< health-check results */
    uint64_t install_ok, install_failed;             /**< install results */
    uint64_t rollbacks;                              /**< reverts away from this version */
    char last_rollback[MF_TELEMETRY_REASON_MAX + 1]; /**< reason of the newest, "" if none */
    uint64_t teacher_compared, teacher_agreed;       /**< student vs teacher answers */
    mf_offload_telemetry offload; /**< offload counters and confidence histogram */
} mf_telemetry_version;

/** The telemetry handle (opaque). */
typedef struct mf_telemetry mf_telemetry;

/** @return bytes of caller memory mf_telemetry_init_static() needs. */
MF_EXTERN size_t mf_telemetry_workspace_size(void);

/**
 * @brief Builds a handle in caller memory (never allocates).
 * @param out receives the handle (it lives inside `ws`).
 * @param ws workspace, aligned for any type; MUST outlive the handle.
 * @param ws_size at least mf_telemetry_workspace_size().
 * @param platform port for mf_telemetry_load()/save(); NULL: nothing is persisted. Copied;
 * its payload MUST outlive the handle.
 * @param name storage object for the totals (e.g. "telemetry.state"); copied.
 * @return MF_OK, MF_E_LIMIT (workspace too small), MF_E_INVALID (name empty or too long).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_init_static(mf_telemetry **out, void *ws,
                                                             size_t ws_size,
                                                             const mf_platform_ops *platform,
                                                             const char *name);

/**
 * @brief Heap variant of mf_telemetry_init_static().
 * @return MF_OK, MF_E_NOMEM, MF_E_INVALID.
 * Ownership: `*out` belongs to the caller; release with mf_telemetry_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_new(mf_telemetry **out,
                                                     const mf_allocator *allocator,
                                                     const mf_platform_ops *platform,
                                                     const char *name);
/** @brief Releases a handle made by mf_telemetry_new(); NULL is a no-op. */
MF_EXTERN void mf_telemetry_free(mf_telemetry *t);

/**
 * @brief Replaces the totals with the saved ones.
 * @return MF_OK (also when nothing was saved yet), MF_E_INVALID (damaged or foreign
 * object: the totals stay empty), MF_E_IO.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_load(mf_telemetry *t);
/** @brief Saves the totals crash-safely. @return MF_OK, MF_E_IO, MF_E_INVALID (no port). */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_save(mf_telemetry *t);

/**
 * @brief Records one inference of `model` `version` that took `microseconds`.
 * @return MF_OK, MF_E_LIMIT when every slot holds another version not yet acknowledged,
 * MF_E_INVALID for a name that is empty or longer than 64 bytes.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_latency(mf_telemetry *t, const char *model,
                                                                const char *version,
                                                                uint64_t microseconds);
/** @brief Raises the version's peak memory to `bytes` if higher. @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_memory(mf_telemetry *t, const char *model,
                                                               const char *version, uint64_t bytes);
/** @brief Counts one health check (`ok` 1 passed, 0 failed). @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_health(mf_telemetry *t, const char *model,
                                                               const char *version, int ok);
/** @brief Counts one install result. @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_install(mf_telemetry *t, const char *model,
                                                                const char *version, int ok);
/** @brief Counts a rollback away from `version` and keeps `reason` (truncated; NULL: "").
 *  @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_rollback(mf_telemetry *t, const char *model,
                                                                 const char *version,
                                                                 const char *reason);
/** @brief Counts one student/teacher comparison. @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_teacher(mf_telemetry *t, const char *model,
                                                                const char *version, int agreed);
/**
 * @brief Adds an offload handle's per-check-in telemetry (mf_offload_telemetry_get()) into
 * the version's totals; call it before mf_offload_telemetry_reset(). @return as
 * record_latency.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_add_offload(mf_telemetry *t, const char *model,
                                                             const char *version,
                                                             const mf_offload_telemetry *o);

/** @return the totals of `model` `version`, or NULL. Borrowed; valid until the next call. */
MF_EXTERN const mf_telemetry_version *mf_telemetry_get(const mf_telemetry *t, const char *model,
                                                       const char *version);

/**
 * @brief Writes the `"telemetry"` value of `model`'s check-in entry (docs/protocol.md) into
 * `buf`: every kept version of that model. The single call site for libmf's check-in.
 * @param len_out receives the length (no NUL is counted; one is written).
 * @return MF_OK, MF_E_NOTFOUND (nothing recorded for `model`: leave the field out),
 * MF_E_LIMIT (`cap` too small; MF_TELEMETRY_JSON_MAX always suffices).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_checkin_json(size_t *len_out, char *buf,
                                                              size_t cap, const mf_telemetry *t,
                                                              const char *model);
/** @brief The server answered the check-in that carried the totals: slots of versions no
 *  longer recorded may now be recycled. */
MF_EXTERN void mf_telemetry_ack(mf_telemetry *t);

/* ---- Histogram arithmetic, shared with the server's fleet views ---- */

/** @return the latency bucket of `microseconds` (values above 2^32 - 1 go to the last). */
MF_EXTERN unsigned mf_telemetry_bucket(uint64_t microseconds);
/** @return the smallest value bucket `i` holds. */
MF_EXTERN uint64_t mf_telemetry_bucket_low(unsigned i);
/** @return the largest value bucket `i` holds. */
MF_EXTERN uint64_t mf_telemetry_bucket_high(unsigned i);
/** @brief Adds `src` into `dst` bucket by bucket (saturating): exact merging. */
MF_EXTERN void mf_telemetry_hist_merge(uint32_t dst[MF_TELEMETRY_LAT_BUCKETS],
                                       const uint32_t src[MF_TELEMETRY_LAT_BUCKETS]);
/**
 * @brief The `q` quantile (0 < q <= 1, e.g. 0.99) of a histogram: the upper bound of the
 * bucket holding the sample of rank ceil(q * n) (nearest-rank), so it is never below the
 * true value and at most one bucket above it.
 * @return microseconds, or 0 for an empty histogram.
 */
MF_EXTERN uint64_t mf_telemetry_hist_quantile(const uint32_t hist[MF_TELEMETRY_LAT_BUCKETS],
                                              double q);

MF_END_DECLS

#endif /* MF_TELEMETRY_H */
