/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's assignment signer: group commit over one key. Each caller enqueues its
 * spec under the lock and builds nothing there. If no batch is being signed, it becomes
 * the leader: it takes everything queued (up to max_batch), signs it outside the lock as
 * one batch (mf_manifest_sign_assignment_batch: one ECDSA signature for all of them),
 * publishes every result and wakes the waiters. Otherwise it waits until a leader has
 * published its item. There are no timers: a lone caller finds the queue empty but its own
 * item and signs a batch of one at once, so an idle server adds no latency and answers with
 * plain signatures; batches only form while a signature is already being made, i.e. exactly
 * when callers would otherwise have queued on a mutex one signature at a time.
 */
#include "app/director_int.h"

#include <stdio.h>

int mf_director__sign_init(struct mf_director *d, struct mf_ctx *ctx)
{
    (void)pthread_mutex_init(&d->lock, NULL);
    (void)pthread_cond_init(&d->done, NULL);
    d->head = NULL;
    d->tail = &d->head;
    d->max_batch = MF_DIRECTOR_BATCH_DEFAULT;
    d->batch = mf_calloc(NULL, MF_DIRECTOR_BATCH_MAX, sizeof(*d->batch));
    d->specs = mf_calloc(NULL, MF_DIRECTOR_BATCH_MAX, sizeof(*d->specs));
    d->envs = mf_calloc(NULL, MF_DIRECTOR_BATCH_MAX, sizeof(*d->envs));
    d->lens = mf_calloc(NULL, MF_DIRECTOR_BATCH_MAX, sizeof(*d->lens));
    if (!d->batch || !d->specs || !d->envs || !d->lens)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for the director's signing batch");
    return MF_OK;
}

void mf_director__sign_fini(struct mf_director *d)
{
    mf_free(NULL, d->batch);
    mf_free(NULL, d->specs);
    mf_free(NULL, d->envs);
    mf_free(NULL, d->lens);
    (void)pthread_cond_destroy(&d->done);
    (void)pthread_mutex_destroy(&d->lock);
}

void mf_director__set_batch(struct mf_director *d, unsigned max_batch)
{
    if (max_batch < 1)
        max_batch = 1;
    if (max_batch > MF_DIRECTOR_BATCH_MAX)
        max_batch = MF_DIRECTOR_BATCH_MAX;
    (void)pthread_mutex_lock(&d->lock);
    d->max_batch = max_batch;
    (void)pthread_mutex_unlock(&d->lock);
}

void mf_director__stats(const struct mf_director *d, uint64_t *signatures, uint64_t *assignments)
{
    *signatures = atomic_load_explicit(&d->signatures, memory_order_relaxed);
    *assignments = atomic_load_explicit(&d->assignments, memory_order_relaxed);
}

/* Leader, under the lock: moves up to max_batch queued items into d->batch. */
static size_t take_batch(struct mf_director *d)
{
    size_t n = 0;

    while (d->head && n < d->max_batch) {
        struct mf_director_item *it = d->head;

        d->head = it->next;
        d->batch[n] = it;
        d->specs[n] = *it->spec;
        n++;
    }
    if (!d->head)
        d->tail = &d->head;
    return n;
}

/* Leader, outside the lock: signs the batch; results stay in d->envs until published. */
static int sign_batch(struct mf_director *d, size_t n)
{
    int err = mf_manifest_sign_assignment_batch(d->envs, d->lens, d->signer, d->specs, n);

    if (err == MF_OK) {
        atomic_fetch_add_explicit(&d->signatures, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&d->assignments, n, memory_order_relaxed);
    }
    return err;
}

/* Leader, under the lock: hands every item its envelope, or the batch's error. */
static void publish(struct mf_director *d, size_t n, int err)
{
    const char *msg = err < 0 ? mf_manifest_signer_errmsg(d->signer) : "";

    for (size_t i = 0; i < n; i++) {
        struct mf_director_item *it = d->batch[i];

        it->env = d->envs[i];
        it->len = d->lens[i];
        it->err = err;
        (void)snprintf(it->errmsg, sizeof(it->errmsg), "%s", msg);
        it->done = 1;
        d->envs[i] = NULL;
    }
}

int mf_director__sign(uint8_t **env_out, size_t *len_out, struct mf_director *d, struct mf_ctx *ctx,
                      const mf_manifest_assignment_spec *spec)
{
    struct mf_director_item item = {.spec = spec};

    *env_out = NULL;
    *len_out = 0;
    (void)pthread_mutex_lock(&d->lock);
    *d->tail = &item;
    d->tail = &item.next;
    while (!item.done) {
        if (d->signing) {
            (void)pthread_cond_wait(&d->done, &d->lock);
            continue;
        }
        /* Leader. Its own item may lie beyond this batch when the queue is longer than
         * max_batch; it then leads again (or waits) until the item is done. */
        size_t n = take_batch(d);
        int err;

        d->signing = 1;
        (void)pthread_mutex_unlock(&d->lock);
        err = sign_batch(d, n);
        (void)pthread_mutex_lock(&d->lock);
        publish(d, n, err);
        d->signing = 0;
        (void)pthread_cond_broadcast(&d->done);
    }
    (void)pthread_mutex_unlock(&d->lock);
    if (item.err < 0)
        return mf_fail(ctx, item.err, "cannot sign the assignment of model %s for %s: %s",
                       spec->model, spec->device_id, item.errmsg);
    *env_out = item.env;
    *len_out = item.len;
    return MF_OK;
}
