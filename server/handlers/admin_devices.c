/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet as ops read it:
 *   GET /v1/admin/devices            every device with its last report per model and the
 *                                    version it runs (running_version: after a rollback,
 *                                    the one it went back to)
 *   GET /v1/admin/fleet/summary      the fleet aggregated: devices by state (online, offline,
 *                                    stale by last seen), per channel, per device class,
 *                                    installed devices per (model, version); no device row
 *                                    leaves the server
 *   GET /v1/admin/fleet/devices      devices a page at a time, filtered by id substring,
 *                                    state and device class, with their models (the
 *                                    console's list)
 *   GET /v1/admin/devices/{}         one device whole: models, groups, pins, channel, the
 *                                    versions it rolled back or failed to install with their
 *                                    reasons, its scorecard from its runtime reports,
 *                                    its degrade state and recent switches with their
 *                                    reasons
 * The store walks devices and statuses in device-id order, so the two lists merge in one
 * pass; a page keeps only its own rows, so memory stays bounded by the page size whatever
 * the fleet's (docs/console.md).
 */
#include "handlers/handlers.h"

#include "common/names.h"
#include "rollout/rollout_fleet.h"

#include <stdio.h>
#include <string.h>

#define FLEET_ONLINE_S 300    /* seen within: online (default of ?online_s=) */
#define FLEET_STALE_S (86400) /* not seen for: stale (default of ?stale_s=) */
#define FLEET_PAGE_DEFAULT 50
#define FLEET_PAGE_MAX 500
#define FLEET_CHANNELS_MAX 64 /* channels counted one by one; the rest as "(other)" */

enum fleet_state { FLEET_ONLINE, FLEET_OFFLINE, FLEET_STALE, FLEET_NSTATES };
static const char *const fleet_states[FLEET_NSTATES] = {"online", "offline", "stale"};

struct fleet_clock {
    int64_t now, online_s, stale_s;
};

/* Never seen is stale: a device that enrolled and never checked in is the one to look at. */
static enum fleet_state device_state(const struct fleet_clock *c, int64_t last_seen)
{
    if (last_seen <= 0 || c->now - last_seen >= c->stale_s)
        return FLEET_STALE;
    return c->now - last_seen < c->online_s ? FLEET_ONLINE : FLEET_OFFLINE;
}

struct devices_walk {
    cJSON *list;       /* the "devices" array */
    cJSON *cur;        /* merge cursor: the device object statuses are appended to */
    cJSON *cur_models; /* its "models" array */
    int ended;         /* the cursor passed the last row: later statuses are no row's */
    /* Pages (fleet/devices, devices/{}): which devices become rows. */
    const struct fleet_clock *clock; /* NULL: every device, no "state" */
    const char *q;                   /* device id substring; NULL: any */
    const char *exact;               /* this device only; NULL: any */
    int want_state;                  /* enum fleet_state, -1: any */
    const char *after;               /* rows after this id only; NULL: from the first */
    const char *device_class;        /* devices that reported under this class; NULL: any */
    int64_t limit, rows, matched;
    char last[MF_STORE_NAME_SIZE]; /* the last row's id */
};

static int device_json(cJSON *o, const struct mf_store_device *d)
{
    if (!cJSON_AddStringToObject(o, "device_id", d->device_id) ||
        !cJSON_AddNumberToObject(o, "enrolled_at", (double)d->enrolled_at) ||
        !cJSON_AddNumberToObject(o, "last_seen", (double)d->last_seen) ||
        !cJSON_AddStringToObject(o, "channel", d->channel) ||
        !cJSON_AddBoolToObject(o, "revoked", d->revoked) || !cJSON_AddArrayToObject(o, "models"))
        return MF_E_NOMEM;
    return MF_OK;
}

static int add_device(void *payload, const struct mf_store_device *d)
{
    struct devices_walk *w = payload;
    cJSON *o;

    if (w->clock) {
        enum fleet_state st = device_state(w->clock, d->last_seen);

        if ((w->exact && strcmp(d->device_id, w->exact) != 0) ||
            (w->q && !strstr(d->device_id, w->q)) ||
            (w->want_state >= 0 && (int)st != w->want_state))
            return MF_OK;
        w->matched++;
        if ((w->after && strcmp(d->device_id, w->after) <= 0) || w->rows >= w->limit)
            return MF_OK;
        w->rows++;
        (void)snprintf(w->last, sizeof(w->last), "%s", d->device_id);
        o = mf_handlers__add_row(w->list);
        if (!o || device_json(o, d) < 0 || !cJSON_AddStringToObject(o, "state", fleet_states[st]))
            return MF_E_NOMEM;
        return MF_OK;
    }
    o = mf_handlers__add_row(w->list);
    return o ? device_json(o, d) : MF_E_NOMEM;
}

static int add_status(void *payload, const struct mf_store_status *st)
{
    struct devices_walk *w = payload;
    cJSON *o;

    /* Advance the cursor to this status's device; both walks are sorted by device id. A
     * status of a device that is not a row (another page, filtered out) is skipped. */
    for (;;) {
        int cmp = w->cur ? strcmp(cJSON_GetStringValue(
                                      cJSON_GetObjectItemCaseSensitive(w->cur, "device_id")),
                                  st->device_id)
                         : -1;

        if (cmp == 0)
            break;
        if (cmp > 0 || w->ended)
            return MF_OK;
        w->cur = w->cur ? w->cur->next : w->list->child;
        if (!w->cur) {
            w->ended = 1; /* enrolled after the device walk, or after the page */
            return MF_OK;
        }
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

/* Fills w->list (the "devices" array of `body`) from the two walks: every device, or those
 * of class w->device_class. */
static int walk_devices(struct mf_httpd_req *r, cJSON *body, struct devices_walk *w)
{
    struct mf_store *s = r->env->store;
    int err;

    w->list = body ? cJSON_AddArrayToObject(body, "devices") : NULL;
    if (!w->list)
        return MF_E_NOMEM;
    err = w->device_class
              ? s->ops->devices->devices_of_class(s, &r->ctx, w->device_class, add_device, w)
              : s->ops->devices->devices_list(s, &r->ctx, add_device, w);
    w->cur = NULL;
    if (err == MF_OK)
        err = s->ops->devices->statuses_list(s, &r->ctx, add_status, w);
    return err;
}

static int reply_devices(struct mf_httpd_req *r, cJSON *body, int err)
{
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing devices");
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

int mf_handlers__devices_list(struct mf_httpd_req *r)
{
    struct devices_walk w = {0};
    cJSON *body = cJSON_CreateObject();

    return reply_devices(r, body, walk_devices(r, body, &w));
}

/* ?online_s= and ?stale_s= (seconds; the defaults above); 400 naming a bad one. */
static int clock_args(struct fleet_clock *c, struct mf_httpd_req *r)
{
    int err;

    c->now = mf_handlers__now();
    err = mf_handlers__count_arg(&c->online_s, r, "online_s", FLEET_ONLINE_S, 366 * 86400);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&c->stale_s, r, "stale_s", FLEET_STALE_S, 3660 * 86400);
    if (err == MF_OK && !r->resp && c->stale_s <= c->online_s)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'stale_s' (%lld) must be above 'online_s' (%lld)",
                                     (long long)c->stale_s, (long long)c->online_s);
    return err;
}

struct fleet_counts {
    const struct fleet_clock *clock;
    int64_t total, revoked, by_state[FLEET_NSTATES];
    cJSON *channels; /* {"name": count} */
    int n_channels;
};

static int count_device(void *payload, const struct mf_store_device *d)
{
    struct fleet_counts *f = payload;
    const char *ch = d->channel;
    cJSON *n;

    f->total++;
    f->revoked += d->revoked != 0;
    f->by_state[device_state(f->clock, d->last_seen)]++;
    n = cJSON_GetObjectItemCaseSensitive(f->channels, ch);
    if (!n && f->n_channels >= FLEET_CHANNELS_MAX) {
        ch = "(other)";
        n = cJSON_GetObjectItemCaseSensitive(f->channels, ch);
    }
    if (n) {
        cJSON_SetNumberValue(n, n->valuedouble + 1);
        return MF_OK;
    }
    f->n_channels++;
    return cJSON_AddNumberToObject(f->channels, ch, 1) ? MF_OK : MF_E_NOMEM;
}

/* One (model, version, devices) row of version_counts: models in order, so a model's
 * versions arrive together and go into its last object. */
static int add_version_count(void *payload, const char *model, const char *version, int64_t n)
{
    cJSON *models = payload, *last = cJSON_GetArrayItem(models, cJSON_GetArraySize(models) - 1);
    cJSON *versions, *row;

    if (!last ||
        strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(last, "model")), model) != 0) {
        last = mf_handlers__add_row(models);
        if (!last || !cJSON_AddStringToObject(last, "model", model) ||
            !cJSON_AddArrayToObject(last, "versions"))
            return MF_E_NOMEM;
    }
    versions = cJSON_GetObjectItemCaseSensitive(last, "versions");
    row = mf_handlers__add_row(versions);
    if (!row || !cJSON_AddStringToObject(row, "version", version) ||
        !cJSON_AddNumberToObject(row, "devices", (double)n))
        return MF_E_NOMEM;
    return MF_OK;
}

