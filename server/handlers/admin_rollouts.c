/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rollout routes (docs/protocol.md, "Rollouts"): create, list, the status view (waves,
 * devices, each red line's value against its bound, events) and the ops actions.
 */
#include "handlers/handlers.h"

#include "common/iso_time.h"
#include "rollout/rollout_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds `n` to `o` under `key`; a failed add is remembered in *ok. */
static void add_num(int *ok, cJSON *o, const char *key, double n)
{
    if (!cJSON_AddNumberToObject(o, key, n))
        *ok = 0;
}

static void add_str(int *ok, cJSON *o, const char *key, const char *s)
{
    if (!cJSON_AddStringToObject(o, key, s))
        *ok = 0;
}

/* Unix seconds `t` under `key` and as ISO 8601 UTC under `key` + "_iso" ("at_iso"). */
static void add_time(int *ok, cJSON *o, const char *key, int64_t t)
{
    char iso_key[32], at[MF_ISO_TIME_SIZE];

    add_num(ok, o, key, (double)t);
    (void)snprintf(iso_key, sizeof(iso_key), "%s_iso", key);
    add_str(ok, o, iso_key, mf_iso_time__format(at, t));
}

static cJSON *rollout_json(int *ok, const struct mf_store_rollout *r)
{
    cJSON *o = cJSON_CreateObject();

    *ok = o != NULL;
    if (!o)
        return NULL;
    add_num(ok, o, "id", (double)r->id);
    add_str(ok, o, "model", r->model);
    add_str(ok, o, "version", r->version);
    add_str(ok, o, "previous", r->prev_version);
    add_str(ok, o, "state", r->state);
    add_num(ok, o, "wave", r->wave);
    add_time(ok, o, "wave_started_at", r->wave_started_at);
    add_time(ok, o, "soak_started_at", r->soak_started_at); /* 0: waiting for devices */
    add_time(ok, o, "created_at", r->created_at);
    add_time(ok, o, "updated_at", r->updated_at);
    add_str(ok, o, "breach", r->breach);
    add_str(ok, o, "halted_classes", r->halted_classes); /* "a,b": back on the previous */
    return o;
}

static const char *const wave_kinds[] = {"?", "percent", "group", "devices"};

static void add_waves(int *ok, cJSON *o, const struct mf_rollout_status *st)
{
    cJSON *list = cJSON_AddArrayToObject(o, "waves");

    for (size_t i = 0; list && i < st->plan.n_waves; i++) {
        const struct mf_rollout_wave *w = &st->plan.waves[i];
        cJSON *x = cJSON_CreateObject();

        if (!x || !cJSON_AddItemToArray(list, x)) {
            cJSON_Delete(x);
            *ok = 0;
            return;
        }
        add_str(ok, x, "kind", wave_kinds[w->kind]);
        if (w->kind == MF_WAVE_PERCENT)
            add_num(ok, x, "percent", w->percent_bp / 100.0);
        if (w->kind == MF_WAVE_GROUP)
            add_str(ok, x, "group", w->group);
        add_num(ok, x, "devices", (double)st->wave_devices[i]);
        add_str(ok, x, "state", (int)i <= st->r.wave ? "admitted" : "waiting");
    }
    if (!list)
        *ok = 0;
}

/* Red lines or goals (`rank`: goals, numbered from 1 in the plan's order) with verdicts. */
static void add_lines(int *ok, cJSON *o, const char *key, const struct mf_rollout_line *lines,
                      const struct mf_rollout_verdict *verdicts, size_t n, int rank)
{
    cJSON *list = cJSON_AddArrayToObject(o, key);

    for (size_t i = 0; list && i < n; i++) {
        const struct mf_rollout_line *l = &lines[i];
        const struct mf_rollout_verdict *v = &verdicts[i];
        cJSON *x = cJSON_CreateObject();

        if (!x || !cJSON_AddItemToArray(list, x)) {
            cJSON_Delete(x);
            *ok = 0;
            return;
        }
        if (rank)
            add_num(ok, x, "rank", (double)(i + 1));
        add_str(ok, x, "metric", mf_rollout__metric_name(l->metric));
        if (l->after_min >= 0)
            add_num(ok, x, "after_min", l->after_min);
        add_str(ok, x, "kind", l->relative ? "relative" : "absolute");
        add_num(ok, x, "limit", l->limit);
        add_str(ok, x, "state", mf_rollout__line_state(v, rank));
        if (!cJSON_AddBoolToObject(x, "evaluated", v->evaluated) ||
            !cJSON_AddBoolToObject(x, "breached", v->breached))
            *ok = 0;
        if (v->evaluated) {
            add_num(ok, x, "value", v->value);
            add_num(ok, x, "bound", v->bound);
        } else {
            add_str(ok, x, "waiting_for", v->waiting);
        }
        add_num(ok, x, "devices", (double)v->devices);
        add_num(ok, x, "samples", (double)v->samples);
        if (l->relative) {
            add_num(ok, x, "control", v->control);
            add_num(ok, x, "control_devices", (double)v->control_devices);
            add_num(ok, x, "control_samples", (double)v->control_samples);
        }
    }
    if (!list)
        *ok = 0;
}

/* A figure of one group, or null when the group has no data for it (absent, never 0). */
static void add_figure(int *ok, cJSON *x, const char *key, const struct mf_rollout_figures *f,
                       int m)
{
    if (f->have[m])
        add_num(ok, x, key, f->v[m]);
    else if (!cJSON_AddNullToObject(x, key))
        *ok = 0;
}

/* Every dimension of the scorecard, the new version beside the previous one (the control
 * group): one entry per figure either group has, the sustained ones per starting minute. */
static void add_scorecard(int *ok, cJSON *o, const struct mf_rollout_status *st)
{
    cJSON *list = cJSON_AddArrayToObject(o, "scorecard");

    for (int m = 0; list && m < MF_ROLLOUT_FIGURES; m++) {
        int after;
        int metric = mf_rollout__figure_metric(m, &after);
        cJSON *x;

        if (!st->cur.have[m] && !st->control.have[m])
            continue;
        x = cJSON_CreateObject();
        if (!x || !cJSON_AddItemToArray(list, x)) {
            cJSON_Delete(x);
            *ok = 0;
            return;
        }
        add_str(ok, x, "metric", mf_rollout__metric_name(metric));
        if (after >= 0)
            add_num(ok, x, "after_min", after);
        add_figure(ok, x, "version", &st->cur, m);
        add_figure(ok, x, "previous", &st->control, m);
        add_num(ok, x, "devices", (double)st->cur.devices[m]);
        add_num(ok, x, "previous_devices", (double)st->control.devices[m]);
    }
    if (!list)
        *ok = 0;
}

/* One class's own scorecard into `list` (mf_rollout__class_status, as its red lines read
 * it), with whether the rollout halted it; `cst` is scratch. */
static int add_class(struct mf_httpd_req *r, cJSON *list, struct mf_rollout_status *cst, int64_t id,
                     const char *tag)
{
    int ok = 1;
    int err = mf_rollout__class_status(cst, r->env->store, &r->ctx, id, tag);
    cJSON *o = err == MF_OK ? mf_handlers__add_row(list) : NULL;

    if (err < 0)
        return err;
    ok = o != NULL;
    add_str(&ok, o, "class", tag);
    if (ok && !cJSON_AddBoolToObject(o, "halted", mf_rollout__class_halted(&cst->r, tag)))
        ok = 0;
    if (ok)
        add_scorecard(&ok, o, cst);
    return ok ? MF_OK : MF_E_NOMEM;
}

/* "classes": the classes of the canary (those the rollout evaluates on their own), then the
 * ones it halted (back on the previous release, their figures kept); each with its own
 * scorecard beside the previous version's. */
static int add_classes(struct mf_httpd_req *r, cJSON *body, const struct mf_rollout_status *st,
                       int64_t id)
{
    struct mf_rollout_status *cst = mf_calloc(NULL, 1, sizeof(*cst));
    cJSON *list = cJSON_AddArrayToObject(body, "classes");
    int err = cst && list ? MF_OK : MF_E_NOMEM;
    const char *p = st->r.halted_classes;

    for (size_t i = 0; err == MF_OK && i < st->n_classes; i++)
        err = add_class(r, list, cst, id, st->classes[i]);
    while (err == MF_OK && *p) {
        char tag[MF_STORE_NAME_SIZE];
        size_t len = strcspn(p, ",");

        (void)snprintf(tag, sizeof(tag), "%.*s", (int)len, p);
        err = add_class(r, list, cst, id, tag);
        p += len + (p[len] == ',');
    }
    mf_free(NULL, cst);
    return err;
}

static int add_event(void *payload, const struct mf_store_rollout_event *e)
{
    cJSON *x = cJSON_CreateObject();
    int ok = x != NULL;

    if (!x || !cJSON_AddItemToArray(payload, x)) {
        cJSON_Delete(x);
        return MF_E_NOMEM;
    }
    add_time(&ok, x, "at", e->at);
    add_str(&ok, x, "kind", e->kind);
    add_str(&ok, x, "detail", e->detail);
    return ok ? MF_OK : MF_E_NOMEM;
}

/* Replies `status` with the full view of rollout `id`. */
static int reply_status(struct mf_httpd_req *r, unsigned status, int64_t id)
{
    struct mf_store *s = r->env->store;
    struct mf_rollout_status *st = mf_calloc(NULL, 1, sizeof(*st));
    cJSON *body = NULL, *events;
    int ok = 1;
    int err = st ? mf_rollout__status(st, s, &r->ctx, id) : MF_E_NOMEM;

    if (err == MF_OK) {
        body = rollout_json(&ok, &st->r);
        if (body) {
            add_num(&ok, body, "soak_s", (double)st->plan.soak_s);
            add_num(&ok, body, "min_devices", (double)st->plan.min_devices);
            add_num(&ok, body, "reporting", (double)st->reporting);
            /* The whole plan as created (the "created" event's detail is cut to a line). */
            if (!cJSON_AddItemToObject(body, "plan", cJSON_Parse(st->r.plan)))
                ok = 0;
            add_num(&ok, body, "wave_reporting", (double)st->wave_reporting);
            add_num(&ok, body, "control_devices", (double)st->control_devices);
            if (!cJSON_AddBoolToObject(body, "control_frozen", st->control_frozen))
                ok = 0;
            add_num(&ok, body, "line_min_devices", (double)st->plan.line_min_devices);
            add_num(&ok, body, "line_min_inferences", (double)st->plan.line_min_inferences);
            add_num(&ok, body, "lines_waiting", (double)st->waiting);
            add_waves(&ok, body, st);
            add_lines(&ok, body, "red_lines", st->plan.lines, st->verdicts, st->plan.n_lines, 0);
            add_lines(&ok, body, "goals", st->plan.goals, st->goal_verdicts, st->plan.n_goals, 1);
            add_num(&ok, body, "goals_met", (double)st->goals_met);
            add_scorecard(&ok, body, st);
        }
        err = ok && body ? add_classes(r, body, st, id) : MF_E_NOMEM;
        events = err == MF_OK ? cJSON_AddArrayToObject(body, "events") : NULL;
        if (err == MF_OK)
            err = events ? s->ops->rollout->rollout_events_list(s, &r->ctx, id, add_event, events)
                         : MF_E_NOMEM;
    }
    mf_free(NULL, st);
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, err, "out of memory answering rollout %lld", (long long)id);
    return mf_handlers__reply_body(r, status, body, err);
}

