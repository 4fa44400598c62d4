/* SPDX-License-Identifier: Apache-2.0 */
/* Creating rollouts and the ops actions on them (rollout_ctl.h). */
#include "rollout/rollout_ctl.h"

#include "rollout/rollout_events.h"

#include <stdio.h>
#include <string.h>

int mf_rollout__watched(const char *state)
{
    return strcmp(state, "running") == 0 || strcmp(state, "paused") == 0;
}

/* Versions a rollout halted on or ops rolled back: never a default fallback target. */
#define CTL_MAX_BAD 64

struct bad_versions {
    char v[CTL_MAX_BAD][MF_STORE_NAME_SIZE];
    size_t n;
    int64_t active; /* a running or paused rollout of the model, or 0 */
};

static int find_bad(void *payload, const struct mf_store_rollout *r)
{
    struct bad_versions *b = payload;

    if (!b->active && mf_rollout__watched(r->state))
        b->active = r->id;
    if ((strcmp(r->state, "halted") == 0 || strcmp(r->state, "rolled_back") == 0) &&
        b->n < CTL_MAX_BAD)
        (void)snprintf(b->v[b->n++], MF_STORE_NAME_SIZE, "%s", r->version);
    return MF_OK;
}

static int is_bad(const struct bad_versions *b, const char *version)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->v[i], version) == 0)
            return 1;
    }
    return 0;
}

/* The default previous release: promoted last among those that never halted. */
struct fallback {
    const struct mf_store_version *v;
    const struct bad_versions *bad;
    struct mf_store_version best;
};

static int find_fallback(void *payload, const struct mf_store_version *x)
{
    struct fallback *f = payload;

    if (strcmp(x->model, f->v->model) == 0 && strcmp(x->version, f->v->version) != 0 &&
        x->sequence > 0 && x->promoted > f->best.promoted && !is_bad(f->bad, x->version))
        f->best = *x;
    return MF_OK;
}

/* The previous release: `previous` when given (must be released; a halted one too, since
 * ops named it), else the default fallback. */
static int pick_previous(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                         const struct mf_store_version *v, const char *previous,
                         const struct bad_versions *bad)
{
    struct fallback f = {.v = v, .bad = bad};
    int err;

    if (previous[0]) {
        err = s->ops->registry->version_get(out, s, ctx, v->model, previous);
        if (err == MF_OK && out->sequence == 0)
            err = mf_fail(ctx, MF_E_NOTFOUND, "version '%s' of model '%s' is not released",
                          previous, v->model);
        return err;
    }
    err = s->ops->registry->versions_list(s, ctx, find_fallback, &f);
    if (err == MF_OK && f.best.promoted == 0)
        err = mf_fail(ctx, MF_E_STATE,
                      "model '%s' has no promoted release that never halted to fall back to "
                      "from '%s': name one with \"previous\"",
                      v->model, v->version);
    *out = f.best;
    return err;
}

int mf_rollout__create(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version, const char *previous,
                       const cJSON *body, int64_t now)
{
    struct mf_rollout_plan *plan = mf_calloc(NULL, 1, sizeof(*plan));
    struct bad_versions *bad = mf_calloc(NULL, 1, sizeof(*bad));
    struct mf_store_version v, prev;
    char *text = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    err = plan && bad ? mf_rollout__plan_parse(plan, ctx, body, MF_PLAN_STRICT)
                      : mf_fail(ctx, MF_E_NOMEM, "out of memory reading a rollout plan");
    mf_free(NULL, plan);
    if (err == MF_OK)
        err = s->ops->registry->version_get(&v, s, ctx, model, version);
    if (err == MF_OK && v.sequence == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "version '%s' of model '%s' is not released", version,
                      model);
    if (err == MF_OK)
        err = s->ops->rollout->rollouts_list(s, ctx, model, find_bad, bad);
    if (err == MF_OK && bad->active)
        err = mf_fail(ctx, MF_E_STATE, "rollout %lld of model '%s' is still active",
                      (long long)bad->active, model);
    if (err == MF_OK)
        err = pick_previous(&prev, s, ctx, &v, previous, bad);
    if (err == MF_OK && strcmp(prev.version, version) == 0)
        err = mf_fail(ctx, MF_E_INVALID, "field 'previous' names the rolled-out version '%s'",
                      version);
    mf_free(NULL, bad);
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
    out->soak_started_at = 0; /* the soak waits for min_devices of wave 0 to report */
    err = s->ops->rollout->rollout_put(s, ctx, out, "");
    if (err == MF_OK)
        err = mf_rollout__emit(s, ctx, out, "created", out->plan, now);
    return err;
}

int mf_rollout__promote(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                        const char *version)
{
    struct bad_versions *bad = mf_calloc(NULL, 1, sizeof(*bad));
    int err = bad ? s->ops->rollout->rollouts_list(s, ctx, model, find_bad, bad)
                  : mf_fail(ctx, MF_E_NOMEM, "out of memory promoting a release");

    /* A running rollout decides what its devices get; a promotion beside it would change
     * only the devices outside its waves, which is never what ops mean. */
    if (err == MF_OK && bad->active)
        err = mf_fail(ctx, MF_E_STATE,
                      "rollout %lld of model '%s' is active: it promotes its version when its "
                      "last wave is done; abort it first to promote by hand",
                      (long long)bad->active, model);
    if (err == MF_OK)
        err = s->ops->registry->release_promote(s, ctx, model, version);
    mf_free(NULL, bad);
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
    if (strcmp(from, "paused") == 0 && strcmp(to, "running") == 0) {
        r->wave_started_at = now; /* the wave soaks again from the resume, */
        if (r->soak_started_at)   /* if it had the evidence to soak at all */
            r->soak_started_at = now;
    }
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
    if (err == MF_OK && back) {
        char why[2 * MF_STORE_NAME_SIZE + 32];

        (void)snprintf(why, sizeof(why), "fleet of %s back to %s", r->model, r->prev_version);
        err = mf_rollout__emit(s, ctx, r, "rollback_started", why, now);
    }
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
