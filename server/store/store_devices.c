/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The devices domain of the store, both backends (struct mf_store_devices_ops, semantics in
 * store.h): the fleet as devices report it: when each was last seen, what each reported
 * installed (the latest per model, and an event log of every report).
 */
#include "store/store_engine.h"

#include <stdio.h>

#define DEVICES_LIST(C)                                                                            \
    "SELECT device_id, enrolled_at, last_seen, channel, revoked FROM devices"                      \
    " ORDER BY device_id" C
/* The last column is what the device runs: the reported version while its last report says
 * installed; after a failure (a rollback, an install that failed) the newest version it
 * reported installed that it has not reported failed since, from the event log ('' when
 * there is none): a rolled-back device runs the version it went back to, not the one its
 * last report names. */
#define STATUSES_LIST(C)                                                                           \
    "SELECT d.device_id, s.model, s.version, s.sha256, s.status, s.detail,"                        \
    " s.reported_at, CASE WHEN s.status = 'installed' THEN s.version ELSE COALESCE(("              \
    "SELECT e.version FROM events e WHERE e.device_id = s.device_id AND e.model = s.model"         \
    " AND e.status = 'installed' AND NOT EXISTS (SELECT 1 FROM events f"                           \
    " WHERE f.device_id = e.device_id AND f.model = e.model AND f.status = 'failed'"               \
    " AND f.sha256 = e.sha256 AND f.id > e.id) ORDER BY e.id DESC LIMIT 1), '') END"               \
    " FROM device_models s JOIN devices d ON d.id = s.device_id"                                   \
    " ORDER BY d.device_id" C ", s.model" C

/* The catalogue of this domain. last_seen is informational and written on every check-in,
 * so on PostgreSQL its commit does not wait for the WAL flush: set_config(..., true) lasts
 * until the end of this statement's own transaction, whose commit reads it (a crash loses at
 * most the last fraction of a second of last_seen, never consistency). One round trip,
 * where BEGIN / SET LOCAL / UPDATE / COMMIT would take four. */
static const struct mf_sql sql_touch =
    MF_SQL_PAIR("UPDATE devices SET last_seen = ? WHERE device_id = ?",
                "WITH async AS (SELECT set_config('synchronous_commit', 'off', true))"
                " UPDATE devices SET last_seen = ? FROM async WHERE device_id = ?",
                "touching a device");
static const struct mf_sql sql_report_latest =
    MF_SQL("INSERT INTO device_models(device_id, model, version, sha256, status, detail,"
           " reported_at) SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM devices WHERE device_id = ?1"
           " ON CONFLICT(device_id, model) DO UPDATE SET version = excluded.version,"
           " sha256 = excluded.sha256, status = excluded.status, detail = excluded.detail,"
           " reported_at = excluded.reported_at",
           "recording a report");
static const struct mf_sql sql_report_event =
    MF_SQL("INSERT INTO events(device_id, model, version, sha256, status, detail, created_at)"
           " SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM devices WHERE device_id = ?1",
           "recording a report");
static const struct mf_sql sql_devices_list = MF_SQL_ORDERED(DEVICES_LIST, "listing devices");
/* The devices that reported under class ?1 (the check-in's class tag), in the listing's
 * order; and the devices per class. */
#define DEVICES_OF_CLASS(C)                                                                        \
    "SELECT device_id, enrolled_at, last_seen, channel, revoked FROM devices d WHERE EXISTS"       \
    " (SELECT 1 FROM telemetry t WHERE t.device_class = ? AND t.device_id = d.device_id)"          \
    " ORDER BY device_id" C
/* A device's failed reports, newest first (at most ?2): what it rolled back or failed to
 * install, and why. */
static const struct mf_sql sql_device_failures =
    MF_SQL_LIST("SELECT d.device_id, e.model, e.version, e.sha256, e.status, e.detail,"
                " e.created_at, '' FROM events e JOIN devices d ON d.id = e.device_id"
                " WHERE d.device_id = ?1 AND e.status = 'failed' ORDER BY e.id DESC LIMIT ?2",
                "listing a device's failures");
static const struct mf_sql sql_devices_of_class =
    MF_SQL_ORDERED(DEVICES_OF_CLASS, "listing the devices of a class");
#define CLASS_COUNTS(C)                                                                            \
    "SELECT device_class, '', count(DISTINCT device_id) FROM telemetry WHERE device_class <> ''"   \
    " GROUP BY device_class ORDER BY device_class" C
static const struct mf_sql sql_class_counts =
    MF_SQL_ORDERED(CLASS_COUNTS, "counting devices per class");
static const struct mf_sql sql_statuses_list = MF_SQL_ORDERED(STATUSES_LIST, "listing statuses");
static const struct mf_sql sql_fleet_sha256s =
    MF_SQL_LIST("SELECT DISTINCT sha256 FROM device_models WHERE model = ?"
                " AND status = 'installed' ORDER BY sha256",
                "listing fleet versions");

