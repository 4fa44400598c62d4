/* SPDX-License-Identifier: Apache-2.0 */
/* Request body parsers (see req_parse.h). */
#include "common/req_parse.h"

#include "common/names.h"
#include "store/store.h"

#include <string.h>

/* A required string member; NULL when absent or of another type. */
static const char *get_string(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* A member that is a string, null or absent (both: *out NULL); MF_E_INVALID otherwise. */
static int get_nullable(const char **out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    if (!it || cJSON_IsNull(it))
        return MF_OK;
    if (!cJSON_IsString(it))
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be a string or null", key);
    *out = it->valuestring;
    return MF_OK;
}

static int need_id(const char **out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    *out = get_string(obj, key);
    if (!*out)
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be a string", key);
    if (!mf_names__valid_id(*out))
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must match [A-Za-z0-9._-]{1,64}", key);
    return MF_OK;
}

static int need_sha256(const char **out, struct mf_ctx *ctx, const cJSON *obj, const char *key)
{
    *out = get_string(obj, key);
    if (!*out || !mf_names__valid_sha256(*out))
        return mf_fail(ctx, MF_E_INVALID, "field '%s' must be 64 lower-case hex digits", key);
    return MF_OK;
}

int mf_reqparse__enroll(struct mf_enroll_req *out, struct mf_ctx *ctx, const cJSON *root)
{
    memset(out, 0, sizeof(*out));
    out->enrollment_token = get_string(root, "enrollment_token");
    if (!out->enrollment_token)
        return mf_fail(ctx, MF_E_INVALID, "field 'enrollment_token' must be a string");
    return need_id(&out->device_id, ctx, root, "device_id");
}

/* pin, pending and rolled_back of one check-in model entry (all optional). */
static int parse_rollback_fields(struct mf_checkin_model *m, struct mf_ctx *ctx, const cJSON *it)
{
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(it, "pending");
    const cJSON *rb = cJSON_GetObjectItemCaseSensitive(it, "rolled_back");
    const cJSON *e;
    int err = get_nullable(&m->pin, ctx, it, "pin");

    if (err < 0)
        return err;
    if (m->pin && !mf_names__valid_id(m->pin))
        return mf_fail(ctx, MF_E_INVALID, "pin of model '%s' is not a valid version", m->name);
    if (pending && !cJSON_IsNull(pending) && !cJSON_IsBool(pending))
        return mf_fail(ctx, MF_E_INVALID, "pending of model '%s' must be a boolean", m->name);
    m->pending = cJSON_IsTrue(pending);
    m->n_rolled_back = 0;
    if (!rb || cJSON_IsNull(rb))
        return MF_OK;
    if (!cJSON_IsArray(rb) || cJSON_GetArraySize(rb) > MF_CHECKIN_MAX_ROLLED_BACK)
        return mf_fail(ctx, MF_E_INVALID,
                       "rolled_back of model '%s' must be an array of at most %d", m->name,
                       MF_CHECKIN_MAX_ROLLED_BACK);
    cJSON_ArrayForEach(e, rb)
    {
        const char *sha = cJSON_IsObject(e) ? get_string(e, "sha256") : NULL;

        if (!sha || !mf_names__valid_sha256(sha))
            return mf_fail(ctx, MF_E_INVALID,
                           "rolled_back of model '%s' needs objects with a 64-hex sha256", m->name);
        m->rolled_back[m->n_rolled_back++] = sha;
    }
    return MF_OK;
}

static int parse_checkin_model(struct mf_checkin_model *m, struct mf_ctx *ctx, const cJSON *it)
{
    int err;

    if (!cJSON_IsObject(it))
        return mf_fail(ctx, MF_E_INVALID, "every entry of 'models' must be an object");
    err = need_id(&m->name, ctx, it, "name");
    if (err == MF_OK)
        err = get_nullable(&m->version, ctx, it, "version");
    if (err == MF_OK)
        err = get_nullable(&m->sha256, ctx, it, "sha256");
    if (err == MF_OK)
        err = get_nullable(&m->release_sha256, ctx, it, "release_sha256");
    if (err == MF_OK)
        err = get_nullable(&m->fallback_sha256, ctx, it, "fallback_sha256");
    if (err < 0)
        return err;
    if (m->fallback_sha256 && !mf_names__valid_sha256(m->fallback_sha256))
        return mf_fail(ctx, MF_E_INVALID,
                       "fallback_sha256 of model '%s' is not 64 lower-case hex digits", m->name);
    if (m->version && !mf_names__valid_id(m->version))
        return mf_fail(ctx, MF_E_INVALID, "version of model '%s' is not a valid name", m->name);
    if (m->sha256 && !mf_names__valid_sha256(m->sha256))
        return mf_fail(ctx, MF_E_INVALID, "sha256 of model '%s' is not 64 lower-case hex digits",
                       m->name);
    if (m->release_sha256 && (!m->sha256 || !mf_names__valid_sha256(m->release_sha256)))
        return mf_fail(ctx, MF_E_INVALID,
                       "release_sha256 of model '%s' must be 64 lower-case hex digits, beside "
                       "the sha256 of what it runs",
                       m->name);
    return parse_rollback_fields(m, ctx, it);
}

/* Whether `v` is a number holding an integer in 0..max (max at most 2^53, exact in JSON);
 * when it is, the integer into *out. */
static int whole_number(uint64_t *out, const cJSON *v, double max)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > max ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

/* Optional non-negative integer `key` (absent or null: 0), at most 2^53. */
static int get_version(uint64_t *out, struct mf_ctx *ctx, const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

    *out = 0;
    if (!v || cJSON_IsNull(v) || whole_number(out, v, 9007199254740992.0))
        return MF_OK;
    return mf_fail(ctx, MF_E_INVALID, "field '%s' must be an integer in 0..2^53", key);
}

/* A MiB count of "device_class": a required integer in 0..MF_DEVICE_CLASS_MB_MAX. */
static int class_mb(uint64_t *out, struct mf_ctx *ctx, const cJSON *cls, const char *key)
{
    if (whole_number(out, cJSON_GetObjectItemCaseSensitive(cls, key),
                     (double)MF_DEVICE_CLASS_MB_MAX))
        return MF_OK;
    return mf_fail(ctx, MF_E_INVALID, "device_class.%s must be an integer in 0..2^40 (MiB)", key);
}

/* An optional name of "device_class" (absent or null: ""). */
static int class_name(const char **out, struct mf_ctx *ctx, const cJSON *cls, const char *key)
{
    int err = get_nullable(out, ctx, cls, key);

    if (err < 0)
        return mf_fail(ctx, MF_E_INVALID, "device_class.%s must be a string or null", key);
    if (*out && !mf_names__valid_id(*out))
        return mf_fail(ctx, MF_E_INVALID, "device_class.%s must match [A-Za-z0-9._-]{1,64}", key);
    if (!*out)
        *out = "";
    return MF_OK;
}

static int class_flag(int *out, struct mf_ctx *ctx, const cJSON *cls, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cls, key);

    if (v && !cJSON_IsBool(v))
        return mf_fail(ctx, MF_E_INVALID, "device_class.%s must be a boolean", key);
    *out = cJSON_IsTrue(v);
    return MF_OK;
}

