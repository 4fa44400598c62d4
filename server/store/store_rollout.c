/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout domain of the store, both backends (struct mf_store_rollout_ops, semantics in
 * store.h; docs/rollouts.md): device runtime reports kept newest-only per (device, model,
 * version), rollouts with their wave state, and the events of each rollout. Each op is one
 * statement, atomic on its own.
 */
#include "store/store_engine.h"

#include <string.h>

#define ROLLOUT_COLUMNS                                                                            \
    "id, model, version, prev_version, state, wave, wave_started_at, created_at, updated_at,"      \
    " plan, breach, soak_started_at, control, halted_classes"
/* Every telemetry row is written and read with this one column list (visit_telemetry's
 * order). */
#define TELEMETRY_COLUMNS "device_id, model, version, report, reported_at, device_class"
#define TELEMETRY_SELECT "SELECT " TELEMETRY_COLUMNS " FROM telemetry"
#define TELEMETRY_LIST(C) TELEMETRY_SELECT " WHERE model = ? ORDER BY device_id" C ", version" C
#define TELEMETRY_DEVICE(C) TELEMETRY_SELECT " WHERE model = ? AND device_id = ? ORDER BY version" C

/* The catalogue of this domain. Replace, never add: a report is the device's cumulative
 * total. */
static const struct mf_sql sql_telemetry_put =
    MF_SQL("INSERT INTO telemetry(" TELEMETRY_COLUMNS ") VALUES(?, ?, ?, ?, ?, ?)"
           " ON CONFLICT(model, device_id, version) DO UPDATE"
           " SET report = excluded.report, reported_at = excluded.reported_at,"
           " device_class = excluded.device_class",
           "storing telemetry");
static const struct mf_sql sql_telemetry_list = MF_SQL_ORDERED(TELEMETRY_LIST, "listing telemetry");
static const struct mf_sql sql_telemetry_device =
    MF_SQL_ORDERED(TELEMETRY_DEVICE, "listing a device's telemetry");
static const struct mf_sql sql_rollout_insert =
    MF_SQL("INSERT INTO rollouts(model, version, prev_version, state, wave,"
           " wave_started_at, created_at, updated_at, plan, breach, soak_started_at, control,"
           " halted_classes) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
           "creating a rollout");
static const struct mf_sql sql_rollout_update = MF_SQL(
    "UPDATE rollouts SET state = ?1, wave = ?2, wave_started_at = ?3, updated_at = ?4,"
    " breach = ?5, soak_started_at = ?8, control = ?9, halted_classes = ?10" MF_SQL_STATE_GUARD(
        "?6", "?7"),
    "updating a rollout");
static const struct mf_sql sql_rollout_get =
    MF_SQL_LIST("SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE id = ?", "reading a rollout");
static const struct mf_sql sql_rollouts_list =
    MF_SQL_LIST("SELECT " ROLLOUT_COLUMNS " FROM rollouts WHERE ?1 = '' OR model = ?1"
                " ORDER BY id DESC",
                "listing rollouts");
static const struct mf_sql sql_event_add =
    MF_SQL("INSERT INTO rollout_events(rollout_id, at, kind, detail) VALUES(?, ?, ?, ?)",
           "recording a rollout event");
static const struct mf_sql sql_events_list =
    MF_SQL_LIST("SELECT rollout_id, at, kind, detail FROM rollout_events WHERE rollout_id = ?"
                " ORDER BY seq",
                "listing rollout events");

#define HISTORY_COLUMNS                                                                            \
    "rollout_id, at, line, metric, kind, state, value, bound, control, devices, control_devices"
static const struct mf_sql sql_history_put = MF_SQL(
    "INSERT INTO rollout_history(" HISTORY_COLUMNS ") VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(rollout_id, at, line) DO UPDATE SET metric = excluded.metric,"
    " kind = excluded.kind, state = excluded.state, value = excluded.value,"
    " bound = excluded.bound, control = excluded.control, devices = excluded.devices,"
    " control_devices = excluded.control_devices",
    "recording a rollout evaluation");
