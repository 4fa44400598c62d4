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
 * Beside those totals each version has a scorecard (mf_telemetry_scorecard): cold
 * (first-inference) latency apart from steady state, steady-state memory beside the peak,
 * energy per inference where the platform has an energy counter (absent otherwise, never
 * estimated), sustained performance (latency histogram and inference count per minute over
 * the first minutes after each activation, so throttling shows) and the operator-fallback
 * and robustness counters. Each is fed by one call, and merges exactly across devices.
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
#define MF_TELEMETRY_JSON_MAX (128u * 1024u)
/** Largest JSON of one version in it (every bucket used, widest numbers): about 33 KiB. */
#define MF_TELEMETRY_VERSION_JSON_MAX (36u * 1024u)
/** What one check-in spends on runtime reports across all its models (the `"telemetry"`
 *  members, mf_telemetry_checkin_plan()): room for the worst-case version, inside the
 *  server's 64 KiB check-in body cap with the rest of a check-in. */
#define MF_TELEMETRY_CHECKIN_BUDGET (40u * 1024u)

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

/** Buckets of the coarse latency histogram of one sustained window: bucket c covers the
 *  latency buckets 2c and 2c + 1 (4 per power of two, at most 25 % wide). */
#define MF_TELEMETRY_COARSE_BUCKETS (MF_TELEMETRY_LAT_BUCKETS / 2)
/** Sustained windows: minutes 0..9 after an activation, one each, then window 10 for every
 *  later minute ("10 minutes and after"). */
#define MF_TELEMETRY_SUSTAINED_WINDOWS 11
/** Recorded inferences of one version between two reads of the energy counter. */
#define MF_TELEMETRY_ENERGY_EVERY 32

/** Counters the app bumps with one call each (mf_telemetry_count()). */
typedef enum mf_telemetry_counter {
    MF_TELEMETRY_FALLBACK = 0,     /**< an inference ran partly off the accelerator */
    MF_TELEMETRY_ERROR = 1,        /**< an inference failed (record no latency for it) */
    MF_TELEMETRY_TIMEOUT = 2,      /**< an inference missed its deadline and was dropped */
    MF_TELEMETRY_MEM_PRESSURE = 3, /**< an inference ran under memory pressure */
    MF_TELEMETRY_HOT = 4,          /**< an inference ran under thermal pressure (throttled) */
    MF_TELEMETRY_COUNTERS = 5      /**< number of counters; not a counter */
} mf_telemetry_counter;

/** Version of mf_telemetry_scorecard described by this header; fields are only appended. */
#define MF_TELEMETRY_SCORECARD_VERSION 1

/**
 * The scorecard of one model version beside its mf_telemetry_version totals, from
 * mf_telemetry_scorecard_get(). Versioned like mf_agent_counters: the caller sets
 * `struct_version` (MF_TELEMETRY_SCORECARD_INIT) and the library writes only the fields of
 * that version. Cumulative like the totals; every field merges exactly across devices by
 * adding (histograms bucket by bucket).
 */
typedef struct mf_telemetry_scorecard {
    unsigned int struct_version; /**< MF_TELEMETRY_SCORECARD_VERSION; never written by the SDK */
    /** First inference after each activation (mf_telemetry_record_cold_latency()), same
     *  buckets as the steady-state latency histogram. */
    uint32_t cold_latency[MF_TELEMETRY_LAT_BUCKETS];
    uint64_t activations;           /**< cold inferences recorded */
    uint64_t steady_memory_sum;     /**< steady-state memory samples, bytes, summed */
    uint64_t steady_memory_samples; /**< their number (mf_telemetry_record_steady_memory()) */
    /** Energy the platform counter or the app measured over `energy_inferences` inferences;
     *  both 0 when there is no energy counter: the figure is absent, never estimated. */
    uint64_t energy_uj, energy_inferences;
    uint64_t counters[MF_TELEMETRY_COUNTERS]; /**< indexed by mf_telemetry_counter */
    /** Sustained performance: latencies by minute since the activation (window
     *  MF_TELEMETRY_SUSTAINED_WINDOWS - 1 holds every later minute), coarse buckets. */
    uint32_t sustained[MF_TELEMETRY_SUSTAINED_WINDOWS][MF_TELEMETRY_COARSE_BUCKETS];
    /** Activations that reached each window (the rate's device-minutes; the last window
     *  counts each later minute reached). */
    uint64_t sustained_minutes[MF_TELEMETRY_SUSTAINED_WINDOWS];
} mf_telemetry_scorecard;

/** Static initialiser (C99) of an mf_telemetry_scorecard of this header's version. */
#define MF_TELEMETRY_SCORECARD_INIT                                                                \
    {                                                                                              \
        .struct_version = MF_TELEMETRY_SCORECARD_VERSION                                           \
    }

