/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Red lines and goals (rollout_plan.h): fleet figures of one version over a set of devices,
 * from summed counters and merged histograms (percentiles are read from merged counts, never
 * averaged), drawn by the metric table below, and the check of each line, absolute or
 * relative to the previous version on the same devices.
 */
#include "rollout/rollout_plan.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Sums a row of `n` counts. */
static uint64_t total(const uint32_t *h, unsigned n)
{
    uint64_t t = 0;

    for (unsigned i = 0; i < n; i++)
        t += h[i];
    return t;
}

/* num / den drawn on den samples; 0 (no figure) when den is 0. */
static int ratio(double *v, uint64_t *samples, uint64_t num, uint64_t den)
{
    if (!den)
        return 0;
    *v = (double)num / (double)den;
    *samples = den;
    return 1;
}

/* The sustained windows from minute `after` on, merged. */
static uint64_t sustained_from(uint32_t out[MF_TELEMETRY_COARSE_BUCKETS], uint64_t *minutes,
                               const uint32_t (*w)[MF_TELEMETRY_COARSE_BUCKETS],
                               const uint64_t *mins, int after)
{
    memset(out, 0, sizeof(uint32_t) * MF_TELEMETRY_COARSE_BUCKETS);
    *minutes = 0;
    for (int m = after; m < MF_TELEMETRY_SUSTAINED_WINDOWS; m++) {
        mf_telemetry_coarse_merge(out, w[m]);
        *minutes += mins[m];
    }
    return total(out, MF_TELEMETRY_COARSE_BUCKETS);
}

/* ---- What one device's row gives evidence for: the sum of the table's evidence fields
 * (below) above 0, or for the sustained metrics a window from `after` on with data ---- */
/* Latency evidence is the histogram itself (a report may leave "inferences" out). */
static int has_hist(const uint32_t *h)
{
    return total(h, MF_TELEMETRY_LAT_BUCKETS) > 0;
}
static int has_latency(const struct mf_rollout_row *r, int after)
{
    (void)after;
    return has_hist(r->v.latency);
}
static int has_cold(const struct mf_rollout_row *r, int after)
{
    (void)after;
    return has_hist(r->sc.cold_latency);
}
static int has_sustained(const struct mf_rollout_row *r, int after)
{
    for (int m = after; m < MF_TELEMETRY_SUSTAINED_WINDOWS; m++) {
        if (r->sc.sustained_minutes[m] && total(r->sc.sustained[m], MF_TELEMETRY_COARSE_BUCKETS))
            return 1;
    }
    return 0;
}

/* ---- The figure of an aggregate: 1 with value and samples, 0 for no data ---- */
/* The stratified agreement: hard samples weighted by the uncertain share of the offload
 * asks, the audit slice by the confident share (rollout_accuracy.c). */
static int estimate(struct mf_rollout_estimate *e, const struct mf_rollout_agg *a)
{
    if (!a->offload_asked)
        return 0;
    return mf_rollout__stratified(e, (double)a->offload_uncertain / (double)a->offload_asked,
                                  a->labelled[0], a->label_agreed[0], a->labelled[1],
                                  a->label_agreed[1]);
}
static int draw_accuracy(double *v, uint64_t *n, const struct mf_rollout_agg *a, int after)
{
    struct mf_rollout_estimate e;

    (void)after;
    if (!estimate(&e, a))
        return 0;
    *v = e.value;
    *n = e.samples;
    return 1;
}
static void interval_accuracy(double *lo, double *hi, const struct mf_rollout_agg *a)
{
    struct mf_rollout_estimate e;

    if (estimate(&e, a)) {
        *lo = e.lo;
        *hi = e.hi;
    }
}
static int draw_sustained_p99(double *v, uint64_t *n, const struct mf_rollout_agg *a, int after)
{
    uint32_t h[MF_TELEMETRY_COARSE_BUCKETS];
    uint64_t minutes;

    *n = sustained_from(h, &minutes, a->sustained, a->sustained_minutes, after);
    *v = (double)mf_telemetry_coarse_quantile(h, 0.99);
    return *n > 0;
}
static int draw_sustained_rate(double *v, uint64_t *n, const struct mf_rollout_agg *a, int after)
{
    uint32_t h[MF_TELEMETRY_COARSE_BUCKETS];
    uint64_t minutes;

    *n = sustained_from(h, &minutes, a->sustained, a->sustained_minutes, after);
    if (!minutes || !*n)
        return 0;
    *v = (double)*n / ((double)minutes * 60.0); /* per device-second */
    return 1;
}

