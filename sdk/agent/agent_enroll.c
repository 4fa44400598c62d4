/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device credential: loaded from <state>/credential at start-up, obtained by enrollment
 * (POST /v1/enroll with the fleet enrollment token) when missing, and written with the
 * secret flag (POSIX: 0600) through the durable small-file writer. Never logged.
 */
#include "mf_agent_int.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <string.h>

#define CREDENTIAL_FILE "credential"

/* Credentials and tokens are "<prefix>_<hex>": a conservative charset keeps them header-safe. */
static int token_ok(const char *s, size_t len)
{
    if (len < 5 || len > MF_AGENT_CRED_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

int mf_agent__credential_load(struct mf_agent *a)
{
    struct mf_dynbuf buf;
    size_t len;
    int err;

    a->credential[0] = '\0';
    err = mf_agent__store_read(a, &buf, CREDENTIAL_FILE, MF_AGENT_SMALL_FILE_MAX);
    if (err == MF_E_NOTFOUND) {
        mf_ctx__clear(&a->ctx);
        return MF_OK; /* not enrolled yet */
    }
    if (err < 0)
        return err;
    len = buf.len;
    while (len && (buf.data[len - 1] == '\n' || buf.data[len - 1] == '\r'))
        len--;
    if (!token_ok((const char *)buf.data, len)) {
        mf_secure_zero(buf.data, buf.len);
        mf_dynbuf__free(&buf);
        return mf_fail(&a->ctx, MF_E_INVALID, "stored credential is malformed (%zu bytes)", len);
    }
    memcpy(a->credential, buf.data, len);
    a->credential[len] = '\0';
    mf_secure_zero(buf.data, buf.len);
    mf_dynbuf__free(&buf);
    return MF_OK;
}

void mf_agent__credential_drop(struct mf_agent *a)
{
    mf_secure_zero(a->credential, sizeof(a->credential));
    (void)a->plat.remove(a->plat.payload, CREDENTIAL_FILE);
}

static int parse_credential(struct mf_agent *a, const struct mf_http_response *resp)
{
    cJSON *doc;
    const cJSON *cred;
    int err = mf_json__parse_object(&doc, &a->ctx, resp->body.data, resp->body.len, resp->body.len,
                                    MF_JSON_DEPTH_DEFAULT, "enrollment answer");

    if (err < 0)
        return err;
    cred = cJSON_GetObjectItemCaseSensitive(doc, "credential");
    if (!cJSON_IsString(cred) || !token_ok(cred->valuestring, strlen(cred->valuestring)))
        err = mf_fail(&a->ctx, MF_E_INVALID, "enrollment answer has no valid \"credential\"");
    else
        memcpy(a->credential, cred->valuestring, strlen(cred->valuestring) + 1);
    if (cJSON_IsString(cred))
        mf_secure_zero(cred->valuestring, strlen(cred->valuestring));
    cJSON_Delete(doc);
    return err;
}

int mf_agent__enroll(struct mf_agent *a)
{
    struct mf_http_response resp;
    struct mf_dynbuf body;
    int err;

    if (!a->enroll_token)
        return mf_fail(&a->ctx, MF_E_AUTH, "device %s has no credential and no enrollment token",
                       a->device_id);
    mf_dynbuf__init(&body, &a->ctx.alloc, 1024);
    mf_http__response_init(&resp, &a->http);
    err = mf_dynbuf__appendf(&body, "%s", "{\"enrollment_token\":");
    if (err >= 0)
        err = mf_agent__json_str(&body, a->enroll_token);
    if (err >= 0)
        err = mf_dynbuf__appendf(&body, "%s", ",\"device_id\":");
    if (err >= 0)
        err = mf_agent__json_str(&body, a->device_id);
    if (err >= 0)
        err = mf_dynbuf__append(&body, "}", 1);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot build the enrollment request");
    else
        err = mf_agent__post_json(a, &resp, "/v1/enroll", &body, 0, "enrollment");
    if (err >= 0)
        err = parse_credential(a, &resp);
    if (err >= 0)
        err = mf_agent__store_write(a, CREDENTIAL_FILE, a->credential, strlen(a->credential), 1);
    if (err < 0)
        mf_secure_zero(a->credential, sizeof(a->credential));
    else
        MF_LOG_INFO(&a->ctx, "device %s enrolled", a->device_id);
    if (body.data)
        mf_secure_zero(body.data, body.len);
    mf_dynbuf__free(&body);
    if (resp.body.data)
        mf_secure_zero(resp.body.data, resp.body.len);
    mf_http__response_free(&resp);
    return err;
}
