/* SPDX-License-Identifier: Apache-2.0 */
/* Offload's work on the store's job queue: labelling and retention (see offload_srv.h). */
#include "offload/offload_srv.h"

#include "deltas/delta_worker.h"

#include <time.h>

#define LABEL_PAGE 64
#define RETENTION_EVERY_S 3600

static int label_run(int *made_out, void *payload, struct mf_ctx *ctx, const char *arg)
{
    struct mf_offload_jobs *j = payload;

    return mf_offsrv__label_run(made_out, j->srv, j->store, ctx, j->blob_root, arg, LABEL_PAGE);
}

static int has_unlabelled(void *payload, const struct mf_store_sample *m)
{
    (void)m;
    *(int *)payload = 1;
    return MF_OK;
}

static void retention(struct mf_offload_jobs *j, struct mf_ctx *ctx, int64_t now)
{
    unsigned days = mf_offsrv__srv_config(j->srv)->retention_days;
    int64_t deleted = 0;

    if (!days || now - j->retention_done_at < RETENTION_EVERY_S)
        return;
    j->retention_done_at = now;
    if (mf_offsrv__delete(&deleted, j->store, ctx, j->blob_root, "", now - (int64_t)days * 86400) <
        0)
        MF_LOG_WARN(ctx, "sample retention: %s", mf_ctx__errmsg(ctx));
    else if (deleted)
        MF_LOG_INFO(ctx, "sample retention: deleted %lld samples older than %u days",
                    (long long)deleted, days);
}

static void tick(void *payload, struct mf_ctx *ctx)
{
    struct mf_offload_jobs *j = payload;
    const struct mf_offload_config *cfg = mf_offsrv__srv_config(j->srv);
    int64_t now = (int64_t)time(NULL);

    for (size_t i = 0; i < cfg->n; i++) {
        struct mf_teacher *t = mf_offsrv__teacher(j->srv, cfg->models[i].name);
        struct mf_store_sample_query q = {
            .model = cfg->models[i].name, .unlabelled = 1, .limit = 1};
        int any = 0;

        /* An open breaker fails every call: wait for it to half-open before retrying. */
        if (!t || mf_teacher__breaker(t) == MF_TEACHER_OPEN)
            continue;
        if (j->store->ops->offload->samples_walk(j->store, ctx, &q, has_unlabelled, &any) ==
                MF_OK &&
            any)
            (void)j->store->ops->jobs->job_enqueue(j->store, ctx, MF_OFFLOAD_LABEL_JOB,
                                                   cfg->models[i].name, now);
    }
    retention(j, ctx, now);
}

void mf_offsrv__jobs_kind(struct mf_job_kind *out, struct mf_offload_jobs *jobs)
{
    out->kind = MF_OFFLOAD_LABEL_JOB;
    out->run = label_run;
    out->tick = tick;
    out->payload = jobs;
}
