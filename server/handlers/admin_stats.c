/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/admin/models/{name}/stats: per version, the devices running it (their last
 * report says installed) and the fleet figures of the device runtime reports, percentiles
 * from the merged histogram (never averaged; docs/rollouts.md); and the same per device
 * class, from the reports of each class alone (docs/console.md, Model health).
 */
#include "handlers/handlers.h"

#include "rollout/rollout_fleet.h"

#include <stdio.h>
#include <string.h>

struct running {
    const char *model;
    struct mf_rollout_fleet *fleet;
    uint64_t count[MF_ROLLOUT_FLEET_VERSIONS];
};

static int count_running(void *payload, const struct mf_store_status *st)
{
    struct running *run = payload;

    if (strcmp(st->model, run->model) != 0 || strcmp(st->status, "installed") != 0)
        return MF_OK;
    for (size_t i = 0; i < run->fleet->n; i++) {
        if (strcmp(run->fleet->v[i].version, st->version) == 0)
            run->count[i]++;
    }
    return MF_OK;
}

/* "figures": every red-line figure the aggregate has data for, by its name (the metric, with
 * "@minute" for the sustained ones), in the plan's units, with the devices and samples behind
 * it and its 95 % interval (lo = hi = value where the figure has none). A figure without data
 * is absent, never 0 (mf_rollout__figures). */
static int add_figures(cJSON *o, const struct mf_rollout_agg *a)
{
    struct mf_rollout_figures *f = mf_calloc(NULL, 1, sizeof(*f));
    cJSON *all = f ? cJSON_AddObjectToObject(o, "figures") : NULL;
    int ok = all != NULL;

    if (ok)
        mf_rollout__figures(f, a);
    for (int m = 0; ok && m < MF_ROLLOUT_FIGURES; m++) {
        char name[64];
        cJSON *x;

        if (!f->have[m])
            continue;
        mf_rollout__figure_name(name, sizeof(name), m);
        x = cJSON_AddObjectToObject(all, name);
        ok = x && cJSON_AddNumberToObject(x, "value", f->v[m]) &&
             cJSON_AddNumberToObject(x, "lo", f->lo[m]) &&
             cJSON_AddNumberToObject(x, "hi", f->hi[m]) &&
             cJSON_AddNumberToObject(x, "devices", (double)f->devices[m]) &&
             cJSON_AddNumberToObject(x, "samples", (double)f->samples[m]);
    }
    mf_free(NULL, f);
    return ok;
}