/* One class tag and its devices (class_counts) into the object `payload`. */
static int add_class_count(void *payload, const char *tag, const char *unused, int64_t n)
{
    (void)unused;
    return cJSON_AddNumberToObject(payload, tag, (double)n) ? MF_OK : MF_E_NOMEM;
}

static const char *const summary_keys[] = {"online_s", "stale_s", NULL};

int mf_handlers__fleet_summary(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct fleet_clock c;
    struct fleet_counts f = {.clock = &c};
    cJSON *body, *devices, *models, *classes;
    int err = mf_handlers__query_check(r, summary_keys);

    if (err == MF_OK && !r->resp)
        err = clock_args(&c, r);
    if (err < 0 || r->resp)
        return err;
    body = cJSON_CreateObject();
    devices = body ? cJSON_AddObjectToObject(body, "devices") : NULL;
    f.channels = body ? cJSON_AddObjectToObject(body, "channels") : NULL;
    models = body ? cJSON_AddArrayToObject(body, "models") : NULL;
    classes = body ? cJSON_AddObjectToObject(body, "classes") : NULL;
    err = devices && f.channels && models && classes ? MF_OK : MF_E_NOMEM;
    if (err == MF_OK)
        err = s->ops->devices->devices_list(s, &r->ctx, count_device, &f);
    if (err == MF_OK)
        err = s->ops->devices->version_counts(s, &r->ctx, add_version_count, models);
    if (err == MF_OK)
        err = s->ops->devices->class_counts(s, &r->ctx, add_class_count, classes);
    if (err == MF_OK && (!cJSON_AddNumberToObject(body, "now", (double)c.now) ||
                         !cJSON_AddNumberToObject(body, "online_s", (double)c.online_s) ||
                         !cJSON_AddNumberToObject(body, "stale_s", (double)c.stale_s) ||
                         !cJSON_AddNumberToObject(devices, "total", (double)f.total) ||
                         !cJSON_AddNumberToObject(devices, "revoked", (double)f.revoked)))
        err = MF_E_NOMEM;
    for (int i = 0; err == MF_OK && i < FLEET_NSTATES; i++)
        if (!cJSON_AddNumberToObject(devices, fleet_states[i], (double)f.by_state[i]))
            err = MF_E_NOMEM;
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory summing up the fleet");
    return reply_devices(r, body, err);
}