/* Once a rollout holds more than ?3 evaluations, every second one of the oldest ?2 (by time)
 * goes: old history at half the rate. One statement, so the count and the thinning see the
 * same rows. */
static const struct mf_sql sql_history_thin =
    MF_SQL("DELETE FROM rollout_history WHERE rollout_id = ?1 AND (SELECT count(DISTINCT at)"
           " FROM rollout_history WHERE rollout_id = ?1) > ?3 AND at IN (SELECT at FROM"
           " (SELECT at, row_number() OVER (ORDER BY at) AS rn FROM (SELECT DISTINCT at FROM"
           " rollout_history WHERE rollout_id = ?1) ticks) ranked WHERE rn <= ?2 AND rn % 2 = 0)",
           "thinning a rollout's history");
static const struct mf_sql sql_history_list =
    MF_SQL_LIST("SELECT " HISTORY_COLUMNS " FROM rollout_history WHERE rollout_id = ? AND at >= ?"
                " ORDER BY at, line",
                "listing a rollout's history");

static int rollout_telemetry_put(struct mf_store *s, struct mf_ctx *ctx,
                                 const struct mf_store_telemetry *t)
{
    if (strlen(t->report) > MF_STORE_TELEMETRY_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "telemetry report of '%s' is over %u bytes", t->device_id,
                       MF_STORE_TELEMETRY_MAX);
    return mf_store__run(NULL, s, NULL, ctx, &sql_telemetry_put, NULL, NULL, "ttttit", t->device_id,
                         t->model, t->version, t->report, t->reported_at, t->device_class);
}

static int visit_telemetry(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_telemetry t;

    mf_store__cols(row, 0, "tttsit", MF_STORE_TEXT(t.device_id), MF_STORE_TEXT(t.model),
                   MF_STORE_TEXT(t.version), &t.report, &t.reported_at,
                   MF_STORE_TEXT(t.device_class));
    return ((mf_store_telemetry_fn)w->fn)(w->payload, &t);
}

MF_STORE_LISTING_OF(rollout_telemetry_list, mf_store_telemetry_fn, &sql_telemetry_list,
                    visit_telemetry)

static int rollout_telemetry_device(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                                    const char *device_id, mf_store_telemetry_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_telemetry_device, visit_telemetry, (void (*)(void))fn,
                          payload, "tt", model, device_id);
}

static int rollout_put(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                       const char *expect_state)
{
    int found = 0;

    if (r->id == 0)
        return mf_store__first(&found, s, NULL, ctx, &sql_rollout_insert, mf_store__take_i64,
                               &r->id, "ttttiiiittitt", r->model, r->version, r->prev_version,
                               r->state, (int64_t)r->wave, r->wave_started_at, r->created_at,
                               r->updated_at, r->plan, r->breach, r->soak_started_at, r->control,
                               r->halted_classes);
    return mf_store__change_state(s, ctx, "rollout", r->id, expect_state, &sql_rollout_update,
                                  "tiiitititt", r->state, (int64_t)r->wave, r->wave_started_at,
                                  r->updated_at, r->breach, r->id, expect_state, r->soak_started_at,
                                  r->control, r->halted_classes);
}

static void read_rollout(struct mf_store_rollout *r, const struct mf_store_cursor *row)
{
    mf_store__cols(
        row, 0, "ittttniiittitt", &r->id, MF_STORE_TEXT(r->model), MF_STORE_TEXT(r->version),
        MF_STORE_TEXT(r->prev_version), MF_STORE_TEXT(r->state), &r->wave, &r->wave_started_at,
        &r->created_at, &r->updated_at, MF_STORE_TEXT(r->plan), MF_STORE_TEXT(r->breach),
        &r->soak_started_at, MF_STORE_TEXT(r->control), MF_STORE_TEXT(r->halted_classes));
}

static int copy_rollout(void *payload, const struct mf_store_cursor *row)
{
    read_rollout(payload, row); /* the id is unique: at most one row */
    return MF_OK;
}

