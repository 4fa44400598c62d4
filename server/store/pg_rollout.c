/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL ops of the rollout migration (semantics in store.h; the SQLite twin is
 * sqlite_rollout.c): newest-only device runtime reports, rollouts with their wave state, and
 * rollout events. Each op is one statement, atomic on its own.
 */
#include "store/pg_store.h"

#include <stdio.h>
#include <string.h>

#define ROLLOUT_COLUMNS                                                                            \
    "id, model, version, prev_version, state, wave, wave_started_at, created_at, updated_at,"      \
    " plan, breach"

struct visit {
    void (*fn)(void);
    void *payload;
};

int mf_pg__telemetry_put(struct mf_store *base, struct mf_ctx *ctx,
                         const struct mf_store_telemetry *t)
{
    struct mf_pg_params p = {0};

    if (strlen(t->report) > MF_STORE_TELEMETRY_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "telemetry report of '%s' is over %u bytes", t->device_id,
                       MF_STORE_TELEMETRY_MAX);
    mf_pg__param_text(&p, t->device_id);
    mf_pg__param_text(&p, t->model);
    mf_pg__param_text(&p, t->version);
    mf_pg__param_text(&p, t->report);
    mf_pg__param_i64(&p, t->reported_at);
    /* Replace, never add: the report is the device's cumulative total. */
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO telemetry(device_id, model, version, report, reported_at)"
                      " VALUES($1, $2, $3, $4, $5) ON CONFLICT(model, device_id, version) DO UPDATE"
                      " SET report = excluded.report, reported_at = excluded.reported_at",
                      &p, "storing telemetry");
}

static int visit_telemetry(const PGresult *res, void *payload)
{
    struct visit *v = payload;
    struct mf_store_telemetry t;

    mf_pg__col_text(t.device_id, sizeof(t.device_id), res, 0, 0);
    mf_pg__col_text(t.model, sizeof(t.model), res, 0, 1);
    mf_pg__col_text(t.version, sizeof(t.version), res, 0, 2);
    t.report = PQgetvalue(res, 0, 3); /* libpq NUL-terminates every value */
    t.reported_at = mf_pg__col_i64(res, 0, 4);
    return ((mf_store_telemetry_fn)v->fn)(v->payload, &t);
}

int mf_pg__telemetry_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                          mf_store_telemetry_fn fn, void *payload)
{
    struct mf_pg_params p = {0};
    struct visit v = {(void (*)(void))fn, payload};

    mf_pg__param_text(&p, model);
    return mf_pg__store_walk(base, ctx,
                             "SELECT device_id, model, version, report, reported_at FROM telemetry"
                             " WHERE model = $1 ORDER BY device_id COLLATE \"C\","
                             " version COLLATE \"C\"",
                             &p, visit_telemetry, &v);
}

static int rollout_insert(struct mf_store *base, struct mf_ctx *ctx, struct mf_store_rollout *r)
{
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, r->model);
    mf_pg__param_text(&p, r->version);
    mf_pg__param_text(&p, r->prev_version);
    mf_pg__param_text(&p, r->state);
    mf_pg__param_i64(&p, r->wave);
    mf_pg__param_i64(&p, r->wave_started_at);
    mf_pg__param_i64(&p, r->created_at);
    mf_pg__param_i64(&p, r->updated_at);
    mf_pg__param_text(&p, r->plan);
    mf_pg__param_text(&p, r->breach);
    err = mf_pg__run(&res, base, ctx,
                     "INSERT INTO rollouts(model, version, prev_version, state, wave,"
                     " wave_started_at, created_at, updated_at, plan, breach)"
                     " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
                     &p, "creating a rollout");
    if (err == MF_OK)
        r->id = mf_pg__col_i64(res, 0, 0);
    PQclear(res);
    return err;
}

int mf_pg__rollout_put(struct mf_store *base, struct mf_ctx *ctx, struct mf_store_rollout *r,
                       const char *expect_state)
{
    struct mf_pg_params p = {0};
    char missing[96];
    int err;

    if (r->id == 0)
        return rollout_insert(base, ctx, r);
    mf_pg__param_text(&p, r->state);
    mf_pg__param_i64(&p, r->wave);
    mf_pg__param_i64(&p, r->wave_started_at);
    mf_pg__param_i64(&p, r->updated_at);
    mf_pg__param_text(&p, r->breach);
    mf_pg__param_i64(&p, r->id);
    mf_pg__param_text(&p, expect_state);
    (void)snprintf(missing, sizeof(missing), "rollout %lld is unknown or no longer %s",
                   (long long)r->id, expect_state[0] ? expect_state : "there");
    err = mf_pg__run_change(base, ctx,
                            "UPDATE rollouts SET state = $1, wave = $2, wave_started_at = $3,"
                            " updated_at = $4, breach = $5 WHERE id = $6"
                            " AND ($7 = '' OR state = $7)",
                            &p, missing);
    if (err == MF_E_NOTFOUND && expect_state[0])
        err = MF_E_STATE; /* the message already says why */
    return err;
}

