/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directives for the director (role ops): pins per device or group, a channel's default
 * version, and fleet rollbacks. All are rows of one store table (enum mf_store_pin_scope);
 * the precedence between them is director/director_policy.h. A directive may only name a
 * released version: anything else could never be assigned.
 */
#include "handlers/handlers.h"

#include <stdio.h>
#include <string.h>

static const char *const scope_names[] = {NULL, "device", "group", "channel", "fleet"};

static int scope_from_name(const char *s)
{
    for (int i = MF_STORE_PIN_DEVICE; i < MF_STORE_PIN_FLEET; i++) {
        if (strcmp(s, scope_names[i]) == 0)
            return i;
    }
    return 0; /* "fleet" is set through /v1/admin/rollbacks only */
}

static int add_pin(void *payload, const struct mf_store_pin *p)
{
    cJSON *o = mf_handlers__add_row(payload);

    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddStringToObject(o, "scope", scope_names[p->scope]) ||
        !cJSON_AddStringToObject(o, "target", p->target) ||
        !cJSON_AddStringToObject(o, "model", p->model) ||
        !cJSON_AddStringToObject(o, "version", p->version) ||
        !cJSON_AddNumberToObject(o, "created_at", (double)p->created_at))
        return MF_E_NOMEM;
    return MF_OK;
}

MF_HANDLERS_LISTING(mf_handlers__pins_list, "pins", director, pins_list, add_pin)

/* Stores scope/target/model -> the body's "version" once it names a released version. */
static int set_directive(struct mf_httpd_req *r, int scope, const char *target, const char *model)
{
    struct mf_store *s = r->env->store;
    const char *version =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "version"));
    struct mf_store_pin p = {.scope = scope, .created_at = mf_handlers__now()};
    struct mf_store_version v;
    cJSON *list;
    int err;

    if (!version || strlen(version) >= sizeof(p.version))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "field 'version' must be a string");
    /* What the directive names must exist: a pin for a typo would sit there, never applied.
     * A channel is only a name devices are moved to, so its default may come first. */
    if (scope == MF_STORE_PIN_DEVICE)
        err = mf_handlers__need_device(r, target);
    else if (scope == MF_STORE_PIN_GROUP)
        err = mf_handlers__need_group(r, target);
    else
        err = MF_OK;
    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_model(r, model);
    if (err < 0 || r->resp)
        return err;
    err = s->ops->registry->version_get(&v, s, &r->ctx, model, version);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no version '%s' of model '%s'",
                                     version, model);
    if (err < 0)
        return err;
    if (v.sequence == 0)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                     "version '%s' of model '%s' is not released", version, model);
    (void)snprintf(p.target, sizeof(p.target), "%s", target);
    (void)snprintf(p.model, sizeof(p.model), "%s", model);
    (void)snprintf(p.version, sizeof(p.version), "%s", version);
    err = s->ops->director->pin_set(s, &r->ctx, &p);
    if (err < 0)
        return err;
    MF_LOG_INFO(&r->ctx, "directive %s %s %s -> %s", scope_names[scope], target, model, version);
    list = cJSON_CreateArray();
    return mf_handlers__reply_row(r, MHD_HTTP_OK, list, list ? add_pin(list, &p) : MF_E_NOMEM,
                                  "a pin");
}

static int clear_directive(struct mf_httpd_req *r, int scope, const char *target, const char *model)
{
    struct mf_store *s = r->env->store;
    int err = s->ops->director->pin_clear(s, &r->ctx, scope, target, model);
    char done[256];

    (void)snprintf(done, sizeof(done), "directive %s %s %s cleared", scope_names[scope], target,
                   model);
    return mf_handlers__reply_changed(r, err, done);
}

/* /v1/admin/pins/{scope}/{target}/{model}: the scope must be device, group or channel. */
static int pin_scope(int *scope_out, struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 3);

    if (err < 0 || r->resp)
        return err;
    *scope_out = scope_from_name(r->params[0]);
    if (!*scope_out)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "scope '%s' is not device, group or channel", r->params[0]);
    return MF_OK;
}

int mf_handlers__pin_put(struct mf_httpd_req *r)
{
    int scope = 0, err = pin_scope(&scope, r);

    if (err < 0 || r->resp)
        return err;
    return set_directive(r, scope, r->params[1], r->params[2]);
}

int mf_handlers__pin_delete(struct mf_httpd_req *r)
{
    int scope = 0, err = pin_scope(&scope, r);

    if (err < 0 || r->resp)
        return err;
    return clear_directive(r, scope, r->params[1], r->params[2]);
}

int mf_handlers__rollback_put(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    return set_directive(r, MF_STORE_PIN_FLEET, "*", r->params[0]);
}

int mf_handlers__rollback_delete(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_model(r, r->params[0]);
    if (err < 0 || r->resp)
        return err;
    return clear_directive(r, MF_STORE_PIN_FLEET, "*", r->params[0]);
}
