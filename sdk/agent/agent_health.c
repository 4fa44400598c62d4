/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What happens to a version after it is activated, and what keeps a device on a version.
 *
 * Pending: with a health_fn, a new version is "pending" in state.json until the app says
 * it is healthy (the callback's answer or mf_agent_confirm()). "Unhealthy", or still
 * pending at max_unconfirmed_starts agent starts (the app crashed or hung before it could
 * confirm), reverts to the previous slot. Every such change is one atomic state.json write.
 *
 * No loops: a reverted version is remembered (sha256, release sequence, reason; newest 8)
 * and not installed again until the server assigns a release with a higher sequence for
 * it. The list goes to the server in every check-in ("rolled_back").
 *
 * Pins: a pinned model ignores assignments of any other version, unless the assigned
 * release raises the security floor above the model's (docs/protocol.md: a pin wins over
 * rollouts, not over a security floor).
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

static struct agent_model *model_of(mf_agent *a, const char *name)
{
    for (size_t i = 0; i < a->n_models; i++) {
        if (strcmp(a->models[i].name, name) == 0)
            return &a->models[i];
    }
    return NULL;
}

/* Calls the app for the active slot; returns its mf_agent_health answer. */
static int ask_app(struct mf_agent *a, struct agent_model *m)
{
    char name[MF_AGENT_STORE_NAME_MAX], leaf[8];
    struct mf_dynbuf path;
    int answer = MF_AGENT_HEALTHY;

    if (!a->health_fn && !a->ready_fn)
        return MF_AGENT_HEALTHY;
    (void)snprintf(leaf, sizeof(leaf), "slot-%c", m->state.active.slot);
    if (mf_agent__store_name(a, name, m->name, leaf) < 0 || mf_agent__path(a, &path, name) < 0) {
        /* The switch is committed; the app finds the model through mf_agent_status(). */
        MF_LOG_WARN(&a->ctx, "no memory to announce model %s", m->name);
        return MF_AGENT_CONFIRM_LATER;
    }
    if (a->health_fn)
        answer = a->health_fn(a->health_payload, m->name, m->state.active.version,
                              (const char *)path.data);
    else
        a->ready_fn(a->ready_payload, m->name, m->state.active.version, (const char *)path.data);
    mf_dynbuf__free(&path);
    return answer;
}

static int confirm(struct mf_agent *a, struct agent_model *m)
{
    struct mf_agent_model_state *next;
    int err;

    if (!m->state.pending)
        return MF_OK;
    next = mf_agent__state_copy(a, m);
    if (!next)
        return MF_E_NOMEM;
    next->pending = 0;
    next->starts = 0;
    MF_LOG_INFO(&a->ctx, "model %s: %s confirmed", m->name, next->active.version);
    err = mf_agent__state_save(a, m, next);
    mf_ctx__free(&a->ctx, next);
    return err;
}

int mf_agent__after_activate(struct mf_agent *a, struct agent_model *m)
{
    int answer = ask_app(a, m);

    if (answer == MF_AGENT_UNHEALTHY)
        return mf_agent__revert(a, m, "unhealthy: the app refused the new version");
    if (answer == MF_AGENT_HEALTHY || !a->health_fn)
        return confirm(a, m);
    return MF_OK; /* stays pending until mf_agent_confirm() or too many starts */
}

static void remember(struct mf_agent_model_state *st, const struct mf_agent_slot *s,
                     const char *reason)
{
    struct mf_agent_rolled_back *rb = st->rolled_back;
    size_t n = st->n_rolled_back < MF_AGENT_MAX_ROLLED_BACK ? st->n_rolled_back
                                                            : MF_AGENT_MAX_ROLLED_BACK - 1;

    memmove(&rb[1], &rb[0], n * sizeof(rb[0]));
    memset(&rb[0], 0, sizeof(rb[0]));
    memcpy(rb[0].version, s->version, sizeof(rb[0].version));
    memcpy(rb[0].sha256, s->sha256, sizeof(rb[0].sha256));
    rb[0].sequence = s->sequence;
    (void)snprintf(rb[0].reason, sizeof(rb[0].reason), "%s", reason);
    st->n_rolled_back = n + 1;
}

int mf_agent__revert(struct mf_agent *a, struct agent_model *m, const char *reason)
{
    struct mf_agent_model_state *next;
    int err;

    if (!m->state.active.slot)
        return mf_fail(&a->ctx, MF_E_STATE, "model %s: nothing installed to roll back", m->name);
    next = mf_agent__state_copy(a, m);
    if (!next)
        return MF_E_NOMEM;
    remember(next, &m->state.active, reason);
    /* The abandoned bytes stay as "previous" (the state describes what is on storage); the
     * next install overwrites that slot first. Without a previous slot nothing runs. */
    next->active = m->state.previous;
    next->previous = m->state.active;
    next->pending = 0;
    next->starts = 0;
    err = mf_agent__state_save(a, m, next);
    mf_ctx__free(&a->ctx, next);
    if (err < 0)
        return err;
    MF_LOG_WARN(&a->ctx, "model %s: rolled back from %s to %s: %s", m->name,
                m->state.previous.version,
                m->state.active.slot ? m->state.active.version : "(nothing)", reason);
    m->report_rollback = 1;
    m->up_to_date = 0;
    if (m->state.active.slot)
        (void)ask_app(a, m); /* the restored version is not judged again: no loops */
    return MF_OK;
}

