/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The distill config file (docs/distill.md):
 *   {"models": {"fashion": {"data": {...}, "trainer": {...}, "evaluator": {...}, "samples": {...},
 *                           "auto_samples": 500, "target_rate": 0.1, "gate_tolerance": 0,
 *                           "release": {...}, "rollout": {plan}}}}
 * Unknown keys are errors (a typo must not silently fall back to a default); every error
 * names the key.
 */
#include "distill/job/distill_job.h"
#include "common/argv_pack.h"
#include "mf_json.h"
#include "rollout/rollout_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX (256 * 1024)

static int bad(struct mf_ctx *ctx, const char *model, const char *key, const char *what)
{
    return mf_fail(ctx, MF_E_INVALID, "distill config: models.%s: '%s' %s", model, key, what);
}

static int only_keys(struct mf_ctx *ctx, const char *model, const cJSON *obj,
                     const char *const *keys)
{
    const cJSON *it;

    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "distill config: models.%s: expected an object", model);
    cJSON_ArrayForEach(it, obj)
    {
        size_t i = 0;

        while (keys[i] && strcmp(keys[i], it->string) != 0)
            i++;
        if (!keys[i])
            return bad(ctx, model, it->string, "is not a known key");
    }
    return MF_OK;
}

static int get_str(char *dst, size_t size, struct mf_ctx *ctx, const char *model, const cJSON *obj,
                   const char *key, int required)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!it && !required)
        return MF_OK;
    if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) >= size)
        return bad(ctx, model, key, "must be a non-empty string");
    (void)snprintf(dst, size, "%s", it->valuestring);
    return MF_OK;
}

static int get_num(double *dst, struct mf_ctx *ctx, const char *model, const cJSON *obj,
                   const char *key, double lo, double hi)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    char range[96];

    if (!it)
        return MF_OK;
    if (cJSON_IsNumber(it) && it->valuedouble >= lo && it->valuedouble <= hi) {
        *dst = it->valuedouble;
        return MF_OK;
    }
    (void)snprintf(range, sizeof(range), "must be a number in [%g, %g]", lo, hi);
    return bad(ctx, model, key, range);
}

static int get_count(uint64_t *dst, struct mf_ctx *ctx, const char *model, const cJSON *obj,
                     const char *key, double hi)
{
    double v = (double)*dst;
    int err = get_num(&v, ctx, model, obj, key, 0, hi);

    if (err == MF_OK && v != (double)(uint64_t)v)
        err = bad(ctx, model, key, "must be an integer");
    if (err == MF_OK)
        *dst = (uint64_t)v;
    return err;
}

static int parse_data(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *d)
{
    static const char *const keys[] = {"train_images",   "train_labels",  "heldout_images",
                                       "heldout_labels", "heldout_range", "seed_fraction",
                                       "calibration",    "split_seed",    NULL};
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(d, "heldout_range");
    uint64_t calib = m->calibration;
    int err = only_keys(ctx, m->model, d, keys);

    if (err == MF_OK)
        err =
            get_str(m->train_images, sizeof(m->train_images), ctx, m->model, d, "train_images", 1);
    if (err == MF_OK)
        err =
            get_str(m->train_labels, sizeof(m->train_labels), ctx, m->model, d, "train_labels", 1);
    if (err == MF_OK)
        err = get_str(m->heldout_images, sizeof(m->heldout_images), ctx, m->model, d,
                      "heldout_images", 1);
    if (err == MF_OK)
        err = get_str(m->heldout_labels, sizeof(m->heldout_labels), ctx, m->model, d,
                      "heldout_labels", 1);
    if (err == MF_OK)
        err = get_num(&m->seed_fraction, ctx, m->model, d, "seed_fraction", 0.001, 0.9);
    if (err == MF_OK)
        err = get_count(&calib, ctx, m->model, d, "calibration", 1e7);
    if (err == MF_OK)
        err = get_count(&m->split_seed, ctx, m->model, d, "split_seed", 9007199254740992.0);
    m->calibration = (size_t)calib;
    if (err == MF_OK && range) {
        const cJSON *a = cJSON_GetArrayItem(range, 0), *b = cJSON_GetArrayItem(range, 1);

        if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 || !cJSON_IsNumber(a) ||
            !cJSON_IsNumber(b) || a->valuedouble < 0 || b->valuedouble <= a->valuedouble ||
            b->valuedouble > 1e8)
            return bad(ctx, m->model, "heldout_range", "must be [begin, end) with begin < end");
        m->heldout_begin = (size_t)a->valuedouble;
        m->heldout_end = (size_t)b->valuedouble;
    }
    return err;
}

