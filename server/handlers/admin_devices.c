/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/admin/devices: every device with its last report per model and the version it
 * runs (running_version: after a rollback, the one it went back to). The store walks
 * devices and statuses in device-id order, so the two lists merge in one pass.
 */
#include "handlers/handlers.h"

#include <string.h>

struct devices_walk {
    cJSON *list;       /* the "devices" array */
    cJSON *cur;        /* merge cursor: the device object statuses are appended to */
    cJSON *cur_models; /* its "models" array */
};

static int add_device(void *payload, const struct mf_store_device *d)
{
    struct devices_walk *w = payload;
    cJSON *o = mf_handlers__add_row(w->list);

    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddStringToObject(o, "device_id", d->device_id) ||
        !cJSON_AddNumberToObject(o, "enrolled_at", (double)d->enrolled_at) ||
        !cJSON_AddNumberToObject(o, "last_seen", (double)d->last_seen) ||
        !cJSON_AddStringToObject(o, "channel", d->channel) ||
        !cJSON_AddBoolToObject(o, "revoked", d->revoked) || !cJSON_AddArrayToObject(o, "models"))
        return MF_E_NOMEM;
    return MF_OK;
}

static int add_status(void *payload, const struct mf_store_status *st)
{
    struct devices_walk *w = payload;
    cJSON *o;

    /* Advance the cursor to this status's device; both walks are sorted by device id. */
    while (!w->cur ||
           strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w->cur, "device_id")),
                  st->device_id) != 0) {
        w->cur = w->cur ? w->cur->next : w->list->child;
        if (!w->cur)
            return MF_OK; /* enrolled after the device walk: show it next time */
        w->cur_models = cJSON_GetObjectItemCaseSensitive(w->cur, "models");
    }
    o = mf_handlers__add_row(w->cur_models);
    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddStringToObject(o, "name", st->model) ||
        !cJSON_AddStringToObject(o, "version", st->version) ||
        !cJSON_AddStringToObject(o, "sha256", st->sha256) ||
        !cJSON_AddStringToObject(o, "status", st->status) ||
        !cJSON_AddStringToObject(o, "detail", st->detail) ||
        !cJSON_AddNumberToObject(o, "reported_at", (double)st->reported_at) ||
        !cJSON_AddStringToObject(o, "running_version", st->running_version))
        return MF_E_NOMEM;
    return MF_OK;
}

static int walk_devices(struct mf_httpd_req *r, cJSON *list)
{
    struct mf_store *s = r->env->store;
    struct devices_walk w = {list, NULL, NULL};
    int err = s->ops->devices->devices_list(s, &r->ctx, add_device, &w);

    return err == MF_OK ? s->ops->devices->statuses_list(s, &r->ctx, add_status, &w) : err;
}

int mf_handlers__devices_list(struct mf_httpd_req *r)
{
    return mf_handlers__reply_list(r, "devices", walk_devices);
}
