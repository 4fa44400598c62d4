/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fleet administration (role ops): a device's groups and channel, which the director reads
 * (director/director_policy.h), revoking a device's credential, and the group listing.
 */
#include "handlers/handlers.h"

#include "common/names.h"

#include <string.h>

#define FLEET_MAX_GROUPS 32

int mf_handlers__check_names(struct mf_httpd_req *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!mf_names__valid_id(r->params[i]))
            return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                         "'%s' does not match [A-Za-z0-9._-]{1,64}", r->params[i]);
    }
    return MF_OK;
}

/* 404 naming `kind` and `id` when `err` is MF_E_NOTFOUND; MF_OK when it is MF_OK. */
static int need(struct mf_httpd_req *r, int err, const char *kind, const char *id)
{
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "unknown %s '%s'", kind, id);
    return err;
}

int mf_handlers__need_device(struct mf_httpd_req *r, const char *id)
{
    struct mf_store *s = r->env->store;
    struct mf_store_directives d;

    /* One indexed read that answers MF_E_NOTFOUND for a device that never enrolled. */
    return need(r, s->ops->director->directives_get(&d, s, &r->ctx, id, ""), "device", id);
}

int mf_handlers__need_model(struct mf_httpd_req *r, const char *id)
{
    struct mf_store *s = r->env->store;
    struct mf_store_version v;

    return need(r, s->ops->registry->version_latest(&v, s, &r->ctx, id), "model", id);
}

struct group_find {
    const char *name;
    int found;
};

static int find_group(void *payload, const char *device_id, const char *group)
{
    struct group_find *f = payload;

    (void)device_id;
    f->found = f->found || strcmp(group, f->name) == 0;
    return MF_OK;
}

int mf_handlers__need_group(struct mf_httpd_req *r, const char *id)
{
    struct mf_store *s = r->env->store;
    struct group_find f = {id, 0};
    int err = s->ops->director->groups_list(s, &r->ctx, find_group, &f);

    return need(r, err == MF_OK && !f.found ? MF_E_NOTFOUND : err, "group", id);
}

/* 404 for an unknown device, the store's error otherwise, else `ok`'s reply. */
static int device_result(struct mf_httpd_req *r, int err)
{
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "unknown device '%s'", r->params[0]);
    if (err < 0)
        return err;
    return mf_httpd__reply_empty(r, MHD_HTTP_NO_CONTENT);
}

int mf_handlers__device_groups_put(struct mf_httpd_req *r)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(r->json, "groups");
    const char *names[FLEET_MAX_GROUPS];
    const cJSON *g;
    size_t n = 0;
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > FLEET_MAX_GROUPS)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'groups' must be an array of at most %d names",
                                     FLEET_MAX_GROUPS);
    cJSON_ArrayForEach(g, list)
    {
        if (!cJSON_IsString(g) || !mf_names__valid_id(g->valuestring))
            return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                         "every group must match [A-Za-z0-9._-]{1,64}");
        names[n++] = g->valuestring;
    }
    return device_result(r, r->env->store->ops->director->device_groups_set(
                                r->env->store, &r->ctx, r->params[0], names, n));
}

int mf_handlers__device_channel_put(struct mf_httpd_req *r)
{
    const char *ch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "channel"));
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    if (!ch || !mf_names__valid_id(ch))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'channel' must match [A-Za-z0-9._-]{1,64}");
    return device_result(r, r->env->store->ops->director->device_channel_set(r->env->store, &r->ctx,
                                                                             r->params[0], ch));
}

int mf_handlers__device_revoke(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    err = r->env->store->ops->auth->device_revoke(r->env->store, &r->ctx, r->params[0]);
    if (err == MF_OK)
        MF_LOG_INFO(&r->ctx, "revoked the credential of device %s", r->params[0]);
    return device_result(r, err);
}

/* Builds {"groups": [{"name": g, "devices": [...]}]} from rows sorted by group. */
static int add_member(void *payload, const char *device_id, const char *group)
{
    cJSON *groups = payload, *last = cJSON_GetArrayItem(groups, cJSON_GetArraySize(groups) - 1);
    cJSON *devices;

    if (!last ||
        strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(last, "name")), group) != 0) {
        last = mf_handlers__add_row(groups);
        if (!last)
            return MF_E_NOMEM;
        if (!cJSON_AddStringToObject(last, "name", group) ||
            !cJSON_AddArrayToObject(last, "devices"))
            return MF_E_NOMEM;
    }
    devices = cJSON_GetObjectItemCaseSensitive(last, "devices");
    if (!cJSON_AddItemToArray(devices, cJSON_CreateString(device_id)))
        return MF_E_NOMEM;
    return MF_OK;
}

MF_HANDLERS_LISTING(mf_handlers__groups_list, "groups", director, groups_list, add_member)
