/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON encoding of samples for POST /v1/offload/ask and /v1/offload/batch, and parsing of
 * their answers (docs/protocol-offload.md). Input bytes travel as standard base64, so any
 * binary input is safe in JSON; floats are printed with 9 significant digits, enough to
 * round-trip a float32 exactly.
 */
#include "mf_offload_int.h"
#include "mf_json.h"
#include "mf_base64.h"
#include "mf_hex.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static const char *const kind_names[] = {"hard", "audit"};
static const char *const method_names[] = {"max_softmax", "margin", "entropy"};
static const char *const output_names[] = {"logits", "probs"};

/* Appends the base64 of `p`, 48 input bytes (64 characters) at a time. */
static int append_base64(struct mf_dynbuf *b, const uint8_t *p, size_t n)
{
    char out[65];
    int err = MF_OK;

    for (size_t i = 0; i < n && err >= 0; i += 48) {
        size_t take = n - i < 48 ? n - i : 48;

        mf_base64__encode(out, p + i, take);
        err = mf_dynbuf__append(b, out, mf_base64__encoded_len(take));
    }
    return err;
}

static int append_float(struct mf_dynbuf *b, const char *sep, float f)
{
    /* A CRC-valid but damaged record could hold NaN: JSON has no NaN, send 0. */
    return mf_dynbuf__appendf(b, "%s%.9g", sep, isfinite(f) ? (double)f : 0.0);
}

int mf_offload__wire_sample(struct mf_dynbuf *b, const char *model,
                            const struct mf_offload_record *r)
{
    char id[MF_OFFLOAD_ID_HEX + 1];
    int err;

    mf_hex__encode(id, r->id, MF_OFFLOAD_ID_LEN);
    err = mf_dynbuf__appendf(b,
                             "{\"id\":\"%s\",\"kind\":\"%s\",\"model\":\"%s\",\"model_version\":"
                             "\"%s\",\"method\":\"%s\",\"score\":",
                             id, kind_names[r->kind], model, r->model_version,
                             method_names[r->method]);
    if (err >= 0)
        err = append_float(b, "", r->score);
    if (err >= 0 && r->created_s >= 0)
        err = mf_dynbuf__appendf(b, ",\"created_at\":%lld", (long long)r->created_s);
    if (err >= 0)
        err = mf_dynbuf__appendf(b, ",\"output_kind\":\"%s\",\"output\":[",
                                 output_names[r->output_kind]);
    for (uint32_t i = 0; err >= 0 && i < r->n_classes; i++)
        err = append_float(b, i ? "," : "", mf_offload__get_f32(r->output + 4 * i));
    if (err >= 0)
        err = mf_dynbuf__append(b, "],\"input\":\"", 11);
    if (err >= 0)
        err = append_base64(b, r->input, r->input_len);
    if (err >= 0)
        err = mf_dynbuf__append(b, "\"}", 2);
    return err;
}

/* Copies a name-like string field into `out` (MF_OFFLOAD_NAME_MAX + 1 bytes). */
static int get_name(char *out, const cJSON *doc, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
    size_t n;

    if (!cJSON_IsString(v))
        return MF_E_INVALID;
    n = strlen(v->valuestring);
    if (n == 0 || n > MF_OFFLOAD_NAME_MAX)
        return MF_E_INVALID;
    memcpy(out, v->valuestring, n + 1);
    return MF_OK;
}

static int parse_probs(mf_offload_answer *ans, float *probs, size_t n, const cJSON *out)
{
    const cJSON *it;
    size_t i = 0;

    if (!cJSON_IsArray(out) || (size_t)cJSON_GetArraySize(out) != n)
        return MF_E_INVALID;
    ans->label = 0;
    ans->confidence = -1.0f;
    cJSON_ArrayForEach(it, out)
    {
        float v;

        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0.0 ||
            it->valuedouble > 1.0)
            return MF_E_INVALID;
        v = (float)it->valuedouble;
        if (v > ans->confidence) {
            ans->confidence = v;
            ans->label = (int)i;
        }
        if (probs)
            probs[i] = v;
        i++;
    }
    return MF_OK;
}

int mf_offload__wire_parse_answer(struct mf_ctx *ctx, mf_offload_answer *ans, float *probs,
                                  size_t n, const char *request_id, const char *body, size_t len)
{
    const cJSON *rid;
    cJSON *doc;
    int err =
        mf_json__parse_object(&doc, ctx, body, len, len, MF_JSON_DEPTH_DEFAULT, "offload answer");

    if (err < 0)
        return err;
    rid = cJSON_GetObjectItemCaseSensitive(doc, "request_id");
    if (!cJSON_IsString(rid) || strcmp(rid->valuestring, request_id) != 0)
        err = mf_fail(ctx, MF_E_INVALID, "offload answer does not echo request id %s", request_id);
    else if (get_name(ans->teacher_version, doc, "teacher_version") < 0)
        err = mf_fail(ctx, MF_E_INVALID, "offload answer has no valid \"teacher_version\"");
    else if (parse_probs(ans, probs, n, cJSON_GetObjectItemCaseSensitive(doc, "output")) < 0)
        err = mf_fail(ctx, MF_E_INVALID,
                      "offload answer \"output\" is not %zu probabilities in [0, 1]", n);
    else
        err = MF_OK;
    cJSON_Delete(doc);
    return err;
}

int mf_offload__wire_parse_ack(struct mf_ctx *ctx, const char *batch_id, const char *body,
                               size_t len)
{
    cJSON *doc;
    const cJSON *bid;
    int ok;

    if (mf_json__parse_object(&doc, ctx, body, len, len, MF_JSON_DEPTH_DEFAULT, "uplink ack") < 0)
        doc = NULL; /* reported as not echoing, with the reader's reason replaced below */
    bid = cJSON_GetObjectItemCaseSensitive(doc, "batch_id");
    ok = cJSON_IsString(bid) && strcmp(bid->valuestring, batch_id) == 0;
    cJSON_Delete(doc);
    if (!ok)
        return mf_fail(ctx, MF_E_NET, "uplink ack does not echo batch id %s", batch_id);
    return MF_OK;
}
