/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent configuration parser (see agent_config.h). Keys are looked up in a static
 * table, so an unknown key (a typo such as "poll_interval") is an error rather than a
 * silently ignored setting.
 */
#include "agent_config.h"
#include "mf_json.h"
#include "mf/agent.h"
#include "mf/ct.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Largest max_recv_bytes_per_s: 1 TiB/s, or what a long holds where it has 32 bits (armhf,
 * where 1L << 40 overflows). */
#if LONG_MAX > 0x7fffffffL
#define RECV_RATE_MAX (1L << 40)
#else
#define RECV_RATE_MAX LONG_MAX
#endif

enum key_kind { KEY_STRING, KEY_MODELS, KEY_INT, KEY_LEVEL, KEY_BOOL, KEY_CONFIRM };

struct key_spec {
    const char *name;
    enum key_kind kind;
    size_t offset; /* of the char * (KEY_STRING), long (KEY_INT) or int (KEY_BOOL) field */
    int required;
    long min, max; /* KEY_INT */
};

static const struct key_spec keys[] = {
    {"server_url", KEY_STRING, offsetof(struct mf_agent_config, server_url), 1, 0, 0},
    {"device_id", KEY_STRING, offsetof(struct mf_agent_config, device_id), 1, 0, 0},
    {"enrollment_token_file", KEY_STRING, offsetof(struct mf_agent_config, enrollment_token_file),
     0, 0, 0},
    {"state_dir", KEY_STRING, offsetof(struct mf_agent_config, state_dir), 1, 0, 0},
    {"ca_file", KEY_STRING, offsetof(struct mf_agent_config, ca_file), 0, 0, 0},
    {"trust_root_file", KEY_STRING, offsetof(struct mf_agent_config, trust_root_file), 1, 0, 0},
    {"models", KEY_MODELS, 0, 1, 0, 0},
    {"poll_interval_s", KEY_INT, offsetof(struct mf_agent_config, poll_interval_s), 0, 1, 86400},
    {"log_level", KEY_LEVEL, 0, 0, 0, 0},
    {"confirm", KEY_CONFIRM, 0, 0, 0, 0},
    {"max_unconfirmed_starts", KEY_INT, offsetof(struct mf_agent_config, max_unconfirmed_starts), 0,
     1, 1000},
    {"metered", KEY_BOOL, offsetof(struct mf_agent_config, metered), 0, 0, 0},
    {"max_recv_bytes_per_s", KEY_INT, offsetof(struct mf_agent_config, max_recv_bytes_per_s), 0, 0,
     RECV_RATE_MAX},
    {"stall_timeout_s", KEY_INT, offsetof(struct mf_agent_config, stall_timeout_s), 0, 1, 3600},
    {"report_telemetry", KEY_BOOL, offsetof(struct mf_agent_config, report_telemetry), 0, 0, 0},
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
    case KEY_INT:
        if (!cJSON_IsNumber(v) || v->valuedouble < (double)k->min ||
            v->valuedouble > (double)k->max || v->valuedouble != (double)(long)v->valuedouble)
            return mf_fail(ctx, MF_E_INVALID, "%s: key \"%s\": expected an integer in %ld..%ld",
                           file, k->name, k->min, k->max);
        *(long *)((char *)c + k->offset) = (long)v->valuedouble;
        return MF_OK;
    case KEY_BOOL:
        if (!cJSON_IsBool(v))
            return mf_fail(ctx, MF_E_INVALID, "%s: key \"%s\": expected true or false", file,
                           k->name);
        *(int *)((char *)c + k->offset) = cJSON_IsTrue(v);
        return MF_OK;
    case KEY_CONFIRM:
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "auto") != 0 && strcmp(v->valuestring, "manual") != 0))
            return mf_fail(ctx, MF_E_INVALID,
                           "%s: key \"confirm\": expected \"auto\" or \"manual\"", file);
        c->confirm_manual = strcmp(v->valuestring, "manual") == 0;
        return MF_OK;
    case KEY_LEVEL:
        return set_level(c, ctx, file, v);
    }
    return MF_E_INVALID;
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
    cJSON *doc;
    int err;

    memset(out, 0, sizeof(*out));
    out->poll_interval_s = 60;
    out->log_level = MF_LOG_INFO;
    out->max_unconfirmed_starts = 3;
    out->stall_timeout_s = 60;
    /* On by default: a rollout advances only on devices that report (docs/agent.md). */
    out->report_telemetry = 1;
    /* The reader's message cites file, line and byte; len is bounded by read_file(). */
    err = mf_json__parse(&doc, ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, file);
    if (err < 0)
        return err;
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
