/* SPDX-License-Identifier: Apache-2.0 */
/* Leader/follower grouping of work (see batcher.h). */
#include "app/batcher.h"

#include "mf/error.h"

int mf_batcher__init(struct mf_batcher *b, size_t max, mf_batch_run_fn run, void *owner)
{
    b->head = b->tail = NULL;
    b->running = 0;
    b->max = max < 1 ? 1 : max > MF_BATCHER_MAX ? MF_BATCHER_MAX : max;
    b->run = run;
    b->owner = owner;
    b->batches = b->items = 0;
    if (pthread_mutex_init(&b->lock, NULL) != 0)
        return MF_E_GENERIC;
    if (pthread_cond_init(&b->done, NULL) != 0) {
        (void)pthread_mutex_destroy(&b->lock);
        return MF_E_GENERIC;
    }
    return MF_OK;
}

void mf_batcher__destroy(struct mf_batcher *b)
{
    (void)pthread_cond_destroy(&b->done);
    (void)pthread_mutex_destroy(&b->lock);
}

/* Under the lock: unlinks up to b->max items from the head of the queue into `out`. */
static size_t take_locked(struct mf_batcher *b, struct mf_batch_item **out)
{
    size_t n = 0;

    while (b->head && n < b->max) {
        out[n++] = b->head;
        b->head = b->head->next;
    }
    if (!b->head)
        b->tail = NULL;
    return n;
}

int mf_batcher__submit(struct mf_batcher *b, struct mf_batch_item *it)
{
    struct mf_batch_item *batch[MF_BATCHER_MAX];
    int err;

    it->next = NULL;
    it->done = 0;
    it->err = MF_OK;
    (void)pthread_mutex_lock(&b->lock);
    if (b->tail)
        b->tail->next = it;
    else
        b->head = it;
    b->tail = it;
    while (!it->done) {
        size_t n;

        if (b->running) {
            (void)pthread_cond_wait(&b->done, &b->lock);
            continue;
        }
        /* Lead: our item is queued and not done, so the queue is not empty. It may not be in
         * this batch when more than max wait ahead of it; the loop then leads again. */
        b->running = 1;
        n = take_locked(b, batch);
        (void)pthread_mutex_unlock(&b->lock);
        b->run(b->owner, batch, n);
        (void)pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < n; i++)
            batch[i]->done = 1;
        b->batches++;
        b->items += n;
        b->running = 0;
        /* Wakes the followers of this batch and whoever should lead the next one. */
        (void)pthread_cond_broadcast(&b->done);
    }
    err = it->err;
    (void)pthread_mutex_unlock(&b->lock);
    return err;
}

void mf_batcher__stats(struct mf_batcher *b, uint64_t *batches, uint64_t *items)
{
    (void)pthread_mutex_lock(&b->lock);
    *batches = b->batches;
    *items = b->items;
    (void)pthread_mutex_unlock(&b->lock);
}
