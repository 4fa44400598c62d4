/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KServe v2 / Open Inference Protocol connector: POST {url}/v2/models/{name}/infer with
 * the input as one tensor of shape [1, len] ("UINT8" bytes, or "FP32" byte values), and
 * the first output's data read as n_classes numbers. Triton, KServe, Seldon MLServer and
 * others speak this. One easy handle per call: a call never waits for another's
 * connection, and the timeout covers connect plus transfer.
 */
#include "offload/teacher_int.h"
#include "mf_json.h"

#include "mf_dynbuf.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#define KSERVE_REPLY_MAX (1024u * 1024u)

static int kserve_open(void **state_out, struct mf_ctx *ctx, const struct mf_teacher_config *c)
{
    *state_out = NULL;
    if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0)
        return mf_fail(ctx, MF_E_INVALID, "model %s: kserve url '%s' is not http(s)://", c->model,
                       c->url);
    if (!c->remote_name[0])
        return mf_fail(ctx, MF_E_INVALID, "model %s: kserve needs the remote model name", c->model);
    if (strcmp(c->datatype, "UINT8") != 0 && strcmp(c->datatype, "FP32") != 0)
        return mf_fail(ctx, MF_E_INVALID, "model %s: kserve datatype '%s' is not UINT8 or FP32",
                       c->model, c->datatype);
    return MF_OK;
}

static void kserve_close(void *state)
{
    (void)state;
}

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    struct mf_dynbuf *b = payload;

    return mf_dynbuf__append(b, p, size * n) == MF_OK ? size * n : 0;
}

/* {"inputs":[{"name":..,"shape":[1,len],"datatype":..,"data":[b0,b1,...]}]} */
static int build_request(struct mf_dynbuf *body, const struct mf_teacher_config *c,
                         const uint8_t *input, size_t len)
{
    int err = mf_dynbuf__appendf(body,
                                 "{\"inputs\":[{\"name\":\"%s\",\"shape\":[1,%zu],"
                                 "\"datatype\":\"%s\",\"data\":[",
                                 c->input_name, len, c->datatype);

    for (size_t i = 0; err == MF_OK && i < len; i++)
        err = mf_dynbuf__appendf(body, "%s%u", i ? "," : "", (unsigned)input[i]);
    if (err == MF_OK)
        err = mf_dynbuf__append(body, "]}]}", 5); /* with the NUL */
    return err;
}

static int parse_reply(float *out, char version_out[MF_STORE_NAME_SIZE], struct mf_ctx *ctx,
                       const struct mf_dynbuf *reply, size_t n)
{
    const cJSON *outputs, *first;
    cJSON *root;
    int err = mf_json__parse(&root, ctx, reply->data, reply->len, reply->len, MF_JSON_DEPTH_DEFAULT,
                             "kserve answer");

    if (err < 0)
        return err;
    outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    first = cJSON_IsArray(outputs) ? cJSON_GetArrayItem(outputs, 0) : NULL;
    err = first ? mf_teacher__read_floats(out, ctx, cJSON_GetObjectItemCaseSensitive(first, "data"),
                                          n, "outputs[0].data")
                : mf_fail(ctx, MF_E_INVALID, "kserve answer has no outputs");
    if (err == MF_OK)
        mf_teacher__read_version(version_out, root, "model_version");
    cJSON_Delete(root);
    return err;
}

static int kserve_infer(float *out, char version_out[MF_STORE_NAME_SIZE], void *state,
                        struct mf_ctx *ctx, const struct mf_teacher_config *c, const uint8_t *input,
                        size_t len, size_t n_classes, unsigned timeout_ms)
{
    struct mf_dynbuf body, reply;
    struct curl_slist *hdr = NULL;
    char url[700];
    CURL *h = curl_easy_init();
    long status = 0;
    CURLcode rc;
    int err;

    (void)state;
    if (!h)
        return mf_fail(ctx, MF_E_NOMEM, "cannot create a curl handle");
    (void)snprintf(url, sizeof(url), "%s/v2/models/%s/infer", c->url, c->remote_name);
    mf_dynbuf__init(&body, &ctx->alloc, len * 4 + 256);
    mf_dynbuf__init(&reply, &ctx->alloc, KSERVE_REPLY_MAX);
    err = build_request(&body, c, input, len);
    if (err < 0) {
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory building a kserve request");
        goto out;
    }
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    (void)curl_easy_setopt(h, CURLOPT_URL, url);
    (void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    (void)curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body.data);
    (void)curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(body.len - 1));
    (void)curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    (void)curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    (void)curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    (void)curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    (void)curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM timeouts */
    rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        err = mf_fail(ctx, MF_E_NET, "kserve %s: %s", url, curl_easy_strerror(rc));
        goto out;
    }
    (void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        err = mf_fail(ctx, MF_E_NET, "kserve %s answered HTTP %ld", url, status);
        goto out;
    }
    err = parse_reply(out, version_out, ctx, &reply, n_classes);
out:
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    mf_dynbuf__free(&body);
    mf_dynbuf__free(&reply);
    return err;
}

const struct mf_teacher_connector mf_teacher__kserve = {
    .name = "kserve",
    .open = kserve_open,
    .close = kserve_close,
    .infer = kserve_infer,
};
