/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in stage's queue and thread (see checkin_stage.h). Requests are linked through
 * their own struct (stage_next), so queueing allocates nothing. The connection is
 * suspended under the queue's lock, before the stage can see the request: a resume can
 * never come before its suspend. The thread resumes a connection as the last thing it
 * does with that request, since the MHD worker may finish and free it at once.
 */
#include "director/checkin_stage.h"

#include "director/checkin_flow.h"
#include "common/worker_thread.h"
#include "store/store.h"

#include <pthread.h>

struct mf_checkin_stage {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    struct mf_httpd_req *head, *tail;
    int stopping;
    size_t max;
    mf_allocator alloc;
    uint64_t groups, checkins;
};

/* Under the lock: unlinks up to st->max requests into `out`. */
static size_t take_locked(struct mf_checkin_stage *st, struct mf_httpd_req **out)
{
    size_t n = 0;

    while (st->head && n < st->max) {
        out[n++] = st->head;
        st->head = st->head->stage_next;
    }
    if (!st->head)
        st->tail = NULL;
    return n;
}

static void *stage_main(void *arg)
{
    struct mf_checkin_stage *st = arg;
    struct mf_httpd_req *group[MF_STORE_CHECKIN_BATCH_MAX];
    struct MHD_Connection *conns[MF_STORE_CHECKIN_BATCH_MAX];

    for (;;) {
        size_t n;

        (void)pthread_mutex_lock(&st->lock);
        while (!st->head && !st->stopping)
            (void)pthread_cond_wait(&st->wake, &st->lock);
        n = take_locked(st, group);
        if (n) {
            st->groups++;
            st->checkins += n;
        }
        (void)pthread_mutex_unlock(&st->lock);
        if (!n)
            break; /* stopping, and nothing is left to answer */
        for (size_t i = 0; i < n; i++)
            conns[i] = group[i]->conn;
        mf_checkin_flow__group(group, n);
        for (size_t i = 0; i < n; i++)
            MHD_resume_connection(conns[i]);
    }
    return NULL;
}

int mf_checkin_stage__start(struct mf_checkin_stage **out, struct mf_ctx *ctx, size_t max)
{
    struct mf_checkin_stage *st = mf_calloc(&ctx->alloc, 1, sizeof(*st));
    int err;

    *out = NULL;
    if (!st)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for the check-in stage");
    st->alloc = ctx->alloc;
    st->max = max < 1 ? 1 : max > MF_STORE_CHECKIN_BATCH_MAX ? MF_STORE_CHECKIN_BATCH_MAX : max;
    err = mf_worker_thread__start(&st->thread, &st->lock, &st->wake, stage_main, st, ctx,
                                  "the check-in stage");
    if (err < 0) {
        mf_free(&ctx->alloc, st);
        return err;
    }
    *out = st;
    return MF_OK;
}

int mf_checkin_stage__submit(struct mf_checkin_stage *st, struct mf_httpd_req *r)
{
    int was_empty;

    (void)pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        (void)pthread_mutex_unlock(&st->lock);
        return 0;
    }
    r->suspended = 1;
    r->stage_next = NULL;
    MHD_suspend_connection(r->conn);
    was_empty = st->head == NULL;
    if (st->tail)
        st->tail->stage_next = r;
    else
        st->head = r;
    st->tail = r;
    /* A non-empty queue means the thread is awake already and takes `r` with the rest. */
    if (was_empty)
        (void)pthread_cond_signal(&st->wake);
    (void)pthread_mutex_unlock(&st->lock);
    return 1;
}

void mf_checkin_stage__stop(struct mf_checkin_stage *st)
{
    int join;

    if (!st)
        return;
    (void)pthread_mutex_lock(&st->lock);
    join = !st->stopping;
    st->stopping = 1;
    (void)pthread_cond_signal(&st->wake);
    (void)pthread_mutex_unlock(&st->lock);
    if (join)
        (void)pthread_join(st->thread, NULL);
}

void mf_checkin_stage__free(struct mf_checkin_stage *st)
{
    mf_allocator alloc;

    if (!st)
        return;
    mf_checkin_stage__stop(st);
    (void)pthread_cond_destroy(&st->wake);
    (void)pthread_mutex_destroy(&st->lock);
    alloc = st->alloc;
    mf_free(&alloc, st);
}

void mf_checkin_stage__stats(struct mf_checkin_stage *st, uint64_t *groups, uint64_t *checkins)
{
    (void)pthread_mutex_lock(&st->lock);
    *groups = st->groups;
    *checkins = st->checkins;
    (void)pthread_mutex_unlock(&st->lock);
}
