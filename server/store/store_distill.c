/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The distillation domain of the store, both backends (struct mf_store_distill_ops,
 * semantics in store.h; docs/distill.md): one row per run of the loop with its provenance
 * record. Each op is one statement, atomic on its own.
 */
#include "store/store_engine.h"

#include <string.h>

#define RUN_COLUMNS                                                                                \
    "id, model, state, trigger, parent_version, version, rollout_id, samples_until, record,"       \
    " error, created_at, updated_at"

/* The catalogue of this domain. ?1..?8: what an update changes, bound in the same order for
 * insert and update. */
static const struct mf_sql sql_run_insert =
    MF_SQL("INSERT INTO distill_runs(state, parent_version, version, rollout_id,"
           " samples_until, record, error, updated_at, model, trigger, created_at)"
           " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
           "creating a distillation run");
static const struct mf_sql sql_run_update =
    MF_SQL("UPDATE distill_runs SET state = ?1, parent_version = ?2, version = ?3,"
           " rollout_id = ?4, samples_until = ?5, record = ?6, error = ?7,"
           " updated_at = ?8" MF_SQL_STATE_GUARD("?9", "?10"),
           "updating a distillation run");
static const struct mf_sql sql_run_get =
    MF_SQL_LIST("SELECT " RUN_COLUMNS " FROM distill_runs WHERE id = ?", "reading a run");
/* ?2: at most that many rows, 0 for all (SQLite: LIMIT -1; PostgreSQL: LIMIT NULL). */
static const struct mf_sql sql_runs_list = {
    .sqlite = "SELECT " RUN_COLUMNS " FROM distill_runs WHERE ?1 = '' OR model = ?1"
              " ORDER BY id DESC LIMIT CASE WHEN ?2 > 0 THEN ?2 ELSE -1 END",
    .pg = "SELECT " RUN_COLUMNS " FROM distill_runs WHERE ?1 = '' OR model = ?1"
          " ORDER BY id DESC LIMIT NULLIF(?2::bigint, 0)",
    .what = "listing runs",
    .stream = 1,
};

static int distill_run_put(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_distill_run *r,
                           const char *expect_state)
{
    const char *record = r->record ? r->record : "";
    int found = 0;

    if (strlen(record) > MF_STORE_DISTILL_RECORD_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "distillation record of run %lld is over %u bytes",
                       (long long)r->id, MF_STORE_DISTILL_RECORD_MAX);
    if (r->id == 0)
        return mf_store__first(&found, s, NULL, ctx, &sql_run_insert, mf_store__take_i64, &r->id,
                               "tttiittitti", r->state, r->parent_version, r->version,
                               r->rollout_id, r->samples_until, record, r->error, r->updated_at,
                               r->model, r->trigger, r->created_at);
    return mf_store__change_state(s, ctx, "distillation run", r->id, expect_state, &sql_run_update,
                                  "tttiittiit", r->state, r->parent_version, r->version,
                                  r->rollout_id, r->samples_until, record, r->error, r->updated_at,
                                  r->id, expect_state);
}

static int visit_run(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_distill_run r;

    mf_store__cols(row, 0, "itttttiistii", &r.id, MF_STORE_TEXT(r.model), MF_STORE_TEXT(r.state),
                   MF_STORE_TEXT(r.trigger), MF_STORE_TEXT(r.parent_version),
                   MF_STORE_TEXT(r.version), &r.rollout_id, &r.samples_until, &r.record,
                   MF_STORE_TEXT(r.error), &r.created_at, &r.updated_at);
    return ((mf_store_distill_run_fn)w->fn)(w->payload, &r);
}

static int distill_run_get(struct mf_store *s, struct mf_ctx *ctx, int64_t id,
                           mf_store_distill_run_fn fn, void *payload)
{
    struct mf_store_visit w = {(void (*)(void))fn, payload, ctx};
    int found = 0;
    int err = mf_store__first(&found, s, NULL, ctx, &sql_run_get, visit_run, &w, "i", id);

    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no distillation run %lld", (long long)id);
    return err;
}

static int distill_runs_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                             int64_t limit, mf_store_distill_run_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_runs_list, visit_run, (void (*)(void))fn, payload, "ti",
                          model, limit);
}

/* clang-format off */
const struct mf_store_distill_ops mf_store__distill_ops = {
    .distill_run_put = distill_run_put, .distill_run_get = distill_run_get,
    .distill_runs_list = distill_runs_list,
};
/* clang-format on */
