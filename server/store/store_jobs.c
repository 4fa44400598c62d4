/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jobs domain of the store, both backends (struct mf_store_jobs_ops, semantics in
 * store.h): background work run once across every node that shares the store, claimed under
 * a lease. A claim is one transaction: on SQLite BEGIN IMMEDIATE takes the write lock first,
 * so two processes on one file cannot both read the same queued row before either updates
 * it; on PostgreSQL FOR UPDATE SKIP LOCKED passes over a row another node is claiming right
 * now, so each job goes to exactly one claimer and nobody waits.
 */
#include "store/store_engine.h"

#include <stdio.h>
#include <string.h>

_Static_assert(MF_STORE_JOB_MAX_ATTEMPTS == 3, "job_fail's CASE spells the limit out");

/* The catalogue of this domain. */
static const struct mf_sql sql_enqueue =
    MF_SQL("INSERT INTO jobs(kind, arg, created_at) VALUES(?, ?, ?)"
           " ON CONFLICT(kind, arg) WHERE state IN ('queued','running') DO NOTHING",
           "enqueueing a job");
/* Jobs whose lease ran out with no attempts left stop here instead of looping. */
static const struct mf_sql sql_exhausted =
    MF_SQL("UPDATE jobs SET state = 'failed', error = 'attempts exhausted'"
           " WHERE state = 'running' AND lease_until <= ? AND attempts >= ?",
           "failing exhausted jobs");
/* ?4: the kind, '' for any. */
static const struct mf_sql sql_claim = MF_SQL_LEASE_CLAIM(
    "jobs", "running",
    "(state = 'queued' OR (state = 'running' AND lease_until <= ?2)) AND (?4 = '' OR kind = ?4)",
    "id, kind, arg, attempts", "claiming a job");
static const struct mf_sql sql_complete = MF_SQL(
    "UPDATE jobs SET state = 'done', lease_until = 0" MF_SQL_LEASE_HELD("running"), "ending a job");
static const struct mf_sql sql_fail = MF_SQL(
    "UPDATE jobs SET error = ?3, " MF_SQL_LEASE_RETRY("3", "queued") MF_SQL_LEASE_HELD("running"),
    "ending a job");
static const struct mf_sql sql_counts =
    MF_SQL_PAIR("SELECT coalesce(sum(state = 'queued' OR (state = 'running' AND"
                " lease_until <= ?1)), 0), coalesce(sum(state = 'running' AND"
                " lease_until > ?1), 0) FROM jobs",
                "SELECT count(*) FILTER (WHERE state = 'queued' OR (state = 'running'"
                " AND lease_until <= ?1)), count(*) FILTER (WHERE state = 'running'"
                " AND lease_until > ?1) FROM jobs",
                "counting jobs");

static int jobs_enqueue(struct mf_store *s, struct mf_ctx *ctx, const char *kind, const char *arg,
                        int64_t now)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_enqueue, NULL, NULL, "tti", kind, arg, now);
}

struct claim_args {
    struct mf_store_job *out;
    const char *kind; /* "" any */
    const char *owner;
    int64_t now, lease_s;
};

static int take_job(void *payload, const struct mf_store_cursor *row)
{
    struct mf_store_job *out = payload;

    mf_store__cols(row, 0, "ittn", &out->id, MF_STORE_TEXT(out->kind), MF_STORE_TEXT(out->arg),
                   &out->attempts);
    return MF_OK;
}

static int claim_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct claim_args *a = arg;
    int found = 0;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_exhausted, NULL, NULL, "ii", a->now,
                            (int64_t)MF_STORE_JOB_MAX_ATTEMPTS);

    if (err == MF_OK)
        err = mf_store__first(&found, s, tx, ctx, &sql_claim, take_job, a->out, "tiit", a->owner,
                              a->now, a->lease_s, a->kind);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no job to claim");
    return err;
}

static int jobs_claim_kind(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                           const char *kind, const char *owner, int64_t now, int64_t lease_s)
{
    struct claim_args a = {out, kind, owner, now, lease_s};

    memset(out, 0, sizeof(*out));
    return mf_store__in_tx(s, ctx, claim_tx, &a);
}

static int jobs_claim(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *owner, int64_t now, int64_t lease_s)
{
    return jobs_claim_kind(out, s, ctx, "", owner, now, lease_s);
}

/* Ends a claimed job: `q` (?1 id, ?2 owner[, ?3 error]) updates it only while `owner` still
 * holds it. */
static int job_end(struct mf_store *s, struct mf_ctx *ctx, const struct mf_sql *q, int64_t id,
                   const char *owner, const char *error)
{
    char missing[MF_STORE_NAME_SIZE + 64];

    (void)snprintf(missing, sizeof(missing), "job %lld is not held by '%s'", (long long)id, owner);
    if (error)
        return mf_store__change(s, NULL, ctx, MF_E_STATE, missing, q, "itt", id, owner, error);
    return mf_store__change(s, NULL, ctx, MF_E_STATE, missing, q, "it", id, owner);
}

static int jobs_complete(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner)
{
    return job_end(s, ctx, &sql_complete, id, owner, NULL);
}

static int jobs_fail(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                     const char *error)
{
    return job_end(s, ctx, &sql_fail, id, owner, error);
}

static int take_counts(void *payload, const struct mf_store_cursor *row)
{
    int64_t *counts = payload;

    mf_store__cols(row, 0, "ii", &counts[0], &counts[1]);
    return MF_OK;
}

static int jobs_counts(int64_t *queued_out, int64_t *running_out, struct mf_store *s,
                       struct mf_ctx *ctx, int64_t now)
{
    int64_t counts[2] = {0, 0};
    int found = 0;
    int err = mf_store__first(&found, s, NULL, ctx, &sql_counts, take_counts, counts, "i", now);

    *queued_out = counts[0];
    *running_out = counts[1];
    return err;
}

/* clang-format off */
const struct mf_store_jobs_ops mf_store__jobs_ops = {
    .job_enqueue = jobs_enqueue, .job_claim = jobs_claim, .job_claim_kind = jobs_claim_kind,
    .job_complete = jobs_complete, .job_fail = jobs_fail, .job_counts = jobs_counts,
};
/* clang-format on */
