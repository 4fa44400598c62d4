/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's rollout hook (rollout_wave.h): the newest rollout of the model decides.
 * Running, paused, aborted (frozen) or done: a device in waves 0..wave gets the new
 * release, every other device the previous one, so the channel default (the highest
 * sequence, i.e. the new release) never reaches devices outside the admitted waves.
 * Halted or rolled back: no wave; the fleet rollback directive, which outranks waves,
 * assigns the previous release to everyone.
 */
#include "director/rollout_wave.h"

#include "rollout/rollout_ctl.h"

#include <string.h>

int mf_rollout__wave_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                            const char *device_id, const char *model)
{
    struct mf_store_rollout *r = mf_alloc(NULL, sizeof(*r));
    struct mf_rollout_plan *plan = NULL;
    int wave = -1;
    int err;

    /* Most models have no rollout: the plan is only allocated for one that has. */
    err = r ? mf_ccache__rollout_newest(r, v, model)
            : mf_fail(v->ctx, MF_E_NOMEM, "out of memory reading rollouts");
    if (err == MF_OK && (strcmp(r->state, "halted") == 0 || strcmp(r->state, "rolled_back") == 0))
        err = MF_E_NOTFOUND; /* no message: "no wave" is the normal answer, not a failure */
    if (err == MF_OK) {
        plan = mf_calloc(NULL, 1, sizeof(*plan));
        if (!plan)
            err = mf_fail(v->ctx, MF_E_NOMEM, "out of memory reading rollouts");
    }
    if (err == MF_OK)
        err = mf_rollout__plan_load(plan, v->ctx, r);
    if (err == MF_OK)
        err = mf_rollout__device_wave(&wave, v->s, v->ctx, plan, device_id);
    if (err == MF_OK)
        err = mf_ccache__version_get(out, v, model,
                                     wave >= 0 && wave <= r->wave ? r->version : r->prev_version);
    if (err == MF_OK && out->sequence == 0)
        err = MF_E_NOTFOUND;
    mf_free(NULL, plan);
    mf_free(NULL, r);
    return err;
}

int mf_rollout__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *device_id, const char *model)
{
    struct mf_ccache_view v = {.s = s, .ctx = ctx};

    return mf_rollout__wave_cached(out, &v, device_id, model);
}