/* Installed devices per (model, version), for /metrics: one row per pair, not per device. */
#define VERSION_COUNTS(C)                                                                          \
    "SELECT model, version, count(*) FROM device_models WHERE status = 'installed'"                \
    " GROUP BY model, version ORDER BY model" C ", version" C
static const struct mf_sql sql_version_counts =
    MF_SQL_ORDERED(VERSION_COUNTS, "counting devices per version");

/* A snapshot of version_counts into bin ?1, unless the bin has one (any node's): one per
 * bin however many nodes tick. CAST: PostgreSQL types a bare parameter of a select list as
 * text. */
static const struct mf_sql sql_fleet_snapshot =
    MF_SQL("INSERT INTO fleet_versions(model, bin_at, version, devices)"
           " SELECT model, CAST(?1 AS BIGINT), version, count(*) FROM device_models"
           " WHERE status = 'installed' AND NOT EXISTS (SELECT 1 FROM fleet_versions"
           " WHERE bin_at = ?1) GROUP BY model, version"
           " ON CONFLICT(model, bin_at, version) DO NOTHING",
           "taking a snapshot of the fleet's versions");
static const struct mf_sql sql_fleet_drop =
    MF_SQL("DELETE FROM fleet_versions WHERE bin_at < ?", "dropping old fleet snapshots");
#define FLEET_BINS(C)                                                                              \
    "SELECT model, version, bin_at, devices FROM fleet_versions WHERE model = ? AND bin_at >= ?"   \
    " ORDER BY bin_at, version" C
static const struct mf_sql sql_fleet_bins =
    MF_SQL_ORDERED(FLEET_BINS, "listing the fleet's versions over time");

static int devices_touch(struct mf_store *s, struct mf_ctx *ctx, const char *device_id, int64_t now)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_touch, NULL, NULL, "it", now, device_id);
}

static int report_insert_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                            void *arg)
{
    const struct mf_sql *const sql[] = {&sql_report_latest, &sql_report_event};
    const struct mf_store_status *r = arg;
    char missing[MF_STORE_NAME_SIZE + 32];
    int err = MF_OK;

    (void)snprintf(missing, sizeof(missing), "unknown device '%s'", r->device_id);
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]) && err == MF_OK; i++)
        err =
            mf_store__change(s, tx, ctx, MF_E_NOTFOUND, missing, sql[i], "tttttti", r->device_id,
                             r->model, r->version, r->sha256, r->status, r->detail, r->reported_at);
    return err;
}

static int devices_report_insert(struct mf_store *s, struct mf_ctx *ctx,
                                 const struct mf_store_status *r)
{
    return mf_store__in_tx(s, ctx, report_insert_tx, (void *)r);
}

static int visit_device(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_device d;

    mf_store__cols(row, 0, "tiitn", MF_STORE_TEXT(d.device_id), &d.enrolled_at, &d.last_seen,
                   MF_STORE_TEXT(d.channel), &d.revoked);
    return ((mf_store_device_fn)w->fn)(w->payload, &d);
}

static int visit_status(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_status r;

    mf_store__cols(row, 0, "ttttttit", MF_STORE_TEXT(r.device_id), MF_STORE_TEXT(r.model),
                   MF_STORE_TEXT(r.version), MF_STORE_TEXT(r.sha256), MF_STORE_TEXT(r.status),
                   MF_STORE_TEXT(r.detail), &r.reported_at, MF_STORE_TEXT(r.running_version));
    return ((mf_store_status_fn)w->fn)(w->payload, &r);
}

static int visit_sha(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    char sha[MF_SHA256_HEX_LEN + 1];

    mf_store__col_text(sha, sizeof(sha), row, 0);
    return ((mf_store_pair_fn)w->fn)(w->payload, "", sha);
}

MF_STORE_LISTING(devices_list, mf_store_device_fn, &sql_devices_list, visit_device)

static int devices_failures(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                            int64_t limit, mf_store_status_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_device_failures, visit_status, (void (*)(void))fn, payload,
                          "ti", device_id, limit);
}

MF_STORE_LISTING_OF(devices_of_class, mf_store_device_fn, &sql_devices_of_class, visit_device)

static int devices_fleet_sha256s(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                                 mf_store_pair_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_fleet_sha256s, visit_sha, (void (*)(void))fn, payload, "t",
                          model);
}

MF_STORE_LISTING(devices_statuses_list, mf_store_status_fn, &sql_statuses_list, visit_status)