#define LOWER MF_METRIC_LOWER_IS_WORSE
#define RATE MF_METRIC_RATE
#define ONINF MF_METRIC_ON_INFERENCES
#define SUST MF_METRIC_SUSTAINED
#define INTERVAL MF_METRIC_INTERVAL

#define ROW(f) offsetof(struct mf_rollout_row, f)
#define AGG(f) offsetof(struct mf_rollout_agg, f)
/* Inferences (steady state and cold) and attempts (also the failed and timed-out ones,
 * which record no latency): the denominators of the rates. */
#define ROW_RAN ROW(v.inferences), ROW(sc.activations)
#define ROW_TRIED                                                                                  \
    ROW_RAN, ROW(sc.counters[MF_TELEMETRY_ERROR]), ROW(sc.counters[MF_TELEMETRY_TIMEOUT])
#define AGG_RAN AGG(inferences), AGG(activations)
#define AGG_TRIED AGG_RAN, AGG(counters[MF_TELEMETRY_ERROR]), AGG(counters[MF_TELEMETRY_TIMEOUT])
/* How many offsets a list such as ROW_TRIED holds. */
#define N_FIELDS(...) (sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t))
/* A counter rate: the share of the inferences that ran (base RAN) or were tried (TRIED)
 * that ended with telemetry counter `c`; a device gives evidence by the same fields. */