static const char *const page_keys[] = {"q",     "state",    "class",   "after",
                                        "limit", "online_s", "stale_s", NULL};

int mf_handlers__fleet_devices(struct mf_httpd_req *r)
{
    struct fleet_clock c;
    struct devices_walk w = {.clock = &c, .want_state = -1};
    const char *state;
    cJSON *body;
    int err = mf_handlers__query_check(r, page_keys);

    if (err == MF_OK && !r->resp)
        err = clock_args(&c, r);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&w.limit, r, "limit", FLEET_PAGE_DEFAULT, FLEET_PAGE_MAX);
    if (err < 0 || r->resp)
        return err;
    w.q = mf_handlers__query_arg(r, "q");
    w.after = mf_handlers__query_arg(r, "after");
    if ((w.q && strlen(w.q) >= MF_STORE_NAME_SIZE) ||
        (w.after && strlen(w.after) >= MF_STORE_NAME_SIZE))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'%s' is longer than a device id can be",
                                     w.q && strlen(w.q) >= MF_STORE_NAME_SIZE ? "q" : "after");
    if (w.q && !w.q[0])
        w.q = NULL;
    w.device_class = mf_handlers__query_arg(r, "class");
    if (w.device_class && !mf_names__valid_id(w.device_class))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'class' must match [A-Za-z0-9._-]{1,64}");
    state = mf_handlers__query_arg(r, "state");
    for (int i = 0; state && i < FLEET_NSTATES; i++)
        if (strcmp(state, fleet_states[i]) == 0)
            w.want_state = i;
    if (state && w.want_state < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'state' must be online, offline or stale, not '%.40s'",
                                     state);
    body = cJSON_CreateObject();
    err = walk_devices(r, body, &w);
    /* "next": the `after` of the following page, null when this one was the last. */
    if (err == MF_OK &&
        (!cJSON_AddNumberToObject(body, "matched", (double)w.matched) ||
         !(w.rows == w.limit && w.matched > w.rows ? cJSON_AddStringToObject(body, "next", w.last)
                                                   : cJSON_AddNullToObject(body, "next"))))
        err = MF_E_NOMEM;
    return reply_devices(r, body, err);
}

