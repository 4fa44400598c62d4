/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the check-in telemetry field (rollout_report.h). */
#include "rollout/rollout_report.h"

#include "common/names.h"

#include <stdio.h>
#include <string.h>

/* A JSON integer in 0..2^53 (exact in a double). */
static int get_count(uint64_t *out, const cJSON *v)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return MF_E_INVALID;
    *out = (uint64_t)v->valuedouble;
    return MF_OK;
}

static int get_field(uint64_t *out, struct mf_ctx *ctx, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    *out = 0;
    if (!v)
        return MF_OK; /* absent: 0, so older devices may send fewer fields */
    if (get_count(out, v) < 0)
        return mf_fail(ctx, MF_E_INVALID, "telemetry field '%s' must be an integer in 0..2^53",
                       key);
    return MF_OK;
}

/* Sparse [[index, count], ...] (`list`, named `key` in messages) into a dense histogram of
 * `bins` 32-bit counts. */
static int get_pairs(uint32_t *h, unsigned bins, struct mf_ctx *ctx, const cJSON *list,
                     const char *key)
{
    const cJSON *pair;

    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > (int)bins)
        return mf_fail(ctx, MF_E_INVALID, "telemetry '%s' must be an array of at most %u pairs",
                       key, bins);
    cJSON_ArrayForEach(pair, list)
    {
        uint64_t idx, count;

        if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 ||
            get_count(&idx, cJSON_GetArrayItem(pair, 0)) < 0 ||
            get_count(&count, cJSON_GetArrayItem(pair, 1)) < 0 || idx >= bins || count > UINT32_MAX)
            return mf_fail(ctx, MF_E_INVALID,
                           "telemetry '%s' needs [index < %u, count < 2^32] pairs", key, bins);
        h[idx] = (uint32_t)count;
    }
    return MF_OK;
}

static int get_sparse(uint32_t *h, unsigned bins, struct mf_ctx *ctx, const cJSON *o,
                      const char *key)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key);

    return list ? get_pairs(h, bins, ctx, list, key) : MF_OK;
}

/* "sustained": [[window, minutes, [[coarse bucket, count], ...]], ...], each window once. */
static int get_sustained(mf_telemetry_scorecard *sc, struct mf_ctx *ctx, const cJSON *o)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "sustained"), *w;
    int seen[MF_TELEMETRY_SUSTAINED_WINDOWS] = {0};

    if (!list)
        return MF_OK;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > MF_TELEMETRY_SUSTAINED_WINDOWS)
        return mf_fail(ctx, MF_E_INVALID, "telemetry 'sustained' must be an array of at most %d",
                       MF_TELEMETRY_SUSTAINED_WINDOWS);
    cJSON_ArrayForEach(w, list)
    {
        uint64_t idx, minutes;

        if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != 3 ||
            get_count(&idx, cJSON_GetArrayItem(w, 0)) < 0 ||
            idx >= MF_TELEMETRY_SUSTAINED_WINDOWS || seen[idx] ||
            get_count(&minutes, cJSON_GetArrayItem(w, 1)) < 0)
            return mf_fail(ctx, MF_E_INVALID,
                           "telemetry 'sustained' needs [window < %d (each once), minutes, "
                           "pairs] entries",
                           MF_TELEMETRY_SUSTAINED_WINDOWS);
        seen[idx] = 1;
        sc->sustained_minutes[idx] = minutes;
        if (get_pairs(sc->sustained[idx], MF_TELEMETRY_COARSE_BUCKETS, ctx,
                      cJSON_GetArrayItem(w, 2), "sustained") < 0)
            return MF_E_INVALID;
    }
    return MF_OK;
}

