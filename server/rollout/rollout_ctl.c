/* SPDX-License-Identifier: Apache-2.0 */
/* Creating rollouts and the ops actions on them (rollout_ctl.h). */
#include "rollout/rollout_ctl.h"

#include "rollout/rollout_events.h"

#include <stdio.h>
#include <string.h>

/* The release just below `v` by sequence: what a rollout of v falls back to. */
struct below {
    const struct mf_store_version *v;
    struct mf_store_version best;
};

static int find_below(void *payload, const struct mf_store_version *x)
{
    struct below *b = payload;

    if (strcmp(x->model, b->v->model) == 0 && x->sequence > 0 && x->sequence < b->v->sequence &&
        x->sequence > b->best.sequence)
        b->best = *x;
    return MF_OK;
}

struct active {
    const char *model;
    int64_t id;
};

static int find_active(void *payload, const struct mf_store_rollout *r)
{
    struct active *a = payload;

    if (!a->id && (strcmp(r->state, "running") == 0 || strcmp(r->state, "paused") == 0))
        a->id = r->id;
    return MF_OK;
}

/* The previous release: `previous` when given (must be released), else the one below. */
static int pick_previous(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                         const struct mf_store_version *v, const char *previous)
{
    struct below b = {.v = v};
    int err;

    if (previous[0]) {
        err = s->ops->registry->version_get(out, s, ctx, v->model, previous);
        if (err == MF_OK && out->sequence == 0)
            err = mf_fail(ctx, MF_E_NOTFOUND, "version '%s' of model '%s' is not released",
                          previous, v->model);
        return err;
    }
    err = s->ops->registry->versions_list(s, ctx, find_below, &b);
    if (err == MF_OK && b.best.sequence == 0)
        err = mf_fail(ctx, MF_E_STATE, "model '%s' has no release before '%s' to fall back to",
                      v->model, v->version);
    *out = b.best;
    return err;
}

int mf_rollout__create(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version, const char *previous,
                       const cJSON *body, int64_t now)
{
    struct mf_rollout_plan *plan = mf_calloc(NULL, 1, sizeof(*plan));
    struct mf_store_version v, prev;
    struct active a = {.model = model};
    char *text = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    err = plan ? mf_rollout__plan_parse(plan, ctx, body)
               : mf_fail(ctx, MF_E_NOMEM, "out of memory reading a rollout plan");
    mf_free(NULL, plan);
    if (err == MF_OK)
        err = s->ops->registry->version_get(&v, s, ctx, model, version);
    if (err == MF_OK && v.sequence == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "version '%s' of model '%s' is not released", version,
                      model);
    if (err == MF_OK)
        err = pick_previous(&prev, s, ctx, &v, previous);
    if (err == MF_OK)
        err = s->ops->rollout->rollouts_list(s, ctx, model, find_active, &a);
    if (err == MF_OK && a.id)
        err = mf_fail(ctx, MF_E_STATE, "rollout %lld of model '%s' is still active",
                      (long long)a.id, model);
    if (err == MF_OK) {
        text = cJSON_PrintUnformatted(body);
        if (!text)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory storing a rollout plan");
        else if (strlen(text) > MF_STORE_PLAN_MAX)
            err = mf_fail(ctx, MF_E_LIMIT, "rollout plan is over %u bytes", MF_STORE_PLAN_MAX);
    }
    if (err < 0) {
        cJSON_free(text);
        return err;
    }
    (void)snprintf(out->model, sizeof(out->model), "%s", model);
    (void)snprintf(out->version, sizeof(out->version), "%s", version);
    (void)snprintf(out->prev_version, sizeof(out->prev_version), "%s", prev.version);
    (void)snprintf(out->state, sizeof(out->state), "running");
    (void)snprintf(out->plan, sizeof(out->plan), "%s", text);
    cJSON_free(text);
    out->wave_started_at = out->created_at = out->updated_at = now;
    err = s->ops->rollout->rollout_put(s, ctx, out, "");
    if (err == MF_OK)
        err = mf_rollout__emit(s, ctx, out, "created", out->plan, now);
    return err;
}

int mf_rollout__fleet_rollback(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                               const char *version, int64_t now)
{
    struct mf_store_pin p = {.scope = MF_STORE_PIN_FLEET, .created_at = now};

    (void)snprintf(p.target, sizeof(p.target), "*");
    (void)snprintf(p.model, sizeof(p.model), "%s", model);
    (void)snprintf(p.version, sizeof(p.version), "%s", version);
    return s->ops->director->pin_set(s, ctx, &p);
}

/* Moves r from `from` to `to` (compare-and-set), records the event, and for halted and
 * rolled_back sets the fleet rollback. */
int mf_rollout__transition(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                           const char *to, const char *event, const char *detail, int64_t now)
{
    char from[sizeof(r->state)];
    int back = strcmp(to, "halted") == 0 || strcmp(to, "rolled_back") == 0;
    int err;

    (void)snprintf(from, sizeof(from), "%s", r->state);
    (void)snprintf(r->state, sizeof(r->state), "%s", to);
    r->updated_at = now;
    if (strcmp(from, "paused") == 0 && strcmp(to, "running") == 0)
        r->wave_started_at = now; /* the wave soaks again from the resume */
    if (strcmp(to, "halted") == 0)
        (void)snprintf(r->breach, sizeof(r->breach), "%s", detail);
    /* The directive first: a crash between the two leaves a rollback with the rollout
     * still running, which the next evaluation or ops action completes; never the
     * reverse (a halted rollout whose fleet stays on the bad release). */
    err = back ? mf_rollout__fleet_rollback(s, ctx, r->model, r->prev_version, now) : MF_OK;
    if (err == MF_OK)
        err = s->ops->rollout->rollout_put(s, ctx, r, from);
    if (err == MF_OK)
        err = mf_rollout__emit(s, ctx, r, event, detail, now);
    return err;
}

static const struct {
    const char *action, *to;
    const char *from[4]; /* states it applies to */
} actions[] = {
    {"pause", "paused", {"running"}},
    {"resume", "running", {"paused"}},
    {"abort", "aborted", {"running", "paused"}},
    {"rollback", "rolled_back", {"running", "paused", "aborted", "done"}},
};

int mf_rollout__act(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                    int64_t id, const char *action, int64_t now)
{
    int err = s->ops->rollout->rollout_get(out, s, ctx, id);

    for (size_t i = 0; err == MF_OK && i < sizeof(actions) / sizeof(actions[0]); i++) {
        if (strcmp(actions[i].action, action) != 0)
            continue;
        for (size_t j = 0; j < 4 && actions[i].from[j]; j++) {
            if (strcmp(out->state, actions[i].from[j]) == 0)
                return mf_rollout__transition(s, ctx, out, actions[i].to, actions[i].to, "by ops",
                                              now);
        }
        return mf_fail(ctx, MF_E_STATE, "rollout %lld is %s: cannot %s", (long long)id, out->state,
                       action);
    }
    if (err == MF_OK)
        err = mf_fail(ctx, MF_E_INVALID, "unknown rollout action '%s'", action);
    return err;
}