#define COUNTER_RATE(name_, c, base)                                                               \
    {                                                                                              \
        .name = (name_), .kind = RATE | ONINF, .draw = D_RATIO, .num = AGG(counters[c]),           \
        .n_ev = N_FIELDS(ROW_##base), .ev = {ROW_##base}, .n_den = N_FIELDS(AGG_##base),           \
        .den = {AGG_##base},                                                                       \
    }

/* How a figure is drawn from an aggregate: a ratio of summed fields (`num` over the sum of
 * `den`), the P99 of the histogram at `num`, the value of the field at `num` (present above
 * 0), or a function of its own. */
enum draw { D_RATIO = 1, D_P99, D_VALUE, D_FN };

/* The metric table: every scorecard dimension a plan may draw a red line or goal on. A
 * device gives evidence for a metric when the row fields `ev` (n_ev of them; none: every
 * reporting device) sum above 0, or when `has` says so. */
static const struct metric_def {
    const char *name;
    unsigned kind;
    unsigned n_ev;
    size_t ev[4];
    int (*has)(const struct mf_rollout_row *r, int after);
    int draw; /* enum draw */
    size_t num;
    unsigned n_den;
    size_t den[4];
    int (*fn)(double *v, uint64_t *samples, const struct mf_rollout_agg *a, int after);
    /* INTERVAL metrics: the figure's 95 % interval */
    void (*interval)(double *lo, double *hi, const struct mf_rollout_agg *a);
} metrics[MF_METRIC_COUNT] = {
    [MF_METRIC_INSTALL_FAILURE_RATE] = {.name = "install_failure_rate",
                                        .kind = RATE,
                                        .n_ev = 2,
                                        .ev = {ROW(v.install_ok), ROW(v.install_failed)},
                                        .draw = D_RATIO,
                                        .num = AGG(install_failed),
                                        .n_den = 2,
                                        .den = {AGG(install_ok), AGG(install_failed)}},
    [MF_METRIC_HEALTH_ROLLBACK_RATE] = {.name = "health_rollback_rate",
                                        .kind = RATE,
                                        .draw = D_RATIO,
                                        .num = AGG(unhealthy_devices),
                                        .n_den = 1,
                                        .den = {AGG(devices)}},
    [MF_METRIC_P99_LATENCY_US] = {.name = "p99_latency_us",
                                  .kind = ONINF,
                                  .has = has_latency,
                                  .draw = D_P99,
                                  .num = AGG(latency)},
    [MF_METRIC_PEAK_MEMORY] = {.name = "peak_memory",
                               .n_ev = 1,
                               .ev = {ROW(v.peak_memory)},
                               .draw = D_VALUE,
                               .num = AGG(peak_memory)},
    [MF_METRIC_OFFLOAD_RATE] = {.name = "offload_rate",
                                .kind = RATE | ONINF,
                                .n_ev = 1,
                                .ev = {ROW(v.offload.asked)},
                                .draw = D_RATIO,
                                .num = AGG(offload_uncertain),
                                .n_den = 1,
                                .den = {AGG(offload_asked)}},
    [MF_METRIC_TEACHER_AGREEMENT] = {.name = "teacher_agreement",
                                     .kind = LOWER | RATE | ONINF,
                                     .n_ev = 1,
                                     .ev = {ROW(v.teacher_compared)},
                                     .draw = D_RATIO,
                                     .num = AGG(teacher_agreed),
                                     .n_den = 1,
                                     .den = {AGG(teacher_compared)}},
    [MF_METRIC_COLD_P99_US] = {.name = "cold_p99_us",
                               .has = has_cold,
                               .draw = D_P99,
                               .num = AGG(cold)},
    [MF_METRIC_STEADY_MEMORY] = {.name = "steady_memory",
                                 .n_ev = 1,
                                 .ev = {ROW(sc.steady_memory_samples)},
                                 .draw = D_VALUE,
                                 .num = AGG(steady_memory)},
    [MF_METRIC_ENERGY_UJ] = {.name = "energy_uj",
                             .kind = ONINF,
                             .n_ev = 1,
                             .ev = {ROW(sc.energy_inferences)},
                             .draw = D_RATIO,
                             .num = AGG(energy_uj),
                             .n_den = 1,
                             .den = {AGG(energy_inferences)}},
    [MF_METRIC_FALLBACK_RATE] = COUNTER_RATE("fallback_rate", MF_TELEMETRY_FALLBACK, RAN),
    [MF_METRIC_ERROR_RATE] = COUNTER_RATE("error_rate", MF_TELEMETRY_ERROR, TRIED),
    [MF_METRIC_TIMEOUT_RATE] = COUNTER_RATE("timeout_rate", MF_TELEMETRY_TIMEOUT, TRIED),
    [MF_METRIC_MEM_PRESSURE_RATE] =
        COUNTER_RATE("mem_pressure_rate", MF_TELEMETRY_MEM_PRESSURE, RAN),
    [MF_METRIC_THERMAL_RATE] = COUNTER_RATE("thermal_rate", MF_TELEMETRY_HOT, RAN),
    [MF_METRIC_ACCURACY] = {.name = "accuracy",
                            .kind = LOWER | RATE | ONINF | INTERVAL,
                            .n_ev = 1,
                            .ev = {ROW(v.offload.asked)},
                            .draw = D_FN,
                            .fn = draw_accuracy,
                            .interval = interval_accuracy},
    [MF_METRIC_SUSTAINED_P99_US] = {.name = "sustained_p99_us",
                                    .kind = ONINF | SUST,
                                    .has = has_sustained,
                                    .draw = D_FN,
                                    .fn = draw_sustained_p99},
    [MF_METRIC_SUSTAINED_RATE] = {.name = "sustained_rate",
                                  .kind = LOWER | ONINF | SUST,
                                  .has = has_sustained,
                                  .draw = D_FN,
                                  .fn = draw_sustained_rate},
};

/* The sum of the n uint64 fields of `base` at offsets `off`. */
static uint64_t fields_sum(const void *base, const size_t *off, unsigned n)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < n; i++) {
        uint64_t x;

        memcpy(&x, (const char *)base + off[i], sizeof(x));
        sum += x;
    }
    return sum;
}

/* Metric m's figure of `a` (from minute `after` on, sustained ones): 1 with *v and *n. */
static int draw(double *v, uint64_t *n, const struct mf_rollout_agg *a, int m, int after)
{
    const struct metric_def *d = &metrics[m];
    const uint32_t *h = (const uint32_t *)(const void *)((const char *)a + d->num);

    *n = 0;
    switch (d->draw) {
    case D_RATIO:
        return ratio(v, n, fields_sum(a, &d->num, 1), fields_sum(a, d->den, d->n_den));
    case D_P99:
        *n = total(h, MF_TELEMETRY_LAT_BUCKETS);
        *v = (double)mf_telemetry_hist_quantile(h, 0.99);
        return *n > 0;
    case D_VALUE:
        *v = (double)fields_sum(a, &d->num, 1);
        return *v > 0;
    default:
        return d->fn(v, n, a, after);
    }
}

