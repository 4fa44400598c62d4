/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admin model routes: GET /v1/admin/models (listing), GET /v1/admin/models/<name> (one
 * model, 404 when it has no version) and
 * PUT /v1/admin/models/<name>/versions/<version> (publish). A publish streams the body to a
 * temp blob while hashing; the version becomes visible only once the blob is durable under
 * its name and the row is committed (docs/protocol.md).
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"
#include "common/names.h"
#include "mf/ct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct models_walk {
    cJSON *list;     /* the "models" array */
    cJSON *versions; /* "versions" of the model being filled */
    char model[MF_STORE_NAME_SIZE];
    const char *only; /* GET /v1/admin/models/{name}: that model's rows; NULL: every model */
};

static int add_version(void *payload, const struct mf_store_version *v)
{
    struct models_walk *w = payload;
    cJSON *o;

    if (w->only && strcmp(w->only, v->model) != 0)
        return MF_OK;
    if (!w->versions || strcmp(w->model, v->model) != 0) {
        /* Rows come grouped by model: a new name starts a new model object. */
        cJSON *m = mf_handlers__add_row(w->list);

        if (!m)
            return MF_E_NOMEM;
        if (!cJSON_AddStringToObject(m, "name", v->model))
            return MF_E_NOMEM;
        w->versions = cJSON_AddArrayToObject(m, "versions");
        if (!w->versions)
            return MF_E_NOMEM;
        memcpy(w->model, v->model, sizeof(w->model));
    }
    o = mf_handlers__add_row(w->versions);
    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddStringToObject(o, "version", v->version) ||
        !cJSON_AddStringToObject(o, "sha256", v->sha256) ||
        !cJSON_AddNumberToObject(o, "size", (double)v->size) ||
        !cJSON_AddNumberToObject(o, "created_at", (double)v->created_at) ||
        !cJSON_AddBoolToObject(o, "released", v->sequence > 0))
        return MF_E_NOMEM;
    if (v->sequence > 0 &&
        (!cJSON_AddNumberToObject(o, "sequence", (double)v->sequence) ||
         !cJSON_AddNumberToObject(o, "security_floor", (double)v->security_floor) ||
         !cJSON_AddStringToObject(o, "release_sha256", v->release_digest) ||
         !cJSON_AddBoolToObject(o, "promoted", v->promoted > 0)))
        return MF_E_NOMEM;
    return MF_OK;
}

/* {"models": [...]} of `only` (NULL: every model); 404 when `only` has no version. */
static int reply_models(struct mf_httpd_req *r, const char *only)
{
    struct mf_store *s = r->env->store;
    struct models_walk w;
    cJSON *body = cJSON_CreateObject();
    int err;

    memset(&w, 0, sizeof(w));
    w.only = only;
    w.list = body ? cJSON_AddArrayToObject(body, "models") : NULL;
    if (!w.list) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing models");
    }
    err = s->ops->registry->versions_list(s, &r->ctx, add_version, &w);
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing models");
    if (err == MF_OK && only && !w.versions) {
        cJSON_Delete(body);
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "unknown model '%s'", only);
    }
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

int mf_handlers__models_list(struct mf_httpd_req *r)
{
    return reply_models(r, NULL);
}

int mf_handlers__model_get(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    return reply_models(r, r->params[0]);
}

int mf_handlers__publish_begin(struct mf_httpd_req *r)
{
    const char *cl = mf_httpd__header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *model = r->params[0], *version = r->params[1];
    unsigned long long n;
    char *end;

    if (!mf_names__valid_id(model) || !mf_names__valid_id(version))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "model name and version must match [A-Za-z0-9._-]{1,64}");
    r->expect_sha256 = mf_httpd__header(r, "X-MF-Sha256");
    if (r->expect_sha256 && !mf_names__valid_sha256(r->expect_sha256))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "X-MF-Sha256 must be 64 lower-case hex digits");
    if (cl) {
        n = strtoull(cl, &end, 10);
        if (end != cl && *end == '\0' && n > r->env->max_upload)
            return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
                                         "upload of %llu bytes exceeds the limit of %llu", n,
                                         (unsigned long long)r->env->max_upload);
    }
    return mf_blob__upload_begin(&r->upload, &r->ctx, r->env->blob_root, r->env->max_upload);
}

