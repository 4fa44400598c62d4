/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhooks (docs/operations.md, "Webhooks"): ops register a URL and a secret, list them
 * (never the secret) with their deliveries by state, and remove one with its pending
 * deliveries. Each rollout event then reaches every registered URL, signed with its secret
 * (webhooks/webhook_sender.h).
 */
#include "handlers/handlers.h"

#include "common/iso_time.h"
#include "webhooks/webhook_sender.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEBHOOK_SECRET_MIN 16 /* bytes: an HMAC key shorter than this is guessable */

static int add_webhook(void *payload, const struct mf_store_webhook *w)
{
    char at[MF_ISO_TIME_SIZE];
    cJSON *o = mf_handlers__add_row(payload);

    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddNumberToObject(o, "id", (double)w->id) ||
        !cJSON_AddStringToObject(o, "url", w->url) ||
        !cJSON_AddStringToObject(o, "created_at", mf_iso_time__format(at, w->created_at)) ||
        !cJSON_AddNumberToObject(o, "pending", (double)w->pending) ||
        !cJSON_AddNumberToObject(o, "failed", (double)w->failed) ||
        !cJSON_AddNumberToObject(o, "delivered", (double)w->delivered))
        return MF_E_NOMEM;
    return MF_OK;
}

MF_HANDLERS_LISTING(mf_handlers__webhooks_list, "webhooks", webhooks, webhooks_list, add_webhook)

/* The body {"url": ..., "secret": ...}: 400 naming the key that is unknown, missing or bad. */
static int read_body(const char **url, const char **secret, struct mf_httpd_req *r)
{
    static const char *const keys[] = {"url", "secret", NULL};
    const char *unknown = mf_handlers__unknown_member(r->json, keys);

    if (unknown)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "unknown field '%.40s' (url, secret)",
                                     unknown);
    *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "url"));
    *secret = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "secret"));
    if (!*url || !mf_webhook__url_ok(*url))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'url' must be an http:// or https:// URL with a host,"
                                     " at most %d characters without spaces",
                                     MF_STORE_WEBHOOK_URL_MAX);
    if (!*secret || strlen(*secret) < WEBHOOK_SECRET_MIN ||
        strlen(*secret) > MF_STORE_WEBHOOK_SECRET_MAX || strchr(*secret, '\n'))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'secret' must be %d to %d characters on one line",
                                     WEBHOOK_SECRET_MIN, MF_STORE_WEBHOOK_SECRET_MAX);
    return MF_OK;
}

int mf_handlers__webhook_add(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_webhook w = {.created_at = mf_handlers__now()};
    const char *url = NULL, *secret = NULL;
    cJSON *list;
    int err = read_body(&url, &secret, r);

    if (err < 0 || r->resp)
        return err;
    err = s->ops->webhooks->webhook_add(&w.id, s, &r->ctx, url, secret, w.created_at);
    if (err == MF_E_STATE)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT, "%s", mf_ctx__errmsg(&r->ctx));
    if (err < 0)
        return err;
    (void)snprintf(w.url, sizeof(w.url), "%s", url);
    MF_LOG_INFO(&r->ctx, "webhook %lld registered: %s", (long long)w.id, w.url);
    list = cJSON_CreateArray();
    return mf_handlers__reply_row(r, MHD_HTTP_CREATED, list,
                                  list ? add_webhook(list, &w) : MF_E_NOMEM, "a new webhook");
}

int mf_handlers__webhook_remove(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    const char *id = r->params[0];
    char *end = NULL, done[64];
    long long n = strtoll(id, &end, 10);
    int err;

    if (id[0] < '1' || id[0] > '9' || *end || strlen(id) > 18)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "webhook id '%.20s' is not a number",
                                     id);
    err = s->ops->webhooks->webhook_remove(s, &r->ctx, (int64_t)n);
    (void)snprintf(done, sizeof(done), "webhook %lld removed", n);
    return mf_handlers__reply_changed(r, err, done);
}