/**
 * A cumulative energy counter of the platform (Linux powercap `energy_uj`, a fuel gauge):
 * writes microjoules into `*out`. @return MF_OK, or MF_E_NOTFOUND when the platform has no
 * counter (the energy figure then stays absent), another mf_err on a read failure.
 */
typedef int (*mf_telemetry_energy_fn)(void *payload, uint64_t *out);

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

/**
 * @brief Records the first inference of `version` after the model was loaded (an
 * activation): its latency goes to the cold histogram, not the steady-state one, and the
 * sustained windows count from now (the platform port's monotonic clock; without a port
 * there are no sustained windows). Without this call the first mf_telemetry_record_latency()
 * of a version since the handle was made or loaded starts the windows.
 * @return as record_latency.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_cold_latency(mf_telemetry *t,
                                                                     const char *model,
                                                                     const char *version,
                                                                     uint64_t microseconds);
/** @brief Adds one steady-state memory sample (resident bytes between inferences, after
 *  warm-up), kept beside the peak. @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_steady_memory(mf_telemetry *t,
                                                                      const char *model,
                                                                      const char *version,
                                                                      uint64_t bytes);
/** @brief Adds `microjoules` the app measured over `inferences` inferences (0: ignored).
 *  Use it where the app has its own meter; with mf_telemetry_set_energy_counter() the
 *  handle measures by itself. @return as record_latency. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_record_energy(mf_telemetry *t, const char *model,
                                                               const char *version,
                                                               uint64_t microjoules,
                                                               uint64_t inferences);
/** @brief Bumps one counter of mf_telemetry_counter by one.
 *  @return as record_latency, MF_E_INVALID for a counter out of range. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_count(mf_telemetry *t, const char *model,
                                                       const char *version,
                                                       mf_telemetry_counter counter);
/**
 * @brief Gives the handle a platform energy counter (NULL: none). Every
 * MF_TELEMETRY_ENERGY_EVERY latencies recorded for one version the handle reads it and adds
 * the energy spent since the previous read to that version, with the inferences recorded
 * in between. A counter that fails, is absent (MF_E_NOTFOUND) or went backwards (wrapped)
 * adds nothing for that interval: energy is measured or absent, never estimated. The
 * counter measures the whole platform, so the figure covers what else ran meanwhile.
 * mf_platform_posix_energy() is the Linux powercap reader.
 */
MF_EXTERN void mf_telemetry_set_energy_counter(mf_telemetry *t, mf_telemetry_energy_fn fn,
                                               void *payload);

/**
 * @brief Copies the scorecard of `model` `version` into `out` (the fields of
 * out->struct_version).
 * @return MF_OK, MF_E_NOTFOUND (nothing recorded for that version), MF_E_INVALID (an
 * unknown struct_version).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_telemetry_scorecard_get(mf_telemetry_scorecard *out,
                                                               const mf_telemetry *t,
                                                               const char *model,
                                                               const char *version);

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
/**
 * @brief Chooses the versions the next check-in carries within `budget` bytes of
 * `"telemetry"` members (MF_TELEMETRY_CHECKIN_BUDGET), so a check-in never outgrows the
 * server's body cap: versions changed since their last acknowledged check-in first, the one
 * sent least recently first (a version left out goes first next time: none starves), then
 * unchanged ones while room is left. Until mf_telemetry_ack(), mf_telemetry_checkin_json()
 * writes only the chosen versions. A budget of at least MF_TELEMETRY_VERSION_JSON_MAX + 64
 * always carries one version.
 * @return the bytes the chosen members take (each model's `,"telemetry":` included).
 */
MF_EXTERN size_t mf_telemetry_checkin_plan(mf_telemetry *t, size_t budget);
/** @brief The server answered the check-in that carried the totals: slots of versions no
 *  longer recorded may now be recycled. After mf_telemetry_checkin_plan(), only the chosen
 *  versions count as acknowledged (and not one recorded into after the plan). */
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
/** @brief Adds the coarse histogram `src` into `dst` bucket by bucket (saturating). A
 *  latency of bucket i (mf_telemetry_bucket()) goes to coarse bucket i / 2. */
MF_EXTERN void mf_telemetry_coarse_merge(uint32_t dst[MF_TELEMETRY_COARSE_BUCKETS],
                                         const uint32_t src[MF_TELEMETRY_COARSE_BUCKETS]);
/** @brief As mf_telemetry_hist_quantile() on a coarse histogram: the upper bound of the
 *  coarse bucket holding the nearest-rank sample, microseconds (0 when empty). */
MF_EXTERN uint64_t mf_telemetry_coarse_quantile(const uint32_t hist[MF_TELEMETRY_COARSE_BUCKETS],
                                                double q);
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
