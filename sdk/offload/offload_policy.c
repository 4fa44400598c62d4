/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict parser of the policy object the server sends in the check-in
 * (docs/protocol-offload.md). Every field is type- and range-checked and unknown keys are
 * refused, so a server bug or a typo fails loudly (the device keeps its previous policy)
 * instead of silently uplinking more than ops intended. The message names the field.
 */
#include "mf_offload_int.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

/* Keys the parser knows; anything else is refused. */
static const char *const known_keys[] = {
    "enabled",   "method",        "mode",           "threshold", "target_rate", "temperature",
    "rate_caps", "bytes_per_day", "audit_fraction", "metered",   "deadline_ms", "model_version",
};

static const char *const method_names[] = {"max_softmax", "margin", "entropy"};
static const char *const mode_names[] = {"sync", "async"};
static const char *const metered_names[] = {"allow", "defer", "deny"};

static int lookup(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], s) == 0)
            return (int)i;
    }
    return -1;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int get_enum(struct mf_ctx *ctx, int *out, const cJSON *doc, const char *key,
                    const char *const *names, size_t n, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

    if (!v) {
        *out = dflt;
        return MF_OK;
    }
    if (!cJSON_IsString(v) || lookup(names, n, v->valuestring) < 0)
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"%s\" is not one of the known values",
                       key);
    *out = lookup(names, n, v->valuestring);
    return MF_OK;
}

/* A number in [lo, hi]; absent -> `dflt` (NAN: absent stays NAN for the caller to judge). */
static int get_num(struct mf_ctx *ctx, double *out, const cJSON *doc, const char *key, double lo,
                   double hi, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

    if (!v) {
        *out = dflt;
        return MF_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"%s\" must be a number in [%g, %g]",
                       key, lo, hi);
    *out = v->valuedouble;
    return MF_OK;
}

/* An integer in [0, hi]; absent -> `dflt`. */
static int get_uint(struct mf_ctx *ctx, uint64_t *out, const cJSON *doc, const char *key, double hi,
                    uint64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

    if (!v) {
        *out = dflt;
        return MF_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > hi || floor(v->valuedouble) != v->valuedouble)
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"%s\" must be an integer in [0, %.0f]",
                       key, hi);
    *out = (uint64_t)v->valuedouble;
    return MF_OK;
}

static int check_keys(struct mf_ctx *ctx, const cJSON *doc)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, doc)
    {
        if (lookup(known_keys, COUNT(known_keys), it->string) < 0)
            return mf_fail(ctx, MF_E_INVALID, "offload policy: unknown key \"%.64s\"", it->string);
    }
    return MF_OK;
}

static int parse_caps(struct mf_ctx *ctx, mf_offload_policy *p, const cJSON *doc)
{
    static const char *const keys[] = {"per_minute", "per_hour", "per_day"};
    uint32_t *dst[] = {&p->per_minute, &p->per_hour, &p->per_day};
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(doc, "rate_caps");
    const cJSON *it;

    p->per_minute = p->per_hour = p->per_day = MF_OFFLOAD_UNLIMITED;
    if (!caps)
        return MF_OK;
    if (!cJSON_IsObject(caps))
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"rate_caps\" must be an object");
    cJSON_ArrayForEach(it, caps)
    {
        if (lookup(keys, COUNT(keys), it->string) < 0)
            return mf_fail(ctx, MF_E_INVALID, "offload policy: unknown key \"rate_caps.%.64s\"",
                           it->string);
    }
    for (size_t i = 0; i < COUNT(keys); i++) {
        uint64_t v;
        int err = get_uint(ctx, &v, caps, keys[i], 1e9, MF_OFFLOAD_UNLIMITED);

        if (err < 0)
            return err;
        *dst[i] = (uint32_t)v;
    }
    return MF_OK;
}

int mf_offload__name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > MF_OFFLOAD_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int parse_fields(struct mf_ctx *ctx, mf_offload_policy *p, const cJSON *doc)
{
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(doc, "enabled");
    const cJSON *mv = cJSON_GetObjectItemCaseSensitive(doc, "model_version");
    double threshold, target, temp, audit;
    uint64_t bytes, deadline;
    int method = 0, mode = 0, metered = 0, err;

    if (!cJSON_IsBool(en))
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"enabled\" must be true or false");
    p->enabled = cJSON_IsTrue(en);
    err = get_enum(ctx, &method, doc, "method", method_names, COUNT(method_names),
                   MF_OFFLOAD_MAX_SOFTMAX);
    if (err >= 0)
        err =
            get_enum(ctx, &mode, doc, "mode", mode_names, COUNT(mode_names), MF_OFFLOAD_MODE_SYNC);
    if (err >= 0)
        err = get_enum(ctx, &metered, doc, "metered", metered_names, COUNT(metered_names),
                       MF_OFFLOAD_METERED_DEFER);
    /* get_enum() returned an index into the name tables, which list the enumerators in order. */
    p->method = (mf_offload_method)method;
    p->mode = (mf_offload_mode)mode;
    p->metered = (mf_offload_metered)metered;
    if (err >= 0)
        err = get_num(ctx, &threshold, doc, "threshold", 0.0, 1.0, -1.0);
    if (err >= 0)
        err = get_num(ctx, &target, doc, "target_rate", 0.0, 1.0, 0.0);
    if (err >= 0)
        err = get_num(ctx, &temp, doc, "temperature", 0.01, 100.0, 1.0);
    if (err >= 0)
        err = get_num(ctx, &audit, doc, "audit_fraction", 0.0, 1.0, 0.0);
    if (err >= 0)
        err = get_uint(ctx, &bytes, doc, "bytes_per_day", (double)MF_OFFLOAD_MAX_BYTES_PER_DAY,
                       UINT64_MAX);
    if (err >= 0)
        err = get_uint(ctx, &deadline, doc, "deadline_ms", 60000, 1000);
    if (err >= 0)
        err = parse_caps(ctx, p, doc);
    if (err < 0)
        return err;
    if (deadline == 0)
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"deadline_ms\" must be at least 1");
    if (p->enabled && threshold < 0.0 && !(target > 0.0))
        return mf_fail(ctx, MF_E_INVALID,
                       "offload policy: enabled without \"threshold\" or \"target_rate\"");
    if (mv && (!cJSON_IsString(mv) || !mf_offload__name_ok(mv->valuestring)))
        return mf_fail(ctx, MF_E_INVALID, "offload policy: \"model_version\" is not a valid name");
    if (mv)
        memcpy(p->model_version, mv->valuestring, strlen(mv->valuestring) + 1);
    p->threshold = (float)threshold;
    p->target_rate = (float)target;
    p->temperature = (float)temp;
    p->audit_fraction = (float)audit;
    p->bytes_per_day = bytes;
    p->deadline_ms = (uint32_t)deadline;
    return MF_OK;
}

int mf_offload__policy_parse(struct mf_ctx *ctx, mf_offload_policy *out, const char *json,
                             size_t len)
{
    mf_offload_policy p;
    cJSON *doc;
    int err;

    err = mf_json__parse_object(&doc, ctx, json, len, MF_OFFLOAD_POLICY_JSON_MAX,
                                MF_JSON_DEPTH_DEFAULT, "offload policy");
    if (err < 0)
        return err;
    memset(&p, 0, sizeof(p));
    p.version = MF_OFFLOAD_POLICY_VERSION;
    err = check_keys(ctx, doc);
    if (err >= 0)
        err = parse_fields(ctx, &p, doc);
    cJSON_Delete(doc);
    if (err < 0)
        return err;
    *out = p;
    return MF_OK;
}