static int parse_argv(const char **argv, char *store, size_t size, struct mf_ctx *ctx,
                      const char *model, const char *key, const cJSON *arr)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 ||
        cJSON_GetArraySize(arr) > MF_DISTILL_ARGV_MAX)
        return bad(ctx, model, key, "must be 1..16 strings");
    if (mf_argv__pack(argv, store, size, arr) < 0)
        return bad(ctx, model, key, "has an empty or too long argument");
    return MF_OK;
}

/* "evaluator": {"command": [...], "timeout_s": 600, "outputs": "probabilities"|"logits"} */
static int parse_evaluator(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *e)
{
    static const char *const keys[] = {"command", "timeout_s", "outputs", NULL};
    const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(e, "outputs");
    uint64_t timeout = m->eval_timeout_s;
    int err = only_keys(ctx, m->model, e, keys);

    if (err == MF_OK)
        err =
            parse_argv(m->eval_argv, m->eval_argv_store, sizeof(m->eval_argv_store), ctx, m->model,
                       "evaluator.command", cJSON_GetObjectItemCaseSensitive(e, "command"));
    if (err == MF_OK)
        err = get_count(&timeout, ctx, m->model, e, "timeout_s", 86400);
    if (err == MF_OK && !timeout)
        err = bad(ctx, m->model, "evaluator.timeout_s", "must be positive");
    if (err == MF_OK && outputs &&
        !(cJSON_IsString(outputs) && (strcmp(outputs->valuestring, "probabilities") == 0 ||
                                      strcmp(outputs->valuestring, "logits") == 0)))
        err = bad(ctx, m->model, "evaluator.outputs", "must be \"probabilities\" or \"logits\"");
    m->eval_command = err == MF_OK;
    m->eval_timeout_s = (unsigned)timeout;
    m->eval_logits =
        outputs && cJSON_IsString(outputs) && strcmp(outputs->valuestring, "logits") == 0;
    return err;
}

static int parse_trainer(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *t)
{
    static const char *const keys[] = {"command",     "timeout_s",  "epochs", "hidden",
                                       "temperature", "warm_start", "seed",   NULL};
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(t, "command");
    const cJSON *warm = cJSON_GetObjectItemCaseSensitive(t, "warm_start");
    uint64_t timeout = m->timeout_s, epochs = m->epochs, hidden = m->hidden;
    double temp = m->temperature;
    int err = only_keys(ctx, m->model, t, keys);

    if (err == MF_OK && cmd)
        err = parse_argv(m->argv, m->argv_store, sizeof(m->argv_store), ctx, m->model,
                         "trainer.command", cmd);
    m->command = cmd && err == MF_OK;
    if (err == MF_OK)
        err = get_count(&timeout, ctx, m->model, t, "timeout_s", 86400);
    if (err == MF_OK)
        err = get_count(&epochs, ctx, m->model, t, "epochs", 1000);
    if (err == MF_OK)
        err = get_count(&hidden, ctx, m->model, t, "hidden", 128);
    if (err == MF_OK)
        err = get_num(&temp, ctx, m->model, t, "temperature", 0.05, 100);
    if (err == MF_OK)
        err = get_count(&m->train_seed, ctx, m->model, t, "seed", 9007199254740992.0);
    if (err == MF_OK && warm && !cJSON_IsBool(warm))
        err = bad(ctx, m->model, "trainer.warm_start", "must be true or false");
    if (err == MF_OK && (!epochs || !hidden || !timeout))
        err = bad(ctx, m->model, "trainer", "epochs, hidden and timeout_s must be positive");
    m->warm_start = warm ? cJSON_IsTrue(warm) : m->warm_start;
    m->timeout_s = (unsigned)timeout;
    m->epochs = (uint32_t)epochs;
    m->hidden = (uint32_t)hidden;
    m->temperature = (float)temp;
    return err;
}

