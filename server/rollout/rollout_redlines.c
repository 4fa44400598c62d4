/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Red lines (rollout_plan.h): fleet figures of one version over a set of devices, from
 * summed counters and the merged latency histogram (percentiles are read from merged
 * counts, never averaged), and the check of each line, absolute or relative to the previous
 * version on the same devices.
 */
#include "rollout/rollout_plan.h"

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
}

static void set(struct mf_rollout_figures *f, int m, double v)
{
    f->v[m] = v;
    f->have[m] = 1;
}

void mf_rollout__figures(struct mf_rollout_figures *out, const struct mf_rollout_agg *a)
{
    uint64_t installs = a->install_ok + a->install_failed;
    uint64_t p99 = mf_telemetry_hist_quantile(a->latency, 0.99);

    memset(out, 0, sizeof(*out));
    if (installs)
        set(out, MF_METRIC_INSTALL_FAILURE_RATE, (double)a->install_failed / (double)installs);
    if (a->devices)
        set(out, MF_METRIC_HEALTH_ROLLBACK_RATE, (double)a->unhealthy_devices / (double)a->devices);
    if (p99)
        set(out, MF_METRIC_P99_LATENCY_US, (double)p99);
    if (a->peak_memory)
        set(out, MF_METRIC_PEAK_MEMORY, (double)a->peak_memory);
    if (a->offload_asked)
        set(out, MF_METRIC_OFFLOAD_RATE, (double)a->offload_uncertain / (double)a->offload_asked);
    if (a->teacher_compared)
        set(out, MF_METRIC_TEACHER_AGREEMENT,
            (double)a->teacher_agreed / (double)a->teacher_compared);
}

int mf_rollout__check(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                      const struct mf_rollout_figures *cur, const struct mf_rollout_figures *prev)
{
    int first = -1;

    for (size_t i = 0; i < p->n_lines; i++) {
        const struct mf_rollout_line *l = &p->lines[i];
        struct mf_rollout_verdict *v = &out[i];
        int lower_is_worse = l->metric == MF_METRIC_TEACHER_AGREEMENT;

        memset(v, 0, sizeof(*v));
        if (!cur->have[l->metric] || (l->relative && (!prev || !prev->have[l->metric])))
            continue;
        v->evaluated = 1;
        v->value = cur->v[l->metric];
        v->bound = l->relative ? l->limit * prev->v[l->metric] : l->limit;
        v->breached = lower_is_worse ? v->value < v->bound : v->value > v->bound;
        if (v->breached && first < 0)
            first = (int)i;
    }
    return first;
}
