/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite ops of the distillation migration (semantics in store.h; the PostgreSQL twin is
 * pg_distill.c): one row per distillation run with its provenance record. Every op is one
 * statement on the store's connection, atomic on its own.
 */
#include "store/sqlite_store.h"

#include <string.h>

#define RUN_COLUMNS                                                                                \
    "id, model, state, trigger, parent_version, version, rollout_id, samples_until, record,"       \
    " error, created_at, updated_at"

int mf_sqlite__distill_run_put(struct mf_store *base, struct mf_ctx *ctx,
                               struct mf_store_distill_run *r, const char *expect_state)
{
    const char *record = r->record ? r->record : "";
    int changes = 0;
    int err;

    if (strlen(record) > MF_STORE_DISTILL_RECORD_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "distillation record of run %lld is over %u bytes",
                       (long long)r->id, MF_STORE_DISTILL_RECORD_MAX);
    if (r->id == 0)
        return mf_sqlite__write(NULL, &r->id, base, ctx,
                                "INSERT INTO distill_runs(model, state, trigger, parent_version,"
                                " version, rollout_id, samples_until, record, error, created_at,"
                                " updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                "tttttiittii", r->model, r->state, r->trigger, r->parent_version,
                                r->version, r->rollout_id, r->samples_until, record, r->error,
                                r->created_at, r->updated_at);
    err = mf_sqlite__write(&changes, NULL, base, ctx,
                           "UPDATE distill_runs SET state = ?, parent_version = ?, version = ?,"
                           " rollout_id = ?, samples_until = ?, record = ?, error = ?,"
                           " updated_at = ? WHERE id = ? AND (? = '' OR state = ?)",
                           "tttiittiitt", r->state, r->parent_version, r->version, r->rollout_id,
                           r->samples_until, record, r->error, r->updated_at, r->id, expect_state,
                           expect_state);
    if (err == MF_OK && changes == 0)
        err = mf_fail(ctx, expect_state[0] ? MF_E_STATE : MF_E_NOTFOUND,
                      "distillation run %lld is unknown or no longer %s", (long long)r->id,
                      expect_state[0] ? expect_state : "there");
    return err;
}

static int visit_run(sqlite3_stmt *st, void *fn, void *payload)
{
    struct mf_store_distill_run r;
    const unsigned char *record = sqlite3_column_text(st, 8);

    r.id = sqlite3_column_int64(st, 0);
    mf_sqlite__text_col(r.model, sizeof(r.model), st, 1);
    mf_sqlite__text_col(r.state, sizeof(r.state), st, 2);
    mf_sqlite__text_col(r.trigger, sizeof(r.trigger), st, 3);
    mf_sqlite__text_col(r.parent_version, sizeof(r.parent_version), st, 4);
    mf_sqlite__text_col(r.version, sizeof(r.version), st, 5);
    r.rollout_id = sqlite3_column_int64(st, 6);
    r.samples_until = sqlite3_column_int64(st, 7);
    r.record = record ? (const char *)record : "";
    mf_sqlite__text_col(r.error, sizeof(r.error), st, 9);
    r.created_at = sqlite3_column_int64(st, 10);
    r.updated_at = sqlite3_column_int64(st, 11);
    return ((mf_store_distill_run_fn)fn)(payload, &r);
}

struct count_visit {
    mf_store_distill_run_fn fn;
    void *payload;
    int seen;
};

static int count_run(void *payload, const struct mf_store_distill_run *r)
{
    struct count_visit *c = payload;

    c->seen++;
    return c->fn(c->payload, r);
}

int mf_sqlite__distill_run_get(struct mf_store *base, struct mf_ctx *ctx, int64_t id,
                               mf_store_distill_run_fn fn, void *payload)
{
    struct count_visit c = {fn, payload, 0};
    int err = mf_sqlite__walk(base, ctx, visit_run, (void *)count_run, &c,
                              "SELECT " RUN_COLUMNS " FROM distill_runs WHERE id = ?", "i", id);

    if (err == MF_OK && c.seen == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no distillation run %lld", (long long)id);
    return err;
}

int mf_sqlite__distill_runs_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                                 int64_t limit, mf_store_distill_run_fn fn, void *payload)
{
    return mf_sqlite__walk(base, ctx, visit_run, (void *)fn, payload,
                           "SELECT " RUN_COLUMNS " FROM distill_runs WHERE ? = '' OR model = ?"
                           " ORDER BY id DESC LIMIT ?",
                           "tti", model, model, limit > 0 ? limit : (int64_t)-1);
}
