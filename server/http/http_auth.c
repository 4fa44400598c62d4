/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route authentication, run by the router from the routing table before any handler:
 * "Authorization: Bearer <token>", the token's prefix says what it claims to be, and the
 * store is asked about its SHA-256 only (docs/protocol.md, Credentials).
 */
#include "http/http_req.h"

#include "common/token.h"
#include "http/http_credcache.h"
#include "http/http_metrics.h"
#include "http/http_ratelimit.h"
#include "mf/ct.h"
#include "mf_hex.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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

/* After a valid credential: the role must be one the route allows (403 otherwise). */
static int check_role(struct mf_httpd_req *r)
{
    int err;

    if (r->route->roles & (unsigned)r->role)
        return MF_OK;
    err = mf_httpd__reply_error(r, MHD_HTTP_FORBIDDEN, "a token of role %s may not use %s %s",
                                mf_store__role_name(r->role), r->route->method, r->route->pattern);
    return err < 0 ? err : MF_E_AUTH;
}

/* After a valid device credential: the device's token bucket (429 with Retry-After). Only
 * the JSON routes (check-in, report) spend tokens: they are the ones that read and write the
 * store, while blob downloads are file reads a resuming device may split into many ranges. */
static int check_rate(struct mf_httpd_req *r)
{
    struct timespec now;
    unsigned retry = 0;
    char value[16];
    int err;

    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    if (!r->env->ratelimit || r->route->body != MF_HTTPD_BODY_JSON ||
        mf_ratelimit__take(&retry, r->env->ratelimit, r->device_id,
                           (double)now.tv_sec + (double)now.tv_nsec / 1e9))
        return MF_OK;
    mf_metrics__count(&r->env->metrics->rate_limited, 1);
    err = mf_httpd__reply_error(r, MHD_HTTP_TOO_MANY_REQUESTS,
                                "device '%s' is over its request rate; retry in %u s", r->device_id,
                                retry);
    (void)snprintf(value, sizeof(value), "%u", retry);
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, value);
    return err < 0 ? err : MF_E_AUTH;
}

/* The store's device_auth, or for a route that verifies the credential itself (or, while
 * recent, one that reaches no store) the node's credential cache in front of it
 * (http_credcache.h). */
static int device_auth(struct mf_httpd_req *r, const uint8_t hash[MF_SHA256_LEN])
{
    struct mf_store *s = r->env->store;
    int err;

    if (r->route->verifies_credential &&
        mf_httpd__credcache_get(r->device_id, r->env->creds, hash, MF_CREDCACHE_ANY_AGE))
        return MF_OK;
    if (r->route->trusts_recent_auth &&
        mf_httpd__credcache_get(r->device_id, r->env->creds, hash, MF_CREDCACHE_RECENT_S))
        return MF_OK;
    err = s->ops->auth->device_auth(r->device_id, s, &r->ctx, hash);
    if (err == MF_OK && (r->route->verifies_credential || r->route->trusts_recent_auth))
        mf_httpd__credcache_put(r->env->creds, hash, r->device_id);
    return err;
}

int mf_httpd__deny_credential(struct mf_httpd_req *r)
{
    mf_httpd__credcache_drop(r->env->creds, r->cred_hash);
    return deny(r, "unknown or revoked token");
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
        memcpy(r->cred_hash, hash, sizeof(hash));
        err = device_auth(r, hash);
    } else if (kind == MF_TOKEN_ADMIN &&
               (need == MF_HTTPD_AUTH_ADMIN || need == MF_HTTPD_AUTH_DEVICE_OR_ADMIN)) {
        mf_token__hash(hash, tok, len);
        err = s->ops->auth->admin_token_auth(&r->role, r->token_name, s, &r->ctx, hash);
        r->is_admin = err == MF_OK;
        if (r->is_admin) /* the id tokens list shows: no secret, names the token */
            mf_hex__encode(r->token_id, hash, MF_STORE_TOKEN_ID_LEN / 2);
    } else {
        return deny(r, need == MF_HTTPD_AUTH_ADMIN ? "an admin token is required"
                                                   : "a device credential is required");
    }
    mf_secure_zero(hash, sizeof(hash));
    if (err == MF_E_AUTH)
        return deny(r, "unknown or revoked token");
    if (err == MF_OK && r->is_admin)
        err = check_role(r);
    else if (err == MF_OK)
        err = check_rate(r);
    return err;
}
