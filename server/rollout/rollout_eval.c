/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Evaluating a rollout (rollout_ctl.h): the figures of the new version on the devices of
 * the admitted waves, and of the previous version on those same devices (relative lines),
 * from the stored reports; then advance, finish or halt.
 */
#include "rollout/rollout_ctl.h"
#include "mf_json.h"

#include "rollout/rollout_fleet.h"
#include "rollout/rollout_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_MAX_GROUPS 32 /* a device's groups (device_groups_set allows 32) */

int mf_rollout__plan_load(struct mf_rollout_plan *out, struct mf_ctx *ctx,
                          const struct mf_store_rollout *r)
{
    size_t len = strlen(r->plan);
    cJSON *body;
    int err = mf_json__parse(&body, ctx, r->plan, len, len, MF_JSON_DEPTH_DEFAULT, "stored plan");

    if (err == MF_OK)
        err = mf_rollout__plan_parse(out, ctx, body, MF_PLAN_STORED);

    cJSON_Delete(body);
    return err;
}

static int has_group_wave(const struct mf_rollout_plan *p)
{
    for (size_t i = 0; i < p->n_waves; i++) {
        if (p->waves[i].kind == MF_WAVE_GROUP)
            return 1;
    }
    return 0;
}

static int add_member(void *payload, const char *device_id, const char *group)
{
    struct mf_rollout_members *m = payload;

    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        void *rows = mf_alloc(NULL, cap * sizeof(m->rows[0]));

        if (!rows)
            return MF_E_NOMEM;
        if (m->n)
            memcpy(rows, m->rows, m->n * sizeof(m->rows[0]));
        mf_free(NULL, m->rows);
        m->rows = rows;
        m->cap = cap;
    }
    (void)snprintf(m->rows[m->n][0], MF_STORE_NAME_SIZE, "%s", device_id);
    (void)snprintf(m->rows[m->n][1], MF_STORE_NAME_SIZE, "%s", group);
    m->n++;
    return MF_OK;
}

int mf_rollout__members_load(struct mf_rollout_members *out, struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_rollout_plan *plan)
{
    int err;

    memset(out, 0, sizeof(*out));
    if (!has_group_wave(plan))
        return MF_OK;
    err = s->ops->director->groups_list(s, ctx, add_member, out);
    if (err == MF_E_NOMEM)
        err = mf_fail(ctx, err, "out of memory reading group memberships");
    return err;
}

void mf_rollout__members_free(struct mf_rollout_members *m)
{
    mf_free(NULL, m->rows);
    memset(m, 0, sizeof(*m));
}

int mf_rollout__members_wave(const struct mf_rollout_plan *plan, const struct mf_rollout_members *m,
                             const char *device_id)
{
    const char *groups[EVAL_MAX_GROUPS];
    size_t n = 0;

    for (size_t i = 0; i < m->n && n < EVAL_MAX_GROUPS; i++) {
        if (strcmp(m->rows[i][0], device_id) == 0)
            groups[n++] = m->rows[i][1];
    }
    return mf_rollout__wave_of(plan, device_id, groups, n);
}

int mf_rollout__device_wave(int *wave_out, struct mf_store *s, struct mf_ctx *ctx,
                            const struct mf_rollout_plan *plan, const char *device_id)
{
    struct mf_rollout_members m = {0};
    int err = MF_OK;

    /* A check-in asks this: only the device's own memberships, not the fleet's. */
    if (has_group_wave(plan))
        err = s->ops->director->device_groups_get(s, ctx, device_id, add_member, &m);
    if (err == MF_E_NOMEM)
        err = mf_fail(ctx, err, "out of memory reading group memberships");

    *wave_out = err == MF_OK ? mf_rollout__members_wave(plan, &m, device_id) : -1;
    mf_rollout__members_free(&m);
    return err;
}

int mf_rollout__offer(const char **version_out, struct mf_store *s, struct mf_ctx *ctx,
                      const struct mf_store_rollout *r, const char *promoted, const char *device_id)
{
    struct mf_rollout_plan *plan;
    int wave = -1;
    int err;

    /* No message: "no wave" is the normal answer, not a failure. */
    if (strcmp(r->state, "halted") == 0 || strcmp(r->state, "rolled_back") == 0 ||
        strcmp(r->state, "done") == 0)
        return MF_E_NOTFOUND;
    if (strcmp(r->state, "aborted") == 0 && strcmp(promoted, r->prev_version) != 0)
        return MF_E_NOTFOUND;
    /* Heap, not stack: the plan is large, and most check-ins never get here (no rollout). */
    plan = mf_calloc(NULL, 1, sizeof(*plan));
    if (!plan)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading rollouts");
    err = mf_rollout__plan_load(plan, ctx, r);
    if (err == MF_OK)
        err = mf_rollout__device_wave(&wave, s, ctx, plan, device_id);
    if (err == MF_OK)
        *version_out = wave >= 0 && wave <= r->wave ? r->version : r->prev_version;
    mf_free(NULL, plan);
    return err;
}