/* Degrade switches (migration 14). */
static const struct mf_sql sql_switch_put =
    MF_SQL("INSERT INTO device_switches(device_id, seq, at, received_at, degraded, reason)"
           " SELECT id, ?2, ?3, ?4, ?5, ?6 FROM devices WHERE device_id = ?1"
           " ON CONFLICT(device_id, seq) DO UPDATE SET at = excluded.at,"
           " received_at = excluded.received_at, degraded = excluded.degraded,"
           " reason = excluded.reason",
           "recording a degrade switch");
static const struct mf_sql sql_switch_trim =
    MF_SQL("DELETE FROM device_switches WHERE device_id = (SELECT id FROM devices"
           " WHERE device_id = ?1) AND id NOT IN (SELECT s.id FROM device_switches s"
           " JOIN devices d ON d.id = s.device_id WHERE d.device_id = ?1"
           " ORDER BY s.id DESC LIMIT ?2)",
           "trimming degrade switches");
static const struct mf_sql sql_switches_list =
    MF_SQL_LIST("SELECT s.seq, s.at, s.received_at, s.degraded, s.reason FROM device_switches s"
                " JOIN devices d ON d.id = s.device_id WHERE d.device_id = ? ORDER BY s.id DESC",
                "listing degrade switches");

struct switches_arg {
    const char *device_id;
    const struct mf_store_switch *sw;
    size_t n;
};

static int switches_add_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                           void *arg)
{
    const struct switches_arg *w = arg;
    char missing[MF_STORE_NAME_SIZE + 32];
    int err = MF_OK;

    (void)snprintf(missing, sizeof(missing), "unknown device '%s'", w->device_id);
    for (size_t i = 0; i < w->n && err == MF_OK; i++)
        err = mf_store__change(s, tx, ctx, MF_E_NOTFOUND, missing, &sql_switch_put, "tiiiit",
                               w->device_id, (int64_t)w->sw[i].seq, w->sw[i].at,
                               w->sw[i].received_at, (int64_t)w->sw[i].degraded, w->sw[i].reason);
    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_switch_trim, NULL, NULL, "ti", w->device_id,
                            (int64_t)MF_STORE_SWITCHES_KEEP);
    return err;
}

static int devices_switches_add(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                const struct mf_store_switch *sw, size_t n)
{
    struct switches_arg w = {device_id, sw, n};

    return n ? mf_store__in_tx(s, ctx, switches_add_tx, &w) : MF_OK;
}

static int visit_switch(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_switch sw;

    mf_store__cols(row, 0, "uiint", &sw.seq, &sw.at, &sw.received_at, &sw.degraded,
                   MF_STORE_TEXT(sw.reason));
    return ((mf_store_switch_fn)w->fn)(w->payload, &sw);
}

MF_STORE_LISTING_OF(devices_switches_list, mf_store_switch_fn, &sql_switches_list, visit_switch)

/* clang-format off */
static int visit_count(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;

    return ((mf_store_count_fn)w->fn)(w->payload, mf_store__col_str(row, 0),
                                      mf_store__col_str(row, 1), mf_store__col_i64(row, 2));
}

static int devices_fleet_snapshot(int *taken_out, struct mf_store *s, struct mf_ctx *ctx,
                                  int64_t bin_at, int64_t drop_before)
{
    int64_t changes = 0;
    int err = mf_store__run(&changes, s, NULL, ctx, &sql_fleet_snapshot, NULL, NULL, "i", bin_at);

    *taken_out = err == MF_OK && changes > 0;
    if (*taken_out)
        err = mf_store__run(NULL, s, NULL, ctx, &sql_fleet_drop, NULL, NULL, "i", drop_before);
    return err;
}

static int visit_fleet_bin(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_fleet_bin b;

    mf_store__cols(row, 0, "ttii", MF_STORE_TEXT(b.model), MF_STORE_TEXT(b.version), &b.bin_at,
                   &b.devices);
    return ((mf_store_fleet_bin_fn)w->fn)(w->payload, &b);
}

static int devices_fleet_bins(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                              int64_t since, mf_store_fleet_bin_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_fleet_bins, visit_fleet_bin, (void (*)(void))fn, payload,
                          "ti", model, since);
}

MF_STORE_LISTING(devices_version_counts, mf_store_count_fn, &sql_version_counts, visit_count)
MF_STORE_LISTING(devices_class_counts, mf_store_count_fn, &sql_class_counts, visit_count)

const struct mf_store_devices_ops mf_store__devices_ops = {
    .device_touch = devices_touch, .report_insert = devices_report_insert,
    .devices_list = devices_list, .statuses_list = devices_statuses_list,
    .fleet_sha256s = devices_fleet_sha256s, .version_counts = devices_version_counts,
    .fleet_snapshot = devices_fleet_snapshot, .fleet_bins = devices_fleet_bins,
    .devices_of_class = devices_of_class, .class_counts = devices_class_counts,
    .device_failures = devices_failures,
    .switches_add = devices_switches_add, .switches_list = devices_switches_list,
};
/* clang-format on */
