/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample object both device routes carry (docs/protocol-offload.md, "Sample object"),
 * checked field by field, and its input stored as a content-addressed blob.
 */
#include "offload/offload_srv.h"

#include "common/names.h"
#include "manifest_common.h"
#include "mf_dynbuf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mf_offsrv__is_id(const char *s)
{
    size_t n = 0;

    for (; s[n]; n++) {
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    }
    return n == MF_STORE_SAMPLE_ID_LEN;
}

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int one_of(const char *s, const char *a, const char *b, const char *c)
{
    return s && (strcmp(s, a) == 0 || strcmp(s, b) == 0 || (c && strcmp(s, c) == 0));
}

static int parse_names(struct mf_offload_sample_in *out, struct mf_ctx *ctx, const cJSON *obj)
{
    struct mf_store_sample *r = &out->row;
    const char *id = get_str(obj, "id"), *kind = get_str(obj, "kind");
    const char *model = get_str(obj, "model"), *ver = get_str(obj, "model_version");
    const char *method = get_str(obj, "method"), *okind = get_str(obj, "output_kind");

    if (!id || !mf_offsrv__is_id(id))
        return mf_fail(ctx, MF_E_INVALID, "sample: 'id' must be 32 lower-case hex digits");
    if (!one_of(kind, "hard", "audit", NULL))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'kind' must be hard or audit", id);
    if (!model || !mf_names__valid_id(model) || !ver || !mf_names__valid_id(ver))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'model' and 'model_version' must be names",
                       id);
    if (!one_of(method, "max_softmax", "margin", "entropy"))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: unknown 'method'", id);
    if (!one_of(okind, "logits", "probs", NULL))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'output_kind' must be logits or probs", id);
    (void)snprintf(r->id, sizeof(r->id), "%s", id);
    (void)snprintf(r->kind, sizeof(r->kind), "%s", kind);
    (void)snprintf(r->model, sizeof(r->model), "%s", model);
    (void)snprintf(r->model_version, sizeof(r->model_version), "%s", ver);
    (void)snprintf(r->method, sizeof(r->method), "%s", method);
    (void)snprintf(r->output_kind, sizeof(r->output_kind), "%s", okind);
    return MF_OK;
}

static int parse_numbers(struct mf_offload_sample_in *out, struct mf_ctx *ctx, const cJSON *obj)
{
    struct mf_store_sample *r = &out->row;
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(obj, "score");
    const cJSON *created = cJSON_GetObjectItemCaseSensitive(obj, "created_at");
    const cJSON *output = cJSON_GetObjectItemCaseSensitive(obj, "output"), *it;
    struct mf_dynbuf b;
    int err = MF_OK;

    if (!cJSON_IsNumber(score) || !(score->valuedouble >= 0.0 && score->valuedouble <= 1.0))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'score' must be a number in [0, 1]", r->id);
    r->score = score->valuedouble;
    if (created &&
        (!cJSON_IsNumber(created) || created->valuedouble < 0 || created->valuedouble > 4e12))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'created_at' must be Unix seconds", r->id);
    r->created_at = created ? (int64_t)created->valuedouble : 0;
    out->n_classes = cJSON_IsArray(output) ? (size_t)cJSON_GetArraySize(output) : 0;
    if (out->n_classes < 2 || out->n_classes > MF_TEACHER_MAX_CLASSES)
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'output' must hold 2..%d numbers", r->id,
                       MF_TEACHER_MAX_CLASSES);
    /* Re-printed at float32 precision (9 digits): what the device had, and bounded. */
    mf_dynbuf__init(&b, &ctx->alloc, out->n_classes * 18 + 3);
    err = mf_dynbuf__append(&b, "[", 1);
    cJSON_ArrayForEach(it, output)
    {
        if (err < 0)
            break;
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
            mf_dynbuf__free(&b);
            return mf_fail(ctx, MF_E_INVALID, "sample %s: 'output' holds a non-number", r->id);
        }
        err = mf_dynbuf__appendf(&b, "%s%.9g", it == output->child ? "" : ",", it->valuedouble);
    }
    if (err == MF_OK)
        err = mf_dynbuf__append(&b, "]", 2); /* with the NUL */
    if (err < 0) {
        mf_dynbuf__free(&b);
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading sample %s", r->id);
    }
    out->output = (char *)mf_dynbuf__take(&b, NULL);
    r->output = out->output;
    return MF_OK;
}

static int parse_input(struct mf_offload_sample_in *out, struct mf_ctx *ctx, const cJSON *obj,
                       size_t max_input)
{
    const char *in = get_str(obj, "input");
    size_t len = in ? strlen(in) : 0;
    size_t cap = len / 4 * 3 + 3;
    int err;

    if (!len)
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'input' must be non-empty base64",
                       out->row.id);
    if (cap > max_input + 3)
        return mf_fail(ctx, MF_E_LIMIT, "sample %s: input exceeds %zu bytes", out->row.id,
                       max_input);
    out->input = mf_alloc(&ctx->alloc, cap);
    if (!out->input)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory decoding sample %s", out->row.id);
    err = mf_base64__decode(out->input, cap, &out->input_len, in, len);
    if (err < 0 || !out->input_len)
        return mf_fail(ctx, MF_E_INVALID, "sample %s: 'input' is not base64", out->row.id);
    if (out->input_len > max_input)
        return mf_fail(ctx, MF_E_LIMIT, "sample %s: input of %zu bytes exceeds %zu", out->row.id,
                       out->input_len, max_input);
    out->row.input_size = out->input_len;
    return MF_OK;
}

int mf_offsrv__sample_parse(struct mf_offload_sample_in *out, struct mf_ctx *ctx, const cJSON *obj,
                            size_t max_input)
{
    int err;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "sample is not an object");
    err = parse_names(out, ctx, obj);
    if (err == MF_OK)
        err = parse_numbers(out, ctx, obj);
    if (err == MF_OK)
        err = parse_input(out, ctx, obj, max_input);
    return err;
}

void mf_offsrv__sample_free(struct mf_offload_sample_in *s, struct mf_ctx *ctx)
{
    mf_free(&ctx->alloc, s->output);
    mf_free(&ctx->alloc, s->input);
    s->output = NULL;
    s->input = NULL;
}