int mf_rollout__class_halted(const struct mf_store_rollout *r, const char *tag)
{
    size_t n = strlen(tag);

    for (const char *p = r->halted_classes; n && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);

        if (len == n && memcmp(p, tag, n) == 0)
            return 1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* A class of the canary into the fleet's status (its `classes`), once. */
static void see_class(struct mf_rollout_status *st, const char *tag)
{
    for (size_t i = 0; i < st->n_classes; i++) {
        if (strcmp(st->classes[i], tag) == 0)
            return;
    }
    if (st->n_classes < MF_STORE_HALTED_CLASSES)
        (void)snprintf(st->classes[st->n_classes++], MF_STORE_NAME_SIZE, "%s", tag);
}

/* The rows one evaluation reads (memberships read before the walk): the new version on
 * the admitted devices (the canary), and the previous version on the devices outside the
 * admitted waves from the rollout's window (the concurrent control group). The evaluation of
 * one class (`cls`) reads that class's rows only; the fleet's (`cls` NULL) leaves out the
 * classes the rollout halted already, which are back on the previous release. */
struct evaluated {
    const struct mf_store_rollout *r;
    const struct mf_rollout_plan *plan;
    const struct mf_rollout_members *members;
    uint64_t wave_reporting; /* canary rows of the current wave */
    const char *cls;
    struct mf_rollout_status *seen; /* the fleet's evaluation: its canary's classes go there */
    int samples;                    /* 1: selecting labelled samples, which count no report */
};

static int keep_evaluated(void *payload, const struct mf_store_telemetry *t)
{
    struct evaluated *e = payload;
    int wave = mf_rollout__members_wave(e->plan, e->members, t->device_id);
    int admitted = wave >= 0 && wave <= e->r->wave;

    /* Labelled samples name no class: they count in the fleet's evaluation only. */
    if (e->samples ? e->cls != NULL
        : e->cls   ? strcmp(t->device_class, e->cls) != 0
                   : mf_rollout__class_halted(e->r, t->device_class))
        return 0;
    if (admitted && strcmp(t->version, e->r->version) == 0) {
        e->wave_reporting += wave == e->r->wave && !e->samples;
        if (e->seen && t->device_class[0])
            see_class(e->seen, t->device_class);
        return 1;
    }
    /* Concurrent, not history: a device outside the waves that still reports the previous
     * version since the rollout began, not what the canary's devices did before it. */
    return !admitted && strcmp(t->version, e->r->prev_version) == 0 &&
           t->reported_at >= e->r->created_at;
}

/* 1 when a red line or goal of `p` is drawn on figure `f`. */
static int plan_uses(const struct mf_rollout_plan *p, int f)
{
    for (size_t i = 0; i < p->n_lines; i++) {
        if (p->lines[i].figure == f)
            return 1;
    }
    for (size_t i = 0; i < p->n_goals; i++) {
        if (p->goals[i].figure == f)
            return 1;
    }
    return 0;
}

/* The control group's figures as stored with the rollout when its wave was admitted:
 * {"p99_latency_us": [value, devices, samples], "sustained_p99_us@5": [...], ...} for the
 * figures it had that the plan's lines and goals use (what fits MF_STORE_CONTROL_MAX). */
static void control_save(char *out, size_t size, const struct mf_rollout_figures *f,
                         const struct mf_rollout_plan *p)
{
    size_t n = 0;
    char name[64];

    n += (size_t)snprintf(out, size, "{");
    for (int m = 0; m < MF_ROLLOUT_FIGURES && n < size; m++) {
        if (!f->have[m] || !plan_uses(p, m))
            continue;
        mf_rollout__figure_name(name, sizeof(name), m);
        n += (size_t)snprintf(out + n, size - n, "%s\"%s\":[%.17g,%llu,%llu]", n > 1 ? "," : "",
                              name, f->v[m], (unsigned long long)f->devices[m],
                              (unsigned long long)f->samples[m]);
    }
    if (n < size)
        (void)snprintf(out + n, size - n, "}");
    /* About 14 figures fit; a plan drawing on more stores none (never half a record), and
     * its relative lines then wait on a last wave: the safe side. */
    if (n + 1 >= size)
        out[0] = '\0';
}

/* 1 when the stored figures were read into `out`. */
static int control_load(struct mf_rollout_figures *out, struct mf_ctx *ctx, const char *text)
{
    size_t len = strlen(text);
    cJSON *doc = NULL;
    char name[64];

    memset(out, 0, sizeof(*out));
    if (!len || mf_json__parse(&doc, ctx, text, len, len, MF_JSON_DEPTH_DEFAULT,
                               "stored control figures") < 0)
        return 0;
    for (int m = 0; m < MF_ROLLOUT_FIGURES; m++) {
        const cJSON *x;

        mf_rollout__figure_name(name, sizeof(name), m);
        x = cJSON_GetObjectItemCaseSensitive(doc, name);
        if (cJSON_GetArraySize(x) != 3)
            continue;
        out->have[m] = 1;
        out->v[m] = cJSON_GetArrayItem(x, 0)->valuedouble;
        out->devices[m] = (uint64_t)cJSON_GetArrayItem(x, 1)->valuedouble;
        out->samples[m] = (uint64_t)cJSON_GetArrayItem(x, 2)->valuedouble;
    }
    cJSON_Delete(doc);
    return 1;
}

struct count_waves {
    struct mf_rollout_status *st;
    const struct mf_rollout_members *members;
};

static int count_device(void *payload, const struct mf_store_device *d)
{
    struct count_waves *c = payload;
    int wave = mf_rollout__members_wave(&c->st->plan, c->members, d->device_id);

    if (wave >= 0 && !d->revoked)
        c->st->wave_devices[wave]++;
    return MF_OK;
}

/* The status of the rollout over class `cls` (NULL: the fleet but its halted classes, with
 * the canary's classes in out->classes). */
static int status_of(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                     int64_t id, const char *cls)
{
    struct mf_rollout_fleet *fleet = mf_calloc(NULL, 1, sizeof(*fleet));
    struct mf_rollout_members members = {0};
    struct evaluated e = {.r = &out->r,
                          .plan = &out->plan,
                          .members = &members,
                          .cls = cls,
                          .seen = cls ? NULL : out};
    struct count_waves c = {.st = out, .members = &members};
    const struct mf_rollout_agg *cur, *ctl;
    int err;

    memset(out, 0, sizeof(*out));
    out->breached = -1;
    if (!fleet)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating rollout %lld", (long long)id);
    err = s->ops->rollout->rollout_get(&out->r, s, ctx, id);
    if (err == MF_OK)
        err = mf_rollout__plan_load(&out->plan, ctx, &out->r);
    if (err == MF_OK)
        err = mf_rollout__members_load(&members, s, ctx, &out->plan);
    if (err == MF_OK)
        err = mf_rollout__fleet_collect(fleet, s, ctx, out->r.model, keep_evaluated, &e);
    e.samples = 1; /* the labelled samples of the same two groups (accuracy) */
    if (err == MF_OK)
        err = mf_rollout__accuracy_collect(fleet, s, ctx, out->r.model, keep_evaluated, &e);
    if (err == MF_OK)
        err = s->ops->devices->devices_list(s, ctx, count_device, &c);
    if (err == MF_OK) {
        cur = mf_rollout__fleet_find(fleet, out->r.version);
        ctl = mf_rollout__fleet_find(fleet, out->r.prev_version);
        if (cur) {
            mf_rollout__figures(&out->cur, cur);
            out->reporting = cur->devices;
        }
        if (ctl) {
            mf_rollout__figures(&out->control, ctl);
            out->control_devices = ctl->devices;
        }
        /* No control group left to compare with (the admitted waves cover the fleet): the
         * one measured, concurrently, while the previous wave soaked. */
        if (out->control_devices < out->plan.line_min_devices &&
            control_load(&out->control, ctx, out->r.control))
            out->control_frozen = 1;
        out->wave_reporting = e.wave_reporting;
        out->breached = mf_rollout__check(out->verdicts, &out->plan, &out->cur, &out->control);
        out->waiting = mf_rollout__waiting(out->verdicts, out->plan.n_lines);
        out->goals_met =
            mf_rollout__check_goals(out->goal_verdicts, &out->plan, &out->cur, &out->control);
    }
    mf_rollout__members_free(&members);
    mf_free(NULL, fleet);
    return err;
}

int mf_rollout__status(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id)
{
    return status_of(out, s, ctx, id, NULL);
}

int mf_rollout__class_status(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                             int64_t id, const char *cls)
{
    return status_of(out, s, ctx, id, cls);
}

/* "p99_latency_us 2047 > bound 1535 (relative 1.5 x control 1023) in waves 0..0: canary 4
 * devices 200 samples, control 36 devices 1800 samples" */
static void breach_text(char *out, size_t size, const struct mf_rollout_status *st)
{
    const struct mf_rollout_line *l = &st->plan.lines[st->breached];
    const struct mf_rollout_verdict *v = &st->verdicts[st->breached];
    char how[64], name[64];

    mf_rollout__figure_name(name, sizeof(name), l->figure);
    if (l->relative)
        (void)snprintf(how, sizeof(how), "relative %.6g x control %.6g", l->limit, v->control);
    else
        (void)snprintf(how, sizeof(how), "absolute %.6g", l->limit);
    (void)snprintf(
        out, size,
        "%s %.6g %s bound %.6g (%s) in waves 0..%d: canary %llu devices %llu samples, "
        "control %llu devices %llu samples",
        name, v->value, mf_rollout__metric_kind(l->metric) & MF_METRIC_LOWER_IS_WORSE ? "<" : ">",
        v->bound, how, st->r.wave, (unsigned long long)v->devices, (unsigned long long)v->samples,
        (unsigned long long)v->control_devices, (unsigned long long)v->control_samples);
}

/* The rollout's events, one function per kind (each goes through mf_rollout__transition,
 * which writes the event). */
static int event_halted(struct mf_store *s, struct mf_ctx *ctx, struct mf_rollout_status *st,
                        int64_t now)
{
    char detail[MF_STORE_BREACH_MAX + 1];

    breach_text(detail, sizeof(detail), st);
    return mf_rollout__transition(s, ctx, &st->r, "halted", "halted", detail, now);
}

static int event_soaking(struct mf_store *s, struct mf_ctx *ctx, struct mf_rollout_status *st,
                         int64_t now)
{
    char detail[MF_STORE_BREACH_MAX + 1];

    st->r.soak_started_at = now;
    (void)snprintf(detail, sizeof(detail),
                   "wave %d: %llu of its devices report %s (min_devices %llu); soak of %lld s "
                   "starts",
                   st->r.wave, (unsigned long long)st->wave_reporting, st->r.version,
                   (unsigned long long)st->plan.min_devices, (long long)st->plan.soak_s);
    return mf_rollout__transition(s, ctx, &st->r, "running", "soaking", detail, now);
}

static int event_advanced(struct mf_store *s, struct mf_ctx *ctx, struct mf_rollout_status *st,
                          int64_t now)
{
    char detail[MF_STORE_BREACH_MAX + 1];

    if (!st->control_frozen) /* keep the live control group's figures for a later wave */
        control_save(st->r.control, sizeof(st->r.control), &st->control, &st->plan);
    st->r.wave++;
    st->r.wave_started_at = now;
    st->r.soak_started_at = 0; /* the new wave's devices must report before it soaks */
    (void)snprintf(detail, sizeof(detail),
                   "wave %d admitted: %llu devices clean, %zu red lines clean", st->r.wave,
                   (unsigned long long)st->reporting, st->plan.n_lines);
    return mf_rollout__transition(s, ctx, &st->r, "running", "advanced", detail, now);
}

/* Promoted before done: a crash between the two leaves a running rollout whose version is
 * the default, which the next evaluation finishes; never a done rollout whose version is
 * not promoted (done offers no wave, so its fleet would fall back to the old default). */
static int event_done(struct mf_store *s, struct mf_ctx *ctx, struct mf_rollout_status *st,
                      int64_t now)
{
    char detail[MF_STORE_BREACH_MAX + 1];
    int err = s->ops->registry->release_promote(s, ctx, st->r.model, st->r.version);

    (void)snprintf(detail, sizeof(detail), "every wave clean: %llu devices; %s promoted",
                   (unsigned long long)st->reporting, st->r.version);
    if (err == MF_OK)
        err = mf_rollout__transition(s, ctx, &st->r, "done", "done", detail, now);
    if (err == MF_OK) { /* its own event, so a webhook on "promoted" sees every promotion */
        (void)snprintf(detail, sizeof(detail), "%s is the channel default of %s", st->r.version,
                       st->r.model);
        err = mf_rollout__emit(s, ctx, &st->r, "promoted", detail, now);
    }
    return err;
}

/* A class whose own figures breach a red line is halted on its own: its devices go back to
 * the previous release (the director's class rollback) while the other classes go on. */
static int event_class_halted(struct mf_store *s, struct mf_ctx *ctx, struct mf_rollout_status *cst,
                              const char *tag, int64_t now)
{
    char detail[MF_STORE_BREACH_MAX + 1], state[sizeof(cst->r.state)];
    struct mf_store_rollout *r = &cst->r;
    size_t len = strlen(r->halted_classes);

    size_t n;

    n = (size_t)snprintf(detail, sizeof(detail), "class %s back to %s: ", tag, r->prev_version);
    if (n < sizeof(detail)) /* the breach's line after it, cut to the record's bound */
        breach_text(detail + n, sizeof(detail) - n, cst);
    (void)snprintf(r->halted_classes + len, sizeof(r->halted_classes) - len, "%s%s", len ? "," : "",
                   tag);
    (void)snprintf(state, sizeof(state), "%s", r->state); /* stays: the other classes go on */
    return mf_rollout__transition(s, ctx, r, state, "class_halted", detail, now);
}

/* Each class of the canary on its own first (at most MF_STORE_HALTED_CLASSES halted): 1 in
 * *halted_out when one was halted (the fleet is evaluated without it next time). */
static int step_classes(int *halted_out, struct mf_store *s, struct mf_ctx *ctx, int64_t id,
                        const struct mf_rollout_status *fleet, int64_t now)
{
    struct mf_rollout_status *cst = mf_calloc(NULL, 1, sizeof(*cst));
    int err = cst ? MF_OK : mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating rollout classes");

    *halted_out = 0;
    for (size_t i = 0; err == MF_OK && !*halted_out && i < fleet->n_classes; i++) {
        err = status_of(cst, s, ctx, id, fleet->classes[i]);
        if (err == MF_OK && cst->breached >= 0 &&
            strlen(cst->r.halted_classes) + MF_STORE_NAME_SIZE < sizeof(cst->r.halted_classes)) {
            err = event_class_halted(s, ctx, cst, fleet->classes[i], now);
            *halted_out = err == MF_OK;
        }
    }
    mf_free(NULL, cst);
    return err;
}

int mf_rollout__step(struct mf_store *s, struct mf_ctx *ctx, int64_t id, int64_t now)
{
    struct mf_rollout_status *st = mf_calloc(NULL, 1, sizeof(*st));
    int class_halted = 0;
    int err;

    if (!st)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating rollout %lld", (long long)id);
    err = status_of(st, s, ctx, id, NULL);
    /* The console's history first, so the evaluation that halts is in it; a failure to
     * keep it is logged and decides nothing. */
    if (err == MF_OK && mf_rollout__watched(st->r.state) &&
        mf_rollout__history_record(s, ctx, st, now) < 0)
        MF_LOG_WARN(ctx, "keeping rollout %lld's history: %s", (long long)id, mf_ctx__errmsg(ctx));
    /* Classes first: a red line one class breaches halts that class only. */
    if (err == MF_OK && mf_rollout__watched(st->r.state) && st->n_classes)
        err = step_classes(&class_halted, s, ctx, id, st, now);
    /* Pausing stops advancing, not watching: the admitted waves still run the new release,
     * so a breach while paused halts and rolls back like one while running. */
    if (err == MF_OK && !class_halted && mf_rollout__watched(st->r.state)) {
        const struct mf_store_rollout *r = &st->r;
        int running = strcmp(r->state, "running") == 0;
        int evidence = st->wave_reporting >= st->plan.min_devices;
        /* The soak counts from the evidence, never from the wave's admission: a wave whose
         * devices have not reported yet has proven nothing however long it waited. */
        int soaked = running && r->soak_started_at > 0 && evidence &&
                     now - r->soak_started_at >= st->plan.soak_s && st->waiting == 0;

        if (st->breached >= 0)
            err = event_halted(s, ctx, st, now);
        else if (running && r->soak_started_at == 0 && evidence)
            err = event_soaking(s, ctx, st, now);
        else if (soaked && (size_t)r->wave + 1 < st->plan.n_waves)
            err = event_advanced(s, ctx, st, now);
        else if (soaked)
            err = event_done(s, ctx, st, now);
    }
    mf_free(NULL, st);
    return err;
}
