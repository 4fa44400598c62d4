/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/checkin: the director of the thin slice. Every tracked model with a published
 * version is assigned its newest one; the device's nonce is echoed for freshness.
 */
#include "handlers/handlers.h"

#include "handlers/req_parse.h"

#include <stdio.h>

static int add_assignment(cJSON *list, const struct mf_store_version *v)
{
    char blob[sizeof("/v1/blobs/") + MF_SHA256_HEX_LEN];
    cJSON *a = cJSON_CreateObject();

    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", v->sha256);
    if (!a || !cJSON_AddItemToArray(list, a))
        goto fail;
    if (!cJSON_AddStringToObject(a, "model", v->model) ||
        !cJSON_AddStringToObject(a, "version", v->version) ||
        !cJSON_AddStringToObject(a, "sha256", v->sha256) ||
        !cJSON_AddNumberToObject(a, "size", (double)v->size) ||
        !cJSON_AddStringToObject(a, "blob", blob))
        return MF_E_NOMEM; /* `a` belongs to `list` now */
    return MF_OK;
fail:
    cJSON_Delete(a);
    return MF_E_NOMEM;
}

static int build_reply(cJSON **out, struct mf_httpd_req *r, const struct mf_checkin_req *req)
{
    struct mf_store *s = r->env->store;
    cJSON *body = cJSON_CreateObject();
    cJSON *list;
    int err = MF_OK;

    *out = body;
    if (!body || !cJSON_AddStringToObject(body, "nonce", req->nonce) ||
        !cJSON_AddNumberToObject(body, "poll_interval_s", r->env->poll_interval_s))
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
    list = cJSON_AddArrayToObject(body, "assignments");
    if (!list)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
    for (size_t i = 0; i < req->n_models && err == MF_OK; i++) {
        struct mf_store_version v;

        err = s->ops->version_latest(&v, s, &r->ctx, req->models[i].name);
        if (err == MF_E_NOTFOUND) {
            err = MF_OK; /* nothing published: no assignment */
            continue;
        }
        if (err == MF_OK && add_assignment(list, &v) < 0)
            err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
    }
    return err;
}

int mf_handlers__checkin(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_checkin_req req;
    cJSON *body = NULL;
    int err;

    err = mf_reqparse__checkin(&req, &r->ctx, r->json);
    if (err < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", mf_ctx__errmsg(&r->ctx));
    err = s->ops->device_touch(s, &r->ctx, r->device_id, mf_handlers__now());
    if (err == MF_OK)
        err = build_reply(&body, r, &req);
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
