/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload configuration file and the service built from it (see offload_srv.h):
 *   {"retention_days": 90,
 *    "models": {"digits": {"teacher": {"connector": "kserve", ...}, "policy": {...}}}}
 * Parsing is kept apart from what acts on it (STYLE rule 34); every error names the key.
 */
#include "offload/offload_srv.h"
#include "common/argv_pack.h"
#include "mf_json.h"

#include "mf_dynbuf.h"

#include <stdio.h>
#include <string.h>

#define CONFIG_MAX (256 * 1024)

struct mf_offload_srv {
    mf_allocator alloc;
    struct mf_offload_config cfg;
    struct mf_teacher *teachers[MF_OFFLOAD_SRV_MAX_MODELS];
};

/* Keys of a v1 policy object the server may send (docs/protocol-offload.md); threshold
 * and model_version are added per device by the check-in. */
static const char *const policy_keys[] = {
    "enabled",   "method",  "mode",        "threshold",     "target_rate",    "temperature",
    "rate_caps", "metered", "deadline_ms", "bytes_per_day", "audit_fraction", NULL};

static int copy_str(char *dst, size_t size, struct mf_ctx *ctx, const cJSON *obj, const char *key,
                    const char *model, int required)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!it && !required)
        return MF_OK;
    if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) >= size)
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s: '%s' must be a string of"
                       " 1..%zu characters",
                       model, key, size - 1);
    (void)snprintf(dst, size, "%s", it->valuestring);
    return MF_OK;
}

static int read_uint(unsigned *dst, struct mf_ctx *ctx, const cJSON *obj, const char *key,
                     const char *model, unsigned max)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!it)
        return MF_OK;
    if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > max ||
        it->valuedouble != (double)(unsigned)it->valuedouble)
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: %s: '%s' must be an integer in"
                       " [0, %u]",
                       model, key, max);
    *dst = (unsigned)it->valuedouble;
    return MF_OK;
}

static int parse_argv(struct mf_teacher_config *t, struct mf_ctx *ctx, const cJSON *arr)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 ||
        cJSON_GetArraySize(arr) > MF_TEACHER_ARGV_MAX)
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s.teacher: 'command' must be 1..%d strings",
                       t->model, MF_TEACHER_ARGV_MAX);
    if (mf_argv__pack(t->argv, t->argv_store, sizeof(t->argv_store), arr) < 0)
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s.teacher: bad or too long 'command'", t->model);
    return MF_OK;
}

static int parse_teacher(struct mf_offload_model_cfg *m, struct mf_ctx *ctx, const cJSON *t)
{
    struct mf_teacher_config *c = &m->teacher;
    const cJSON *conn = cJSON_GetObjectItemCaseSensitive(t, "connector");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(t, "output");
    int err;

    if (!cJSON_IsObject(t) || !cJSON_IsString(conn))
        return mf_fail(ctx, MF_E_INVALID, "offload config: models.%s.teacher needs a 'connector'",
                       m->name);
    mf_teacher__config_init(c, m->name, conn->valuestring);
    c->output_logits = strcmp(conn->valuestring, "builtin") == 0;
    if (out && (!cJSON_IsString(out) || (strcmp(out->valuestring, "probs") != 0 &&
                                         strcmp(out->valuestring, "logits") != 0)))
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s.teacher: 'output' is probs or logits", m->name);
    if (out)
        c->output_logits = strcmp(out->valuestring, "logits") == 0;
    err = copy_str(c->version, sizeof(c->version), ctx, t, "version", m->name, 0);
    if (err == MF_OK)
        err = copy_str(c->url, sizeof(c->url), ctx, t, "url", m->name, 0);
    if (err == MF_OK)
        err = copy_str(c->remote_name, sizeof(c->remote_name), ctx, t, "name", m->name, 0);
    if (err == MF_OK)
        err = copy_str(c->input_name, sizeof(c->input_name), ctx, t, "input_name", m->name, 0);
    if (err == MF_OK)
        err = copy_str(c->datatype, sizeof(c->datatype), ctx, t, "datatype", m->name, 0);
    if (err == MF_OK)
        err = copy_str(c->path, sizeof(c->path), ctx, t, "path", m->name, 0);
    if (err == MF_OK && cJSON_GetObjectItemCaseSensitive(t, "command"))
        err = parse_argv(c, ctx, cJSON_GetObjectItemCaseSensitive(t, "command"));
    if (err == MF_OK)
        err = read_uint(&c->timeout_ms, ctx, t, "timeout_ms", m->name, 600000);
    if (err == MF_OK)
        err = read_uint(&c->concurrency, ctx, t, "concurrency", m->name, 1024);
    if (err == MF_OK)
        err = read_uint(&c->breaker_failures, ctx, t, "breaker_failures", m->name, 1000);
    if (err == MF_OK)
        err = read_uint(&c->breaker_open_ms, ctx, t, "breaker_open_ms", m->name, 3600000);
    m->has_teacher = err == MF_OK;
    return err;
}