static int add_group(void *payload, const char *device_id, const char *group)
{
    (void)device_id;
    return cJSON_AddItemToArray(payload, cJSON_CreateString(group)) ? MF_OK : MF_E_NOMEM;
}

struct device_pins {
    const char *device_id;
    cJSON *list;
};

static int add_pin(void *payload, const struct mf_store_pin *p)
{
    struct device_pins *dp = payload;
    cJSON *o;

    if (p->scope != MF_STORE_PIN_DEVICE || strcmp(p->target, dp->device_id) != 0)
        return MF_OK;
    o = mf_handlers__add_row(dp->list);
    if (!o || !cJSON_AddStringToObject(o, "model", p->model) ||
        !cJSON_AddStringToObject(o, "version", p->version) ||
        !cJSON_AddNumberToObject(o, "created_at", (double)p->created_at))
        return MF_E_NOMEM;
    return MF_OK;
}

#define DEVICE_FAILURES_MAX 20 /* rolled-back and failed versions shown, newest first */

static int add_failure(void *payload, const struct mf_store_status *st)
{
    cJSON *o = mf_handlers__add_row(payload);

    if (!o || !cJSON_AddStringToObject(o, "model", st->model) ||
        !cJSON_AddStringToObject(o, "version", st->version) ||
        !cJSON_AddStringToObject(o, "detail", st->detail) ||
        !cJSON_AddBoolToObject(o, "rolled_back", strncmp(st->detail, "rolled back", 11) == 0) ||
        !cJSON_AddNumberToObject(o, "at", (double)st->reported_at))
        return MF_E_NOMEM;
    return MF_OK;
}

/* "scorecard": per model the device has a status for, per version it reported, the
 * figures of Model health from this device's runtime reports alone. */
