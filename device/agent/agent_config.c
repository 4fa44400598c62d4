/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent configuration parser (see agent_config.h). Keys are looked up in a static
 * table, so an unknown key (a typo such as "poll_interval") is an error rather than a
 * silently ignored setting.
 */
#include "agent_config.h"
#include "mf/agent.h"
#include "mf/ct.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

enum key_kind { KEY_STRING, KEY_MODELS, KEY_INTERVAL, KEY_LEVEL };

struct key_spec {
    const char *name;
    enum key_kind kind;
    size_t offset; /* of the char * field, for KEY_STRING */
    int required;
};

static const struct key_spec keys[] = {
    {"server_url", KEY_STRING, offsetof(struct mf_agent_config, server_url), 1},
    {"device_id", KEY_STRING, offsetof(struct mf_agent_config, device_id), 1},
    {"enrollment_token_file", KEY_STRING, offsetof(struct mf_agent_config, enrollment_token_file),
     0},
    {"state_dir", KEY_STRING, offsetof(struct mf_agent_config, state_dir), 1},
    {"ca_file", KEY_STRING, offsetof(struct mf_agent_config, ca_file), 0},
    {"trust_root_file", KEY_STRING, offsetof(struct mf_agent_config, trust_root_file), 1},
    {"models", KEY_MODELS, 0, 1},
    {"poll_interval_s", KEY_INTERVAL, 0, 0},
    {"log_level", KEY_LEVEL, 0, 0},
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static int set_string(struct mf_agent_config *c, struct mf_ctx *ctx, const char *file,
                      const struct key_spec *k, const cJSON *v)
{
    char **field = (char **)((char *)c + k->offset);

    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > 4096)
        return mf_fail(ctx, MF_E_INVALID, "%s: key \"%s\": expected a non-empty string", file,
                       k->name);
    *field = mf_strdup(&ctx->alloc, v->valuestring);
    if (!*field)
        return mf_fail(ctx, MF_E_NOMEM, "%s: key \"%s\": no memory", file, k->name);
    return MF_OK;
}

static int set_models(struct mf_agent_config *c, struct mf_ctx *ctx, const char *file,
                      const cJSON *v)
{
    int n = cJSON_GetArraySize(v);
    const cJSON *item;
    size_t i = 0;

    if (!cJSON_IsArray(v) || n < 1 || n > MF_AGENT_MAX_MODELS)
        return mf_fail(ctx, MF_E_INVALID, "%s: key \"models\": expected an array of 1..%d names",
                       file, MF_AGENT_MAX_MODELS);
    c->models = mf_calloc(&ctx->alloc, (size_t)n, sizeof(*c->models));
    if (!c->models)
        return mf_fail(ctx, MF_E_NOMEM, "%s: key \"models\": no memory", file);
    cJSON_ArrayForEach(item, v)
    {
        if (!cJSON_IsString(item))
            return mf_fail(ctx, MF_E_INVALID, "%s: key \"models\"[%zu]: expected a string", file,
                           i);
        c->models[i] = mf_strdup(&ctx->alloc, item->valuestring);
        if (!c->models[i])
            return mf_fail(ctx, MF_E_NOMEM, "%s: key \"models\": no memory", file);
        c->n_models = ++i;
    }
    return MF_OK;
}

static int set_level(struct mf_agent_config *c, struct mf_ctx *ctx, const char *file,
                     const cJSON *v)
{
    for (int level = MF_LOG_ERROR; level <= MF_LOG_TRACE; level++) {
        if (cJSON_IsString(v) && strcmp(v->valuestring, mf_log_level_name(level)) == 0) {
            c->log_level = level;
            return MF_OK;
        }
    }
    return mf_fail(ctx, MF_E_INVALID,
                   "%s: key \"log_level\": expected \"error\", \"warn\", \"info\", \"debug\" or "
                   "\"trace\"",
                   file);
}

static int set_key(struct mf_agent_config *c, struct mf_ctx *ctx, const char *file,
                   const struct key_spec *k, const cJSON *v)
{
    switch (k->kind) {
    case KEY_STRING:
        return set_string(c, ctx, file, k, v);
    case KEY_MODELS:
        return set_models(c, ctx, file, v);
    case KEY_INTERVAL:
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 86400 ||
            v->valuedouble != (double)(long)v->valuedouble)
            return mf_fail(ctx, MF_E_INVALID,
                           "%s: key \"poll_interval_s\": expected an integer in 1..86400", file);
        c->poll_interval_s = (long)v->valuedouble;
        return MF_OK;
    case KEY_LEVEL:
        return set_level(c, ctx, file, v);
    }
    return MF_E_INVALID;
}

