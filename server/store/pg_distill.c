/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL ops of the distillation migration (semantics in store.h; the SQLite twin is
 * sqlite_distill.c). Each op is one statement, atomic on its own.
 */
#include "store/pg_store.h"

#include <stdio.h>
#include <string.h>

#define RUN_COLUMNS                                                                                \
    "id, model, state, trigger, parent_version, version, rollout_id, samples_until, record,"       \
    " error, created_at, updated_at"

struct visit {
    mf_store_distill_run_fn fn;
    void *payload;
    int seen;
};

/* $1..$8: what an update changes, bound in the same order for insert and update. */
static void bind_changes(struct mf_pg_params *p, const struct mf_store_distill_run *r,
                         const char *record)
{
    mf_pg__param_text(p, r->state);
    mf_pg__param_text(p, r->parent_version);
    mf_pg__param_text(p, r->version);
    mf_pg__param_i64(p, r->rollout_id);
    mf_pg__param_i64(p, r->samples_until);
    mf_pg__param_text(p, record);
    mf_pg__param_text(p, r->error);
    mf_pg__param_i64(p, r->updated_at);
}

static int run_insert(struct mf_store *base, struct mf_ctx *ctx, struct mf_store_distill_run *r,
                      const char *record)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    bind_changes(&p, r, record);
    mf_pg__param_text(&p, r->model);
    mf_pg__param_text(&p, r->trigger);
    mf_pg__param_i64(&p, r->created_at);
    err = mf_pg__run(&res, base, ctx,
                     "INSERT INTO distill_runs(state, parent_version, version, rollout_id,"
                     " samples_until, record, error, updated_at, model, trigger, created_at)"
                     " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
                     &p, "creating a distillation run");
    if (err == MF_OK)
        r->id = mf_pg__col_i64(res, 0, 0);
    PQclear(res);
    return err;
}

int mf_pg__distill_run_put(struct mf_store *base, struct mf_ctx *ctx,
                           struct mf_store_distill_run *r, const char *expect_state)
{
    const char *record = r->record ? r->record : "";
    struct mf_pg_params p = {0};
    char missing[96];
    int err;

    if (strlen(record) > MF_STORE_DISTILL_RECORD_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "distillation record of run %lld is over %u bytes",
                       (long long)r->id, MF_STORE_DISTILL_RECORD_MAX);
    if (r->id == 0)
        return run_insert(base, ctx, r, record);
    bind_changes(&p, r, record);
    mf_pg__param_i64(&p, r->id);
    mf_pg__param_text(&p, expect_state);
    (void)snprintf(missing, sizeof(missing), "distillation run %lld is unknown or no longer %s",
                   (long long)r->id, expect_state[0] ? expect_state : "there");
    err = mf_pg__run_change(base, ctx,
                            "UPDATE distill_runs SET state = $1, parent_version = $2,"
                            " version = $3, rollout_id = $4, samples_until = $5, record = $6,"
                            " error = $7, updated_at = $8 WHERE id = $9"
                            " AND ($10 = '' OR state = $10)",
                            &p, missing);
    if (err == MF_E_NOTFOUND && expect_state[0])
        err = MF_E_STATE; /* the message already says why */
    return err;
}

static int visit_run(const PGresult *res, void *payload)
{
    struct visit *v = payload;
    struct mf_store_distill_run r;

    r.id = mf_pg__col_i64(res, 0, 0);
    mf_pg__col_text(r.model, sizeof(r.model), res, 0, 1);
    mf_pg__col_text(r.state, sizeof(r.state), res, 0, 2);
    mf_pg__col_text(r.trigger, sizeof(r.trigger), res, 0, 3);
    mf_pg__col_text(r.parent_version, sizeof(r.parent_version), res, 0, 4);
    mf_pg__col_text(r.version, sizeof(r.version), res, 0, 5);
    r.rollout_id = mf_pg__col_i64(res, 0, 6);
    r.samples_until = mf_pg__col_i64(res, 0, 7);
    r.record = PQgetvalue(res, 0, 8); /* libpq NUL-terminates every value */
    mf_pg__col_text(r.error, sizeof(r.error), res, 0, 9);
    r.created_at = mf_pg__col_i64(res, 0, 10);
    r.updated_at = mf_pg__col_i64(res, 0, 11);
    v->seen++;
    return v->fn(v->payload, &r);
}

int mf_pg__distill_run_get(struct mf_store *base, struct mf_ctx *ctx, int64_t id,
                           mf_store_distill_run_fn fn, void *payload)
{
    struct mf_pg_params p = {0};
    struct visit v = {fn, payload, 0};
    int err;

    mf_pg__param_i64(&p, id);
    err = mf_pg__store_walk(base, ctx, "SELECT " RUN_COLUMNS " FROM distill_runs WHERE id = $1", &p,
                            visit_run, &v);
    if (err == MF_OK && v.seen == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no distillation run %lld", (long long)id);
    return err;
}

int mf_pg__distill_runs_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                             int64_t limit, mf_store_distill_run_fn fn, void *payload)
{
    struct mf_pg_params p = {0};
    struct visit v = {fn, payload, 0};

    mf_pg__param_text(&p, model);
    mf_pg__param_i64(&p, limit);
    /* LIMIT NULL is no limit */
    return mf_pg__store_walk(base, ctx,
                             "SELECT " RUN_COLUMNS " FROM distill_runs WHERE $1 = '' OR model = $1"
                             " ORDER BY id DESC LIMIT NULLIF($2::bigint, 0)",
                             &p, visit_run, &v);
}