int mf_handlers__rollout_create(struct mf_httpd_req *r)
{
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "model"));
    const char *version =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "version"));
    const char *previous =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "previous"));
    struct mf_store_rollout *ro = mf_calloc(NULL, 1, sizeof(*ro));
    int64_t id;
    int err;

    if (!ro)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory creating a rollout");
    if (!model || !version || strlen(model) >= MF_STORE_NAME_SIZE ||
        strlen(version) >= MF_STORE_NAME_SIZE ||
        (previous && strlen(previous) >= MF_STORE_NAME_SIZE)) {
        mf_free(NULL, ro);
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "fields 'model' and 'version' must be names");
    }
    /* An unknown model is 404 before its plan is judged (test_server_notfound). */
    err = mf_handlers__need_model(r, model);
    if (err < 0 || r->resp) {
        mf_free(NULL, ro);
        return err;
    }
    /* A "previous" of another type must not fall back to the default silently. */
    if (!previous && cJSON_GetObjectItemCaseSensitive(r->json, "previous")) {
        mf_free(NULL, ro);
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'previous' must be a version name");
    }
    err = mf_rollout__create(ro, r->env->store, &r->ctx, model, version, previous ? previous : "",
                             r->json, mf_handlers__now());
    id = ro->id;
    mf_free(NULL, ro);
    if (err < 0)
        return mf_handlers__reply_failure(r, err);
    MF_LOG_INFO(&r->ctx, "rollout %lld of %s %s created", (long long)id, model, version);
    return reply_status(r, MHD_HTTP_CREATED, id);
}