/* 1-based line of `pos` inside `json`, for syntax errors. */
static int line_of(const char *json, size_t len, const char *pos)
{
    int line = 1;

    for (const char *p = json; p < json + len && p < pos; p++)
        line += *p == '\n';
    return line;
}

static int parse_doc(struct mf_agent_config *out, struct mf_ctx *ctx, const char *file,
                     const cJSON *doc)
{
    unsigned seen = 0;
    const cJSON *item;

    if (!cJSON_IsObject(doc))
        return mf_fail(ctx, MF_E_INVALID, "%s: expected a JSON object", file);
    cJSON_ArrayForEach(item, doc)
    {
        size_t i;
        int err;

        for (i = 0; i < N_KEYS && strcmp(keys[i].name, item->string) != 0; i++)
            ;
        if (i == N_KEYS)
            return mf_fail(ctx, MF_E_INVALID, "%s: unknown key \"%s\"", file, item->string);
        if (seen & (1u << i))
            return mf_fail(ctx, MF_E_INVALID, "%s: key \"%s\" given twice", file, item->string);
        seen |= 1u << i;
        err = set_key(out, ctx, file, &keys[i], item);
        if (err < 0)
            return err;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].required && !(seen & (1u << i)))
            return mf_fail(ctx, MF_E_INVALID, "%s: missing key \"%s\"", file, keys[i].name);
    }
    return MF_OK;
}

int mf_agent_config__parse(struct mf_agent_config *out, struct mf_ctx *ctx, const char *file,
                           const char *json, size_t len)
{
    const char *end = NULL;
    cJSON *doc;
    int err;

    memset(out, 0, sizeof(*out));
    out->poll_interval_s = 60;
    out->log_level = MF_LOG_INFO;
    doc = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!doc)
        return mf_fail(ctx, MF_E_INVALID, "%s: line %d: not valid JSON", file,
                       line_of(json, len, end));
    err = parse_doc(out, ctx, file, doc);
    cJSON_Delete(doc);
    if (err < 0)
        mf_agent_config__free(out, ctx);
    return err;
}

/* Reads at most `cap - 1` bytes of `path` into `buf`; MF_E_LIMIT when the file is longer. */
static int read_file(char *buf, size_t cap, size_t *len_out, struct mf_ctx *ctx, const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    *len_out = 0;
    if (!f)
        return mf_fail(ctx, MF_E_IO, "%s: cannot open", path);
    n = fread(buf, 1, cap, f);
    if (ferror(f)) {
        (void)fclose(f);
        return mf_fail(ctx, MF_E_IO, "%s: read error", path);
    }
    (void)fclose(f);
    if (n >= cap)
        return mf_fail(ctx, MF_E_LIMIT, "%s: longer than %zu bytes", path, cap - 1);
    buf[n] = '\0';
    *len_out = n;
    return MF_OK;
}

int mf_agent_config__load(struct mf_agent_config *out, struct mf_ctx *ctx, const char *path)
{
    char *buf = mf_alloc(&ctx->alloc, MF_AGENT_CONFIG_MAX_BYTES + 1);
    size_t len = 0;
    int err;

    memset(out, 0, sizeof(*out));
    if (!buf)
        return mf_fail(ctx, MF_E_NOMEM, "%s: no memory to read it", path);
    err = read_file(buf, MF_AGENT_CONFIG_MAX_BYTES + 1, &len, ctx, path);
    if (err >= 0)
        err = mf_agent_config__parse(out, ctx, path, buf, len);
    mf_free(&ctx->alloc, buf);
    return err;
}

int mf_agent_config__read_file(char *out, size_t cap, size_t *len_out, struct mf_ctx *ctx,
                               const char *path)
{
    return read_file(out, cap, len_out, ctx, path);
}

int mf_agent_config__read_secret(char *out, size_t cap, struct mf_ctx *ctx, const char *path)
{
    size_t len = 0;
    int err = read_file(out, cap, &len, ctx, path);

    if (err < 0) {
        mf_secure_zero(out, cap);
        return err;
    }
    len = strcspn(out, "\r\n");
    out[len] = '\0';
    if (len == 0)
        return mf_fail(ctx, MF_E_INVALID, "%s: empty", path);
    return MF_OK;
}

void mf_agent_config__free(struct mf_agent_config *c, struct mf_ctx *ctx)
{
    mf_free(&ctx->alloc, c->server_url);
    mf_free(&ctx->alloc, c->device_id);
    mf_free(&ctx->alloc, c->enrollment_token_file);
    mf_free(&ctx->alloc, c->state_dir);
    mf_free(&ctx->alloc, c->ca_file);
    mf_free(&ctx->alloc, c->trust_root_file);
    for (size_t i = 0; i < c->n_models; i++)
        mf_free(&ctx->alloc, c->models[i]);
    mf_free(&ctx->alloc, c->models);
    memset(c, 0, sizeof(*c));
}
