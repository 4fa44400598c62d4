/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Check-in (POST /v1/checkin): the device lists what it runs with a fresh random nonce and
 * gets one assignment per tracked model. The answer must echo the nonce, which is what
 * makes a replayed answer useless once assignments are signed (trust issue); until then it
 * still catches a confused proxy or cache.
 */
#include "mf_agent_int.h"

#include <cjson/cJSON.h>
#include <string.h>

#define NONCE_BYTES 16
#define MAX_POLL_INTERVAL_S (7L * 24 * 3600)

static int build_request(struct mf_agent *a, struct mf_dynbuf *b, const char *nonce)
{
    int err = mf_dynbuf__appendf(b, "{\"nonce\":\"%s\",\"models\":[", nonce);

    for (size_t i = 0; i < a->n_models && err >= 0; i++) {
        const struct mf_agent_slot *s = &a->models[i].state.active;

        err = mf_dynbuf__appendf(b, "%s{\"name\":", i ? "," : "");
        if (err >= 0)
            err = mf_agent__json_str(b, a->models[i].name);
        if (err >= 0 && s->slot)
            err = mf_dynbuf__appendf(b, ",\"version\":\"%s\",\"sha256\":\"%s\"}", s->version,
                                     s->sha256);
        else if (err >= 0)
            err = mf_dynbuf__appendf(b, "%s", ",\"version\":null,\"sha256\":null}");
    }
    if (err >= 0)
        err = mf_dynbuf__append(b, "]}", 2);
    return err;
}

static int tracked_index(const char *model, const char *const *models, size_t n_models)
{
    for (size_t i = 0; i < n_models; i++) {
        if (strcmp(models[i], model) == 0)
            return (int)i;
    }
    return -1;
}

static int parse_assignment(struct mf_ctx *ctx, struct mf_agent_assignment *as, const cJSON *obj)
{
    const cJSON *blob = cJSON_GetObjectItemCaseSensitive(obj, "blob");
    int err;

    memset(as, 0, sizeof(*as));
    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "check-in assignment is not an object");
    err = mf_agent__json_name(ctx, as->model, obj, "model", "assignment");
    if (err >= 0)
        err = mf_agent__json_name(ctx, as->version, obj, "version", "assignment");
    if (err >= 0)
        err = mf_agent__json_sha256(ctx, as->sha256, obj, "sha256", "assignment");
    if (err >= 0)
        err = mf_agent__json_u64(ctx, &as->size, obj, "size", UINT64_MAX, "assignment");
    if (err < 0)
        return err;
    /* A server-relative path only: the agent never follows a check-in to another host. */
    if (!cJSON_IsString(blob) || blob->valuestring[0] != '/' ||
        strlen(blob->valuestring) > MF_AGENT_BLOB_PATH_MAX || strstr(blob->valuestring, "..") ||
        strpbrk(blob->valuestring, " \t\r\n\"\\?#%"))
        return mf_fail(ctx, MF_E_INVALID, "assignment.blob of model %s is not a server path",
                       as->model);
    memcpy(as->blob, blob->valuestring, strlen(blob->valuestring) + 1);
    return MF_OK;
}

static int parse_doc(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                     long *poll_interval_out, const cJSON *doc, const char *nonce,
                     const char *const *models, size_t n_models)
{
    const cJSON *echo = cJSON_GetObjectItemCaseSensitive(doc, "nonce");
    const cJSON *poll = cJSON_GetObjectItemCaseSensitive(doc, "poll_interval_s");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "assignments");
    const cJSON *item;
    uint32_t seen = 0;
    size_t n = 0;

    if (!cJSON_IsObject(doc))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer is not a JSON object");
    if (!cJSON_IsString(echo) || strlen(echo->valuestring) != strlen(nonce) ||
        !mf_ct_memeq(echo->valuestring, nonce, strlen(nonce)))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer does not echo nonce %s", nonce);
    if (poll && !cJSON_IsNull(poll)) {
        if (!cJSON_IsNumber(poll) || !(poll->valuedouble >= 0) ||
            poll->valuedouble > (double)MAX_POLL_INTERVAL_S)
            return mf_fail(ctx, MF_E_INVALID, "check-in poll_interval_s is not in 0..%ld",
                           MAX_POLL_INTERVAL_S);
        *poll_interval_out = (long)poll->valuedouble;
    }
    if (!cJSON_IsArray(list))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer has no \"assignments\" array");
    cJSON_ArrayForEach(item, list)
    {
        struct mf_agent_assignment as;
        int idx, err = parse_assignment(ctx, &as, item);

        if (err < 0)
            return err;
        idx = tracked_index(as.model, models, n_models);
        if (idx < 0)
            continue; /* a model this device does not track */
        if (seen & (1u << idx))
            return mf_fail(ctx, MF_E_INVALID, "check-in assigns model %s twice", as.model);
        /* Each tracked model at most once, so n never exceeds n_models (the room in out). */
        seen |= 1u << idx;
        out[n++] = as;
    }
    *n_out = n;
    return MF_OK;
}

int mf_agent__checkin_parse(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                            long *poll_interval_out, const char *json, size_t len,
                            const char *nonce, const char *const *models, size_t n_models)
{
    cJSON *doc;
    int err;

    *n_out = 0;
    if (n_models > MF_AGENT_MAX_MODELS)
        return mf_fail(ctx, MF_E_LIMIT, "%zu models tracked, at most %d", n_models,
                       MF_AGENT_MAX_MODELS);
    doc = cJSON_ParseWithLength(json, len);
    if (!doc)
        return mf_fail(ctx, MF_E_INVALID, "check-in answer is not valid JSON (%zu bytes)", len);
    err = parse_doc(ctx, out, n_out, poll_interval_out, doc, nonce, models, n_models);
    cJSON_Delete(doc);
    if (err < 0)
        *n_out = 0;
    return err;
}

int mf_agent__checkin(struct mf_agent *a, size_t *n_out)
{
    uint8_t raw[NONCE_BYTES];
    char nonce[2 * NONCE_BYTES + 1];
    struct mf_http_response resp;
    struct mf_dynbuf body;
    int err;

    *n_out = 0;
    err = a->plat.random(a->plat.payload, raw, sizeof(raw));
    if (err < 0)
        return mf_fail(&a->ctx, err, "platform random source failed");
    mf_hex__encode(nonce, raw, sizeof(raw));
    mf_dynbuf__init(&body, &a->ctx.alloc, 64 * 1024);
    mf_http__response_init(&resp, &a->http);
    err = build_request(a, &body, nonce);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot build the check-in request");
    else
        err = mf_agent__post_json(a, &resp, "/v1/checkin", &body, 1, "check-in");
    if (err >= 0)
        err = mf_agent__checkin_parse(&a->ctx, a->assignments, n_out, &a->poll_interval_s,
                                      (const char *)resp.body.data, resp.body.len, nonce,
                                      a->model_names, a->n_models);
    mf_dynbuf__free(&body);
    mf_http__response_free(&resp);
    return err;
}
