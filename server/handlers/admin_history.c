/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The console's time series, aggregated on the server (docs/console.md):
 *   GET /v1/admin/rollouts/{}/history   every red line of a rollout over its evaluations:
 *                                       value, bound, control group and verdict per tick
 *   GET /v1/admin/models/{}/installed   devices per installed version of a model per time
 *                                       bin (the worker's snapshots)
 * Both answer columns, not rows: one "at" array and, per series, an array of the same
 * length (null, or 0 for device counts, where a series has no point), which is what a
 * time-series chart takes. The store bounds both (MF_STORE_HISTORY_TICKS evaluations, a
 * week of bins), so an answer's size does not grow with the fleet.
 */
#include "handlers/handlers.h"

#include <stdio.h>
#include <string.h>

#define INSTALLED_WINDOW_S 86400             /* ?window_s= default: a day of bins */
#define INSTALLED_VERSIONS_MAX 32            /* series of one answer; the rest is "(other)" */
#define HISTORY_SINCE_MAX (INT64_C(1) << 40) /* ?since= is Unix seconds */

/* Appends `item` to `arr` at index `k`, first padding it with `fill` (NULL: null) up to
 * k; MF_E_NOMEM (and `item` freed) when out of memory. */
static int series_put(cJSON *arr, int k, double *fill, cJSON *item)
{
    while (item && cJSON_GetArraySize(arr) < k) {
        cJSON *pad = fill ? cJSON_CreateNumber(*fill) : cJSON_CreateNull();

        if (!pad || !cJSON_AddItemToArray(arr, pad)) {
            cJSON_Delete(pad);
            cJSON_Delete(item);
            return MF_E_NOMEM;
        }
    }
    if (!item || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return MF_E_NOMEM;
    }
    return MF_OK;
}

/* A new point of the time axis `at` when `t` is not its last: the index of `t`'s point. */
static int axis_point(int *k_out, cJSON *at, int64_t t)
{
    cJSON *last = cJSON_GetArrayItem(at, cJSON_GetArraySize(at) - 1);

    if (!last || (int64_t)last->valuedouble != t) {
        if (series_put(at, cJSON_GetArraySize(at), NULL, cJSON_CreateNumber((double)t)) < 0)
            return MF_E_NOMEM;
    }
    *k_out = cJSON_GetArraySize(at) - 1;
    return MF_OK;
}

/* Pads every array `key` of the objects of `list` to the axis's length. */
static int series_pad(cJSON *list, const char *const *keys, double *fill, int n)
{
    cJSON *o;

    cJSON_ArrayForEach(o, list)
    {
        for (const char *const *key = keys; *key; key++) {
            cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, *key);

            while (arr && cJSON_GetArraySize(arr) < n) {
                cJSON *pad = fill ? cJSON_CreateNumber(*fill) : cJSON_CreateNull();

                if (!pad || !cJSON_AddItemToArray(arr, pad)) {
                    cJSON_Delete(pad);
                    return MF_E_NOMEM;
                }
            }
        }
    }
    return MF_OK;
}

static int reply_series(struct mf_httpd_req *r, cJSON *body, int err, const char *what)
{
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering %s", what);
    return mf_handlers__reply_body(r, MHD_HTTP_OK, body, err);
}

/* ---- A rollout's red lines over time ---- */

static const char *const line_series[] = {"state", "value", "bound", "control", "devices", NULL};

struct history_walk {
    cJSON *at, *lines;
    cJSON *by_line[MF_STORE_HISTORY_LINES];
};

static cJSON *history_line(struct history_walk *w, const struct mf_store_history_line *l)
{
    cJSON *o;

    if (w->by_line[l->line])
        return w->by_line[l->line];
    o = mf_handlers__add_row(w->lines);
    if (!o || !cJSON_AddNumberToObject(o, "line", l->line) ||
        !cJSON_AddStringToObject(o, "metric", l->metric) ||
        !cJSON_AddStringToObject(o, "kind", l->kind))
        return NULL;
    for (const char *const *key = line_series; *key; key++) {
        if (!cJSON_AddArrayToObject(o, *key))
            return NULL;
    }
    w->by_line[l->line] = o;
    return o;
}

static int add_history(void *payload, const struct mf_store_history_line *l)
{
    struct history_walk *w = payload;
    int evaluated = strcmp(l->state, "waiting") != 0, relative = strcmp(l->kind, "relative") == 0;
    int k, err;
    cJSON *o;

    if (l->line < 0 || l->line >= MF_STORE_HISTORY_LINES)
        return MF_OK; /* never written so; a row from elsewhere is not shown */
    err = axis_point(&k, w->at, l->at);
    o = err == MF_OK ? history_line(w, l) : NULL;
    if (!o)
        return MF_E_NOMEM;
    err = series_put(cJSON_GetObjectItemCaseSensitive(o, "state"), k, NULL,
                     cJSON_CreateString(l->state));
    if (err == MF_OK)
        err = series_put(cJSON_GetObjectItemCaseSensitive(o, "value"), k, NULL,
                         evaluated ? cJSON_CreateNumber(l->value) : cJSON_CreateNull());
    if (err == MF_OK)
        err = series_put(cJSON_GetObjectItemCaseSensitive(o, "bound"), k, NULL,
                         evaluated ? cJSON_CreateNumber(l->bound) : cJSON_CreateNull());
    if (err == MF_OK)
        err =
            series_put(cJSON_GetObjectItemCaseSensitive(o, "control"), k, NULL,
                       evaluated && relative ? cJSON_CreateNumber(l->control) : cJSON_CreateNull());
    if (err == MF_OK)
        err = series_put(cJSON_GetObjectItemCaseSensitive(o, "devices"), k, NULL,
                         cJSON_CreateNumber((double)l->devices));
    return err;
}

