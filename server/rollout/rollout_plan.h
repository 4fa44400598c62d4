/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of a rollout (docs/rollouts.md): which wave covers a device, and whether a
 * wave's runtime figures breach a red line. No store, no clock: the evaluation job and the
 * director feed it, and test_rollout.c checks it case by case.
 *
 * Waves are cumulative: wave k covers every device that waves 0..k cover. A percentage wave
 * takes the devices whose stable bucket (FNV-1a of the device id, mod 10000) is below
 * percent * 100, so a device keeps its wave for the life of the rollout and a 50 % wave
 * contains the 10 % wave before it.
 */
#ifndef MF_SERVER_ROLLOUT_PLAN_H
#define MF_SERVER_ROLLOUT_PLAN_H

#include "mf_ctx.h"
#include "mf/telemetry.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define MF_ROLLOUT_MAX_WAVES 8
#define MF_ROLLOUT_MAX_LIST 64 /* devices of one explicit-list wave */
#define MF_ROLLOUT_MAX_LINES 12
#define MF_ROLLOUT_MAX_GOALS 8
#define MF_ROLLOUT_NAME_SIZE 65

enum mf_rollout_wave_kind { MF_WAVE_PERCENT = 1, MF_WAVE_GROUP = 2, MF_WAVE_LIST = 3 };

struct mf_rollout_wave {
    int kind;            /* enum mf_rollout_wave_kind */
    unsigned percent_bp; /* PERCENT: basis points, 1..10000 */
    char group[MF_ROLLOUT_NAME_SIZE];
    char devices[MF_ROLLOUT_MAX_LIST][MF_ROLLOUT_NAME_SIZE];
    size_t n_devices;
};

/* The figures red lines and goals are drawn on (the scorecard, docs/rollouts.md), each a
 * row of the metric table in rollout_redlines.c (name, direction, kind, evidence, how it is
 * drawn from an aggregate): a new dimension is a row there, never a code path of its own.
 * Rates are fractions in [0, 1]. Stored plans and control figures name them, never number
 * them; the sustained metrics stay last (their figures follow the plain ones). */
enum mf_rollout_metric {
    MF_METRIC_INSTALL_FAILURE_RATE = 0,
    MF_METRIC_HEALTH_ROLLBACK_RATE, /* devices that reverted or failed a health check */
    MF_METRIC_P99_LATENCY_US,       /* steady state: first inferences are apart (cold) */
    MF_METRIC_PEAK_MEMORY,
    MF_METRIC_OFFLOAD_RATE,
    MF_METRIC_TEACHER_AGREEMENT, /* lower is worse */
    MF_METRIC_COLD_P99_US,       /* P99 of the first inference after each activation */
    MF_METRIC_STEADY_MEMORY,     /* the largest device mean of steady-state samples */
    MF_METRIC_ENERGY_UJ,         /* energy per inference, microjoules (absent: no counter) */
    MF_METRIC_FALLBACK_RATE,     /* inferences that ran partly off the accelerator */
    MF_METRIC_ERROR_RATE,        /* failed inference attempts */
    MF_METRIC_TIMEOUT_RATE,      /* attempts that missed their deadline */
    MF_METRIC_MEM_PRESSURE_RATE, /* inferences under memory pressure */
    MF_METRIC_THERMAL_RATE,      /* inferences under thermal pressure */
    MF_METRIC_ACCURACY,          /* stratified agreement with the teacher; lower is worse */
    MF_METRIC_SUSTAINED_P99_US,  /* P99 over the minutes from after_min on (sustained) */
    MF_METRIC_SUSTAINED_RATE,    /* inferences per second per device then; lower is worse */
    MF_METRIC_COUNT
};

/* Figures: one per plain metric, and one per sustained metric and starting minute
 * ("after_min" 0..MF_TELEMETRY_SUSTAINED_WINDOWS - 1), numbered by mf_rollout__figure_id. */
#define MF_ROLLOUT_SUSTAINED_METRICS 2
#define MF_ROLLOUT_FIGURES                                                                         \
    (MF_METRIC_SUSTAINED_P99_US + MF_ROLLOUT_SUSTAINED_METRICS * MF_TELEMETRY_SUSTAINED_WINDOWS)

struct mf_rollout_line {
    int metric;    /* enum mf_rollout_metric */
    int after_min; /* sustained metrics: the first minute counted; -1 for the others */
    int figure;    /* mf_rollout__figure_id(metric, after_min) */
    int relative;  /* 1: bound = factor x the previous version's value on the same devices */
    double limit;  /* absolute bound, or the factor */
};