static int rollout_get(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id)
{
    int err;

    out->id = 0;
    err = mf_store__run(NULL, s, NULL, ctx, &sql_rollout_get, copy_rollout, out, "i", id);
    if (err == MF_OK && out->id == 0)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no rollout %lld", (long long)id);
    return err;
}

static int visit_rollout(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_rollout r; /* server thread: an 8 KiB plan fits its stack */

    read_rollout(&r, row);
    return ((mf_store_rollout_fn)w->fn)(w->payload, &r);
}

MF_STORE_LISTING_OF(rollouts_list, mf_store_rollout_fn, &sql_rollouts_list, visit_rollout)

int mf_store__event_insert(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                           const struct mf_store_rollout_event *e)
{
    return mf_store__run(NULL, s, tx, ctx, &sql_event_add, NULL, NULL, "iitt", e->rollout_id, e->at,
                         e->kind, e->detail);
}

static int rollout_event_add(struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_store_rollout_event *e)
{
    return mf_store__event_insert(s, NULL, ctx, e);
}

static int visit_event(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_rollout_event e;

    mf_store__cols(row, 0, "iitt", &e.rollout_id, &e.at, MF_STORE_TEXT(e.kind),
                   MF_STORE_TEXT(e.detail));
    return ((mf_store_rollout_event_fn)w->fn)(w->payload, &e);
}

static int rollout_events_list(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id,
                               mf_store_rollout_event_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_events_list, visit_event, (void (*)(void))fn, payload, "i",
                          rollout_id);
}

struct history_args {
    const struct mf_store_history_line *lines;
    size_t n;
};

static int history_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct history_args *h = arg;
    int err = MF_OK;

    for (size_t i = 0; err == MF_OK && i < h->n; i++) {
        const struct mf_store_history_line *l = &h->lines[i];

        err = mf_store__run(NULL, s, tx, ctx, &sql_history_put, NULL, NULL, "iiitttdddii",
                            l->rollout_id, l->at, (int64_t)l->line, l->metric, l->kind, l->state,
                            l->value, l->bound, l->control, l->devices, l->control_devices);
    }
    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_history_thin, NULL, NULL, "iii",
                            h->lines[0].rollout_id, (int64_t)(MF_STORE_HISTORY_TICKS / 2),
                            (int64_t)MF_STORE_HISTORY_TICKS);
    return err;
}

static int rollout_history_add(struct mf_store *s, struct mf_ctx *ctx,
                               const struct mf_store_history_line *lines, size_t n)
{
    struct history_args h = {lines, n};

    if (n == 0)
        return MF_OK;
    if (n > MF_STORE_HISTORY_LINES)
        return mf_fail(ctx, MF_E_LIMIT, "an evaluation of %zu red lines is over %d", n,
                       MF_STORE_HISTORY_LINES);
    return mf_store__in_tx(s, ctx, history_tx, &h);
}

static int visit_history(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_history_line l;

    mf_store__cols(row, 0, "iintttdddii", &l.rollout_id, &l.at, &l.line, MF_STORE_TEXT(l.metric),
                   MF_STORE_TEXT(l.kind), MF_STORE_TEXT(l.state), &l.value, &l.bound, &l.control,
                   &l.devices, &l.control_devices);
    return ((mf_store_history_fn)w->fn)(w->payload, &l);
}

static int rollout_history_list(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id,
                                int64_t since, mf_store_history_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_history_list, visit_history, (void (*)(void))fn, payload,
                          "ii", rollout_id, since);
}

/* clang-format off */
const struct mf_store_rollout_ops mf_store__rollout_ops = {
    .telemetry_put = rollout_telemetry_put, .telemetry_list = rollout_telemetry_list,
    .telemetry_device = rollout_telemetry_device,
    .rollout_put = rollout_put, .rollout_get = rollout_get, .rollouts_list = rollouts_list,
    .rollout_event_add = rollout_event_add, .rollout_events_list = rollout_events_list,
    .history_add = rollout_history_add, .history_list = rollout_history_list,
};
/* clang-format on */