static int parse_version(struct mf_rollout_row *row, struct mf_ctx *ctx, const char *model,
                         const cJSON *o)
{
#define ROW(f) offsetof(struct mf_rollout_row, f)
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"inferences", ROW(v.inferences)},
        {"peak_memory", ROW(v.peak_memory)},
        {"health_ok", ROW(v.health_ok)},
        {"health_failed", ROW(v.health_failed)},
        {"install_ok", ROW(v.install_ok)},
        {"install_failed", ROW(v.install_failed)},
        {"rollbacks", ROW(v.rollbacks)},
        {"teacher_compared", ROW(v.teacher_compared)},
        {"teacher_agreed", ROW(v.teacher_agreed)},
        {"offload_asked", ROW(v.offload.asked)},
        {"offload_uncertain", ROW(v.offload.uncertain)},
        /* The scorecard (each field absent when the device has no data for it). */
        {"activations", ROW(sc.activations)},
        {"steady_memory_sum", ROW(sc.steady_memory_sum)},
        {"steady_memory_samples", ROW(sc.steady_memory_samples)},
        {"energy_uj", ROW(sc.energy_uj)},
        {"energy_inferences", ROW(sc.energy_inferences)},
        {"fallbacks", ROW(sc.counters[MF_TELEMETRY_FALLBACK])},
        {"errors", ROW(sc.counters[MF_TELEMETRY_ERROR])},
        {"timeouts", ROW(sc.counters[MF_TELEMETRY_TIMEOUT])},
        {"mem_pressure", ROW(sc.counters[MF_TELEMETRY_MEM_PRESSURE])},
        {"hot", ROW(sc.counters[MF_TELEMETRY_HOT])},
    };
#undef ROW
    mf_telemetry_version *v = &row->v;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "last_rollback");
    int err = MF_OK;

    memset(row, 0, sizeof(*row));
    row->sc.struct_version = MF_TELEMETRY_SCORECARD_VERSION;
    if (!cJSON_IsObject(o) || !cJSON_IsString(ver) || !mf_names__valid_id(ver->valuestring))
        return mf_fail(ctx, MF_E_INVALID, "telemetry versions need a valid 'version'");
    (void)snprintf(v->model, sizeof(v->model), "%s", model);
    (void)snprintf(v->version, sizeof(v->version), "%s", ver->valuestring);
    (void)snprintf(v->offload.model_version, sizeof(v->offload.model_version), "%s",
                   ver->valuestring);
    for (size_t i = 0; err == MF_OK && i < sizeof(fields) / sizeof(fields[0]); i++)
        err = get_field((uint64_t *)(void *)((char *)row + fields[i].off), ctx, o, fields[i].key);
    if (err == MF_OK && why && !cJSON_IsString(why))
        err = mf_fail(ctx, MF_E_INVALID, "telemetry field 'last_rollback' must be a string");
    if (err == MF_OK && why)
        (void)snprintf(v->last_rollback, sizeof(v->last_rollback), "%s", why->valuestring);
    if (err == MF_OK)
        err = get_sparse(v->latency, MF_TELEMETRY_LAT_BUCKETS, ctx, o, "latency_us");
    if (err == MF_OK)
        err = get_sparse(v->offload.hist, MF_OFFLOAD_HIST_BINS, ctx, o, "confidence");
    if (err == MF_OK)
        err = get_sparse(row->sc.cold_latency, MF_TELEMETRY_LAT_BUCKETS, ctx, o, "cold_us");
    if (err == MF_OK)
        err = get_sustained(&row->sc, ctx, o);
    if (err == MF_OK && row->sc.energy_uj && !row->sc.energy_inferences)
        err = mf_fail(ctx, MF_E_INVALID, "telemetry 'energy_uj' needs 'energy_inferences'");
    return err;
}

int mf_rollout__report_parse_one(struct mf_rollout_row *out, struct mf_ctx *ctx, const char *model,
                                 const cJSON *entry)
{
    return parse_version(out, ctx, model, entry);
}

int mf_rollout__report_parse(struct mf_rollout_row *out, size_t *n_out, struct mf_ctx *ctx,
                             const char *model, const cJSON *value)
{
    const cJSON *versions = cJSON_GetObjectItemCaseSensitive(value, "versions");
    const cJSON *buckets = cJSON_GetObjectItemCaseSensitive(value, "buckets");
    const cJSON *it;

    *n_out = 0;
    if (!cJSON_IsObject(value) || !cJSON_IsString(buckets) ||
        strcmp(buckets->valuestring, "log2x8") != 0)
        return mf_fail(ctx, MF_E_INVALID, "telemetry of model '%s' needs buckets \"log2x8\"",
                       model);
    if (!cJSON_IsArray(versions) || cJSON_GetArraySize(versions) > MF_TELEMETRY_MAX_VERSIONS)
        return mf_fail(ctx, MF_E_INVALID,
                       "telemetry of model '%s' needs 'versions', an array of at most %d", model,
                       MF_TELEMETRY_MAX_VERSIONS);
    cJSON_ArrayForEach(it, versions)
    {
        int err = parse_version(&out[*n_out], ctx, model, it);

        if (err < 0)
            return err;
        (*n_out)++;
    }
    return MF_OK;
}
