/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit row of an admin request (http_req.h, docs/operations.md "Audit log"), written
 * by the router as it queues the answer, so no admin route can be missed and no handler
 * has to remember it: the routing table says which routes are admin routes.
 */
#include "http/http_req.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int mf_httpd__audited(const struct mf_httpd_route *rt, const char *method)
{
    return rt->auth == MF_HTTPD_AUTH_ADMIN && strcmp(method, "GET") != 0 &&
           strcmp(method, "HEAD") != 0;
}

/* The route's captures joined by '/', truncated to what a row holds. */
static void join_targets(char *out, size_t cap, const struct mf_httpd_req *r)
{
    size_t n = 0;

    out[0] = '\0';
    for (size_t i = 0; i < MF_HTTPD_MAX_PARAMS && r->params[i] && n < cap; i++) {
        int w = snprintf(out + n, cap - n, "%s%s", i ? "/" : "", r->params[i]);

        n = w < 0 ? cap : n + (size_t)w;
    }
}

void mf_httpd__audit(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_audit a = {.at = (int64_t)time(NULL), .status = (int)r->status};
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, r->env->log_fn, r->env->log_payload, "audit");
    /* No valid token, no row: anyone can send these, and in a log bounded by rows they would
     * push the real history out (and cost a store write each). The server log keeps them. */
    if (!r->is_admin) {
        MF_LOG_WARN(&ctx, "unauthenticated admin request refused: action=\"%s %s\" status=%d",
                    r->method, r->route->pattern, (int)r->status);
        return;
    }
    (void)snprintf(a.actor_id, sizeof(a.actor_id), "%s", r->token_id);
    (void)snprintf(a.actor, sizeof(a.actor), "%s", r->token_name);
    (void)snprintf(a.action, sizeof(a.action), "%s %s", r->method, r->route->pattern);
    join_targets(a.target, sizeof(a.target), r);
    /* Its own ctx (above): the request's message may still be the one its error answer logs. */
    if (s->ops->audit->audit_add(s, &ctx, &a) < 0)
        MF_LOG_ERR(&ctx,
                   "audit row lost (%s): actor_id=%s actor=%s action=\"%s\" target=%s status=%d",
                   mf_ctx__errmsg(&ctx), a.actor_id[0] ? a.actor_id : "-", a.actor, a.action,
                   a.target[0] ? a.target : "-", a.status);
}
