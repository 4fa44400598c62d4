/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's assignment signer: group commit over one key, on the leader/follower
 * batcher of director/batcher.h. Each caller queues its spec and builds nothing under the lock;
 * the leader signs everything queued (up to the batch size) outside it as one batch
 * (mf_manifest_sign_assignment_batch: one ECDSA signature for all of them) and hands every
 * caller its own envelope. There are no timers: a lone caller signs a batch of one at once,
 * a plain signature, so an idle server adds no latency and answers agents older than batch
 * signatures; batches only form while a signature is already being made, i.e. exactly when
 * callers would otherwise have queued on a mutex one signature at a time.
 */
#include "director/director_int.h"

#include <stdio.h>
#include <string.h>

/* One mf_director__sign() call in the batcher's queue; lives on its caller's stack. */
struct sign_link {
    struct mf_batch_item link; /* first: the batcher hands this back */
    const mf_manifest_assignment_spec *spec;
    uint8_t *env;
    size_t len;
    char errmsg[MF_ERRMSG_MAX];
};

_Static_assert(MF_DIRECTOR_BATCH_MAX <= MF_BATCHER_MAX, "a batch fits the batcher");
_Static_assert(MF_DIRECTOR_BATCH_MAX <= MF_MANIFEST_SIGN_BATCH_MAX, "a batch fits the format");

/* The leader's run: one batch signature over the queued specs, each caller's result back;
 * every item of a failed batch gets the failure. */
static void run_batch(void *owner, struct mf_batch_item **items, size_t n)
{
    struct mf_director *d = owner;
    const char *msg;
    int err;

    for (size_t i = 0; i < n; i++)
        d->specs[i] = *((struct sign_link *)(void *)items[i])->spec;
    (void)pthread_mutex_lock(&d->sign_lock);
    err = mf_manifest_sign_assignment_batch(d->envs, d->lens, d->signer, d->specs, n);
    msg = err < 0 ? mf_manifest_signer_errmsg(d->signer) : "";
    (void)pthread_mutex_unlock(&d->sign_lock);
    for (size_t i = 0; i < n; i++) {
        struct sign_link *l = (struct sign_link *)(void *)items[i];

        l->env = d->envs[i];
        l->len = d->lens[i];
        d->envs[i] = NULL;
        (void)snprintf(l->errmsg, sizeof(l->errmsg), "%s", msg);
        items[i]->err = err;
    }
}

int mf_director__sign_init(struct mf_director *d, struct mf_ctx *ctx)
{
    if (pthread_mutex_init(&d->sign_lock, NULL) != 0)
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the director's signing lock");
    d->lock_ready = 1;
    if (mf_batcher__init(&d->batcher, MF_DIRECTOR_BATCH_DEFAULT, run_batch, d) != MF_OK)
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the director's signing batcher");
    d->batcher_ready = 1;
    return MF_OK;
}

void mf_director__sign_fini(struct mf_director *d)
{
    if (d->batcher_ready)
        mf_batcher__destroy(&d->batcher);
    d->batcher_ready = 0;
    if (d->lock_ready)
        (void)pthread_mutex_destroy(&d->sign_lock);
    d->lock_ready = 0;
}

void mf_director__set_batch(struct mf_director *d, unsigned max_batch)
{
    size_t max = max_batch < 1                       ? 1
                 : max_batch > MF_DIRECTOR_BATCH_MAX ? MF_DIRECTOR_BATCH_MAX
                                                     : max_batch;

    /* Before signing starts (director.h), so nothing is queued: a fresh batcher is simplest. */
    mf_batcher__destroy(&d->batcher);
    d->batcher_ready = mf_batcher__init(&d->batcher, max, run_batch, d) == MF_OK;
}

void mf_director__stats(struct mf_director *d, uint64_t *signatures, uint64_t *assignments)
{
    mf_batcher__stats(&d->batcher, signatures, assignments);
    (void)pthread_mutex_lock(&d->sign_lock);
    *signatures += d->many_signatures;
    *assignments += d->many_assignments;
    (void)pthread_mutex_unlock(&d->sign_lock);
}

int mf_director__sign(uint8_t **env_out, size_t *len_out, struct mf_director *d, struct mf_ctx *ctx,
                      const mf_manifest_assignment_spec *spec)
{
    struct sign_link l = {.spec = spec};
    int err;

    *env_out = NULL;
    *len_out = 0;
    if (!d->batcher_ready)
        return mf_fail(ctx, MF_E_STATE, "the director's signing batcher is not set up");
    err = mf_batcher__submit(&d->batcher, &l.link);
    if (err < 0)
        return mf_fail(ctx, err, "cannot sign the assignment of model %s for %s: %s", spec->model,
                       spec->device_id, l.errmsg);
    *env_out = l.env;
    *len_out = l.len;
    return MF_OK;
}

int mf_director__sign_many(uint8_t **envs_out, size_t *lens_out, struct mf_director *d,
                           struct mf_ctx *ctx, const mf_manifest_assignment_spec *specs, size_t n)
{
    size_t max = d->batcher.max, done = 0;
    int err = MF_OK;

    for (size_t i = 0; i < n; i++) {
        envs_out[i] = NULL;
        lens_out[i] = 0;
    }
    if (!d->lock_ready)
        return mf_fail(ctx, MF_E_STATE, "the director's signing lock is not set up");
    (void)pthread_mutex_lock(&d->sign_lock);
    while (err == MF_OK && done < n) {
        size_t k = n - done < max ? n - done : max;

        err = mf_manifest_sign_assignment_batch(envs_out + done, lens_out + done, d->signer,
                                                specs + done, k);
        if (err == MF_OK) {
            d->many_signatures++;
            d->many_assignments += k;
        }
        if (err < 0)
            err = mf_fail(ctx, err, "cannot sign %zu assignments: %s", k,
                          mf_manifest_signer_errmsg(d->signer));
        done += k;
    }
    (void)pthread_mutex_unlock(&d->sign_lock);
    if (err < 0) {
        for (size_t i = 0; i < n; i++) {
            mf_free(NULL, envs_out[i]);
            envs_out[i] = NULL;
            lens_out[i] = 0;
        }
    }
    return err;
}
