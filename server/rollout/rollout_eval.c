/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Evaluating a rollout (rollout_ctl.h): the figures of the new version on the devices of
 * the admitted waves, and of the previous version on those same devices (relative lines),
 * from the stored reports; then advance, finish or halt.
 */
#include "rollout/rollout_ctl.h"
#include "mf_json.h"

#include "rollout/rollout_fleet.h"

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
        err = mf_rollout__plan_parse(out, ctx, body);

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
                      const struct mf_store_rollout *r, const char *device_id)
{
    struct mf_rollout_plan *plan;
    int wave = -1;
    int err;

    if (strcmp(r->state, "halted") == 0 || strcmp(r->state, "rolled_back") == 0)
        return MF_E_NOTFOUND; /* no message: "no wave" is the normal answer, not a failure */
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

/* Admitted devices: those whose wave is 0..upto (memberships read before the walk). */
struct admitted {
    const struct mf_rollout_plan *plan;
    const struct mf_rollout_members *members;
    int upto;
};

static int keep_admitted(void *payload, const char *device_id)
{
    struct admitted *a = payload;
    int wave = mf_rollout__members_wave(a->plan, a->members, device_id);

    return wave >= 0 && wave <= a->upto;
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

int mf_rollout__status(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id)
{
    struct mf_rollout_fleet *fleet = mf_calloc(NULL, 1, sizeof(*fleet));
    struct mf_rollout_members members = {0};
    struct admitted a = {.plan = &out->plan, .members = &members};
    struct count_waves c = {.st = out, .members = &members};
    const struct mf_rollout_agg *cur, *prev;
    int err;

    memset(out, 0, sizeof(*out));
    out->breached = -1;
    if (!fleet)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating rollout %lld", (long long)id);
    err = s->ops->rollout->rollout_get(&out->r, s, ctx, id);
    if (err == MF_OK)
        err = mf_rollout__plan_load(&out->plan, ctx, &out->r);
    a.upto = out->r.wave;
    if (err == MF_OK)
        err = mf_rollout__members_load(&members, s, ctx, &out->plan);
    if (err == MF_OK)
        err = mf_rollout__fleet_collect(fleet, s, ctx, out->r.model, keep_admitted, &a);
    if (err == MF_OK)
        err = s->ops->devices->devices_list(s, ctx, count_device, &c);
    if (err == MF_OK) {
        cur = mf_rollout__fleet_find(fleet, out->r.version);
        prev = mf_rollout__fleet_find(fleet, out->r.prev_version);
        if (cur) {
            mf_rollout__figures(&out->cur, cur);
            out->reporting = cur->devices;
        }
        if (prev)
            mf_rollout__figures(&out->prev, prev);
        out->breached = mf_rollout__check(out->verdicts, &out->plan, &out->cur, &out->prev);
    }
    mf_rollout__members_free(&members);
    mf_free(NULL, fleet);
    return err;
}

/* "p99_latency_us 2047 > bound 1500 (relative 1.5 x 1000) in waves 0..0, 12 devices" */
static void breach_text(char *out, size_t size, const struct mf_rollout_status *st)
{
    const struct mf_rollout_line *l = &st->plan.lines[st->breached];
    const struct mf_rollout_verdict *v = &st->verdicts[st->breached];

    (void)snprintf(out, size, "%s %.6g %s bound %.6g (%s %.6g) in waves 0..%d, %llu devices",
                   mf_rollout__metric_name(l->metric), v->value,
                   l->metric == MF_METRIC_TEACHER_AGREEMENT ? "<" : ">", v->bound,
                   l->relative ? "relative" : "absolute", l->limit, st->r.wave,
                   (unsigned long long)st->reporting);
}

int mf_rollout__watched(const char *state)
{
    return strcmp(state, "running") == 0 || strcmp(state, "paused") == 0;
}

int mf_rollout__step(struct mf_store *s, struct mf_ctx *ctx, int64_t id, int64_t now)
{
    struct mf_rollout_status *st = mf_calloc(NULL, 1, sizeof(*st));
    char detail[MF_STORE_BREACH_MAX + 1];
    int err;

    if (!st)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating rollout %lld", (long long)id);
    err = mf_rollout__status(st, s, ctx, id);
    /* Pausing stops advancing, not watching: the admitted waves still run the new release,
     * so a breach while paused halts and rolls back like one while running. */
    if (err == MF_OK && mf_rollout__watched(st->r.state)) {
        struct mf_store_rollout *r = &st->r;
        int running = strcmp(r->state, "running") == 0;
        int soaked = running && now - r->wave_started_at >= st->plan.soak_s &&
                     st->reporting >= st->plan.min_devices;

        if (st->breached >= 0) {
            breach_text(detail, sizeof(detail), st);
            err = mf_rollout__transition(s, ctx, r, "halted", "halted", detail, now);
        } else if (soaked && (size_t)r->wave + 1 < st->plan.n_waves) {
            r->wave++;
            r->wave_started_at = now;
            (void)snprintf(detail, sizeof(detail), "wave %d admitted: %llu devices clean", r->wave,
                           (unsigned long long)st->reporting);
            err = mf_rollout__transition(s, ctx, r, "running", "advanced", detail, now);
        } else if (soaked) {
            (void)snprintf(detail, sizeof(detail), "every wave clean: %llu devices",
                           (unsigned long long)st->reporting);
            err = mf_rollout__transition(s, ctx, r, "done", "done", detail, now);
        }
    }
    mf_free(NULL, st);
    return err;
}
