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

static int parse_wave(struct mf_rollout_wave *w, struct mf_ctx *ctx, const cJSON *it, size_t i)
{
    const cJSON *pct = cJSON_GetObjectItemCaseSensitive(it, "percent");
    const cJSON *grp = cJSON_GetObjectItemCaseSensitive(it, "group");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(it, "devices");

    memset(w, 0, sizeof(*w));
    if (!cJSON_IsObject(it) || (!!pct + !!grp + !!list) != 1)
        return mf_fail(ctx, MF_E_INVALID,
                       "waves[%zu] must be an object with one of percent, group, devices", i);
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

/* {"metric": "p99_latency_us", "max": 250000} or {"metric": ..., "relative": 1.5}; for
 * teacher_agreement "min" instead of "max". */
static int parse_line(struct mf_rollout_line *l, struct mf_ctx *ctx, const cJSON *it, size_t i)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metric");
    const cJSON *rel = cJSON_GetObjectItemCaseSensitive(it, "relative");
    const cJSON *abs;
    const char *absname;

    l->metric = -1;
    for (int k = 0; cJSON_IsString(m) && k < MF_METRIC_COUNT; k++) {
        if (strcmp(m->valuestring, mf_rollout__metric_name(k)) == 0)
            l->metric = k;
    }
    if (l->metric < 0)
        return mf_fail(ctx, MF_E_INVALID, "red_lines[%zu].metric is not a known metric", i);
    absname = l->metric == MF_METRIC_TEACHER_AGREEMENT ? "min" : "max";
    abs = cJSON_GetObjectItemCaseSensitive(it, absname);
    if (!!abs + !!rel != 1)
        return mf_fail(ctx, MF_E_INVALID, "red_lines[%zu] needs exactly one of %s, relative", i,
                       absname);
    l->relative = rel != NULL;
    if (!cJSON_IsNumber(l->relative ? rel : abs) || !((l->relative ? rel : abs)->valuedouble >= 0))
        return mf_fail(ctx, MF_E_INVALID, "red_lines[%zu] bound must be a number >= 0", i);
    l->limit = (l->relative ? rel : abs)->valuedouble;
    return MF_OK;
}

/* "soak_s" in 0..MF_ROLLOUT_MAX_SOAK_S and "min_devices" in 1..10^9, both optional. */
static int parse_pace(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body)
{
    const cJSON *soak = cJSON_GetObjectItemCaseSensitive(body, "soak_s");
    const cJSON *min = cJSON_GetObjectItemCaseSensitive(body, "min_devices");

    out->soak_s = MF_ROLLOUT_DEFAULT_SOAK_S;
    out->min_devices = 1;
    if (soak && (!cJSON_IsNumber(soak) || !(soak->valuedouble >= 0) ||
                 soak->valuedouble > MF_ROLLOUT_MAX_SOAK_S ||
                 soak->valuedouble != (double)(int64_t)soak->valuedouble))
        return mf_fail(ctx, MF_E_INVALID, "field 'soak_s' must be an integer in 0..%d",
                       MF_ROLLOUT_MAX_SOAK_S);
    if (min && (!cJSON_IsNumber(min) || !(min->valuedouble >= 1) || min->valuedouble > 1e9 ||
                min->valuedouble != (double)(int64_t)min->valuedouble))
        return mf_fail(ctx, MF_E_INVALID, "field 'min_devices' must be an integer in 1..10^9");
    if (soak)
        out->soak_s = (int64_t)soak->valuedouble;
    if (min)
        out->min_devices = (uint64_t)min->valuedouble;
    return MF_OK;
}

int mf_rollout__plan_parse(struct mf_rollout_plan *out, struct mf_ctx *ctx, const cJSON *body)
{
    const cJSON *waves = cJSON_GetObjectItemCaseSensitive(body, "waves");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(body, "red_lines");
    const cJSON *it;
    int err = MF_OK;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsArray(waves) || cJSON_GetArraySize(waves) < 1 ||
        cJSON_GetArraySize(waves) > MF_ROLLOUT_MAX_WAVES)
        return mf_fail(ctx, MF_E_INVALID, "field 'waves' must be an array of 1..%d waves",
                       MF_ROLLOUT_MAX_WAVES);
    if (lines && (!cJSON_IsArray(lines) || cJSON_GetArraySize(lines) > MF_ROLLOUT_MAX_LINES))
        return mf_fail(ctx, MF_E_INVALID, "field 'red_lines' must be an array of at most %d",
                       MF_ROLLOUT_MAX_LINES);
    err = parse_pace(out, ctx, body);
    cJSON_ArrayForEach(it, waves)
    {
        if (err == MF_OK)
            err = parse_wave(&out->waves[out->n_waves], ctx, it, out->n_waves);
        out->n_waves++;
    }
    cJSON_ArrayForEach(it, lines)
    {
        if (err == MF_OK)
            err = parse_line(&out->lines[out->n_lines], ctx, it, out->n_lines);
        out->n_lines++;
    }
    return err;
}
