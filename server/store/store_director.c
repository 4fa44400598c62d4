/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director domain of the store, both backends (struct mf_store_director_ops, semantics
 * in store.h): what ops give the director: device groups and channels, and the directives
 * (device, group and channel pins, fleet rollbacks) a check-in reads for each model, and the
 * groups' settings (poll interval, install window) a check-in answers with.
 */
#include "store/store_engine.h"

#include <stdio.h>
#include <string.h>

#define GROUPS_LIST(C)                                                                             \
    "SELECT d.device_id, g.grp FROM device_groups g JOIN devices d"                                \
    " ON d.id = g.device_id ORDER BY g.grp" C ", d.device_id" C
#define DEVICE_GROUPS(C)                                                                           \
    "SELECT d.device_id, g.grp FROM devices d JOIN device_groups g"                                \
    " ON g.device_id = d.id WHERE d.device_id = ? ORDER BY g.grp" C
#define PINS_LIST(C)                                                                               \
    "SELECT scope, target, model, version, created_at FROM pins"                                   \
    " ORDER BY scope, target" C ", model" C
/* One statement: a check-in reads this on every model. */
#define DIRECTIVES(C)                                                                              \
    "SELECT " MF_STORE_DIRECTIVE_COLUMNS("?2", C) " FROM devices d WHERE d.device_id = ?1"

/* The catalogue of this domain. FOR UPDATE (PostgreSQL): a concurrent re-enrolment cannot
 * slip in between the device's lookup and the writes of its groups. */
static const struct mf_sql sql_device_exists =
    MF_SQL_PAIR("SELECT 1 FROM devices WHERE device_id = ?",
                "SELECT 1 FROM devices WHERE device_id = ? FOR UPDATE", "device lookup");
static const struct mf_sql sql_groups_clear = MF_SQL(
    "DELETE FROM device_groups WHERE device_id = (SELECT id FROM devices WHERE device_id = ?)",
    "clearing groups");
static const struct mf_sql sql_group_add =
    MF_SQL("INSERT INTO device_groups(device_id, grp) SELECT id, ? FROM devices"
           " WHERE device_id = ? ON CONFLICT DO NOTHING",
           "adding a group");
static const struct mf_sql sql_channel_set =
    MF_SQL("UPDATE devices SET channel = ? WHERE device_id = ?", "setting a channel");
static const struct mf_sql sql_groups_list = MF_SQL_ORDERED(GROUPS_LIST, "listing groups");
static const struct mf_sql sql_device_groups =
    MF_SQL_ORDERED(DEVICE_GROUPS, "listing a device's groups");
static const struct mf_sql sql_pin_set =
    MF_SQL("INSERT INTO pins(scope, target, model, version, created_at)"
           " VALUES(?, ?, ?, ?, ?) ON CONFLICT(scope, target, model) DO UPDATE SET"
           " version = excluded.version, created_at = excluded.created_at",
           "setting a directive");
static const struct mf_sql sql_pin_clear =
    MF_SQL("DELETE FROM pins WHERE scope = ? AND target = ? AND model = ?", "clearing a directive");
static const struct mf_sql sql_pins_list = MF_SQL_ORDERED(PINS_LIST, "listing directives");
static const struct mf_sql sql_directives =
    MF_SQL_PAIR(DIRECTIVES(""), DIRECTIVES(MF_SQL_C), "reading directives");

struct groups_args {
    const char *device_id;
    const char *const *groups;
    size_t n;
};

static int groups_set_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct groups_args *a = arg;
    int found = 0;
    int err =
        mf_store__first(&found, s, tx, ctx, &sql_device_exists, NULL, NULL, "t", a->device_id);

    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", a->device_id);
    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_groups_clear, NULL, NULL, "t", a->device_id);
    for (size_t i = 0; err == MF_OK && i < a->n; i++)
        err = mf_store__run(NULL, s, tx, ctx, &sql_group_add, NULL, NULL, "tt", a->groups[i],
                            a->device_id);
    return err;
}

static int director_device_groups_set(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                      const char *const *groups, size_t n)
{
    struct groups_args a = {device_id, groups, n};

    return mf_store__in_tx(s, ctx, groups_set_tx, &a);
}