static int known_key(const char *k)
{
    for (size_t i = 0; policy_keys[i]; i++) {
        if (strcmp(policy_keys[i], k) == 0)
            return 1;
    }
    return 0;
}

static int parse_policy(struct mf_offload_model_cfg *m, struct mf_ctx *ctx, const cJSON *p)
{
    const cJSON *it, *en, *method, *rate;
    char *text;

    if (!cJSON_IsObject(p))
        return mf_fail(ctx, MF_E_INVALID, "offload config: models.%s.policy is not an object",
                       m->name);
    cJSON_ArrayForEach(it, p)
    {
        if (!known_key(it->string))
            return mf_fail(ctx, MF_E_INVALID,
                           "offload config: models.%s.policy: unknown key"
                           " '%s'",
                           m->name, it->string);
    }
    en = cJSON_GetObjectItemCaseSensitive(p, "enabled");
    if (!cJSON_IsBool(en))
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s.policy: 'enabled' (bool) is required", m->name);
    method = cJSON_GetObjectItemCaseSensitive(p, "method");
    (void)snprintf(m->method, sizeof(m->method), "%s",
                   cJSON_IsString(method) ? method->valuestring : "max_softmax");
    if (strcmp(m->method, "max_softmax") != 0 && strcmp(m->method, "margin") != 0 &&
        strcmp(m->method, "entropy") != 0)
        return mf_fail(ctx, MF_E_INVALID, "offload config: models.%s.policy: unknown method '%s'",
                       m->name, m->method);
    rate = cJSON_GetObjectItemCaseSensitive(p, "target_rate");
    if (rate && (!cJSON_IsNumber(rate) || rate->valuedouble < 0 || rate->valuedouble > 1))
        return mf_fail(ctx, MF_E_INVALID,
                       "offload config: models.%s.policy: 'target_rate' must be in [0, 1]",
                       m->name);
    m->target_rate = rate ? rate->valuedouble : 0.0;
    m->fixed_threshold = cJSON_GetObjectItemCaseSensitive(p, "threshold") != NULL;
    m->threshold = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "threshold"));
    text = cJSON_PrintUnformatted(p);
    if (!text || strlen(text) >= sizeof(m->policy)) {
        cJSON_free(text);
        return mf_fail(ctx, MF_E_LIMIT, "offload config: models.%s.policy is too long", m->name);
    }
    (void)snprintf(m->policy, sizeof(m->policy), "%s", text);
    cJSON_free(text);
    return MF_OK;
}

static int parse_model(struct mf_offload_model_cfg *m, struct mf_ctx *ctx, const cJSON *obj)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "teacher");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "policy");
    int err = MF_OK;

    if (!cJSON_IsObject(obj) || strlen(obj->string) >= sizeof(m->name))
        return mf_fail(ctx, MF_E_INVALID, "offload config: models.%.64s is not an object",
                       obj->string);
    (void)snprintf(m->name, sizeof(m->name), "%s", obj->string);
    (void)snprintf(m->method, sizeof(m->method), "%s", "max_softmax");
    if (t)
        err = parse_teacher(m, ctx, t);
    if (err == MF_OK && p)
        err = parse_policy(m, ctx, p);
    return err;
}

