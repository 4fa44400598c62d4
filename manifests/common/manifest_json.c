/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded JSON access for manifests (see manifest_json.h). */
#include "manifest_json.h"
#include "mf_hex.h"
#include "mf_json.h"
#include "mf_name_chars.h"

#include <string.h>

int mf_manifest__json_parse(cJSON **out, struct mf_ctx *ctx, const uint8_t *buf, size_t len,
                            const char *what)
{
    /* Callers have bounded len already (envelope max_len, the payload inside it). The
     * strict reader is what keeps two JSON readers from seeing different signed
     * documents: no trailing bytes, no duplicate names, no NUL in a name, exact integers. */
    return mf_json__parse_object(out, ctx, buf, len, len, MF_MANIFEST_MAX_DEPTH, what);
}

int mf_manifest__json_str(const char **out, struct mf_ctx *ctx, const cJSON *obj, const char *key,
                          size_t max_len)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(it) || !it->valuestring)
        return mf_fail(ctx, MF_E_INVALID, "member '%s' missing or not a string", key);
    if (strlen(it->valuestring) > max_len)
        return mf_fail(ctx, MF_E_INVALID, "member '%s' longer than %zu characters", key, max_len);
    *out = it->valuestring;
    return MF_OK;
}

int mf_manifest__json_name(char *out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    const char *s;
    int err = mf_manifest__json_str(&s, ctx, obj, key, MF_MANIFEST_NAME_MAX);

    if (err < 0)
        return err;
    if (!mf_manifest__name_ok(s))
        return mf_fail(ctx, MF_E_INVALID, "member '%s' is not a valid name: '%.64s'", key, s);
    memcpy(out, s, strlen(s) + 1);
    return MF_OK;
}

int mf_manifest__json_u64(uint64_t *out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    double v;

    if (!cJSON_IsNumber(it))
        return mf_fail(ctx, MF_E_INVALID, "member '%s' missing or not a number", key);
    v = it->valuedouble;
    /* The negated comparisons also catch NaN. */
    if (!(v >= 0.0) || !(v <= MF_MANIFEST_JSON_INT_MAX) || (double)(uint64_t)v != v)
        return mf_fail(ctx, MF_E_INVALID, "member '%s' is not an integer in [0, 2^53]: %g", key, v);
    *out = (uint64_t)v;
    return MF_OK;
}

int mf_manifest__json_hex32(uint8_t *out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(it) || !it->valuestring || !mf_hex__is_sha256(it->valuestring))
        return mf_fail(ctx, MF_E_INVALID, "member '%s' is not 64 lower-case hex digits", key);
    return mf_hex__decode(out, MF_MANIFEST_DIGEST_LEN, it->valuestring, MF_SHA256_HEX_LEN);
}

int mf_manifest__json_array(const cJSON **out, size_t *count, struct mf_ctx *ctx, const cJSON *obj,
                            const char *key, size_t max)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    int n;

    if (!cJSON_IsArray(it))
        return mf_fail(ctx, MF_E_INVALID, "member '%s' missing or not an array", key);
    n = cJSON_GetArraySize(it);
    if (n < 0 || (size_t)n > max)
        return mf_fail(ctx, MF_E_LIMIT, "member '%s' has %d items, more than %zu", key, n, max);
    *out = it;
    *count = (size_t)n;
    return MF_OK;
}

int mf_manifest__json_header(struct mf_ctx *ctx, const cJSON *doc, const char *type)
{
    const char *t;
    uint64_t v;
    int err = mf_manifest__json_str(&t, ctx, doc, "_type", MF_MANIFEST_NAME_MAX);

    if (err < 0)
        return err;
    if (strcmp(t, type) != 0)
        return mf_fail(ctx, MF_E_INVALID, "_type '%.64s' is not '%s'", t, type);
    err = mf_manifest__json_u64(&v, ctx, doc, "spec_version");
    if (err < 0)
        return err;
    if (v != MF_MANIFEST_SPEC_VERSION)
        return mf_fail(ctx, MF_E_INVALID, "spec_version %llu is not supported (want %d)",
                       (unsigned long long)v, MF_MANIFEST_SPEC_VERSION);
    return MF_OK;
}

int mf_manifest__json_doc(cJSON **out, struct mf_ctx *ctx, const uint8_t *buf, size_t len,
                          const char *type)
{
    int err = mf_manifest__json_parse(out, ctx, buf, len, type);

    if (err < 0)
        return err;
    err = mf_manifest__json_header(ctx, *out, type);
    if (err < 0) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    return err;
}

int mf_manifest__name_ok(const char *s)
{
    return mf_name__chars_ok(s, MF_MANIFEST_NAME_MAX);
}
