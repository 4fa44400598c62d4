/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_fleet_stats.h
 * @brief What the example fleet (mf-example-fleet) measured, per model version: images
 * classified, how often the student alone and the deployed cascade were right, how samples
 * were routed (teacher, hard, audit, fallbacks by reason) and how versions were delivered
 * (delta or full, bytes), and what degrading to the fallback cost in accuracy. Each device keeps
 * its own table; the program merges them after every pass and writes the JSON document described in
 * docs/example-model.md ("The example fleet"). Pure bookkeeping: no I/O except
 * mf_fleet_stats_write(), no allocation except the JSON buffer.
 */
#ifndef MF_EXAMPLE_FLEET_STATS_H
#define MF_EXAMPLE_FLEET_STATS_H

#include "mf/error.h"
#include "mf/offload.h"

struct mf_ctx;
struct mf_dynbuf;

MF_BEGIN_DECLS

/** Model versions one table holds; counts of any further version go to `dropped`. */
#define MF_FLEET_MAX_VERSIONS 16
/** One counter per mf_offload_reason. */
#define MF_FLEET_REASONS (MF_OFFLOAD_REASON_TEACHER + 1)

/** Cumulative counters of one model version; every member a uint64_t (they merge as an
 * array, fleet_stats.c). */
typedef struct mf_fleet_counts {
    uint64_t images;          /**< images classified */
    uint64_t student_correct; /**< the student's own argmax was the true label */
    uint64_t cascade_correct; /**< the answer used (the teacher's when by_teacher) was right */
    uint64_t by_teacher;      /**< answered by the teacher */
    uint64_t teacher_agreed;  /**< of which the teacher agreed with the student */
    uint64_t hard;            /**< routed as uncertain (sync ask or hard-sample queue) */
    uint64_t audit;           /**< routed as random audit samples */
    uint64_t queued;          /**< written to the uplink queue */
    uint64_t reasons[MF_FLEET_REASONS]; /**< answers by their final mf_offload_reason */
    uint64_t installs_delta;            /**< installs of this version built from a delta */
    uint64_t installs_full;             /**< installs from the full blob */
    uint64_t bytes_delta;               /**< blob bytes fetched for those installs: delta */
    uint64_t bytes_full;                /**< ... full blob */
    uint64_t rejected;                  /**< installs the app refused (broken file) */
    /* The way down (docs/example-model.md, "Squeezed devices"): switches of libmf's degrade
     * controller while this version was active, and the inferences its fallback variant
     * (published with fallback=1, kept by the agent beside the active slot) answered instead,
     * with what each would have scored. */
    uint64_t degrades;             /**< switches to the fallback */
    uint64_t restores;             /**< switches back to this version */
    uint64_t degraded;             /**< images the fallback classified while degraded */
    uint64_t degraded_main_ok;     /**< of which this version would have been right */
    uint64_t degraded_fallback_ok; /**< of which the fallback was right (the answer used) */
} mf_fleet_counts;

/** One model version of a table. */
typedef struct mf_fleet_version {
    char version[MF_OFFLOAD_NAME_MAX + 1];
    char fallback[MF_OFFLOAD_NAME_MAX + 1]; /**< the fallback variant that ran degraded, or "" */
    uint64_t devices;                       /**< devices running it when the table was merged */
    mf_fleet_counts c;
} mf_fleet_version;

/** A device's table, or the fleet's merged one. */
typedef struct mf_fleet_stats {
    size_t n;                                  /**< versions in use */
    mf_fleet_version v[MF_FLEET_MAX_VERSIONS]; /**< in order of first appearance */
    uint64_t skipped;                          /**< images not classified: no model yet */
    uint64_t bytes_delta;                      /**< every delta byte fetched */
    uint64_t bytes_full;                       /**< every full-blob byte fetched */
    uint64_t dropped;                          /**< events lost to a full table */
} mf_fleet_stats;

/**
 * @brief The counters of `version`, added (zeroed) on first use.
 * @return borrowed from `s`; NULL when the table is full (the caller counts `dropped`).
 */
MF_EXTERN mf_fleet_counts *mf_fleet_stats_version(mf_fleet_stats *s, const char *version);

/**
 * @brief Counts one classified image.
 * @param truth the true label; @param student the student's own argmax;
 * @param a what mf_offload_ask() answered (its label is the one the app used).
 */
MF_EXTERN void mf_fleet_stats_answer(mf_fleet_counts *c, uint32_t truth, uint32_t student,
                                     const mf_offload_answer *a);

/** @return 1 when `reason` counts as a fallback: the sample was answered locally for any
 *  reason other than confidence (or the audit draw, which answers locally by design). */
MF_EXTERN int mf_fleet_reason_is_fallback(int reason);

/**
 * @brief Adds every counter of `src` into `dst` (versions matched by name, new ones
 * appended; `devices` added too) and `running` (a version name, "" for none) as one more
 * device on that version.
 */
MF_EXTERN void mf_fleet_stats_merge(mf_fleet_stats *dst, const mf_fleet_stats *src,
                                    const char *running);

/**
 * @brief Appends the JSON document (docs/example-model.md) of a merged table to `out`.
 * @return MF_OK, MF_E_NOMEM, MF_E_LIMIT (the buffer's bound).
 */
MF_EXTERN int mf_fleet_stats_json(struct mf_dynbuf *out, const mf_fleet_stats *s, const char *model,
                                  uint64_t pass, unsigned devices,
                                  int finished) MF_WARN_UNUSED_RESULT;

/**
 * @brief Writes that document to `path` atomically (temporary file, fsync, rename).
 * @return MF_OK, MF_E_IO, MF_E_NOMEM.
 */
MF_EXTERN int mf_fleet_stats_write(struct mf_ctx *ctx, const char *path, const mf_fleet_stats *s,
                                   const char *model, uint64_t pass, unsigned devices,
                                   int finished) MF_WARN_UNUSED_RESULT;

/* ---- offload counters into the runtime report ------------------------------------------ */

/**
 * What of an offload handle's counters is already in the app's runtime report. The report
 * (mf/telemetry.h) carries the offload counters too and must get them before the check-in
 * that sends it, but the agent resets the handle's counters only when the server answered:
 * adding the whole handle before every check-in would count a failed one twice.
 */
typedef struct mf_fleet_offload_tracker {
    mf_offload_telemetry in_report; /**< the handle's counters at the last add */
} mf_fleet_offload_tracker;

/**
 * @brief Before a check-in: the part of `cur` (mf_offload_telemetry_get()) not yet added.
 * @return 1 with `add_out` filled (it then counts as added: pass it to
 * mf_telemetry_add_offload()), 0 when nothing is new.
 */
MF_EXTERN int mf_fleet_offload_unreported(mf_offload_telemetry *add_out,
                                          mf_fleet_offload_tracker *t,
                                          const mf_offload_telemetry *cur);

/** @brief After the check-in: notes a reset of the handle's counters (or a new version's). */
MF_EXTERN void mf_fleet_offload_checked_in(mf_fleet_offload_tracker *t,
                                           const mf_offload_telemetry *cur);

MF_END_DECLS

#endif /* MF_EXAMPLE_FLEET_STATS_H */