/* One device's stored report: its totals and its scorecard (mf/telemetry.h). */
struct mf_rollout_row {
    mf_telemetry_version v;
    mf_telemetry_scorecard sc;
};

#define MF_ROLLOUT_DEFAULT_SOAK_S 3600
#define MF_ROLLOUT_MAX_SOAK_S (30 * 86400)
/* The evidence a red line needs before it may count clean (plan keys "line_min_devices",
 * "line_min_inferences"): devices with data for its figure, and for the figures drawn on
 * inferences (P99 latency, offload rate, teacher agreement) the samples behind it. */
#define MF_ROLLOUT_DEFAULT_LINE_DEVICES 2
#define MF_ROLLOUT_DEFAULT_LINE_INFERENCES 100
#define MF_ROLLOUT_MAX_COUNT 1000000000 /* 10^9: the largest count a plan may ask for */

/* How mf_rollout__plan_parse reads: a new plan (POST /v1/admin/rollouts, the distill
 * config) strictly; a stored one as create accepted it (a plan stored before a key became
 * strict still loads). */
enum mf_rollout_plan_mode { MF_PLAN_STORED = 0, MF_PLAN_STRICT = 1 };

struct mf_rollout_plan {
    /* A wave advances once it has been clean for soak_s seconds with at least min_devices
     * of its devices reporting the new version ("soak_s", "min_devices"; defaults 3600, 1). */
    int64_t soak_s;
    uint64_t min_devices;
    struct mf_rollout_wave waves[MF_ROLLOUT_MAX_WAVES];
    size_t n_waves;
    struct mf_rollout_line lines[MF_ROLLOUT_MAX_LINES];
    size_t n_lines;
    /* Ranked goals ("goals", best first): what ops want of the version, shown in the status
     * and never halting or blocking: any red line halts whatever the goals say. */
    struct mf_rollout_line goals[MF_ROLLOUT_MAX_GOALS];
    size_t n_goals;
    uint64_t line_min_devices, line_min_inferences; /* a line's evidence to count clean */
};

/* Sums over a set of devices for one version; merged, never averaged. */
struct mf_rollout_agg {
    uint64_t devices; /* devices that reported this version */
    uint64_t install_ok, install_failed;
    uint64_t unhealthy_devices; /* devices with a rollback or a failed health check */
    uint32_t latency[MF_TELEMETRY_LAT_BUCKETS];
    uint64_t peak_memory; /* the largest device peak */
    uint64_t offload_asked, offload_uncertain;
    uint64_t teacher_compared, teacher_agreed;
    /* The scorecard: cold histogram, the largest device mean of steady-state memory,
     * energy over the inferences it covers, the counters, and the sustained windows. */
    uint32_t cold[MF_TELEMETRY_LAT_BUCKETS];
    uint64_t inferences, activations; /* steady-state and cold inferences */
    uint64_t steady_memory;
    uint64_t energy_uj, energy_inferences;
    uint64_t counters[MF_TELEMETRY_COUNTERS];
    uint32_t sustained[MF_TELEMETRY_SUSTAINED_WINDOWS][MF_TELEMETRY_COARSE_BUCKETS];
    uint64_t sustained_minutes[MF_TELEMETRY_SUSTAINED_WINDOWS];
    /* Labelled samples of the server's two strata, [0] hard and [1] audit, and how many of
     * them the student's top class agreed with the teacher's (rollout_accuracy.c). */
    uint64_t labelled[2], label_agreed[2];
    uint64_t with[MF_ROLLOUT_FIGURES]; /* devices that have data for each figure */
};

/* A stratified estimate with its 95 % confidence interval. */
struct mf_rollout_estimate {
    double value, lo, hi;
    uint64_t samples; /* labelled samples behind it */
};

/* The stratified estimate of agreement: share_hard x (agreed_hard / n_hard) + (1 -
 * share_hard) x (agreed_audit / n_audit), with the interval value +- 1.96 sqrt(sum of
 * share^2 p (1 - p) / n), p = (agreed + 1) / (n + 2) per stratum, clamped to [0, 1].
 * Returns 0 (no estimate) when a stratum with a share has no labelled sample. */
int mf_rollout__stratified(struct mf_rollout_estimate *out, double share_hard, uint64_t n_hard,
                           uint64_t agreed_hard, uint64_t n_audit, uint64_t agreed_audit);

