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
#define MF_ROLLOUT_NAME_SIZE 65

enum mf_rollout_wave_kind { MF_WAVE_PERCENT = 1, MF_WAVE_GROUP = 2, MF_WAVE_LIST = 3 };

struct mf_rollout_wave {
    int kind;            /* enum mf_rollout_wave_kind */
    unsigned percent_bp; /* PERCENT: basis points, 1..10000 */
    char group[MF_ROLLOUT_NAME_SIZE];
    char devices[MF_ROLLOUT_MAX_LIST][MF_ROLLOUT_NAME_SIZE];
    size_t n_devices;
};

/* The figures red lines are drawn on. Rates are fractions in [0, 1]. */
enum mf_rollout_metric {
    MF_METRIC_INSTALL_FAILURE_RATE = 0,
    MF_METRIC_HEALTH_ROLLBACK_RATE, /* devices that reverted or failed a health check */
    MF_METRIC_P99_LATENCY_US,
    MF_METRIC_PEAK_MEMORY,
    MF_METRIC_OFFLOAD_RATE,
    MF_METRIC_TEACHER_AGREEMENT, /* the only one where lower is worse */
    MF_METRIC_COUNT
};

struct mf_rollout_line {
    int metric;   /* enum mf_rollout_metric */
    int relative; /* 1: bound = factor x the previous version's value on the same devices */
    double limit; /* absolute bound, or the factor */
};

#define MF_ROLLOUT_DEFAULT_SOAK_S 3600
#define MF_ROLLOUT_MAX_SOAK_S (30 * 86400)

struct mf_rollout_plan {
    /* A wave advances once it has been clean for soak_s seconds with at least min_devices
     * of its devices reporting the new version ("soak_s", "min_devices"; defaults 3600, 1). */
    int64_t soak_s;
    uint64_t min_devices;
    struct mf_rollout_wave waves[MF_ROLLOUT_MAX_WAVES];
    size_t n_waves;
    struct mf_rollout_line lines[MF_ROLLOUT_MAX_LINES];
    size_t n_lines;
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
};

struct mf_rollout_figures {
    double v[MF_METRIC_COUNT];
    int have[MF_METRIC_COUNT]; /* 0: no data for that figure (never breaches) */
};

/* One line's verdict, for the status view. */
struct mf_rollout_verdict {
    int evaluated; /* 0: no data on this or (relative) the previous version */
    double value, bound;
    int breached;
};

/* Parses {"soak_s": n, "min_devices": n, "waves": [...], "red_lines": [...]} of POST
 * /v1/admin/rollouts (docs/rollouts.md). MF_E_INVALID with a message naming the field. */
int mf_rollout__plan_parse(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body);

/* The device's stable bucket in 0..9999. */
unsigned mf_rollout__bucket(const char *device_id);

/* The first wave (0-based) that covers the device, or -1. `groups` are its groups. */
int mf_rollout__wave_of(const struct mf_rollout_plan *p, const char *device_id,
                        const char *const *groups, size_t n_groups);

/* Adds one device's telemetry row into `agg`. */
void mf_rollout__agg_add(struct mf_rollout_agg *agg, const mf_telemetry_version *v);
/* Figures of an aggregate (P99 from the merged histogram). */
void mf_rollout__figures(struct mf_rollout_figures *out, const struct mf_rollout_agg *agg);

/*
 * Checks every line of `p` against `cur` (and `prev` for relative lines) into `out`
 * (p->n_lines entries). Returns the index of the first breached line, or -1.
 */
int mf_rollout__check(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                      const struct mf_rollout_figures *cur, const struct mf_rollout_figures *prev);

/* "p99_latency_us", ...: the metric's name in JSON and in the status view. Static. */
const char *mf_rollout__metric_name(int metric);

#endif /* MF_SERVER_ROLLOUT_PLAN_H */