/* 1 when `row` gives evidence for metric m (from minute `after` on, sustained ones). */
static int evidence(const struct mf_rollout_row *row, int m, int after)
{
    const struct metric_def *d = &metrics[m];

    if (d->has)
        return d->has(row, after);
    return d->n_ev == 0 || fields_sum(row, d->ev, d->n_ev) > 0;
}

const char *mf_rollout__metric_name(int metric)
{
    return metric >= 0 && metric < MF_METRIC_COUNT ? metrics[metric].name : "?";
}

unsigned mf_rollout__metric_kind(int metric)
{
    return metric >= 0 && metric < MF_METRIC_COUNT ? metrics[metric].kind : 0;
}

int mf_rollout__figure_id(int metric, int after_min)
{
    if (metric < 0 || metric >= MF_METRIC_COUNT)
        return -1;
    if (!(metrics[metric].kind & SUST))
        return metric;
    if (after_min < 0 || after_min >= MF_TELEMETRY_SUSTAINED_WINDOWS)
        return -1;
    return MF_METRIC_SUSTAINED_P99_US +
           (metric - MF_METRIC_SUSTAINED_P99_US) * MF_TELEMETRY_SUSTAINED_WINDOWS + after_min;
}

int mf_rollout__figure_metric(int figure, int *after_min)
{
    *after_min = -1;
    if (figure < MF_METRIC_SUSTAINED_P99_US)
        return figure;
    *after_min = (figure - MF_METRIC_SUSTAINED_P99_US) % MF_TELEMETRY_SUSTAINED_WINDOWS;
    return MF_METRIC_SUSTAINED_P99_US +
           (figure - MF_METRIC_SUSTAINED_P99_US) / MF_TELEMETRY_SUSTAINED_WINDOWS;
}

void mf_rollout__figure_name(char *out, size_t size, int figure)
{
    int after;
    int metric = mf_rollout__figure_metric(figure, &after);

    if (after < 0)
        (void)snprintf(out, size, "%s", mf_rollout__metric_name(metric));
    else
        (void)snprintf(out, size, "%s@%d", mf_rollout__metric_name(metric), after);
}