static int parse_release(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *r)
{
    static const char *const keys[] = {"key",          "version_prefix", "security_floor",
                                       "expires_days", "chunk_size",     NULL};
    uint64_t days = m->expires_s / 86400, chunk = m->chunk_size;
    int err = only_keys(ctx, m->model, r, keys);

    if (err == MF_OK)
        err = get_str(m->release_key, sizeof(m->release_key), ctx, m->model, r, "key", 1);
    if (err == MF_OK)
        err = get_str(m->version_prefix, sizeof(m->version_prefix), ctx, m->model, r,
                      "version_prefix", 0);
    if (err == MF_OK)
        err = get_count(&m->security_floor, ctx, m->model, r, "security_floor", 9007199254740992.0);
    if (err == MF_OK)
        err = get_count(&days, ctx, m->model, r, "expires_days", 36500);
    if (err == MF_OK)
        err = get_count(&chunk, ctx, m->model, r, "chunk_size", 16u << 20);
    if (err == MF_OK && (!days || chunk < 4096))
        err = bad(ctx, m->model, "release", "expires_days must be >= 1 and chunk_size >= 4096");
    m->expires_s = days * 86400;
    m->chunk_size = (uint32_t)chunk;
    return err;
}

static void model_defaults(struct mf_distill_model_cfg *m, const char *name)
{
    memset(m, 0, sizeof(*m));
    (void)snprintf(m->model, sizeof(m->model), "%s", name);
    m->seed_fraction = 0.1;
    m->calibration = 5000;
    m->split_seed = 1;
    m->timeout_s = 600;
    m->eval_timeout_s = 600;
    m->epochs = 20;
    m->hidden = 32;
    m->temperature = 2.0f;
    m->train_seed = 1;
    m->min_teacher_confidence = 0.5;
    m->max_samples = 50000;
    m->target_rate = 0.1;
    m->gate_confidence = 0.95;
    (void)snprintf(m->version_prefix, sizeof(m->version_prefix), "d");
    m->expires_s = 365ull * 86400;
    m->chunk_size = 65536;
}

/* The canary plan, read as POST /v1/admin/rollouts reads it, so a typo fails the config
 * here and not the publish of a candidate hours later. */
static int check_plan(struct mf_ctx *ctx, const char *model, const cJSON *rollout)
{
    struct mf_rollout_plan *plan = mf_calloc(NULL, 1, sizeof(*plan));
    int err = plan ? mf_rollout__plan_parse(plan, ctx, rollout, MF_PLAN_STRICT)
                   : mf_fail(ctx, MF_E_NOMEM, "out of memory reading the distill config");

    char why[MF_ERRMSG_MAX];

    mf_free(NULL, plan);
    if (err != MF_E_INVALID)
        return err;
    (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(ctx));
    return mf_fail(ctx, err, "distill config: models.%s: 'rollout': %s", model, why);
}

/* "gate_test": "raw" (the point estimates) or "paired" (a confidence bound). */
static int parse_gate_test(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *t)
{
    if (!t)
        return MF_OK;
    if (cJSON_IsString(t) && strcmp(t->valuestring, "raw") == 0)
        m->gate_paired = 0;
    else if (cJSON_IsString(t) && strcmp(t->valuestring, "paired") == 0)
        m->gate_paired = 1;
    else
        return bad(ctx, m->model, "gate_test", "must be \"raw\" or \"paired\"");
    return MF_OK;
}