cJSON *mf_handlers__scorecard_json(const struct mf_rollout_version_agg *v, uint64_t running)
{
    const struct mf_rollout_agg *a = &v->agg;
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;

    ok = ok && cJSON_AddStringToObject(o, "version", v->version);
    ok = ok && cJSON_AddNumberToObject(o, "devices_running", (double)running);
    ok = ok && cJSON_AddNumberToObject(o, "devices_reporting", (double)a->devices);
    ok = ok && cJSON_AddNumberToObject(o, "install_ok", (double)a->install_ok);
    ok = ok && cJSON_AddNumberToObject(o, "install_failed", (double)a->install_failed);
    ok = ok && cJSON_AddNumberToObject(o, "unhealthy_devices", (double)a->unhealthy_devices);
    ok = ok &&
         cJSON_AddNumberToObject(o, "p50_us", (double)mf_telemetry_hist_quantile(a->latency, 0.50));
    ok = ok &&
         cJSON_AddNumberToObject(o, "p95_us", (double)mf_telemetry_hist_quantile(a->latency, 0.95));
    ok = ok &&
         cJSON_AddNumberToObject(o, "p99_us", (double)mf_telemetry_hist_quantile(a->latency, 0.99));
    ok = ok && cJSON_AddNumberToObject(o, "peak_memory", (double)a->peak_memory);
    ok = ok && cJSON_AddNumberToObject(o, "offload_rate",
                                       a->offload_asked
                                           ? (double)a->offload_uncertain / (double)a->offload_asked
                                           : 0.0);
    ok = ok && cJSON_AddNumberToObject(o, "teacher_agreement",
                                       a->teacher_compared
                                           ? (double)a->teacher_agreed / (double)a->teacher_compared
                                           : 0.0);
    ok = ok && add_figures(o, a);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The fleet's class tags (class_counts), at most STATS_CLASSES of them. */
#define STATS_CLASSES 16

struct class_tags {
    char tag[STATS_CLASSES][MF_STORE_NAME_SIZE];
    size_t n;
};

static int add_tag(void *payload, const char *tag, const char *unused, int64_t n)
{
    struct class_tags *c = payload;

    (void)unused;
    (void)n;
    if (c->n < STATS_CLASSES)
        (void)snprintf(c->tag[c->n++], MF_STORE_NAME_SIZE, "%s", tag);
    return MF_OK;
}

static int keep_class(void *payload, const struct mf_store_telemetry *t)
{
    return strcmp(t->device_class, payload) == 0;
}

/* "classes": per device class that reported the model, its versions' scorecards from the
 * reports of that class alone (the Model health view's split), the same dimensions. */
static int add_classes(struct mf_httpd_req *r, cJSON *body, struct mf_rollout_fleet *fleet)
{
    struct mf_store *s = r->env->store;
    struct class_tags *tags = mf_calloc(NULL, 1, sizeof(*tags));
    cJSON *list = cJSON_AddArrayToObject(body, "classes");
    int err = tags && list ? s->ops->devices->class_counts(s, &r->ctx, add_tag, tags) : MF_E_NOMEM;

    for (size_t c = 0; err == MF_OK && c < tags->n; c++) {
        cJSON *o, *versions;

        err = mf_rollout__fleet_collect(fleet, s, &r->ctx, r->params[0], keep_class, tags->tag[c]);
        if (err < 0 || fleet->n == 0)
            continue;
        o = mf_handlers__add_row(list);
        versions = o && cJSON_AddStringToObject(o, "class", tags->tag[c])
                       ? cJSON_AddArrayToObject(o, "versions")
                       : NULL;
        err = versions ? MF_OK : MF_E_NOMEM;
        for (size_t i = 0; err == MF_OK && i < fleet->n; i++) {
            cJSON *v = mf_handlers__scorecard_json(&fleet->v[i], 0);

            cJSON_DeleteItemFromObjectCaseSensitive(v, "devices_running"); /* the fleet's */
            if (!v || !cJSON_AddItemToArray(versions, v)) {
                cJSON_Delete(v);
                err = MF_E_NOMEM;
            }
        }
    }
    mf_free(NULL, tags);
    return err;
}

int mf_handlers__model_stats(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct running *run = NULL;
    cJSON *body = NULL, *list = NULL;
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_model(r, r->params[0]);
    if (err < 0 || r->resp)
        return err;
    run = mf_calloc(NULL, 1, sizeof(*run));
    if (run)
        run->fleet = mf_calloc(NULL, 1, sizeof(*run->fleet));
    err = run && run->fleet ? MF_OK : MF_E_NOMEM;
    if (err == MF_OK) {
        run->model = r->params[0];
        err = mf_rollout__fleet_collect(run->fleet, s, &r->ctx, r->params[0], NULL, NULL);
    }
    /* The labelled samples behind the stratified accuracy (the red line's estimate). */
    if (err == MF_OK)
        err = mf_rollout__accuracy_collect(run->fleet, s, &r->ctx, r->params[0], NULL, NULL);
    if (err == MF_OK)
        err = s->ops->devices->statuses_list(s, &r->ctx, count_running, run);
    if (err == MF_OK) {
        body = cJSON_CreateObject();
        list = body && cJSON_AddStringToObject(body, "model", r->params[0])
                   ? cJSON_AddArrayToObject(body, "versions")
                   : NULL;
        err = list && cJSON_AddNumberToObject(body, "skipped_reports", (double)run->fleet->skipped)
                  ? MF_OK
                  : MF_E_NOMEM;
    }
    for (size_t i = 0; err == MF_OK && i < run->fleet->n; i++) {
        cJSON *v = mf_handlers__scorecard_json(&run->fleet->v[i], run->count[i]);

        if (!v || !cJSON_AddItemToArray(list, v)) {
            cJSON_Delete(v);
            err = MF_E_NOMEM;
        }
    }
    if (err == MF_OK) /* last: it reuses the fleet's table per class */
        err = add_classes(r, body, run->fleet);
    if (run)
        mf_free(NULL, run->fleet);
    mf_free(NULL, run);
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, err, "out of memory answering stats of '%s'", r->params[0]);
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
