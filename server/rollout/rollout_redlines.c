/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Red lines (rollout_plan.h): fleet figures of one version over a set of devices, from
 * summed counters and the merged latency histogram (percentiles are read from merged
 * counts, never averaged), and the check of each line, absolute or relative to the previous
 * version on the same devices.
 */
#include "rollout/rollout_plan.h"

#include <stdio.h>
#include <string.h>

const char *mf_rollout__metric_name(int metric)
{
    static const char *const names[MF_METRIC_COUNT] = {
        "install_failure_rate", "health_rollback_rate", "p99_latency_us",
        "peak_memory",          "offload_rate",         "teacher_agreement"};

    return metric >= 0 && metric < MF_METRIC_COUNT ? names[metric] : "?";
}

void mf_rollout__agg_add(struct mf_rollout_agg *agg, const mf_telemetry_version *v)
{
    uint64_t lat = 0;

    for (size_t b = 0; b < MF_TELEMETRY_LAT_BUCKETS; b++)
        lat += v->latency[b];
    agg->devices++;
    agg->install_ok += v->install_ok;
    agg->install_failed += v->install_failed;
    if (v->rollbacks || v->health_failed)
        agg->unhealthy_devices++;
    mf_telemetry_hist_merge(agg->latency, v->latency);
    if (v->peak_memory > agg->peak_memory)
        agg->peak_memory = v->peak_memory;
    agg->offload_asked += v->offload.asked;
    agg->offload_uncertain += v->offload.uncertain;
    agg->teacher_compared += v->teacher_compared;
    agg->teacher_agreed += v->teacher_agreed;
    /* Which figures this device gives evidence for (a line counts clean only on enough). */
    agg->with[MF_METRIC_INSTALL_FAILURE_RATE] += v->install_ok + v->install_failed > 0;
    agg->with[MF_METRIC_HEALTH_ROLLBACK_RATE]++;
    agg->with[MF_METRIC_P99_LATENCY_US] += lat > 0;
    agg->with[MF_METRIC_PEAK_MEMORY] += v->peak_memory > 0;
    agg->with[MF_METRIC_OFFLOAD_RATE] += v->offload.asked > 0;
    agg->with[MF_METRIC_TEACHER_AGREEMENT] += v->teacher_compared > 0;
}

static void set(struct mf_rollout_figures *f, const struct mf_rollout_agg *a, int m, double v,
                uint64_t samples)
{
    f->v[m] = v;
    f->have[m] = 1;
    f->devices[m] = a->with[m];
    f->samples[m] = samples;
}

void mf_rollout__figures(struct mf_rollout_figures *out, const struct mf_rollout_agg *a)
{
    uint64_t installs = a->install_ok + a->install_failed;
    uint64_t p99 = mf_telemetry_hist_quantile(a->latency, 0.99);
    uint64_t lat = 0;

    memset(out, 0, sizeof(*out));
    for (size_t b = 0; b < MF_TELEMETRY_LAT_BUCKETS; b++)
        lat += a->latency[b];
    if (installs)
        set(out, a, MF_METRIC_INSTALL_FAILURE_RATE, (double)a->install_failed / (double)installs,
            0);
    if (a->devices)
        set(out, a, MF_METRIC_HEALTH_ROLLBACK_RATE,
            (double)a->unhealthy_devices / (double)a->devices, 0);
    if (p99)
        set(out, a, MF_METRIC_P99_LATENCY_US, (double)p99, lat);
    if (a->peak_memory)
        set(out, a, MF_METRIC_PEAK_MEMORY, (double)a->peak_memory, 0);
    if (a->offload_asked)
        set(out, a, MF_METRIC_OFFLOAD_RATE, (double)a->offload_uncertain / (double)a->offload_asked,
            a->offload_asked);
    if (a->teacher_compared)
        set(out, a, MF_METRIC_TEACHER_AGREEMENT,
            (double)a->teacher_agreed / (double)a->teacher_compared, a->teacher_compared);
}

/* 1 for the figures drawn on inferences, whose evidence also counts samples. */
static int on_inferences(int metric)
{
    return metric == MF_METRIC_P99_LATENCY_US || metric == MF_METRIC_OFFLOAD_RATE ||
           metric == MF_METRIC_TEACHER_AGREEMENT;
}

/* 1 when `f` has enough evidence for `metric`; else writes what is missing into `why`. */
static int enough(char *why, size_t size, const char *who, const struct mf_rollout_plan *p,
                  const struct mf_rollout_figures *f, int metric)
{
    uint64_t dev = f && f->have[metric] ? f->devices[metric] : 0;
    uint64_t smp = f && f->have[metric] ? f->samples[metric] : 0;

    if (dev < p->line_min_devices) {
        (void)snprintf(why, size, "%s: %llu of %llu devices", who, (unsigned long long)dev,
                       (unsigned long long)p->line_min_devices);
        return 0;
    }
    if (on_inferences(metric) && smp < p->line_min_inferences) {
        (void)snprintf(why, size, "%s: %llu of %llu inferences", who, (unsigned long long)smp,
                       (unsigned long long)p->line_min_inferences);
        return 0;
    }
    return 1;
}

int mf_rollout__check(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                      const struct mf_rollout_figures *cur,
                      const struct mf_rollout_figures *control)
{
    int first = -1;

    for (size_t i = 0; i < p->n_lines; i++) {
        const struct mf_rollout_line *l = &p->lines[i];
        struct mf_rollout_verdict *v = &out[i];
        int lower_is_worse = l->metric == MF_METRIC_TEACHER_AGREEMENT;
        int canary_enough;

        memset(v, 0, sizeof(*v));
        if (cur->have[l->metric]) {
            v->devices = cur->devices[l->metric];
            v->samples = cur->samples[l->metric];
        }
        if (l->relative && control && control->have[l->metric]) {
            v->control_devices = control->devices[l->metric];
            v->control_samples = control->samples[l->metric];
            v->control = control->v[l->metric];
        }
        /* A relative bound is only known on a control group with enough evidence. */
        if (l->relative &&
            !enough(v->waiting, sizeof(v->waiting), "control", p, control, l->metric))
            continue;
        canary_enough = enough(v->waiting, sizeof(v->waiting), "canary", p, cur, l->metric);
        if (!cur->have[l->metric])
            continue;
        v->value = cur->v[l->metric];
        v->bound = l->relative ? l->limit * control->v[l->metric] : l->limit;
        v->breached = lower_is_worse ? v->value < v->bound : v->value > v->bound;
        /* Any data may say breach (halting is safe); only enough data may say clean. */
        v->evaluated = v->breached || canary_enough;
        if (v->evaluated)
            v->waiting[0] = '\0';
        if (v->breached && first < 0)
            first = (int)i;
    }
    return first;
}

size_t mf_rollout__waiting(const struct mf_rollout_verdict *v, size_t n)
{
    size_t waiting = 0;

    for (size_t i = 0; i < n; i++)
        waiting += !v[i].evaluated;
    return waiting;
}