static const char *const history_keys[] = {"since", NULL};

int mf_handlers__rollout_history(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_rollout *ro = NULL;
    struct history_walk w = {0};
    int64_t id = 0, since = 1;
    cJSON *body = NULL;
    int err = mf_handlers__query_check(r, history_keys);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__rollout_id(&id, r);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&since, r, "since", 1, HISTORY_SINCE_MAX);
    if (err < 0 || r->resp)
        return err;
    ro = mf_calloc(NULL, 1, sizeof(*ro));
    err = ro ? s->ops->rollout->rollout_get(ro, s, &r->ctx, id) : MF_E_NOMEM;
    body = err == MF_OK ? cJSON_CreateObject() : NULL;
    if (body) {
        w.at = cJSON_AddArrayToObject(body, "at");
        w.lines = cJSON_AddArrayToObject(body, "lines");
    }
    if (err == MF_OK && (!w.at || !w.lines || !cJSON_AddNumberToObject(body, "id", (double)id) ||
                         !cJSON_AddStringToObject(body, "state", ro->state) ||
                         !cJSON_AddNumberToObject(body, "max_ticks", MF_STORE_HISTORY_TICKS)))
        err = MF_E_NOMEM;
    if (err == MF_OK)
        err = s->ops->rollout->history_list(s, &r->ctx, id, since, add_history, &w);
    if (err == MF_OK)
        err = series_pad(w.lines, line_series, NULL, cJSON_GetArraySize(w.at));
    mf_free(NULL, ro);
    return reply_series(r, body, err, "a rollout's history");
}

/* ---- A model's installed versions over time ---- */

struct installed_walk {
    cJSON *at, *versions;
    int n_versions;
};

static cJSON *installed_version(struct installed_walk *w, const char *version)
{
    const char *name = version;
    cJSON *o;

    for (int pass = 0; pass < 2; pass++) {
        cJSON_ArrayForEach(o, w->versions)
        {
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "version"));

            if (v && strcmp(v, name) == 0)
                return o;
        }
        if (w->n_versions < INSTALLED_VERSIONS_MAX)
            break;
        name = "(other)"; /* one series more, for every version past the bound */
    }
    o = mf_handlers__add_row(w->versions);
    if (!o || !cJSON_AddStringToObject(o, "version", name) || !cJSON_AddArrayToObject(o, "devices"))
        return NULL;
    w->n_versions += name == version;
    return o;
}

static int add_installed(void *payload, const struct mf_store_fleet_bin *b)
{
    struct installed_walk *w = payload;
    double zero = 0;
    cJSON *o, *devices, *last;
    int k;

    if (axis_point(&k, w->at, b->bin_at) < 0)
        return MF_E_NOMEM;
    o = installed_version(w, b->version);
    if (!o)
        return MF_E_NOMEM;
    devices = cJSON_GetObjectItemCaseSensitive(o, "devices");
    last = cJSON_GetArrayItem(devices, k);
    if (last) { /* "(other)": versions past the bound add up */
        cJSON_SetNumberValue(last, last->valuedouble + (double)b->devices);
        return MF_OK;
    }
    return series_put(devices, k, &zero, cJSON_CreateNumber((double)b->devices));
}

static const char *const installed_keys[] = {"window_s", NULL};
static const char *const installed_series[] = {"devices", NULL};

int mf_handlers__model_installed(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct installed_walk w = {0};
    int64_t window = 0, since;
    double zero = 0;
    cJSON *body;
    int err = mf_handlers__query_check(r, installed_keys);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__check_names(r, 1);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__count_arg(&window, r, "window_s", INSTALLED_WINDOW_S,
                                     MF_STORE_FLEET_KEEP_S);
    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_model(r, r->params[0]);
    if (err < 0 || r->resp)
        return err;
    since = mf_handlers__now() - window;
    body = cJSON_CreateObject();
    if (body) {
        w.at = cJSON_AddArrayToObject(body, "at");
        w.versions = cJSON_AddArrayToObject(body, "versions");
    }
    err = w.at && w.versions && cJSON_AddStringToObject(body, "model", r->params[0]) &&
                  cJSON_AddNumberToObject(body, "bin_s", MF_STORE_FLEET_BIN_S) &&
                  cJSON_AddNumberToObject(body, "since", (double)since)
              ? MF_OK
              : MF_E_NOMEM;
    if (err == MF_OK)
        err = s->ops->devices->fleet_bins(s, &r->ctx, r->params[0], since, add_installed, &w);
    if (err == MF_OK)
        err = series_pad(w.versions, installed_series, &zero, cJSON_GetArraySize(w.at));
    return reply_series(r, body, err, "a model's installed versions");
}
