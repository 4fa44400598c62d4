/* SPDX-License-Identifier: Apache-2.0 */
/* The offload counters an app adds to its runtime report, each exactly once (mf_fleet_stats.h). */
#include "mf_fleet_stats.h"

#include <string.h>

/* a -= b, field by field (b is an earlier state of a: nothing goes below zero). */
static void offload_sub(mf_offload_telemetry *a, const mf_offload_telemetry *b)
{
    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++)
        a->hist[i] -= b->hist[i];
    a->asked -= b->asked;
    a->uncertain -= b->uncertain;
    a->teacher -= b->teacher;
    a->fell_back -= b->fell_back;
    a->queued -= b->queued;
    a->audit -= b->audit;
    a->capped -= b->capped;
    a->bytes_up -= b->bytes_up;
    a->bytes_down -= b->bytes_down;
}

static int same_slot(const mf_fleet_offload_tracker *t, const mf_offload_telemetry *cur)
{
    return strcmp(cur->model_version, t->in_report.model_version) == 0;
}

int mf_fleet_offload_unreported(mf_offload_telemetry *add_out, mf_fleet_offload_tracker *t,
                                const mf_offload_telemetry *cur)
{
    *add_out = *cur;
    if (same_slot(t, cur))
        offload_sub(add_out, &t->in_report);
    if (add_out->asked == 0 && add_out->queued == 0 && add_out->bytes_up == 0 &&
        add_out->bytes_down == 0)
        return 0;
    t->in_report = *cur;
    return 1;
}

void mf_fleet_offload_checked_in(mf_fleet_offload_tracker *t, const mf_offload_telemetry *cur)
{
    /* Counters only grow between resets: any that went down was reset with the rest. */
    if (!same_slot(t, cur) || cur->asked < t->in_report.asked ||
        cur->bytes_up < t->in_report.bytes_up || cur->bytes_down < t->in_report.bytes_down ||
        cur->queued < t->in_report.queued)
        t->in_report = *cur;
}