static int director_device_channel_set(struct mf_store *s, struct mf_ctx *ctx,
                                       const char *device_id, const char *channel)
{
    char missing[MF_STORE_NAME_SIZE + 32];

    (void)snprintf(missing, sizeof(missing), "unknown device '%s'", device_id);
    return mf_store__change(s, NULL, ctx, MF_E_NOTFOUND, missing, &sql_channel_set, "tt", channel,
                            device_id);
}

static int visit_pair(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    char a[MF_STORE_NAME_SIZE], b[MF_STORE_NAME_SIZE];

    mf_store__cols(row, 0, "tt", MF_STORE_TEXT(a), MF_STORE_TEXT(b));
    return ((mf_store_pair_fn)w->fn)(w->payload, a, b);
}

MF_STORE_LISTING(director_groups_list, mf_store_pair_fn, &sql_groups_list, visit_pair)

static int director_device_groups_get(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                      mf_store_pair_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_device_groups, visit_pair, (void (*)(void))fn, payload, "t",
                          device_id);
}

static int director_pin_set(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_pin *p)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_pin_set, NULL, NULL, "ittti", (int64_t)p->scope,
                         p->target, p->model, p->version, p->created_at);
}

static int director_pin_clear(struct mf_store *s, struct mf_ctx *ctx, int scope, const char *target,
                              const char *model)
{
    char missing[2 * MF_STORE_NAME_SIZE + 48];

    (void)snprintf(missing, sizeof(missing), "no directive for model '%s' on '%s'", model, target);
    return mf_store__change(s, NULL, ctx, MF_E_NOTFOUND, missing, &sql_pin_clear, "itt",
                            (int64_t)scope, target, model);
}

static int visit_pin(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_pin p;

    mf_store__cols(row, 0, "nttti", &p.scope, MF_STORE_TEXT(p.target), MF_STORE_TEXT(p.model),
                   MF_STORE_TEXT(p.version), &p.created_at);
    return ((mf_store_pin_fn)w->fn)(w->payload, &p);
}

MF_STORE_LISTING(director_pins_list, mf_store_pin_fn, &sql_pins_list, visit_pin)

void mf_store__directives_row(struct mf_store_directives *out, const struct mf_store_cursor *c,
                              int col)
{
    char grp[2 * MF_STORE_NAME_SIZE];
    const char *slash;

    /* NULL columns (no such directive) read as "". */
    memset(out, 0, sizeof(*out));
    mf_store__cols(c, col, "ttttt", MF_STORE_TEXT(out->channel), MF_STORE_TEXT(out->device_pin),
                   MF_STORE_TEXT(grp), MF_STORE_TEXT(out->channel_version),
                   MF_STORE_TEXT(out->fleet_rollback));
    /* Names never contain '/', so the first one splits group from version. */
    slash = strchr(grp, '/');
    if (slash) {
        (void)snprintf(out->group, sizeof(out->group), "%.*s", (int)(slash - grp), grp);
        (void)snprintf(out->group_pin, sizeof(out->group_pin), "%s", slash + 1);
    }
}

void mf_store__directives_unpinned(struct mf_store_directives *out, const char *channel)
{
    memset(out, 0, sizeof(*out));
    (void)snprintf(out->channel, sizeof(out->channel), "%s", channel);
}

static int take_directives(void *payload, const struct mf_store_cursor *row)
{
    mf_store__directives_row(payload, row, 0);
    return MF_OK;
}

int mf_store__directives_read(struct mf_store_directives *out, struct mf_store *s,
                              struct mf_store_tx *tx, struct mf_ctx *ctx, const char *device_id,
                              const char *model)
{
    int found = 0;
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_store__first(&found, s, tx, ctx, &sql_directives, take_directives, out, "tt",
                          device_id, model);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    return err;
}

/* One statement, one round trip per model; check-ins read them with checkin_begin instead. */
static int director_directives_get(struct mf_store_directives *out, struct mf_store *s,
                                   struct mf_ctx *ctx, const char *device_id, const char *model)
{
    return mf_store__directives_read(out, s, NULL, ctx, device_id, model);
}

