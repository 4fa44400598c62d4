/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/admin/audit (docs/operations.md, "Audit log"): the audit log newest first, a page
 * at a time, filtered by time, token and action. The rows are written elsewhere: by the
 * router for every admin request (http/http_audit.c) and by the rollout engine for its
 * events (rollout/rollout_events.c).
 */
#include "handlers/handlers.h"

#include "common/iso_time.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_PAGE_DEFAULT 100
#define AUDIT_PAGE_MAX 1000

static const char *const audit_keys[] = {"since",  "until", "token", "action",
                                         "before", "limit", NULL};

static const char *arg(const struct mf_httpd_req *r, const char *key)
{
    return mf_handlers__query_arg(r, key);
}

/* A time argument (ISO 8601 UTC or Unix seconds; absent: 0); 400 naming it when malformed. */
static int time_arg(int64_t *out, struct mf_httpd_req *r, const char *key)
{
    const char *v = arg(r, key);

    *out = 0;
    if (v && mf_iso_time__parse(out, v) < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'%s' must be a time as YYYY-MM-DDTHH:MM:SSZ or Unix"
                                     " seconds, not '%.40s'",
                                     key, v);
    return MF_OK;
}

/* The query; replies 400 naming the first bad or unknown key. */
static int audit_query(struct mf_store_audit_query *q, struct mf_httpd_req *r)
{
    int err;

    memset(q, 0, sizeof(*q));
    err = mf_handlers__query_check(r, audit_keys);
    if (err < 0 || r->resp)
        return err;
    q->token = arg(r, "token");
    q->action = arg(r, "action");
    if ((q->token && strlen(q->token) >= MF_STORE_NAME_SIZE) ||
        (q->action && strlen(q->action) > MF_STORE_AUDIT_ACTION_MAX))
        return mf_httpd__reply_error(
            r, MHD_HTTP_BAD_REQUEST, "'%s' is longer than a stored one can be",
            q->action && strlen(q->action) > MF_STORE_AUDIT_ACTION_MAX ? "action" : "token");
    err = time_arg(&q->since, r, "since");
    if (err == MF_OK && !r->resp)
        err = time_arg(&q->until, r, "until");
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&q->before_seq, r, "before", 0, INT64_MAX);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&q->limit, r, "limit", AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX);
    return err;
}

struct audit_page {
    cJSON *list;
    int64_t last_seq;
    int64_t n;
};

static int add_row(void *payload, const struct mf_store_audit *a)
{
    struct audit_page *p = payload;
    char at[MF_ISO_TIME_SIZE];
    cJSON *o = mf_handlers__add_row(p->list);

    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddNumberToObject(o, "seq", (double)a->seq) ||
        !cJSON_AddStringToObject(o, "at", mf_iso_time__format(at, a->at)) ||
        !cJSON_AddNumberToObject(o, "at_unix", (double)a->at) ||
        !cJSON_AddStringToObject(o, "token_id", a->actor_id) ||
        !cJSON_AddStringToObject(o, "actor", a->actor) ||
        !cJSON_AddStringToObject(o, "action", a->action) ||
        !cJSON_AddStringToObject(o, "target", a->target) ||
        !cJSON_AddNumberToObject(o, "status", a->status) ||
        !cJSON_AddStringToObject(o, "detail", a->detail))
        return MF_E_NOMEM;
    p->last_seq = a->seq;
    p->n++;
    return MF_OK;
}

int mf_handlers__audit_list(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_audit_query q;
    struct audit_page p = {0};
    cJSON *body;
    int err = audit_query(&q, r);

    if (err < 0 || r->resp)
        return err;
    body = cJSON_CreateObject();
    p.list = body ? cJSON_AddArrayToObject(body, "audit") : NULL;
    err = p.list ? s->ops->audit->audit_list(s, &r->ctx, &q, add_row, &p) : MF_E_NOMEM;
    /* "next": the `before` of the following page, 0 when this one was the last. */
    if (err == MF_OK &&
        !cJSON_AddNumberToObject(body, "next", p.n == q.limit ? (double)p.last_seq : 0.0))
        err = MF_E_NOMEM;
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing the audit log");
    return mf_handlers__reply_body(r, MHD_HTTP_OK, body, err);
}