static void add_counts(uint64_t *dst, const uint64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

void mf_rollout__agg_add(struct mf_rollout_agg *agg, const struct mf_rollout_row *row)
{
    const mf_telemetry_version *v = &row->v;
    const mf_telemetry_scorecard *sc = &row->sc;

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
    mf_telemetry_hist_merge(agg->cold, sc->cold_latency);
    agg->inferences += v->inferences;
    agg->activations += sc->activations;
    /* A device's steady memory is the mean of its samples; the fleet's the largest. */
    if (sc->steady_memory_samples &&
        sc->steady_memory_sum / sc->steady_memory_samples > agg->steady_memory)
        agg->steady_memory = sc->steady_memory_sum / sc->steady_memory_samples;
    agg->energy_uj += sc->energy_uj;
    agg->energy_inferences += sc->energy_inferences;
    add_counts(agg->counters, sc->counters, MF_TELEMETRY_COUNTERS);
    for (int m = 0; m < MF_TELEMETRY_SUSTAINED_WINDOWS; m++)
        mf_telemetry_coarse_merge(agg->sustained[m], sc->sustained[m]);
    add_counts(agg->sustained_minutes, sc->sustained_minutes, MF_TELEMETRY_SUSTAINED_WINDOWS);
    /* Which figures this device gives evidence for (a line counts clean only on enough). */
    for (int f = 0; f < MF_ROLLOUT_FIGURES; f++) {
        int after;
        int m = mf_rollout__figure_metric(f, &after);

        agg->with[f] += (uint64_t)evidence(row, m, after);
    }
}

void mf_rollout__figures(struct mf_rollout_figures *out, const struct mf_rollout_agg *a)
{
    memset(out, 0, sizeof(*out));
    for (int f = 0; f < MF_ROLLOUT_FIGURES; f++) {
        int after;
        int m = mf_rollout__figure_metric(f, &after);
        uint64_t samples = 0;

        /* No device with data: absent, never a 0 that would read as a measurement. */
        if (!a->with[f] || !draw(&out->v[f], &samples, a, m, after))
            continue;
        out->have[f] = 1;
        out->devices[f] = a->with[f];
        out->samples[f] = metrics[m].kind & ONINF ? samples : 0;
        out->lo[f] = out->hi[f] = out->v[f];
        if (metrics[m].interval)
            metrics[m].interval(&out->lo[f], &out->hi[f], a);
    }
}

/* 1 for the figures drawn on inferences, whose evidence also counts samples. */
static int on_inferences(int metric)
{
    return (mf_rollout__metric_kind(metric) & ONINF) != 0;
}

/* 1 when `f` has enough evidence for line `l`; else writes what is missing into `why`. */
static int enough(char *why, size_t size, const char *who, const struct mf_rollout_plan *p,
                  const struct mf_rollout_figures *f, const struct mf_rollout_line *l)
{
    int metric = l->metric;
    uint64_t dev = f && f->have[l->figure] ? f->devices[l->figure] : 0;
    uint64_t smp = f && f->have[l->figure] ? f->samples[l->figure] : 0;

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

/* Checks `n` lines (red lines or goals) into `out`; the index of the first breached, -1. */
static int check_lines(struct mf_rollout_verdict *out, const struct mf_rollout_line *lines,
                       size_t n, const struct mf_rollout_plan *p,
                       const struct mf_rollout_figures *cur,
                       const struct mf_rollout_figures *control)
{
    int first = -1;

    for (size_t i = 0; i < n; i++) {
        const struct mf_rollout_line *l = &lines[i];
        struct mf_rollout_verdict *v = &out[i];
        int f = l->figure;
        int lower_is_worse = (mf_rollout__metric_kind(l->metric) & LOWER) != 0;
        int canary_enough;

        memset(v, 0, sizeof(*v));
        if (cur->have[f]) {
            v->devices = cur->devices[f];
            v->samples = cur->samples[f];
        }
        if (l->relative && control && control->have[f]) {
            v->control_devices = control->devices[f];
            v->control_samples = control->samples[f];
            v->control = control->v[f];
        }
        /* A relative bound is only known on a control group with enough evidence. */
        if (l->relative && !enough(v->waiting, sizeof(v->waiting), "control", p, control, l))
            continue;
        canary_enough = enough(v->waiting, sizeof(v->waiting), "canary", p, cur, l);
        if (!cur->have[f])
            continue;
        v->value = cur->v[f];
        v->bound = l->relative ? l->limit * control->v[f] : l->limit;
        v->breached = lower_is_worse ? v->value < v->bound : v->value > v->bound;
        /* Any data may say breach (halting is safe); only enough data may say clean. */
        v->evaluated = v->breached || canary_enough;
        /* An estimate acts only on an interval that excludes the bound: wholly on the bad
         * side breaches, wholly on the good side is clean, straddling it waits. */
        if (mf_rollout__metric_kind(l->metric) & INTERVAL) {
            double bad = lower_is_worse ? cur->hi[f] : cur->lo[f];
            double good = lower_is_worse ? cur->lo[f] : cur->hi[f];

            v->breached = lower_is_worse ? bad < v->bound : bad > v->bound;
            v->evaluated = v->breached || (canary_enough &&
                                           (lower_is_worse ? good >= v->bound : good <= v->bound));
            if (!v->evaluated && canary_enough)
                (void)snprintf(v->waiting, sizeof(v->waiting),
                               "interval %.4f..%.4f holds the bound %.4f", cur->lo[f], cur->hi[f],
                               v->bound);
        }
        if (v->evaluated)
            v->waiting[0] = '\0';
        if (v->breached && first < 0)
            first = (int)i;
    }
    return first;
}

int mf_rollout__check(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                      const struct mf_rollout_figures *cur,
                      const struct mf_rollout_figures *control)
{
    return check_lines(out, p->lines, p->n_lines, p, cur, control);
}

size_t mf_rollout__check_goals(struct mf_rollout_verdict *out, const struct mf_rollout_plan *p,
                               const struct mf_rollout_figures *cur,
                               const struct mf_rollout_figures *control)
{
    size_t met = 0;

    (void)check_lines(out, p->goals, p->n_goals, p, cur, control);
    for (size_t i = 0; i < p->n_goals; i++)
        met += out[i].evaluated && !out[i].breached;
    return met;
}

size_t mf_rollout__waiting(const struct mf_rollout_verdict *v, size_t n)
{
    size_t waiting = 0;

    for (size_t i = 0; i < n; i++)
        waiting += !v[i].evaluated;
    return waiting;
}
