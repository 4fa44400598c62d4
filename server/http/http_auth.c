/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route authentication, run by the router from the routing table before any handler:
 * "Authorization: Bearer <token>", the token's prefix says what it claims to be, and the
 * store is asked about its SHA-256 only (docs/protocol.md, Credentials).
 */
#include "http/http_req.h"

#include "app/token.h"
#include "mf/ct.h"

#include <string.h>
#include <strings.h>

/* The token text after "Bearer " or NULL. */
static const char *bearer_token(const struct mf_httpd_req *r, size_t *len_out)
{
    const char *h = mf_httpd__header(r, MHD_HTTP_HEADER_AUTHORIZATION);

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    *len_out = strlen(h);
    while (*len_out && h[*len_out - 1] == ' ')
        (*len_out)--;
    return h;
}

static int deny(struct mf_httpd_req *r, const char *why)
{
    int err = mf_httpd__reply_error(r, MHD_HTTP_UNAUTHORIZED, "%s", why);

    if (err < 0)
        return err;
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    return MF_E_AUTH;
}

int mf_httpd__authenticate(struct mf_httpd_req *r)
{
    enum mf_httpd_auth need = r->route->auth;
    struct mf_store *s = r->env->store;
    uint8_t hash[MF_SHA256_LEN];
    const char *tok;
    size_t len = 0;
    int kind, err;

    if (need == MF_HTTPD_AUTH_NONE)
        return MF_OK;
    tok = bearer_token(r, &len);
    if (!tok)
        return deny(r, "missing bearer token");
    kind = mf_token__kind(tok, len);
    if (kind == MF_TOKEN_DEVICE &&
        (need == MF_HTTPD_AUTH_DEVICE || need == MF_HTTPD_AUTH_DEVICE_OR_ADMIN)) {
        mf_token__hash(hash, tok, len);
        err = s->ops->device_auth(r->device_id, s, &r->ctx, hash);
    } else if (kind == MF_TOKEN_ADMIN &&
               (need == MF_HTTPD_AUTH_ADMIN || need == MF_HTTPD_AUTH_DEVICE_OR_ADMIN)) {
        mf_token__hash(hash, tok, len);
        err = s->ops->token_check(s, &r->ctx, MF_TOKEN_ADMIN, hash);
        r->is_admin = err == MF_OK;
    } else {
        return deny(r, need == MF_HTTPD_AUTH_ADMIN ? "an admin token is required"
                                                   : "a device credential is required");
    }
    mf_secure_zero(hash, sizeof(hash));
    if (err == MF_E_AUTH)
        return deny(r, "unknown or revoked token");
    return err;
}
