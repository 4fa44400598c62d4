/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's rollout hook (director_wave.h): the newest rollout of the model decides,
 * by the rollout's rule (mf_rollout__offer), which of its two releases the device gets.
 */
#include "director/director_wave.h"

#include "rollout/rollout_ctl.h"

int mf_director__wave_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                             const char *device_id, const char *model)
{
    struct mf_store_rollout *r = mf_alloc(NULL, sizeof(*r));
    struct mf_store_version promoted;
    const char *version = NULL;
    int err;

    err = r ? mf_ccache__rollout_newest(r, v, model)
            : mf_fail(v->ctx, MF_E_NOMEM, "out of memory reading rollouts");
    /* The channel default: whether ops promoted a release since an aborted rollout. */
    if (err == MF_OK)
        err = mf_ccache__promoted_latest(&promoted, v, model);
    if (err == MF_OK)
        err = mf_rollout__offer(&version, v->s, v->ctx, r, promoted.version, device_id);
    if (err == MF_OK)
        err = mf_ccache__version_get(out, v, model, version);
    if (err == MF_OK && out->sequence == 0)
        err = MF_E_NOTFOUND;
    mf_free(NULL, r);
    return err;
}

int mf_director__class_rollback_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                                       const char *device_class, const char *model)
{
    struct mf_store_rollout *r;
    int err;

    if (!device_class[0])
        return MF_E_NOTFOUND; /* no message: a device without a class is never halted alone */
    r = mf_alloc(NULL, sizeof(*r));
    err = r ? mf_ccache__rollout_newest(r, v, model)
            : mf_fail(v->ctx, MF_E_NOMEM, "out of memory reading rollouts");
    if (err == MF_OK && !mf_rollout__class_halted(r, device_class))
        err = MF_E_NOTFOUND;
    if (err == MF_OK)
        err = mf_ccache__version_get(out, v, model, r->prev_version);
    if (err == MF_OK && out->sequence == 0)
        err = MF_E_NOTFOUND;
    mf_free(NULL, r);
    return err;
}

int mf_director__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *device_id, const char *model)
{
    struct mf_ccache_view v = {.s = s, .ctx = ctx};

    return mf_director__wave_cached(out, &v, device_id, model);
}
