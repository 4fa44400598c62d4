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

static int newest(void *payload, const struct mf_store_rollout *r)
{
    struct mf_store_rollout *out = payload;

    if (out->id == 0)
        *out = *r;
    return MF_OK;
}

int mf_rollout__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *device_id, const char *model)
{
    struct mf_store_rollout *r = mf_calloc(NULL, 1, sizeof(*r));
    struct mf_rollout_plan *plan = mf_calloc(NULL, 1, sizeof(*plan));
    int wave = -1;
    int err;

    err = r && plan ? s->ops->rollouts_list(s, ctx, model, newest, r)
                    : mf_fail(ctx, MF_E_NOMEM, "out of memory reading rollouts");
    if (err == MF_OK &&
        (r->id == 0 || strcmp(r->state, "halted") == 0 || strcmp(r->state, "rolled_back") == 0))
        err = MF_E_NOTFOUND; /* no message: "no wave" is the normal answer, not a failure */
    if (err == MF_OK)
        err = mf_rollout__plan_load(plan, ctx, r);
    if (err == MF_OK)
        err = mf_rollout__device_wave(&wave, s, ctx, plan, device_id);
    if (err == MF_OK)
        err = s->ops->version_get(out, s, ctx, model,
                                  wave >= 0 && wave <= r->wave ? r->version : r->prev_version);
    if (err == MF_OK && out->sequence == 0)
        err = MF_E_NOTFOUND;
    mf_free(NULL, plan);
    mf_free(NULL, r);
    return err;
}