static int device_scorecard(struct mf_httpd_req *r, cJSON *dev, const char *id)
{
    struct mf_rollout_fleet *f = mf_calloc(NULL, 1, sizeof(*f));
    cJSON *card = cJSON_AddArrayToObject(dev, "scorecard"), *m;
    int err = f && card ? MF_OK : MF_E_NOMEM;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(dev, "models"))
    {
        const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));

        if (err == MF_OK && model)
            err = mf_rollout__device_collect(f, r->env->store, &r->ctx, model, id);
        for (size_t i = 0; err == MF_OK && model && i < f->n; i++) {
            cJSON *v = mf_handlers__scorecard_json(&f->v[i], 0);

            cJSON_DeleteItemFromObjectCaseSensitive(v, "devices_running"); /* a fleet figure */
            if (!v || !cJSON_AddStringToObject(v, "model", model) ||
                !cJSON_AddItemToArray(card, v)) {
                cJSON_Delete(v);
                err = MF_E_NOMEM;
            }
        }
    }
    mf_free(NULL, f);
    return err;
}

/* "switches": the degrade switches the device reported, newest first; "degraded": what the
 * newest says (false without any). */
static int add_switch(void *payload, const struct mf_store_switch *sw)
{
    cJSON *o = mf_handlers__add_row(payload);

    if (!o || !cJSON_AddNumberToObject(o, "seq", (double)sw->seq) ||
        !cJSON_AddNumberToObject(o, "at", (double)sw->at) ||
        !cJSON_AddNumberToObject(o, "received_at", (double)sw->received_at) ||
        !cJSON_AddBoolToObject(o, "degraded", sw->degraded) ||
        !cJSON_AddStringToObject(o, "reason", sw->reason))
        return MF_E_NOMEM;
    return MF_OK;
}

static int device_switches(struct mf_httpd_req *r, cJSON *dev, const char *id)
{
    struct mf_store *s = r->env->store;
    cJSON *list = cJSON_AddArrayToObject(dev, "switches");
    int err = list ? s->ops->devices->switches_list(s, &r->ctx, id, add_switch, list) : MF_E_NOMEM;
    const cJSON *newest = list ? cJSON_GetArrayItem(list, 0) : NULL;

    if (err == MF_OK &&
        !cJSON_AddBoolToObject(dev, "degraded",
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(newest, "degraded"))))
        err = MF_E_NOMEM;
    return err;
}

int mf_handlers__device_get(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    const char *id = r->params[0];
    struct fleet_clock c = {mf_handlers__now(), FLEET_ONLINE_S, FLEET_STALE_S};
    struct devices_walk w = {.clock = &c, .exact = id, .want_state = -1, .limit = 1};
    struct device_pins dp = {id, NULL};
    cJSON *body, *dev, *groups;
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_device(r, id);
    if (err < 0 || r->resp)
        return err;
    body = cJSON_CreateObject();
    err = walk_devices(r, body, &w);
    dev = err == MF_OK ? cJSON_DetachItemViaPointer(w.list, w.list->child) : NULL;
    cJSON_Delete(body);
    if (err == MF_OK && !dev)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "unknown device '%s'", id);
    groups = dev ? cJSON_AddArrayToObject(dev, "groups") : NULL;
    dp.list = dev ? cJSON_AddArrayToObject(dev, "pins") : NULL;
    if (err == MF_OK)
        err = groups && dp.list
                  ? s->ops->director->device_groups_get(s, &r->ctx, id, add_group, groups)
                  : MF_E_NOMEM;
    if (err == MF_OK)
        err = s->ops->director->pins_list(s, &r->ctx, add_pin, &dp);
    if (err == MF_OK) {
        cJSON *failures = cJSON_AddArrayToObject(dev, "failures");

        err = failures ? s->ops->devices->device_failures(s, &r->ctx, id, DEVICE_FAILURES_MAX,
                                                          add_failure, failures)
                       : MF_E_NOMEM;
    }
    if (err == MF_OK)
        err = device_scorecard(r, dev, id);
    if (err == MF_OK)
        err = device_switches(r, dev, id);
    return reply_devices(r, dev, err);
}
