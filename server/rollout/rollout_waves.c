/* SPDX-License-Identifier: Apache-2.0 */
/* Wave membership and the plan parser (rollout_plan.h). */
#include "rollout/rollout_plan.h"

#include "common/names.h"

#include <stdio.h>
#include <string.h>

unsigned mf_rollout__bucket(const char *device_id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64: stable across builds and nodes */

    for (const unsigned char *p = (const unsigned char *)device_id; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return (unsigned)(h % 10000u);
}

static int covers(const struct mf_rollout_wave *w, const char *device_id, const char *const *groups,
                  size_t n_groups)
{
    switch (w->kind) {
    case MF_WAVE_PERCENT:
        return mf_rollout__bucket(device_id) < w->percent_bp;
    case MF_WAVE_GROUP:
        for (size_t i = 0; i < n_groups; i++) {
            if (strcmp(groups[i], w->group) == 0)
                return 1;
        }
        return 0;
    case MF_WAVE_LIST:
        for (size_t i = 0; i < w->n_devices; i++) {
            if (strcmp(w->devices[i], device_id) == 0)
                return 1;
        }
        return 0;
    default:
        return 0;
    }
}

int mf_rollout__wave_of(const struct mf_rollout_plan *p, const char *device_id,
                        const char *const *groups, size_t n_groups)
{
    for (size_t i = 0; i < p->n_waves; i++) {
        if (covers(&p->waves[i], device_id, groups, n_groups))
            return (int)i;
    }
    return -1;
}

/* Strict plans: the first key of `obj` not in `keys`, named with where it sits. */
static int known_keys(struct mf_ctx *ctx, const cJSON *obj, const char *const *keys,
                      const char *where, size_t i)
{
    const cJSON *it;
    char at[32] = "";

    if (where)
        (void)snprintf(at, sizeof(at), "%s[%zu].", where, i);
    cJSON_ArrayForEach(it, obj)
    {
        size_t k = 0;

        while (keys[k] && strcmp(keys[k], it->string) != 0)
            k++;
        if (!keys[k])
            return mf_fail(ctx, MF_E_INVALID, "unknown key '%s%s' in the rollout plan", at,
                           it->string);
    }
    return MF_OK;
}

static int parse_list(struct mf_rollout_wave *w, struct mf_ctx *ctx, const cJSON *list, size_t i)
{
    const cJSON *d;

    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
        cJSON_GetArraySize(list) > MF_ROLLOUT_MAX_LIST)
        return mf_fail(ctx, MF_E_INVALID, "waves[%zu].devices must list 1..%d device ids", i,
                       MF_ROLLOUT_MAX_LIST);
    cJSON_ArrayForEach(d, list)
    {
        if (!cJSON_IsString(d) || !mf_names__valid_id(d->valuestring))
            return mf_fail(ctx, MF_E_INVALID, "waves[%zu].devices holds an invalid device id", i);
        (void)snprintf(w->devices[w->n_devices++], MF_ROLLOUT_NAME_SIZE, "%s", d->valuestring);
    }
    w->kind = MF_WAVE_LIST;
    return MF_OK;
}

static int parse_wave(struct mf_rollout_wave *w, struct mf_ctx *ctx, const cJSON *it, size_t i,
                      int mode)
{
    static const char *const keys[] = {"percent", "group", "devices", NULL};
    const cJSON *pct = cJSON_GetObjectItemCaseSensitive(it, "percent");
    const cJSON *grp = cJSON_GetObjectItemCaseSensitive(it, "group");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(it, "devices");

    memset(w, 0, sizeof(*w));
    if (!cJSON_IsObject(it) || (!!pct + !!grp + !!list) != 1)
        return mf_fail(ctx, MF_E_INVALID,
                       "waves[%zu] must be an object with one of percent, group, devices", i);
    if (mode == MF_PLAN_STRICT && known_keys(ctx, it, keys, "waves", i) < 0)
        return MF_E_INVALID;
    if (pct) {
        if (!cJSON_IsNumber(pct) || !(pct->valuedouble > 0) || pct->valuedouble > 100)
            return mf_fail(ctx, MF_E_INVALID, "waves[%zu].percent must be in (0, 100]", i);
        w->kind = MF_WAVE_PERCENT;
        w->percent_bp = (unsigned)(pct->valuedouble * 100.0 + 0.5);
        if (w->percent_bp == 0)
            w->percent_bp = 1;
        return MF_OK;
    }
    if (grp) {
        if (!cJSON_IsString(grp) || !mf_names__valid_id(grp->valuestring))
            return mf_fail(ctx, MF_E_INVALID, "waves[%zu].group is not a valid group name", i);
        w->kind = MF_WAVE_GROUP;
        (void)snprintf(w->group, sizeof(w->group), "%s", grp->valuestring);
        return MF_OK;
    }
    return parse_list(w, ctx, list, i);
}