const char *mf_reqparse__unknown_key(const cJSON *obj, const char *const *known)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, obj)
    {
        size_t i = 0;

        while (known[i] && strcmp(known[i], m->string) != 0)
            i++;
        if (!known[i])
            return m->string;
    }
    return NULL;
}

/* "device_class" (optional): every member checked, an unknown one refused. */
static int parse_device_class(struct mf_device_class *out, struct mf_ctx *ctx, const cJSON *root)
{
    static const char *const keys[] = {"tag",  "ram_mb", "storage_mb", "accelerator",
                                       "int8", "fp16",   NULL};
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(root, "device_class");
    const char *unknown;
    int err;

    memset(out, 0, sizeof(*out));
    out->tag = out->accelerator = "";
    if (!cls || cJSON_IsNull(cls))
        return MF_OK;
    if (!cJSON_IsObject(cls))
        return mf_fail(ctx, MF_E_INVALID, "field 'device_class' must be an object");
    unknown = mf_reqparse__unknown_key(cls, keys);
    if (unknown)
        return mf_fail(ctx, MF_E_INVALID, "device_class: unknown key '%s'", unknown);
    err = class_mb(&out->ram_mb, ctx, cls, "ram_mb");
    if (err == MF_OK)
        err = class_mb(&out->storage_mb, ctx, cls, "storage_mb");
    if (err == MF_OK)
        err = class_name(&out->tag, ctx, cls, "tag");
    if (err == MF_OK)
        err = class_name(&out->accelerator, ctx, cls, "accelerator");
    if (err == MF_OK)
        err = class_flag(&out->int8, ctx, cls, "int8");
    if (err == MF_OK)
        err = class_flag(&out->fp16, ctx, cls, "fp16");
    out->declared = err == MF_OK;
    return err;
}