int mf_offsrv__config_parse(struct mf_offload_config *out, struct mf_ctx *ctx, const char *json,
                            size_t len)
{
    const cJSON *models, *it;
    cJSON *root;
    int err;

    memset(out, 0, sizeof(*out));
    err =
        mf_json__parse_object(&root, ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, "offload config");
    if (err < 0)
        return err;
    err = read_uint(&out->retention_days, ctx, root, "retention_days", "(top)", 36500);
    models = cJSON_GetObjectItemCaseSensitive(root, "models");
    if (err == MF_OK && models && !cJSON_IsObject(models))
        err = mf_fail(ctx, MF_E_INVALID, "offload config: 'models' is not an object");
    cJSON_ArrayForEach(it, models)
    {
        if (err < 0)
            break;
        if (out->n == MF_OFFLOAD_SRV_MAX_MODELS) {
            err = mf_fail(ctx, MF_E_LIMIT, "offload config: more than %d models",
                          MF_OFFLOAD_SRV_MAX_MODELS);
            break;
        }
        err = parse_model(&out->models[out->n++], ctx, it);
    }
    cJSON_Delete(root);
    return err;
}

int mf_offsrv__config_load(struct mf_offload_config *out, struct mf_ctx *ctx, const char *path)
{
    struct mf_dynbuf b;
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;
    int err = MF_OK;

    if (!f)
        return mf_fail(ctx, MF_E_IO, "cannot open offload config '%s'", path);
    mf_dynbuf__init(&b, &ctx->alloc, CONFIG_MAX);
    while (err == MF_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        err = mf_dynbuf__append(&b, chunk, n);
    (void)fclose(f);
    if (err < 0)
        err = mf_fail(ctx, err, "offload config '%s' exceeds %d bytes", path, CONFIG_MAX - 1);
    else
        err = mf_offsrv__config_parse(out, ctx, (const char *)b.data, b.len);
    mf_dynbuf__free(&b);
    return err;
}

int mf_offsrv__srv_new(struct mf_offload_srv **out, struct mf_ctx *ctx,
                       const struct mf_offload_config *cfg)
{
    struct mf_offload_srv *srv = mf_calloc(&ctx->alloc, 1, sizeof(*srv));
    int err = MF_OK;

    *out = NULL;
    if (!srv)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory starting offload");
    srv->alloc = ctx->alloc;
    srv->cfg = *cfg;
    for (size_t i = 0; err == MF_OK && i < cfg->n; i++) {
        if (cfg->models[i].has_teacher)
            err = mf_teacher__new(&srv->teachers[i], ctx, &cfg->models[i].teacher);
    }
    if (err < 0) {
        mf_offsrv__srv_free(srv);
        return err;
    }
    *out = srv;
    return MF_OK;
}

void mf_offsrv__srv_free(struct mf_offload_srv *srv)
{
    mf_allocator alloc;

    if (!srv)
        return;
    for (size_t i = 0; i < MF_OFFLOAD_SRV_MAX_MODELS; i++)
        mf_teacher__free(srv->teachers[i]);
    alloc = srv->alloc;
    mf_free(&alloc, srv);
}

const struct mf_offload_config *mf_offsrv__srv_config(const struct mf_offload_srv *srv)
{
    return &srv->cfg;
}

static long model_index(const struct mf_offload_srv *srv, const char *model)
{
    for (size_t i = 0; srv && i < srv->cfg.n; i++) {
        if (strcmp(srv->cfg.models[i].name, model) == 0)
            return (long)i;
    }
    return -1;
}

const struct mf_offload_model_cfg *mf_offsrv__model(const struct mf_offload_srv *srv,
                                                    const char *model)
{
    long i = model_index(srv, model);

    return i < 0 ? NULL : &srv->cfg.models[i];
}

struct mf_teacher *mf_offsrv__teacher(const struct mf_offload_srv *srv, const char *model)
{
    long i = model_index(srv, model);

    return i < 0 ? NULL : srv->teachers[i];
}
