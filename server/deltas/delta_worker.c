/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The delta worker thread (see delta_worker.h): sleeps until woken by a release on this
 * node or until its poll interval passes (a release on another node), then claims and runs
 * jobs until none is left. Claims go through the store, which is what makes each job run
 * once across nodes; the lease lets another node take over a job whose node died.
 */
#include "deltas/delta_worker.h"
#include "common/worker_thread.h"

#include "http/http_metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mf_delta_worker {
    mf_allocator alloc;
    struct mf_ctx ctx; /* the thread's own error buffer */
    struct mf_store *store;
    struct mf_metrics *metrics;
    struct mf_delta_options opts;
    char blob_root[4096];
    char owner[64]; /* this node's name in job claims */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int wake, stop;
    /* What it claims, in this order: deltas (unless opts.run_deltas is 0), then opts.kinds. */
    struct mf_job_kind kinds[MF_DELTA_MAX_KINDS + 1];
    size_t n_kinds;
};

/* The delta kind: one claimed job's deltas, counted in the metrics. */
static int run_delta(int *made_out, void *payload, struct mf_ctx *ctx, const char *arg)
{
    struct mf_delta_worker *w = payload;
    int err = mf_delta__run(made_out, w->store, ctx, w->blob_root, &w->opts, arg);

    if (*made_out && w->metrics)
        mf_metrics__count(&w->metrics->deltas_computed, (uint64_t)*made_out);
    return err;
}

static const struct mf_job_kind *find_kind(const struct mf_delta_worker *w, const char *kind)
{
    for (size_t i = 0; i < w->n_kinds; i++) {
        if (strcmp(w->kinds[i].kind, kind) == 0)
            return &w->kinds[i];
    }
    return NULL;
}

/* Runs a claimed job and completes it, or fails it (re-queued until its attempts run out). */
static void run_job(struct mf_delta_worker *w, const struct mf_job_kind *k,
                    const struct mf_store_job *job)
{
    struct mf_store *s = w->store;
    int made = 0;
    int err = k->run(&made, k->payload, &w->ctx, job->arg);

    if (err == MF_OK) {
        err = s->ops->jobs->job_complete(s, &w->ctx, job->id, w->owner);
    } else {
        char why[MF_ERRMSG_MAX];

        (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(&w->ctx));
        MF_LOG_INFO(&w->ctx, "%s job %s (attempt %d, %d done): %s", job->kind, job->arg,
                    job->attempts, made, why);
        err = s->ops->jobs->job_fail(s, &w->ctx, job->id, w->owner, why);
    }
    if (err < 0)
        MF_LOG_WARN(&w->ctx, "%s job %s: %s", job->kind, job->arg, mf_ctx__errmsg(&w->ctx));
}

/* Claims the oldest job of a kind this worker runs, one kind at a time (deltas first): a
 * kind only a newer node knows is left queued for it instead of being failed here. */
static int claim_known(struct mf_store_job *job, struct mf_delta_worker *w)
{
    int err = MF_E_NOTFOUND;

    for (size_t i = 0; err == MF_E_NOTFOUND && i < w->n_kinds; i++)
        err =
            w->store->ops->jobs->job_claim_kind(job, w->store, &w->ctx, w->kinds[i].kind, w->owner,
                                                (int64_t)time(NULL), (int64_t)w->opts.lease_s);
    return err;
}

/* Claims and runs jobs until there is none (or stop is asked). */
static void drain(struct mf_delta_worker *w)
{
    for (;;) {
        struct mf_store_job job;
        int stop, err;

        (void)pthread_mutex_lock(&w->lock);
        stop = w->stop;
        (void)pthread_mutex_unlock(&w->lock);
        if (stop)
            return;
        err = claim_known(&job, w);
        if (err == MF_E_NOTFOUND)
            return;
        if (err < 0) {
            MF_LOG_WARN(&w->ctx, "claiming a job: %s", mf_ctx__errmsg(&w->ctx));
            return;
        }
        run_job(w, find_kind(w, job.kind), &job); /* claim_known took a known kind */
    }
}

static void *worker_main(void *arg)
{
    struct mf_delta_worker *w = arg;

    (void)pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec until;

        (void)pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < w->n_kinds; i++) {
            if (w->kinds[i].tick)
                w->kinds[i].tick(w->kinds[i].payload, &w->ctx);
        }
        drain(w);
        (void)pthread_mutex_lock(&w->lock);
        mf_worker_thread__deadline(&until, w->opts.interval_ms);
        while (!w->wake && !w->stop) {
            if (pthread_cond_timedwait(&w->cond, &w->lock, &until) != 0)
                break; /* timed out: poll for other nodes' jobs */
        }
        w->wake = 0;
    }
    (void)pthread_mutex_unlock(&w->lock);
    return NULL;
}

int mf_delta__worker_start(struct mf_delta_worker **out, struct mf_ctx *ctx, struct mf_store *s,
                           const char *blob_root, struct mf_metrics *metrics,
                           const struct mf_delta_options *o)
{
    struct mf_delta_worker *w = mf_calloc(&ctx->alloc, 1, sizeof(*w));
    int err;

    *out = NULL;
    if (!w)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory starting the delta worker");
    w->alloc = ctx->alloc;
    mf_ctx__init(&w->ctx, &ctx->alloc, ctx->log_fn, ctx->log_payload, "deltas");
    w->store = s;
    w->metrics = metrics;
    w->opts = *o;
    if (o->run_deltas)
        w->kinds[w->n_kinds++] = (struct mf_job_kind){MF_DELTA_JOB_KIND, run_delta, NULL, w};
    for (size_t i = 0; i < o->n_kinds && i < MF_DELTA_MAX_KINDS; i++)
        w->kinds[w->n_kinds++] = o->kinds[i];
    (void)snprintf(w->blob_root, sizeof(w->blob_root), "%s", blob_root);
    mf_worker_thread__owner(w->owner, sizeof(w->owner), w);
    err = mf_worker_thread__start(&w->thread, &w->lock, &w->cond, worker_main, w, ctx,
                                  "the delta worker");
    if (err < 0) {
        mf_free(&ctx->alloc, w);
        return err;
    }
    *out = w;
    return MF_OK;
}

void mf_delta__worker_wake(struct mf_delta_worker *w)
{
    if (!w)
        return;
    mf_worker_thread__raise(&w->wake, &w->lock, &w->cond);
}

void mf_delta__worker_stop(struct mf_delta_worker *w)
{
    mf_allocator alloc;

    if (!w)
        return;
    mf_worker_thread__stop(&w->stop, w->thread, &w->lock, &w->cond);
    alloc = w->alloc;
    mf_free(&alloc, w);
}
