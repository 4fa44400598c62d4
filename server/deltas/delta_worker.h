/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Delta precompute: an in-process background thread that claims "delta" jobs from the
 * store (so that several nodes on one store run each job once) and, for the release a job
 * names, encodes a delta (diff/create, mf format) from each of the model's previous K
 * released versions and from every version devices report installed. A delta is kept only
 * when smaller than the full blob; it is stored as a content-addressed blob and recorded,
 * and check-ins list it from then on (deltas appear as they finish).
 */
#ifndef MF_SERVER_DELTA_WORKER_H
#define MF_SERVER_DELTA_WORKER_H

#include "mf_ctx.h"
#include "store/store.h"

#include <stdint.h>

#define MF_DELTA_JOB_KIND "delta"

struct mf_metrics;

/*
 * Another kind of job the same worker runs (offload labelling): `run` does one claimed
 * job (the worker completes or fails it from the result; *made_out counts work for the
 * log), `tick` (may be NULL) runs each time the worker wakes, before it claims jobs, so a
 * kind can queue periodic work.
 */
struct mf_job_kind {
    const char *kind;
    int (*run)(int *made_out, void *payload, struct mf_ctx *ctx, const char *arg);
    void (*tick)(void *payload, struct mf_ctx *ctx);
    void *payload;
};

#define MF_DELTA_MAX_KINDS 4

struct mf_delta_options {
    unsigned k;           /* previous released versions to diff from (default 3) */
    uint64_t max_bytes;   /* larger blobs are not diffed (default 512 MiB) */
    unsigned interval_ms; /* idle poll for jobs other nodes queued (default 2000) */
    unsigned lease_s;     /* a claimed job's lease (default 900) */
    unsigned threads;     /* encoder threads (default 2) */
    /* Appended: other job kinds this worker runs (copied at start; none by default). */
    struct mf_job_kind kinds[MF_DELTA_MAX_KINDS];
    size_t n_kinds;
    /* Appended: 0 makes a worker of the other kinds only (a second thread for long jobs,
     * so a distillation run does not hold up deltas and rollout evaluation). Default 1. */
    int run_deltas;
    int compressed_full; /* also encode each release from the empty image (default 1) */
};

void mf_delta__options_init(struct mf_delta_options *o);

/* Queues the delta job of a new release (idempotent). */
int mf_delta__enqueue(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                      const char *version);
/* The same for a released variant (migration 12): its deltas come from the same variant of
 * the model's previous K released versions and from what devices report installed. */
int mf_delta__enqueue_variant(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                              const char *version, const char *variant);

/*
 * Runs one claimed job's work; the caller completes or fails the job. *made_out counts the
 * deltas stored. Exposed so tests can drive it without the thread.
 */
int mf_delta__run(int *made_out, struct mf_store *s, struct mf_ctx *ctx, const char *blob_root,
                  const struct mf_delta_options *o, const char *arg);

struct mf_delta_worker;

/* Starts the thread. `metrics` may be NULL. Ownership: mf_delta__worker_stop(). */
int mf_delta__worker_start(struct mf_delta_worker **out, struct mf_ctx *ctx, struct mf_store *s,
                           const char *blob_root, struct mf_metrics *metrics,
                           const struct mf_delta_options *o);
/* Asks the thread to look for jobs now (after a release). NULL is a no-op. */
void mf_delta__worker_wake(struct mf_delta_worker *w);
/* Stops and joins the thread (a job in progress finishes first). NULL is a no-op. */
void mf_delta__worker_stop(struct mf_delta_worker *w);

#endif /* MF_SERVER_DELTA_WORKER_H */