/* "after_min" of a sustained metric: required there (an integer minute in
 * 0..MF_TELEMETRY_SUSTAINED_WINDOWS - 1), refused on every other metric. */
static int parse_after(struct mf_rollout_line *l, struct mf_ctx *ctx, const cJSON *it,
                       const char *where, size_t i)
{
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(it, "after_min");
    int sustained = (mf_rollout__metric_kind(l->metric) & MF_METRIC_SUSTAINED) != 0;

    l->after_min = -1;
    if (!sustained && after)
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu].after_min applies to sustained metrics only",
                       where, i);
    if (sustained) {
        if (!cJSON_IsNumber(after) || !(after->valuedouble >= 0) ||
            after->valuedouble > MF_TELEMETRY_SUSTAINED_WINDOWS - 1 ||
            after->valuedouble != (double)(int)after->valuedouble)
            return mf_fail(ctx, MF_E_INVALID, "%s[%zu].after_min must be a minute in 0..%d", where,
                           i, MF_TELEMETRY_SUSTAINED_WINDOWS - 1);
        l->after_min = (int)after->valuedouble;
    }
    l->figure = mf_rollout__figure_id(l->metric, l->after_min);
    return MF_OK;
}

/* {"metric": "p99_latency_us", "max": 250000} or {"metric": ..., "relative": 1.5}; for the
 * metrics where lower is worse (teacher_agreement, sustained_rate) "min" instead of "max";
 * sustained metrics add "after_min". Any metric of the table (rollout_redlines.c); an
 * unknown name is refused. A rate's absolute bound is a fraction in [0, 1] and a relative
 * factor is above 0 (a factor of 0 would halt on any data). `where`: "red_lines" or "goals". */
static int parse_line(struct mf_rollout_line *l, struct mf_ctx *ctx, const cJSON *it,
                      const char *where, size_t i, int mode)
{
    static const char *const keys[] = {"metric", "max", "min", "relative", "after_min", NULL};
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metric");
    const cJSON *rel = cJSON_GetObjectItemCaseSensitive(it, "relative");
    const cJSON *abs, *bound;
    const char *absname, *other;
    unsigned kind;

    l->metric = -1;
    if (!cJSON_IsObject(it))
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu] must be an object", where, i);
    if (mode == MF_PLAN_STRICT && known_keys(ctx, it, keys, where, i) < 0)
        return MF_E_INVALID;
    for (int k = 0; cJSON_IsString(m) && k < MF_METRIC_COUNT; k++) {
        if (strcmp(m->valuestring, mf_rollout__metric_name(k)) == 0)
            l->metric = k;
    }
    if (l->metric < 0)
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu].metric is not a known metric", where, i);
    if (parse_after(l, ctx, it, where, i) < 0)
        return MF_E_INVALID;
    kind = mf_rollout__metric_kind(l->metric);
    absname = kind & MF_METRIC_LOWER_IS_WORSE ? "min" : "max";
    other = kind & MF_METRIC_LOWER_IS_WORSE ? "max" : "min";
    abs = cJSON_GetObjectItemCaseSensitive(it, absname);
    if (!!abs + !!rel != 1)
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu] needs exactly one of %s, relative", where, i,
                       absname);
    if (mode == MF_PLAN_STRICT && cJSON_GetObjectItemCaseSensitive(it, other))
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu].%s does not apply to %s (use '%s')", where, i,
                       other, m->valuestring, absname);
    l->relative = rel != NULL;
    bound = l->relative ? rel : abs;
    if (!cJSON_IsNumber(bound) || !(bound->valuedouble >= 0))
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu] bound must be a number >= 0", where, i);
    if (mode == MF_PLAN_STRICT && l->relative && !(bound->valuedouble > 0))
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu].relative must be above 0", where, i);
    if (mode == MF_PLAN_STRICT && !l->relative && (kind & MF_METRIC_RATE) && bound->valuedouble > 1)
        return mf_fail(ctx, MF_E_INVALID, "%s[%zu].%s of %s is a fraction in 0..1", where, i,
                       absname, m->valuestring);
    l->limit = bound->valuedouble;
    return MF_OK;
}

/* "red_lines" or "goals": an optional array of at most `max` lines into `out`. */
static int parse_lines(struct mf_rollout_line *out, size_t *n_out, size_t max, struct mf_ctx *ctx,
                       const cJSON *body, const char *key, int mode)
{
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(body, key), *it;
    int err = MF_OK;

    *n_out = 0;
    if (lines && (!cJSON_IsArray(lines) || cJSON_GetArraySize(lines) > (int)max))
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be an array of at most %zu", key, max);
    cJSON_ArrayForEach(it, lines)
    {
        if (err == MF_OK)
            err = parse_line(&out[*n_out], ctx, it, key, *n_out, mode);
        (*n_out)++;
    }
    return err;
}