int mf_agent__count_start(struct mf_agent *a)
{
    for (size_t i = 0; i < a->n_models; i++) {
        struct agent_model *m = &a->models[i];
        char why[64];
        int err;

        if (!m->state.pending || !m->state.active.slot)
            continue;
        if (m->state.starts + 1 >= a->max_unconfirmed_starts) {
            (void)snprintf(why, sizeof(why), "unconfirmed after %u starts", m->state.starts + 1);
            err = mf_agent__revert(a, m, why);
        } else {
            struct mf_agent_model_state *next = mf_agent__state_copy(a, m);

            if (!next)
                return MF_E_NOMEM;
            next->starts++;
            err = mf_agent__state_save(a, m, next);
            mf_ctx__free(&a->ctx, next);
        }
        if (err < 0)
            return err;
    }
    return MF_OK;
}

/* The rolled-back entry for `sha256`, or NULL. */
static const struct mf_agent_rolled_back *rolled_back(const struct agent_model *m,
                                                      const char *sha256)
{
    for (size_t i = 0; i < m->state.n_rolled_back; i++) {
        if (strcmp(m->state.rolled_back[i].sha256, sha256) == 0)
            return &m->state.rolled_back[i];
    }
    return NULL;
}

int mf_agent__held(struct mf_agent *a, struct agent_model *m, const struct mf_agent_assignment *as)
{
    const mf_manifest_release *rel = as->verified->release;
    const struct mf_agent_rolled_back *rb = rolled_back(m, as->sha256);

    m->held = 0;
    m->hold_reason[0] = '\0';
    if (rb && rel->sequence <= rb->sequence) {
        (void)snprintf(m->hold_reason, sizeof(m->hold_reason), "%.40s was rolled back: %.60s",
                       as->version, rb->reason);
    } else if (m->state.pin[0] && strcmp(m->state.pin, as->version) != 0 &&
               rel->security_floor <= mf_trust_floor(a->trust, m->name)) {
        (void)snprintf(m->hold_reason, sizeof(m->hold_reason),
                       "pinned to %.40s, %.40s not installed", m->state.pin, as->version);
    } else {
        return 0;
    }
    m->held = 1;
    MF_LOG_INFO(&a->ctx, "model %s: held: %s", m->name, m->hold_reason);
    return 1;
}

int mf_agent_confirm(mf_agent *a, const char *model)
{
    struct agent_model *m = model_of(a, model);

    mf_ctx__clear(&a->ctx);
    if (!m)
        return mf_fail(&a->ctx, MF_E_NOTFOUND, "model %s is not tracked", model);
    return confirm(a, m);
}

int mf_agent_rollback(mf_agent *a, const char *model, const char *reason)
{
    struct agent_model *m = model_of(a, model);

    mf_ctx__clear(&a->ctx);
    if (!m)
        return mf_fail(&a->ctx, MF_E_NOTFOUND, "model %s is not tracked", model);
    if (!m->state.previous.slot)
        return mf_fail(&a->ctx, MF_E_STATE, "model %s has no previous version to roll back to",
                       model);
    return mf_agent__revert(a, m, reason && reason[0] ? reason : "manual rollback");
}

static int set_pin(mf_agent *a, const char *model, const char *version, int pin)
{
    struct agent_model *m = model_of(a, model);
    struct mf_agent_model_state *next;
    int err;

    mf_ctx__clear(&a->ctx);
    if (!m)
        return mf_fail(&a->ctx, MF_E_NOTFOUND, "model %s is not tracked", model);
    if (pin && !version && !m->state.active.slot)
        return mf_fail(&a->ctx, MF_E_STATE, "model %s: nothing installed to pin", model);
    if (pin && !version)
        version = m->state.active.version;
    if (pin && !mf_agent__name_ok(version))
        return mf_fail(&a->ctx, MF_E_INVALID, "pin version \"%s\" is not [A-Za-z0-9._-]{1,64}",
                       version);
    next = mf_agent__state_copy(a, m);
    if (!next)
        return MF_E_NOMEM;
    memset(next->pin, 0, sizeof(next->pin));
    if (pin)
        memcpy(next->pin, version, strlen(version) + 1);
    err = mf_agent__state_save(a, m, next);
    mf_ctx__free(&a->ctx, next);
    return err;
}

int mf_agent_pin(mf_agent *a, const char *model, const char *version)
{
    return set_pin(a, model, version, 1);
}

int mf_agent_unpin(mf_agent *a, const char *model)
{
    return set_pin(a, model, NULL, 0);
}
