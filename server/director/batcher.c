/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader/follower grouping of work (see batcher.h). Each waiting caller sleeps on its own
 * condition variable, so finishing a batch wakes exactly the callers it served and, when
 * more wait, the one that leads next: a broadcast to every waiter cost more futex calls
 * than the batching saved (the figures: bench/server/README.md).
 */
#include "director/batcher.h"

#include "mf/error.h"

#include <sched.h>

int mf_batcher__init(struct mf_batcher *b, size_t max, mf_batch_run_fn run, void *owner)
{
    b->head = b->tail = NULL;
    b->running = 0;
    b->max = max < 1 ? 1 : max > MF_BATCHER_MAX ? MF_BATCHER_MAX : max;
    b->run = run;
    b->owner = owner;
    b->batches = b->items = 0;
    return pthread_mutex_init(&b->lock, NULL) == 0 ? MF_OK : MF_E_GENERIC;
}

void mf_batcher__destroy(struct mf_batcher *b)
{
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
    size_t n;
    int err;

    it->next = NULL;
    it->done = 0;
    it->lead = 0;
    it->err = MF_OK;
    if (pthread_cond_init(&it->wake, NULL) != 0)
        return MF_E_GENERIC;
    (void)pthread_mutex_lock(&b->lock);
    if (b->tail)
        b->tail->next = it;
    else
        b->head = it;
    b->tail = it;
    if (!b->running)
        b->running = 1; /* the queue was empty: lead now, with `it` at its head */
    else
        while (!it->done && !it->lead)
            (void)pthread_cond_wait(&it->wake, &b->lock);
    if (!it->done) {
        /* Lead one batch. `it` is at the head (the queue was empty, or a leader handed
         * over to its head), so the batch includes it. */
        n = take_locked(b, batch);
        (void)pthread_mutex_unlock(&b->lock);
        b->run(b->owner, batch, n);
        (void)pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < n; i++) {
            batch[i]->done = 1;
            if (batch[i] != it)
                (void)pthread_cond_signal(&batch[i]->wake);
        }
        b->batches++;
        b->items += n;
        /* The lead passes to the head of what queued meanwhile; `running` stays set, so a
         * caller arriving before that one wakes does not lead a second batch at once. */
        if (b->head) {
            b->head->lead = 1;
            (void)pthread_cond_signal(&b->head->wake);
        } else {
            b->running = 0;
        }
    }
    err = it->err;
    (void)pthread_mutex_unlock(&b->lock);
    (void)pthread_cond_destroy(&it->wake);
    return err;
}

void mf_batcher__hold(struct mf_batcher *b)
{
    (void)pthread_mutex_lock(&b->lock);
    while (b->running) { /* a batch runs: wait for its end without joining the queue */
        (void)pthread_mutex_unlock(&b->lock);
        sched_yield();
        (void)pthread_mutex_lock(&b->lock);
    }
    b->running = 1;
    (void)pthread_mutex_unlock(&b->lock);
}

void mf_batcher__release(struct mf_batcher *b)
{
    (void)pthread_mutex_lock(&b->lock);
    if (b->head) {
        b->head->lead = 1;
        (void)pthread_cond_signal(&b->head->wake);
    } else {
        b->running = 0;
    }
    (void)pthread_mutex_unlock(&b->lock);
}

size_t mf_batcher__queued(struct mf_batcher *b)
{
    size_t n = 0;

    (void)pthread_mutex_lock(&b->lock);
    for (struct mf_batch_item *i = b->head; i; i = i->next)
        n++;
    (void)pthread_mutex_unlock(&b->lock);
    return n;
}

void mf_batcher__stats(struct mf_batcher *b, uint64_t *batches, uint64_t *items)
{
    (void)pthread_mutex_lock(&b->lock);
    *batches = b->batches;
    *items = b->items;
    (void)pthread_mutex_unlock(&b->lock);
}