/* An optional integer count in lo..MF_ROLLOUT_MAX_COUNT under `key`, else `def`. */
static int parse_count(uint64_t *out, struct mf_ctx *ctx, const cJSON *body, const char *key,
                       double lo, double hi, uint64_t def)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(body, key);

    *out = def;
    if (!n)
        return MF_OK;
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= lo) || n->valuedouble > hi ||
        n->valuedouble != (double)(int64_t)n->valuedouble)
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be an integer in %.0f..%.0f", key, lo,
                       hi);
    *out = (uint64_t)n->valuedouble;
    return MF_OK;
}

/* "soak_s" in 0..MF_ROLLOUT_MAX_SOAK_S, "min_devices", "line_min_devices" and
 * "line_min_inferences" in 1..10^9, all optional. */
static int parse_pace(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body)
{
    uint64_t soak = 0;
    int err = parse_count(&soak, ctx, body, "soak_s", 0, MF_ROLLOUT_MAX_SOAK_S,
                          MF_ROLLOUT_DEFAULT_SOAK_S);

    if (err == MF_OK)
        err = parse_count(&out->min_devices, ctx, body, "min_devices", 1, MF_ROLLOUT_MAX_COUNT, 1);
    if (err == MF_OK)
        err = parse_count(&out->line_min_devices, ctx, body, "line_min_devices", 1,
                          MF_ROLLOUT_MAX_COUNT, MF_ROLLOUT_DEFAULT_LINE_DEVICES);
    if (err == MF_OK)
        err = parse_count(&out->line_min_inferences, ctx, body, "line_min_inferences", 1,
                          MF_ROLLOUT_MAX_COUNT, MF_ROLLOUT_DEFAULT_LINE_INFERENCES);
    out->soak_s = (int64_t)soak;
    return err;
}

/* A new plan's top level: the plan's keys and the request's own beside them. */
static int strict_keys(struct mf_ctx *ctx, const cJSON *body)
{
    static const char *const keys[] = {"model",
                                       "version",
                                       "previous",
                                       "soak_s",
                                       "min_devices",
                                       "line_min_devices",
                                       "line_min_inferences",
                                       "waves",
                                       "red_lines",
                                       "goals",
                                       "allow_no_red_lines",
                                       NULL};
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(body, "allow_no_red_lines");

    if (known_keys(ctx, body, keys, NULL, 0) < 0)
        return MF_E_INVALID;
    if (allow && !cJSON_IsBool(allow))
        return mf_fail(ctx, MF_E_INVALID, "field 'allow_no_red_lines' must be true or false");
    return MF_OK;
}

static int strict_lines(struct mf_ctx *ctx, const cJSON *body, const cJSON *lines)
{
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(body, "allow_no_red_lines");

    /* No red line means nothing can halt the rollout: only when ops say so. */
    if (cJSON_GetArraySize(lines) == 0 && !cJSON_IsTrue(allow))
        return mf_fail(ctx, MF_E_INVALID,
                       "field 'red_lines' is empty: nothing could halt this rollout; add red "
                       "lines or set \"allow_no_red_lines\": true");
    return MF_OK;
}

int mf_rollout__plan_parse(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body,
                           int mode)
{
    const cJSON *waves = cJSON_GetObjectItemCaseSensitive(body, "waves");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(body, "red_lines");
    const cJSON *it;
    int err = MF_OK;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(body))
        return mf_fail(ctx, MF_E_INVALID, "a rollout plan must be a JSON object");
    if (mode == MF_PLAN_STRICT && strict_keys(ctx, body) < 0)
        return MF_E_INVALID;
    if (!cJSON_IsArray(waves) || cJSON_GetArraySize(waves) < 1 ||
        cJSON_GetArraySize(waves) > MF_ROLLOUT_MAX_WAVES)
        return mf_fail(ctx, MF_E_INVALID, "field 'waves' must be an array of 1..%d waves",
                       MF_ROLLOUT_MAX_WAVES);
    err = parse_pace(out, ctx, body);
    cJSON_ArrayForEach(it, waves)
    {
        if (err == MF_OK)
            err = parse_wave(&out->waves[out->n_waves], ctx, it, out->n_waves, mode);
        out->n_waves++;
    }
    if (err == MF_OK)
        err = parse_lines(out->lines, &out->n_lines, MF_ROLLOUT_MAX_LINES, ctx, body, "red_lines",
                          mode);
    if (err == MF_OK)
        err =
            parse_lines(out->goals, &out->n_goals, MF_ROLLOUT_MAX_GOALS, ctx, body, "goals", mode);
    if (err == MF_OK && mode == MF_PLAN_STRICT)
        err = strict_lines(ctx, body, lines);
    return err;
}