static void read_rollout(struct mf_store_rollout *r, const PGresult *res)
{
    r->id = mf_pg__col_i64(res, 0, 0);
    mf_pg__col_text(r->model, sizeof(r->model), res, 0, 1);
    mf_pg__col_text(r->version, sizeof(r->version), res, 0, 2);
    mf_pg__col_text(r->prev_version, sizeof(r->prev_version), res, 0, 3);
    mf_pg__col_text(r->state, sizeof(r->state), res, 0, 4);
    r->wave = (int)mf_pg__col_i64(res, 0, 5);
    r->wave_started_at = mf_pg__col_i64(res, 0, 6);
    r->created_at = mf_pg__col_i64(res, 0, 7);
    r->updated_at = mf_pg__col_i64(res, 0, 8);
    mf_pg__col_text(r->plan, sizeof(r->plan), res, 0, 9);
    mf_pg__col_text(r->breach, sizeof(r->breach), res, 0, 10);
}

static int copy_rollout(const PGresult *res, void *payload)
{
    read_rollout(payload, res); /* the id is unique: at most one row */
    return MF_OK;
}

int mf_pg__rollout_get(struct mf_store_rollout *out, struct mf_store *base, struct mf_ctx *ctx,
                       int64_t id)
{
    struct mf_pg_params p = {0};
    int err;

    out->id = 0;
    mf_pg__param_i64(&p, id);
    err = mf_pg__store_walk(base, ctx, "SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE id = $1", &p,
                            copy_rollout, out);
    if (err == MF_OK && out->id == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no rollout %lld", (long long)id);
    return err;
}

static int visit_rollout(const PGresult *res, void *payload)
{
    struct visit *v = payload;
    struct mf_store_rollout r; /* server thread: an 8 KiB plan fits its stack */

    read_rollout(&r, res);
    return ((mf_store_rollout_fn)v->fn)(v->payload, &r);
}

int mf_pg__rollouts_list(struct mf_store *base, struct mf_ctx *ctx, const char *model,
                         mf_store_rollout_fn fn, void *payload)
{
    struct mf_pg_params p = {0};
    struct visit v = {(void (*)(void))fn, payload};

    mf_pg__param_text(&p, model);
    return mf_pg__store_walk(base, ctx,
                             "SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE $1 = '' OR model = $1"
                             " ORDER BY id DESC",
                             &p, visit_rollout, &v);
}

int mf_pg__rollout_event_add(struct mf_store *base, struct mf_ctx *ctx,
                             const struct mf_store_rollout_event *e)
{
    struct mf_pg_params p = {0};

    mf_pg__param_i64(&p, e->rollout_id);
    mf_pg__param_i64(&p, e->at);
    mf_pg__param_text(&p, e->kind);
    mf_pg__param_text(&p, e->detail);
    return mf_pg__run(NULL, base, ctx,
                      "INSERT INTO rollout_events(rollout_id, at, kind, detail)"
                      " VALUES($1, $2, $3, $4)",
                      &p, "recording a rollout event");
}

static int visit_event(const PGresult *res, void *payload)
{
    struct visit *v = payload;
    struct mf_store_rollout_event e;

    e.rollout_id = mf_pg__col_i64(res, 0, 0);
    e.at = mf_pg__col_i64(res, 0, 1);
    mf_pg__col_text(e.kind, sizeof(e.kind), res, 0, 2);
    mf_pg__col_text(e.detail, sizeof(e.detail), res, 0, 3);
    return ((mf_store_rollout_event_fn)v->fn)(v->payload, &e);
}

int mf_pg__rollout_events_list(struct mf_store *base, struct mf_ctx *ctx, int64_t rollout_id,
                               mf_store_rollout_event_fn fn, void *payload)
{
    struct mf_pg_params p = {0};
    struct visit v = {(void (*)(void))fn, payload};

    mf_pg__param_i64(&p, rollout_id);
    return mf_pg__store_walk(base, ctx,
                             "SELECT rollout_id, at, kind, detail FROM rollout_events"
                             " WHERE rollout_id = $1 ORDER BY seq",
                             &p, visit_event, &v);
}
