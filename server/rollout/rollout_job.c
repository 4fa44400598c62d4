/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The "rollout" job kind on the store's job queue (rollout_ctl.h): each node's worker tick
 * enqueues one job per watched (running or paused) rollout (idempotent while one is queued
 * or running), and
 * the queue hands each job to exactly one node, so each rollout is evaluated once per tick
 * across the cluster however many nodes run.
 */
#include "rollout/rollout_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOBS_MAX_RUNNING 256 /* rollouts queued per tick; more wait for the next one */

struct running {
    int64_t ids[JOBS_MAX_RUNNING];
    size_t n;
};

static int collect_running(void *payload, const struct mf_store_rollout *r)
{
    struct running *run = payload;

    if (mf_rollout__watched(r->state) && run->n < JOBS_MAX_RUNNING)
        run->ids[run->n++] = r->id;
    return MF_OK;
}

void mf_rollout__jobs_tick(void *store, struct mf_ctx *ctx)
{
    struct mf_store *s = store;
    struct running *run = mf_calloc(NULL, 1, sizeof(*run));
    int err = run ? s->ops->rollout->rollouts_list(s, ctx, "", collect_running, run) : MF_E_NOMEM;

    /* Enqueue after the walk: a visitor must not call the store (one lock on SQLite). */
    for (size_t i = 0; err == MF_OK && run && i < run->n; i++) {
        char arg[24];

        (void)snprintf(arg, sizeof(arg), "%lld", (long long)run->ids[i]);
        err = s->ops->jobs->job_enqueue(s, ctx, MF_ROLLOUT_JOB_KIND, arg, (int64_t)time(NULL));
    }
    if (err < 0)
        MF_LOG_WARN(ctx, "queueing rollout evaluations: %s",
                    err == MF_E_NOMEM ? "out of memory" : mf_ctx__errmsg(ctx));
    mf_free(NULL, run);
    mf_rollout__fleet_tick(s, ctx, (int64_t)time(NULL));
}

int mf_rollout__jobs_run(int *made_out, void *store, struct mf_ctx *ctx, const char *arg)
{
    char *end = NULL;
    long long id = strtoll(arg, &end, 10);

    *made_out = 0;
    if (!*arg || *end || id <= 0)
        return mf_fail(ctx, MF_E_INVALID, "rollout job argument '%s' is not an id", arg);
    *made_out = 1;
    return mf_rollout__step(store, ctx, id, (int64_t)time(NULL));
}