int mf_handlers__publish_data(struct mf_httpd_req *r, const char *data, size_t len)
{
    int err = mf_blob__upload_write(r->upload, &r->ctx, data, len);

    if (err == MF_E_LIMIT) {
        /* Drop the partial blob now; the 413 goes out once the client stops sending. */
        mf_blob__upload_free(r->upload);
        r->upload = NULL;
        return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "%s", mf_ctx__errmsg(&r->ctx));
    }
    return err;
}

int mf_handlers__reply_version(struct mf_httpd_req *r, unsigned status,
                               const struct mf_store_version *v, int with_release)
{
    cJSON *body = cJSON_CreateObject();
    int ok = body && cJSON_AddStringToObject(body, "model", v->model) &&
             cJSON_AddStringToObject(body, "version", v->version) &&
             cJSON_AddStringToObject(body, "sha256", v->sha256) &&
             cJSON_AddNumberToObject(body, "size", (double)v->size);

    if (ok && with_release)
        ok = cJSON_AddNumberToObject(body, "sequence", (double)v->sequence) &&
             cJSON_AddNumberToObject(body, "security_floor", (double)v->security_floor) &&
             cJSON_AddStringToObject(body, "release_sha256", v->release_digest) &&
             cJSON_AddBoolToObject(body, "promoted", v->promoted > 0);
    if (!ok) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, status, body);
}

/* An existing (model, version): 200 for the same bytes (idempotent), 409 otherwise. */
static int reply_existing(struct mf_httpd_req *r, const struct mf_store_version *have,
                          const struct mf_store_version *got)
{
    if (mf_ct_memeq(have->sha256, got->sha256, MF_SHA256_HEX_LEN) && have->size == got->size)
        return mf_handlers__reply_version(r, MHD_HTTP_OK, have, 0);
    return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                 "version '%s' of model '%s' exists with different content",
                                 got->version, got->model);
}

static int publish_end(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_version v, have;
    int err;

    memset(&v, 0, sizeof(v));
    (void)snprintf(v.model, sizeof(v.model), "%s", r->params[0]);
    (void)snprintf(v.version, sizeof(v.version), "%s", r->params[1]);
    err = mf_blob__upload_finish(v.sha256, &v.size, r->upload, &r->ctx);
    if (err < 0)
        return err;
    if (r->expect_sha256 && !mf_ct_memeq(r->expect_sha256, v.sha256, MF_SHA256_HEX_LEN))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "upload has sha256 %s, X-MF-Sha256 says %s", v.sha256,
                                     r->expect_sha256);
    err = s->ops->registry->version_get(&have, s, &r->ctx, v.model, v.version);
    if (err == MF_OK)
        return reply_existing(r, &have, &v);
    if (err != MF_E_NOTFOUND)
        return err;
    err = mf_blob__upload_commit(r->upload, &r->ctx);
    if (err < 0)
        return err;
    v.created_at = mf_handlers__now();
    err = s->ops->registry->version_insert(s, &r->ctx, &v);
    if (err == MF_E_STATE) {
        /* A concurrent publish of the same version won the race: judge against it. */
        err = s->ops->registry->version_get(&have, s, &r->ctx, v.model, v.version);
        if (err < 0)
            return err;
        return reply_existing(r, &have, &v);
    }
    if (err < 0)
        return err;
    MF_LOG_INFO(&r->ctx, "published %s/%s sha256=%s size=%llu", v.model, v.version, v.sha256,
                (unsigned long long)v.size);
    return mf_handlers__reply_version(r, MHD_HTTP_CREATED, &v, 0);
}

int mf_handlers__publish_end(struct mf_httpd_req *r)
{
    int err = publish_end(r);

    /* Drop the temp file (if it was not renamed into place) before the reply goes out, so
     * a client that sees the answer never sees a leftover in blobs/tmp. */
    mf_blob__upload_free(r->upload);
    r->upload = NULL;
    return err;
}
