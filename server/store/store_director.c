/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director domain of the store, both backends (struct mf_store_director_ops, semantics
 * in store.h): what ops give the director: device groups and channels, and the directives
 * (device, group and channel pins, fleet rollbacks) a check-in reads for each model.
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

static int director_groups_list(struct mf_store *s, struct mf_ctx *ctx, mf_store_pair_fn fn,
                                void *payload)
{
    return mf_store__list(s, ctx, &sql_groups_list, visit_pair, (void (*)(void))fn, payload, "");
}

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

static int director_pins_list(struct mf_store *s, struct mf_ctx *ctx, mf_store_pin_fn fn,
                              void *payload)
{
    return mf_store__list(s, ctx, &sql_pins_list, visit_pin, (void (*)(void))fn, payload, "");
}

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

/* clang-format off */
const struct mf_store_director_ops mf_store__director_ops = {
    .device_groups_set = director_device_groups_set,
    .device_channel_set = director_device_channel_set, .groups_list = director_groups_list,
    .device_groups_get = director_device_groups_get, .pin_set = director_pin_set,
    .pin_clear = director_pin_clear, .pins_list = director_pins_list,
    .directives_get = director_directives_get,
};
/* clang-format on */