struct mf_rollout_figures {
    double v[MF_ROLLOUT_FIGURES];
    int have[MF_ROLLOUT_FIGURES]; /* 0: no data for that figure (absent, never 0) */
    /* The evidence behind each figure: devices with data, and the samples it is drawn on
     * (latency samples, offload asks, teacher comparisons; 0 for the device-drawn ones). */
    uint64_t devices[MF_ROLLOUT_FIGURES];
    uint64_t samples[MF_ROLLOUT_FIGURES];
    /* The 95 % interval of the figures that have one (MF_METRIC_INTERVAL); lo = hi = v for
     * the others. */
    double lo[MF_ROLLOUT_FIGURES], hi[MF_ROLLOUT_FIGURES];
};

/* One line's verdict, for the status view: clean (evaluated, not breached), breached, or
 * waiting for evidence (not evaluated; `waiting` says what is missing). Waiting blocks
 * advancing. A breach counts on any data of the canary (halting is the safe direction), a
 * clean verdict only on enough; a relative line is not evaluated before its control group
 * has enough evidence too, since its bound is not known before. */
struct mf_rollout_verdict {
    int evaluated;
    double value, bound;
    int breached;
    double control;            /* relative lines: the control group's figure */
    uint64_t devices, samples; /* the canary's evidence */
    uint64_t control_devices, control_samples;
    char waiting[96]; /* "" unless waiting: e.g. "canary: 1 of 2 devices" */
};

/* Parses {"soak_s": n, "min_devices": n, "line_min_devices": n, "line_min_inferences": n,
 * "waves": [...], "red_lines": [...], "allow_no_red_lines": b} of POST /v1/admin/rollouts
 * (docs/rollouts.md; the request's "model", "version" and "previous" sit beside them).
 * MF_PLAN_STRICT refuses unknown keys at every level and an empty or absent "red_lines"
 * without "allow_no_red_lines": true. MF_E_INVALID with a message naming the key. */
int mf_rollout__plan_parse(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body,
                           int mode);

/* The device's stable bucket in 0..9999. */
unsigned mf_rollout__bucket(const char *device_id);

/* The first wave (0-based) that covers the device, or -1. `groups` are its groups. */
int mf_rollout__wave_of(const struct mf_rollout_plan *p, const char *device_id,
                        const char *const *groups, size_t n_groups);

/* Adds one device's telemetry row into `agg`. */
void mf_rollout__agg_add(struct mf_rollout_agg *agg, const struct mf_rollout_row *row);
/* Figures of an aggregate (P99 from the merged histogram). */
void mf_rollout__figures(struct mf_rollout_figures *out, const struct mf_rollout_agg *agg);

/*
 * Checks every line of `p` against `cur` (the canary) and, for relative lines, `control`
 * (the concurrent control group: devices still on the previous version over the same
 * window; NULL: none) into `out` (p->n_lines entries), with the evidence rule of struct
 * mf_rollout_verdict. Returns the index of the first breached line, or -1.
 */
int mf_rollout__check(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                      const struct mf_rollout_figures *cur,
                      const struct mf_rollout_figures *control);

/* The goals of `p` checked as mf_rollout__check checks lines, into `out` (p->n_goals
 * entries; `breached` there means missed). Returns the number of goals met. */
size_t mf_rollout__check_goals(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                               const struct mf_rollout_figures *cur,
                               const struct mf_rollout_figures *control);

/* The number of lines in `v` (n of them) still waiting for evidence. */
size_t mf_rollout__waiting(const struct mf_rollout_verdict *v, size_t n);

/* "p99_latency_us", ...: the metric's name in JSON and in the status view. Static. */
const char *mf_rollout__metric_name(int metric);
/* What the metric table says of a metric (0 for an unknown one): */
#define MF_METRIC_LOWER_IS_WORSE 1u /* its bound is a "min" */
#define MF_METRIC_RATE 2u           /* a fraction: an absolute bound is in 0..1 */
#define MF_METRIC_ON_INFERENCES 4u  /* its evidence counts samples (line_min_inferences) */
#define MF_METRIC_SUSTAINED 8u      /* drawn from the sustained windows: takes "after_min" */
#define MF_METRIC_INTERVAL 16u      /* an estimate with an interval: the interval rule applies */
unsigned mf_rollout__metric_kind(int metric);
/* The figure of `metric` (from minute `after_min` on for the sustained ones, else ignored),
 * or -1 for a sustained metric with after_min out of range. */
int mf_rollout__figure_id(int metric, int after_min);
/* The figure's metric and starting minute (-1 for plain metrics). */
int mf_rollout__figure_metric(int figure, int *after_min);
/* "p99_latency_us", or "sustained_p99_us@5" for a sustained figure: the figure's name in the
 * status view and in stored control figures. */
void mf_rollout__figure_name(char *out, size_t size, int figure);

#endif /* MF_SERVER_ROLLOUT_PLAN_H */
