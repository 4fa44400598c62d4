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

/* Sparse [[index, count], ...] into a dense histogram of `bins` 32-bit counts. */
static int get_sparse(uint32_t *h, unsigned bins, struct mf_ctx *ctx, const cJSON *o,
                      const char *key)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key), *pair;

    if (!list)
        return MF_OK;
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

static int parse_version(mf_telemetry_version *v, struct mf_ctx *ctx, const char *model,
                         const cJSON *o)
{
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"inferences", offsetof(mf_telemetry_version, inferences)},
        {"peak_memory", offsetof(mf_telemetry_version, peak_memory)},
        {"health_ok", offsetof(mf_telemetry_version, health_ok)},
        {"health_failed", offsetof(mf_telemetry_version, health_failed)},
        {"install_ok", offsetof(mf_telemetry_version, install_ok)},
        {"install_failed", offsetof(mf_telemetry_version, install_failed)},
        {"rollbacks", offsetof(mf_telemetry_version, rollbacks)},
        {"teacher_compared", offsetof(mf_telemetry_version, teacher_compared)},
        {"teacher_agreed", offsetof(mf_telemetry_version, teacher_agreed)},
        {"offload_asked", offsetof(mf_telemetry_version, offload.asked)},
        {"offload_uncertain", offsetof(mf_telemetry_version, offload.uncertain)},
    };
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "last_rollback");
    int err = MF_OK;

    memset(v, 0, sizeof(*v));
    if (!cJSON_IsObject(o) || !cJSON_IsString(ver) || !mf_names__valid_id(ver->valuestring))
        return mf_fail(ctx, MF_E_INVALID, "telemetry versions need a valid 'version'");
    (void)snprintf(v->model, sizeof(v->model), "%s", model);
    (void)snprintf(v->version, sizeof(v->version), "%s", ver->valuestring);
    (void)snprintf(v->offload.model_version, sizeof(v->offload.model_version), "%s",
                   ver->valuestring);
    for (size_t i = 0; err == MF_OK && i < sizeof(fields) / sizeof(fields[0]); i++)
        err = get_field((uint64_t *)(void *)((char *)v + fields[i].off), ctx, o, fields[i].key);
    if (err == MF_OK && why && !cJSON_IsString(why))
        err = mf_fail(ctx, MF_E_INVALID, "telemetry field 'last_rollback' must be a string");
    if (err == MF_OK && why)
        (void)snprintf(v->last_rollback, sizeof(v->last_rollback), "%s", why->valuestring);
    if (err == MF_OK)
        err = get_sparse(v->latency, MF_TELEMETRY_LAT_BUCKETS, ctx, o, "latency_us");
    if (err == MF_OK)
        err = get_sparse(v->offload.hist, MF_OFFLOAD_HIST_BINS, ctx, o, "confidence");
    return err;
}

int mf_rollout__report_parse_one(mf_telemetry_version *out, struct mf_ctx *ctx, const char *model,
                                 const cJSON *entry)
{
    return parse_version(out, ctx, model, entry);
}

int mf_rollout__report_parse(mf_telemetry_version *out, size_t *n_out, struct mf_ctx *ctx,
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
