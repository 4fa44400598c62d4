/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded JSON access for manifests (see manifest_json.h). */
#include "manifest_json.h"
#include "mf_hex.h"

#include <string.h>

/*
 * cJSON recurses once per nesting level (up to 1000 by default); our documents need at most
 * MF_MANIFEST_MAX_DEPTH, so a cheap scan refuses deeper input before any recursion or
 * allocation happens.
 */
static int depth_ok(const uint8_t *buf, size_t len)
{
    int in_str = 0, esc = 0;
    unsigned int depth = 0;

    for (size_t i = 0; i < len; i++) {
        uint8_t c = buf[i];

        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > MF_MANIFEST_MAX_DEPTH)
                return 0;
        } else if ((c == '}' || c == ']') && depth) {
            depth--;
        }
    }
    return 1;
}

/* Duplicate member names would let two JSON readers see different documents. */
static int members_ok(struct mf_ctx *ctx, const cJSON *node, const char *what)
{
    const cJSON *a, *b;
    size_t n = 0;

    if (cJSON_IsObject(node)) {
        cJSON_ArrayForEach(a, node)
        {
            if (++n > MF_MANIFEST_JSON_MAX_MEMBERS)
                return mf_fail(ctx, MF_E_INVALID, "%s: object with more than %d members", what,
                               MF_MANIFEST_JSON_MAX_MEMBERS);
            for (b = a->next; b; b = b->next) {
                if (strcmp(a->string, b->string) == 0)
                    return mf_fail(ctx, MF_E_INVALID, "%s: duplicate member '%.64s'", what,
                                   a->string);
            }
        }
    }
    if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
        cJSON_ArrayForEach(a, node)
        {
            int err = members_ok(ctx, a, what);

            if (err < 0)
                return err;
        }
    }
    return MF_OK;
}

int mf_manifest__json_parse(cJSON **out, struct mf_ctx *ctx, const uint8_t *buf, size_t len,
                            const char *what)
{
    const char *end = NULL;
    cJSON *root;
    int err;

    *out = NULL;
    if (!depth_ok(buf, len))
        return mf_fail(ctx, MF_E_LIMIT, "%s: JSON nested deeper than %d levels", what,
                       MF_MANIFEST_MAX_DEPTH);
    root = cJSON_ParseWithLengthOpts((const char *)buf, len, &end, 0);
    if (!root) {
        /* cJSON reports allocation failure and syntax errors alike; end is set only for
         * syntax errors inside the buffer. */
        if (end && end >= (const char *)buf && end < (const char *)buf + len)
            return mf_fail(ctx, MF_E_INVALID, "%s: JSON syntax error at byte %zu", what,
                           (size_t)(end - (const char *)buf));
        return mf_fail(ctx, MF_E_INVALID, "%s: JSON parse failed (%zu bytes)", what, len);
    }
    while (end < (const char *)buf + len &&
           (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    if (end != (const char *)buf + len) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: trailing bytes after JSON at byte %zu", what,
                      (size_t)(end - (const char *)buf));
        goto fail;
    }
    if (!cJSON_IsObject(root)) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: top level is not a JSON object", what);
        goto fail;
    }
    err = members_ok(ctx, root, what);
    if (err < 0)
        goto fail;
    *out = root;
    return MF_OK;
fail:
    cJSON_Delete(root);
    return err;
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

int mf_manifest__name_ok(const char *s)
{
    size_t i;

    for (i = 0; s[i]; i++) {
        char c = s[i];

        if (i >= MF_MANIFEST_NAME_MAX)
            return 0;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return i > 0;
}