/* ---- Group settings (migration 9) ---- */

#define SETTINGS_COLUMNS                                                                           \
    "s.grp, s.poll_interval_s, s.poll_jitter_pct, s.window_start_min, s.window_end_min,"           \
    " s.window_utc_offset_min, s.updated_at"
#define SETTINGS_LIST(C) "SELECT " SETTINGS_COLUMNS " FROM group_settings s ORDER BY s.grp" C
#define DEVICE_SETTINGS(C)                                                                         \
    "SELECT " SETTINGS_COLUMNS " FROM group_settings s JOIN device_groups g ON g.grp = s.grp"      \
    " JOIN devices d ON d.id = g.device_id WHERE d.device_id = ? ORDER BY s.grp" C

static const struct mf_sql sql_group_has_member =
    MF_SQL("SELECT 1 FROM device_groups WHERE grp = ? LIMIT 1", "group lookup");
static const struct mf_sql sql_group_poll_is_set = MF_SQL(
    "SELECT 1 FROM group_settings WHERE grp = ? AND poll_interval_s IS NOT NULL", "group lookup");
static const struct mf_sql sql_group_window_is_set = MF_SQL(
    "SELECT 1 FROM group_settings WHERE grp = ? AND window_start_min IS NOT NULL", "group lookup");
/* NULLIF turns the "clear" value into NULL, so one statement sets and clears. */
static const struct mf_sql sql_group_poll_put =
    MF_SQL("INSERT INTO group_settings(grp, poll_interval_s, poll_jitter_pct, updated_at)"
           " VALUES(?, NULLIF(?, 0), ?, ?) ON CONFLICT(grp) DO UPDATE SET"
           " poll_interval_s = excluded.poll_interval_s,"
           " poll_jitter_pct = excluded.poll_jitter_pct, updated_at = excluded.updated_at",
           "setting a group's poll interval");
static const struct mf_sql sql_group_window_put = MF_SQL(
    "INSERT INTO group_settings(grp, window_start_min, window_end_min, window_utc_offset_min,"
    " updated_at) VALUES(?, NULLIF(?, -1), ?, ?, ?) ON CONFLICT(grp) DO UPDATE SET"
    " window_start_min = excluded.window_start_min, window_end_min = excluded.window_end_min,"
    " window_utc_offset_min = excluded.window_utc_offset_min, updated_at = excluded.updated_at",
    "setting a group's install window");
static const struct mf_sql sql_group_settings_prune =
    MF_SQL("DELETE FROM group_settings WHERE grp = ? AND poll_interval_s IS NULL"
           " AND window_start_min IS NULL",
           "dropping empty group settings");
static const struct mf_sql sql_group_settings_list =
    MF_SQL_ORDERED(SETTINGS_LIST, "listing group settings");
static const struct mf_sql sql_device_settings =
    MF_SQL_PAIR(DEVICE_SETTINGS(""), DEVICE_SETTINGS(MF_SQL_C), "reading a device's settings");

struct group_setting_args {
    const char *group;
    const struct mf_sql *is_set, *put; /* the poll or the window statements */
    int clear;
    const char *what; /* "poll interval", "install window" */
    int n_values;     /* of v: the poll's 2 or the window's 3 */
    int64_t v[3], now;
};

static int group_setting_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                            void *arg)
{
    const struct group_setting_args *a = arg;
    int found = 0;
    int err = mf_store__first(&found, s, tx, ctx, a->clear ? a->is_set : &sql_group_has_member,
                              NULL, NULL, "t", a->group);

    if (err == MF_OK && !found && a->clear)
        return mf_fail(ctx, MF_E_NOTFOUND, "group '%s' has no %s set", a->group, a->what);
    if (err == MF_OK && !found)
        return mf_fail(ctx, MF_E_NOTFOUND, "unknown group '%s' (no device in it)", a->group);
    if (err == MF_OK && a->n_values == 2)
        err = mf_store__run(NULL, s, tx, ctx, a->put, NULL, NULL, "tiii", a->group, a->v[0],
                            a->v[1], a->now);
    else if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, a->put, NULL, NULL, "tiiii", a->group, a->v[0],
                            a->v[1], a->v[2], a->now);
    if (err == MF_OK && a->clear)
        err = mf_store__run(NULL, s, tx, ctx, &sql_group_settings_prune, NULL, NULL, "t", a->group);
    return err;
}