static int parse_model(struct mf_distill_model_cfg *m, struct mf_ctx *ctx, const cJSON *obj)
{
    static const char *const keys[] = {
        "data",           "trainer",   "evaluator",       "samples", "auto_samples", "target_rate",
        "gate_tolerance", "gate_test", "gate_confidence", "release", "rollout",      NULL};
    static const char *const sample_keys[] = {"min_teacher_confidence", "max", NULL};
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(obj, "samples");
    const cJSON *trainer = cJSON_GetObjectItemCaseSensitive(obj, "trainer");
    const cJSON *rollout = cJSON_GetObjectItemCaseSensitive(obj, "rollout");
    const cJSON *evaluator = cJSON_GetObjectItemCaseSensitive(obj, "evaluator");
    uint64_t auto_n = 0, max = m->max_samples;
    int err = only_keys(ctx, m->model, obj, keys);

    if (err == MF_OK)
        err = parse_data(m, ctx, cJSON_GetObjectItemCaseSensitive(obj, "data"));
    if (err == MF_OK && trainer)
        err = parse_trainer(m, ctx, trainer);
    if (err == MF_OK && evaluator)
        err = parse_evaluator(m, ctx, evaluator);
    if (err == MF_OK)
        err = parse_release(m, ctx, cJSON_GetObjectItemCaseSensitive(obj, "release"));
    if (err == MF_OK && samples)
        err = only_keys(ctx, m->model, samples, sample_keys);
    if (err == MF_OK && samples)
        err = get_num(&m->min_teacher_confidence, ctx, m->model, samples, "min_teacher_confidence",
                      0, 1);
    if (err == MF_OK && samples)
        err = get_count(&max, ctx, m->model, samples, "max", 1e7);
    if (err == MF_OK)
        err = get_count(&auto_n, ctx, m->model, obj, "auto_samples", 1e9);
    if (err == MF_OK)
        err = get_num(&m->target_rate, ctx, m->model, obj, "target_rate", 0.001, 0.999);
    if (err == MF_OK)
        err = get_num(&m->gate_tolerance, ctx, m->model, obj, "gate_tolerance", 0, 1);
    if (err == MF_OK)
        err = get_num(&m->gate_confidence, ctx, m->model, obj, "gate_confidence", 0.5, 0.9999);
    if (err == MF_OK)
        err = parse_gate_test(m, ctx, cJSON_GetObjectItemCaseSensitive(obj, "gate_test"));
    if (err == MF_OK && rollout && !cJSON_IsObject(rollout))
        err = bad(ctx, m->model, "rollout", "must be a rollout plan object (docs/rollouts.md)");
    if (err == MF_OK && rollout)
        err = check_plan(ctx, m->model, rollout);
    if (err == MF_OK && rollout) {
        m->rollout_plan = cJSON_PrintUnformatted(rollout);
        if (!m->rollout_plan)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory reading the distill config");
    }
    m->auto_samples = (size_t)auto_n;
    m->max_samples = (size_t)max;
    return err;
}

int mf_distill__config_parse(struct mf_distill_config *out, struct mf_ctx *ctx, const char *json,
                             size_t len)
{
    const cJSON *models, *it;
    cJSON *doc;
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_json__parse(&doc, ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, "distill config");
    if (err < 0)
        return err;
    models = cJSON_GetObjectItemCaseSensitive(doc, "models");
    if (!cJSON_IsObject(models) || cJSON_GetArraySize(doc) != 1)
        err = mf_fail(ctx, MF_E_INVALID, "distill config: expected {\"models\": {...}} only");
    cJSON_ArrayForEach(it, models)
    {
        if (err < 0)
            break;
        if (out->n == MF_DISTILL_MAX_MODELS || strlen(it->string) >= MF_STORE_NAME_SIZE ||
            !it->string[0]) {
            err = mf_fail(ctx, MF_E_INVALID, "distill config: too many models or a bad name");
            break;
        }
        model_defaults(&out->models[out->n], it->string);
        err = parse_model(&out->models[out->n], ctx, it);
        out->n++;
    }
    cJSON_Delete(doc);
    if (err < 0)
        mf_distill__config_free(out);
    return err;
}

int mf_distill__config_load(struct mf_distill_config *out, struct mf_ctx *ctx, const char *path)
{
    uint8_t *text = NULL;
    size_t len = 0;
    int err = mf_file_read_all(&text, &len, ctx, &ctx->alloc, path, CONFIG_MAX);

    memset(out, 0, sizeof(*out));
    if (err < 0)
        return err;
    err = mf_distill__config_parse(out, ctx, (const char *)text, len);
    mf_free(&ctx->alloc, text);
    return err;
}

void mf_distill__config_free(struct mf_distill_config *c)
{
    for (size_t i = 0; i < c->n; i++) {
        cJSON_free(c->models[i].rollout_plan);
        c->models[i].rollout_plan = NULL;
    }
    c->n = 0;
}

const struct mf_distill_model_cfg *mf_distill__config_model(const struct mf_distill_config *c,
                                                            const char *model)
{
    for (size_t i = 0; c && i < c->n; i++) {
        if (strcmp(c->models[i].model, model) == 0)
            return &c->models[i];
    }
    return NULL;
}