int mf_reqparse__checkin(struct mf_checkin_req *out, struct mf_ctx *ctx, const cJSON *root)
{
    const cJSON *models, *it;
    int err;

    out->n_models = 0;
    out->nonce = get_string(root, "nonce");
    if (!out->nonce || !mf_names__valid_nonce(out->nonce))
        return mf_fail(ctx, MF_E_INVALID, "field 'nonce' must be 32 hex digits");
    err = get_version(&out->root_version, ctx, root, "root_version");
    if (err == MF_OK)
        err = get_version(&out->keys_version, ctx, root, "keys_version");
    if (err == MF_OK)
        err = parse_device_class(&out->device_class, ctx, root);
    if (err < 0)
        return err;
    it = cJSON_GetObjectItemCaseSensitive(root, "compressed_full");
    if (it && !cJSON_IsNull(it) && !cJSON_IsBool(it))
        return mf_fail(ctx, MF_E_INVALID, "field 'compressed_full' must be a boolean");
    out->compressed_full = cJSON_IsTrue(it);
    models = cJSON_GetObjectItemCaseSensitive(root, "models");
    if (!cJSON_IsArray(models))
        return mf_fail(ctx, MF_E_INVALID, "field 'models' must be an array");
    cJSON_ArrayForEach(it, models)
    {
        struct mf_checkin_model *m = &out->models[out->n_models];

        if (out->n_models == MF_CHECKIN_MAX_MODELS)
            return mf_fail(ctx, MF_E_INVALID, "more than %d models in one check-in",
                           MF_CHECKIN_MAX_MODELS);
        err = parse_checkin_model(m, ctx, it);
        if (err < 0)
            return err;
        for (size_t i = 0; i < out->n_models; i++) {
            if (strcmp(out->models[i].name, m->name) == 0)
                return mf_fail(ctx, MF_E_INVALID, "model '%s' is listed twice", m->name);
        }
        out->n_models++;
    }
    return MF_OK;
}

int mf_reqparse__report(struct mf_report_req *out, struct mf_ctx *ctx, const cJSON *root)
{
    const cJSON *detail;
    int err;

    memset(out, 0, sizeof(*out));
    err = need_id(&out->model, ctx, root, "model");
    if (err == MF_OK)
        err = need_id(&out->version, ctx, root, "version");
    if (err == MF_OK)
        err = need_sha256(&out->sha256, ctx, root, "sha256");
    if (err < 0)
        return err;
    out->status = get_string(root, "status");
    /* pending_install: downloaded and verified, waiting for the group's install window. */
    if (!out->status ||
        (strcmp(out->status, "installed") != 0 && strcmp(out->status, "failed") != 0 &&
         strcmp(out->status, "pending_install") != 0))
        return mf_fail(ctx, MF_E_INVALID,
                       "field 'status' must be \"installed\", \"failed\" or \"pending_install\"");
    detail = cJSON_GetObjectItemCaseSensitive(root, "detail");
    if (!detail || cJSON_IsNull(detail)) {
        out->detail = "";
    } else if (!cJSON_IsString(detail)) {
        return mf_fail(ctx, MF_E_INVALID, "field 'detail' must be a string");
    } else if (strlen(detail->valuestring) > MF_STORE_DETAIL_MAX) {
        return mf_fail(ctx, MF_E_INVALID, "field 'detail' exceeds %d bytes", MF_STORE_DETAIL_MAX);
    } else {
        out->detail = detail->valuestring;
    }
    return MF_OK;
}
