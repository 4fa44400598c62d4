/* SPDX-License-Identifier: Apache-2.0 */
/* The fallback offer and the degrade switch report of a check-in (checkin_degrade.h). */
#include "director/checkin_degrade.h"

#include "director/director_variant.h"

#include <stdio.h>
#include <string.h>

/* The released fallback of `v`'s version that the device may keep beside `variant`. */
static int pick_fallback(const struct mf_store_variant *xs, size_t n,
                         const struct mf_device_class *cls, const struct mf_store_version *v,
                         const char *variant)
{
    uint64_t budget = cls->storage_mb << 20;

    for (size_t i = 0; i < n; i++) {
        const struct mf_store_variant *x = &xs[i];

        if (!x->fallback || !x->release_digest[0] || strcmp(x->variant, variant) == 0 ||
            strcmp(x->sha256, v->sha256) == 0 || !mf_variant__allows(&x->needs, x->size, cls))
            continue;
        if (x->size > budget || v->size > budget - x->size)
            return -1; /* the storage budget: both must fit */
        return (int)i;
    }
    return -1;
}

int mf_checkin_degrade__fallback(struct mf_answer *ans, const struct mf_ccache_view *cv,
                                 const struct mf_checkin_req *req, const struct mf_checkin_model *m,
                                 const struct mf_store_version *v, const char *variant)
{
    struct mf_store_variant xs[MF_STORE_VARIANTS_MAX];
    char blob[sizeof("/v1/blobs/") + MF_SHA256_HEX_LEN];
    const struct mf_store_variant *x;
    size_t n = 0;
    int err, pick;

    if (!req->device_class.declared)
        return MF_OK;
    err = mf_ccache__variants(xs, &n, cv, v->model, v->version);
    if (err < 0)
        return err;
    pick = pick_fallback(xs, n, &req->device_class, v, variant);
    if (pick < 0)
        return MF_OK;
    x = &xs[pick];
    err = mf_answer__open(ans, "fallback", '{');
    if (err == MF_OK)
        err = mf_answer__str(ans, "variant", x->variant);
    if (err == MF_OK)
        err = mf_answer__str(ans, "sha256", x->sha256);
    if (err == MF_OK)
        err = mf_answer__count(ans, "size", x->size);
    if (err == MF_OK && !(m->fallback_sha256 && strcmp(m->fallback_sha256, x->sha256) == 0)) {
        (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", x->sha256);
        err = mf_answer__str(ans, "blob", blob);
        if (err == MF_OK)
            err = mf_answer__raw_begin(ans, "release");
        if (err == MF_OK)
            err = mf_ccache__variant_release_json(&ans->text, cv, v->model, v->version, x->variant);
        if (err == MF_OK)
            err = mf_answer__end(ans);
    }
    return err == MF_OK ? mf_answer__close(ans, '}') : err;
}

static const char *const reasons[] = {"none",    "manual",   "memory",   "thermal",
                                      "battery", "deadline", "recovered"};

/* A reason name of the device's controller (mf/degrade.h); `none_ok` for the state's. */
static int reason_ok(const cJSON *v, int none_ok)
{
    for (size_t i = none_ok ? 0 : 1; cJSON_IsString(v) && i < sizeof(reasons) / sizeof(*reasons);
         i++) {
        if (strcmp(v->valuestring, reasons[i]) == 0)
            return 1;
    }
    return 0;
}

static int whole(uint64_t *out, const cJSON *v, double min)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= min) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

/* Only the keys in `keys`; then `degraded` a boolean and `reason` a name (`none_ok`: also
 * "none"), the messages prefixed with `what`. */
static int check_common(struct mf_ctx *ctx, const cJSON *obj, const char *const *keys,
                        const char *what, int none_ok)
{
    const char *unknown;

    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be an object", what);
    unknown = mf_reqparse__unknown_key(obj, keys);
    if (unknown)
        return mf_fail(ctx, MF_E_INVALID, "%s: unknown key '%s'", what, unknown);
    if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(obj, "degraded")))
        return mf_fail(ctx, MF_E_INVALID, "%s: 'degraded' must be a boolean", what);
    if (!reason_ok(cJSON_GetObjectItemCaseSensitive(obj, "reason"), none_ok))
        return mf_fail(ctx, MF_E_INVALID,
                       "%s: 'reason' must be one of %smanual, memory, thermal, battery, "
                       "deadline, recovered",
                       what, none_ok ? "none, " : "");
    return MF_OK;
}

static int parse_switch(struct mf_store_switch *out, struct mf_ctx *ctx, const cJSON *e,
                        int64_t now)
{
    static const char *const keys[] = {"seq", "at", "degraded", "reason", NULL};
    const cJSON *degraded = cJSON_GetObjectItemCaseSensitive(e, "degraded");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(e, "reason");
    uint64_t seq = 0, at = 0;
    int err;

    err = check_common(ctx, e, keys, "degrade.switches", 0);
    if (err < 0)
        return err;
    if (!whole(&seq, cJSON_GetObjectItemCaseSensitive(e, "seq"), 1))
        return mf_fail(ctx, MF_E_INVALID, "degrade.switches: 'seq' must be an integer in 1..2^53");
    if (!whole(&at, cJSON_GetObjectItemCaseSensitive(e, "at"), 0))
        return mf_fail(ctx, MF_E_INVALID,
                       "degrade.switches: 'at' must be Unix seconds (0: unknown)");
    *out = (struct mf_store_switch){
        .seq = seq, .at = (int64_t)at, .received_at = now, .degraded = cJSON_IsTrue(degraded)};
    (void)snprintf(out->reason, sizeof(out->reason), "%s", reason->valuestring);
    return MF_OK;
}

int mf_checkin_degrade__parse(struct mf_store_switch *out, size_t *n_out, struct mf_ctx *ctx,
                              const cJSON *root, int64_t now)
{
    static const char *const keys[] = {"degraded", "reason", "switches", NULL};
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "degrade"), *list, *e;
    int err;

    *n_out = 0;
    if (!d || cJSON_IsNull(d))
        return MF_OK;
    err = check_common(ctx, d, keys, "degrade", 1);
    if (err < 0)
        return err;
    list = cJSON_GetObjectItemCaseSensitive(d, "switches");
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > MF_CHECKIN_MAX_SWITCHES)
        return mf_fail(ctx, MF_E_INVALID, "degrade: 'switches' must be an array of at most %d",
                       MF_CHECKIN_MAX_SWITCHES);
    cJSON_ArrayForEach(e, list)
    {
        err = parse_switch(&out[*n_out], ctx, e, now);
        if (err < 0)
            return err;
        (*n_out)++;
    }
    return MF_OK;
}

int mf_checkin_degrade__check(struct mf_ctx *ctx, const cJSON *root)
{
    struct mf_store_switch sw[MF_CHECKIN_MAX_SWITCHES];
    size_t n = 0;

    return mf_checkin_degrade__parse(sw, &n, ctx, root, 0);
}

int mf_checkin_degrade__store(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                              const cJSON *root, int64_t now)
{
    struct mf_store_switch sw[MF_CHECKIN_MAX_SWITCHES];
    size_t n = 0;
    int err = mf_checkin_degrade__parse(sw, &n, ctx, root, now);

    return err == MF_OK && n ? s->ops->devices->switches_add(s, ctx, device_id, sw, n) : err;
}
