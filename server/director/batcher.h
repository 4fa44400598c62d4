/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Group work, leader/follower style (the group commit of databases): threads that want the
 * same kind of work done at the same moment have it done in one go by one of them. A caller
 * queues its item; when no batch is running it becomes the leader, takes what is queued
 * (itself included, at most `max`), runs it outside the lock and hands every item its
 * result; otherwise it waits until a leader has done its item. There is no timer: a lone
 * caller runs a batch of one at once, and batches grow only with what piles up while the
 * previous one runs, so the batch adapts to the load with no added latency when idle.
 *
 * Used where a fixed cost per run dominates: a store transaction's commit and locks
 * (docs/architecture.md, "Check-in path").
 */
#ifndef MF_SERVER_DIRECTOR_BATCHER_H
#define MF_SERVER_DIRECTOR_BATCHER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Longest batch any user may ask for: the leader keeps the batch on its stack. */
#define MF_BATCHER_MAX 64

/* One caller's item; embed it in the caller's own request struct. */
struct mf_batch_item {
    struct mf_batch_item *next;
    pthread_cond_t wake; /* this caller's own: a batch wakes only its own callers */
    int done;            /* ran: err is its result */
    int lead;            /* handed the lead of the next batch */
    int err;             /* set by the run function */
};

/* Runs `n` items (n >= 1, in arrival order) and sets each item's err. Called without the
 * batcher's lock, by one thread at a time. */
typedef void (*mf_batch_run_fn)(void *owner, struct mf_batch_item **items, size_t n);

struct mf_batcher {
    pthread_mutex_t lock;
    struct mf_batch_item *head, *tail;
    int running; /* a leader runs a batch or was handed the next one */
    size_t max;
    mf_batch_run_fn run;
    void *owner;
    /* Counters for /metrics-style reporting: batches run and items done. */
    uint64_t batches, items;
};

/* max: 1 (no grouping) to MF_BATCHER_MAX; 0 and larger are clamped into that range.
 * MF_OK or MF_E_GENERIC (pthread objects could not be made). */
int mf_batcher__init(struct mf_batcher *b, size_t max, mf_batch_run_fn run, void *owner);
void mf_batcher__destroy(struct mf_batcher *b);

/* Queues `it`, waits until a batch ran it, returns its err. Thread-safe. */
int mf_batcher__submit(struct mf_batcher *b, struct mf_batch_item *it);

/* Holds the batcher as if a batch were running: callers queue and wait; release hands the
 * lead to the first of them (or frees the batcher when none came). For draining and for
 * tests that need callers to meet in one batch. Not while a batch of this thread runs. */
void mf_batcher__hold(struct mf_batcher *b);
void mf_batcher__release(struct mf_batcher *b);
/* Callers queued and waiting. */
size_t mf_batcher__queued(struct mf_batcher *b);

/* Batches run and items done so far (a consistent pair). */
void mf_batcher__stats(struct mf_batcher *b, uint64_t *batches, uint64_t *items);

#endif /* MF_SERVER_DIRECTOR_BATCHER_H */
