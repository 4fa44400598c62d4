/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/enroll: trades a fleet enrollment token for a per-device credential. Only the
 * credential's SHA-256 is stored; re-enrolling a device id re-keys it (protocol.md).
 */
#include "handlers/handlers.h"

#include "common/token.h"
#include "common/req_parse.h"
#include "mf/ct.h"

#include <string.h>

static int issue_credential(struct mf_httpd_req *r, const char *device_id)
{
    struct mf_store *s = r->env->store;
    char cred[MF_TOKEN_LEN + 1];
    uint8_t hash[MF_SHA256_LEN];
    cJSON *body = NULL;
    int err;

    err = mf_token__generate(cred, &r->ctx, MF_TOKEN_DEVICE);
    if (err < 0)
        return err;
    mf_token__hash(hash, cred, MF_TOKEN_LEN);
    err = s->ops->auth->device_enroll(s, &r->ctx, device_id, hash, mf_handlers__now());
    if (err == MF_OK) {
        body = cJSON_CreateObject();
        if (body && (!cJSON_AddStringToObject(body, "device_id", device_id) ||
                     !cJSON_AddStringToObject(body, "credential", cred))) {
            cJSON_Delete(body);
            body = NULL;
        }
        err = mf_httpd__reply_json(r, MHD_HTTP_CREATED, body);
        if (err == MF_OK)
            MF_LOG_INFO(&r->ctx, "enrolled device '%s'", device_id);
    }
    mf_secure_zero(cred, sizeof(cred));
    return err;
}

int mf_handlers__enroll(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_enroll_req req;
    uint8_t hash[MF_SHA256_LEN];
    const char *tok;
    int err;

    err = mf_reqparse__enroll(&req, &r->ctx, r->json);
    if (err < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", mf_ctx__errmsg(&r->ctx));
    tok = req.enrollment_token;
    if (mf_token__kind(tok, strlen(tok)) != MF_TOKEN_ENROLL)
        return mf_httpd__reply_error(r, MHD_HTTP_UNAUTHORIZED, "not an enrollment token");
    mf_token__hash(hash, tok, MF_TOKEN_LEN);
    err = s->ops->auth->token_check(s, &r->ctx, MF_TOKEN_ENROLL, hash);
    if (err == MF_E_AUTH)
        return mf_httpd__reply_error(r, MHD_HTTP_UNAUTHORIZED,
                                     "unknown or revoked enrollment token");
    if (err < 0)
        return err;
    return issue_credential(r, req.device_id);
}
