/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Typed readers for fields of parsed JSON (cJSON). Every value the agent takes from the
 * server or from its state files passes one of these, so names, digests and sizes are
 * validated the same way everywhere and each failure names the field.
 */
#include "mf_agent_int.h"

#include <cjson/cJSON.h>
#include <string.h>

int mf_agent__json_name(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                        const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(v) || !mf_agent__name_ok(v->valuestring))
        return mf_fail(ctx, MF_E_INVALID, "%s.%s missing or not [A-Za-z0-9._-]{1,64}", what, key);
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return MF_OK;
}

int mf_agent__json_sha256(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                          const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(v) || !mf_hex__is_sha256(v->valuestring))
        return mf_fail(ctx, MF_E_INVALID, "%s.%s missing or not 64 lower-case hex digits", what,
                       key);
    memcpy(out, v->valuestring, MF_SHA256_HEX_LEN + 1);
    return MF_OK;
}

int mf_agent__json_u64(struct mf_ctx *ctx, uint64_t *out, const struct cJSON *obj, const char *key,
                       uint64_t max, const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    double d;

    /* Doubles hold integers exactly up to 2^53; larger sizes are refused, not rounded. */
    if (max > ((uint64_t)1 << 53))
        max = (uint64_t)1 << 53;
    if (!cJSON_IsNumber(v))
        return mf_fail(ctx, MF_E_INVALID, "%s.%s missing or not a number", what, key);
    d = v->valuedouble;
    if (!(d >= 0 && d <= (double)max) || (double)(uint64_t)d != d)
        return mf_fail(ctx, MF_E_INVALID, "%s.%s = %g is not an integer in 0..%llu", what, key, d,
                       (unsigned long long)max);
    *out = (uint64_t)d;
    return MF_OK;
}