static int add_rollout(void *payload, const struct mf_store_rollout *ro)
{
    int ok = 1;
    cJSON *o = rollout_json(&ok, ro);

    if (!o || !ok || !cJSON_AddItemToArray(payload, o)) {
        cJSON_Delete(o);
        return MF_E_NOMEM;
    }
    return MF_OK;
}

static int walk_rollouts(struct mf_httpd_req *r, cJSON *list)
{
    return r->env->store->ops->rollout->rollouts_list(r->env->store, &r->ctx, "", add_rollout,
                                                      list);
}

int mf_handlers__rollouts_list(struct mf_httpd_req *r)
{
    return mf_handlers__reply_list(r, "rollouts", walk_rollouts);
}

int mf_handlers__rollout_id(int64_t *out, struct mf_httpd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);

    if (!r->params[0][0] || *end || id <= 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "'%s' is not a rollout id",
                                     r->params[0]);
    *out = id;
    return MF_OK;
}

int mf_handlers__rollout_get(struct mf_httpd_req *r)
{
    int64_t id = 0;
    int err = mf_handlers__rollout_id(&id, r);

    if (err < 0 || r->resp)
        return err;
    return reply_status(r, MHD_HTTP_OK, id);
}

int mf_handlers__rollout_act(struct mf_httpd_req *r)
{
    struct mf_store_rollout *ro = mf_calloc(NULL, 1, sizeof(*ro));
    int64_t id = 0;
    int err = ro ? mf_handlers__rollout_id(&id, r) : mf_fail(&r->ctx, MF_E_NOMEM, "out of memory");

    if (err == MF_OK && !r->resp)
        err = mf_rollout__act(ro, r->env->store, &r->ctx, id, r->params[1], mf_handlers__now());
    mf_free(NULL, ro);
    if (err < 0)
        return mf_handlers__reply_failure(r, err);
    if (r->resp)
        return MF_OK;
    MF_LOG_INFO(&r->ctx, "rollout %lld: %s by ops", (long long)id, r->params[1]);
    return reply_status(r, MHD_HTTP_OK, id);
}