static int director_group_poll_set(struct mf_store *s, struct mf_ctx *ctx, const char *group,
                                   int64_t interval_s, int64_t jitter_pct, int64_t now)
{
    struct group_setting_args a = {.group = group,
                                   .is_set = &sql_group_poll_is_set,
                                   .put = &sql_group_poll_put,
                                   .clear = interval_s == 0,
                                   .what = "poll interval",
                                   .n_values = 2,
                                   .v = {interval_s, jitter_pct},
                                   .now = now};

    return mf_store__in_tx(s, ctx, group_setting_tx, &a);
}

static int director_group_window_set(struct mf_store *s, struct mf_ctx *ctx, const char *group,
                                     int64_t start_min, int64_t end_min, int64_t utc_offset_min,
                                     int64_t now)
{
    struct group_setting_args a = {.group = group,
                                   .is_set = &sql_group_window_is_set,
                                   .put = &sql_group_window_put,
                                   .clear = start_min < 0,
                                   .what = "install window",
                                   .n_values = 3,
                                   .v = {start_min < 0 ? -1 : start_min, end_min, utc_offset_min},
                                   .now = now};

    return mf_store__in_tx(s, ctx, group_setting_tx, &a);
}

/* A row of SETTINGS_COLUMNS; a NULL window start reads -1 (0 is midnight). */
static void settings_row(struct mf_store_group_settings *out, const struct mf_store_cursor *row)
{
    mf_store__cols(row, 0, "tiiiiii", MF_STORE_TEXT(out->group), &out->poll_interval_s,
                   &out->poll_jitter_pct, &out->window_start_min, &out->window_end_min,
                   &out->window_utc_offset_min, &out->updated_at);
    if (row->ops->null(row, 3))
        out->window_start_min = -1;
}

static int visit_settings(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_group_settings g;

    settings_row(&g, row);
    return ((mf_store_group_settings_fn)w->fn)(w->payload, &g);
}

MF_STORE_LISTING(director_group_settings_list, mf_store_group_settings_fn, &sql_group_settings_list,
                 visit_settings)

/* The first group (rows by name) with each setting gives that setting. */
static int take_settings(void *payload, const struct mf_store_cursor *row)
{
    struct mf_store_group_settings *out = payload, g;

    settings_row(&g, row);
    if (!out->group[0] && g.poll_interval_s > 0) {
        (void)snprintf(out->group, sizeof(out->group), "%s", g.group);
        out->poll_interval_s = g.poll_interval_s;
        out->poll_jitter_pct = g.poll_jitter_pct;
    }
    if (out->window_start_min < 0 && g.window_start_min >= 0) {
        out->window_start_min = g.window_start_min;
        out->window_end_min = g.window_end_min;
        out->window_utc_offset_min = g.window_utc_offset_min;
    }
    if (g.updated_at > out->updated_at)
        out->updated_at = g.updated_at;
    return MF_OK;
}

static int director_device_settings_get(struct mf_store_group_settings *out, struct mf_store *s,
                                        struct mf_ctx *ctx, const char *device_id)
{
    memset(out, 0, sizeof(*out));
    out->window_start_min = -1;
    return mf_store__run(NULL, s, NULL, ctx, &sql_device_settings, take_settings, out, "t",
                         device_id);
}

/* Each op of the table is the function named after it with the domain's prefix. */
#define OP(name) .name = director_##name
const struct mf_store_director_ops mf_store__director_ops = {
    OP(device_groups_set), OP(device_channel_set), OP(groups_list),         OP(device_groups_get),
    OP(pin_set),           OP(pin_clear),          OP(pins_list),           OP(directives_get),
    OP(group_poll_set),    OP(group_window_set),   OP(group_settings_list), OP(device_settings_get),
};
#undef OP
