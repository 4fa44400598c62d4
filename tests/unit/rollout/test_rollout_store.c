/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store ops of the rollout and distillation migrations (store.h) on SQLite and, with the
 * mf_pg fixture, on PostgreSQL: job claims restricted to one kind, device reports replaced
 * (never added), rollouts updated only from the state the caller expects, rollout events in
 * order, and distillation runs (one pending per model, compare-and-set, records).
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "common/token.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rs_fixture {
    char dir[64];
    char url[MF_PGTEST_URL_MAX];
    struct mf_ctx ctx;
    struct mf_store *s;
};

static int use_pg; /* the backend of the current group */

static int rs_setup(void **state)
{
    struct rs_fixture *f = calloc(1, sizeof(*f));
    int applied = 0;

    assert_non_null(f);
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    mf_kit_fs_mkdtemp(f->dir, sizeof(f->dir), "mf-rstore");
    if (use_pg && !mf_pgtest__enabled())
        MF_SKIP("no PostgreSQL fixture (MF_TEST_PG_URL_FILE)");
    if (use_pg)
        mf_pgtest__create_db(f->url, "rollout");
    else
        (void)snprintf(f->url, sizeof(f->url), "sqlite:%s/store.db", f->dir);
    assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 1), MF_OK);
    assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    *state = f;
    return 0;
}

static int rs_teardown(void **state)
{
    struct rs_fixture *f = *state;

    mf_store__close(f->s);
    if (use_pg)
        mf_pgtest__drop_db(f->url);
    mf_kit_fs_rmtree(f->dir);
    free(f);
    return 0;
}

static void test_rollout_store__claim_kind_takes_only_that_kind(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_job job;

    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "delta", "m/v2", 10), MF_OK);
    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "rollout", "7", 11), MF_OK);
    /* The oldest job is a delta, yet a rollout claimer gets the rollout job. */
    assert_int_equal(s->ops->jobs->job_claim_kind(&job, s, &f->ctx, "rollout", "a", 20, 60), MF_OK);
    assert_string_equal(job.kind, "rollout");
    assert_string_equal(job.arg, "7");
    assert_int_equal(s->ops->jobs->job_claim_kind(&job, s, &f->ctx, "rollout", "b", 20, 60),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->jobs->job_claim_kind(&job, s, &f->ctx, "delta", "b", 20, 60), MF_OK);
    assert_string_equal(job.kind, "delta");
    assert_int_equal(s->ops->jobs->job_claim(&job, s, &f->ctx, "c", 20, 60), MF_E_NOTFOUND);
    /* An expired lease is claimable again by the same kind only. */
    assert_int_equal(s->ops->jobs->job_claim_kind(&job, s, &f->ctx, "rollout", "c", 81, 60), MF_OK);
    assert_string_equal(job.kind, "rollout");
    assert_int_equal(job.attempts, 2);
    assert_int_equal(s->ops->jobs->job_claim_kind(&job, s, &f->ctx, "rollout", "d", 81, 60),
                     MF_E_NOTFOUND);
}

struct seen {
    char rows[8][400];
    size_t n;
};

static int collect_report(void *payload, const struct mf_store_telemetry *t)
{
    struct seen *w = payload;

    assert_true(w->n < 8);
    (void)snprintf(w->rows[w->n++], sizeof(w->rows[0]), "%s %s %s %s %lld", t->device_id, t->model,
                   t->version, t->report, (long long)t->reported_at);
    return MF_OK;
}

static void put_report(struct rs_fixture *f, const char *dev, const char *model, const char *ver,
                       const char *report, int64_t at)
{
    struct mf_store_telemetry t = {.report = report, .reported_at = at};

    (void)snprintf(t.device_id, sizeof(t.device_id), "%s", dev);
    (void)snprintf(t.model, sizeof(t.model), "%s", model);
    (void)snprintf(t.version, sizeof(t.version), "%s", ver);
    assert_int_equal(f->s->ops->rollout->telemetry_put(f->s, &f->ctx, &t), MF_OK);
}

static void test_rollout_store__telemetry_is_replaced_never_added(void **state)
{
    struct rs_fixture *f = *state;
    struct seen w = {0};
    struct mf_store_telemetry big = {.device_id = "d", .model = "m", .version = "v1"};
    char *huge = calloc(1, MF_STORE_TELEMETRY_MAX + 2);

    put_report(f, "dev-b", "m", "v1", "{\"inferences\":5}", 100);
    put_report(f, "dev-a", "m", "v2", "{\"inferences\":1}", 101);
    put_report(f, "dev-a", "m", "v1", "{\"inferences\":3}", 102);
    put_report(f, "dev-a", "other", "v1", "{\"inferences\":9}", 103);
    put_report(f, "dev-b", "m", "v1", "{\"inferences\":7}", 104); /* newer cumulative total */
    assert_int_equal(f->s->ops->rollout->telemetry_list(f->s, &f->ctx, "m", collect_report, &w),
                     MF_OK);
    assert_int_equal(w.n, 3);
    assert_string_equal(w.rows[0], "dev-a m v1 {\"inferences\":3} 102");
    assert_string_equal(w.rows[1], "dev-a m v2 {\"inferences\":1} 101");
    assert_string_equal(w.rows[2], "dev-b m v1 {\"inferences\":7} 104");

    assert_non_null(huge);
    memset(huge, ' ', MF_STORE_TELEMETRY_MAX + 1);
    big.report = huge;
    assert_int_equal(f->s->ops->rollout->telemetry_put(f->s, &f->ctx, &big), MF_E_LIMIT);
    free(huge);
}

static int collect_class(void *payload, const struct mf_store_telemetry *t)
{
    struct seen *w = payload;

    assert_true(w->n < 8);
    (void)snprintf(w->rows[w->n++], sizeof(w->rows[0]), "%s %s [%s]", t->device_id, t->version,
                   t->device_class);
    return MF_OK;
}

static void new_rollout(struct mf_store_rollout *r, const char *model, const char *ver);

/* Migration 12: a report keeps the class tag of the check-in that carried it (replaced with
 * the report), and a rollout the classes it halted on its own. */
static void test_rollout_store__classes_of_reports_and_rollouts(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_telemetry t = {.report = "{}", .reported_at = 1};
    struct mf_store_rollout r, got;
    struct seen w = {0};

    (void)snprintf(t.device_id, sizeof(t.device_id), "dev-a");
    (void)snprintf(t.model, sizeof(t.model), "m");
    (void)snprintf(t.version, sizeof(t.version), "v1");
    (void)snprintf(t.device_class, sizeof(t.device_class), "cam-lite");
    assert_int_equal(s->ops->rollout->telemetry_put(s, &f->ctx, &t), MF_OK);
    (void)snprintf(t.device_id, sizeof(t.device_id), "dev-b");
    t.device_class[0] = '\0';
    assert_int_equal(s->ops->rollout->telemetry_put(s, &f->ctx, &t), MF_OK);
    (void)snprintf(t.device_id, sizeof(t.device_id), "dev-a");
    (void)snprintf(t.device_class, sizeof(t.device_class), "cam-pro"); /* the device moved */
    assert_int_equal(s->ops->rollout->telemetry_put(s, &f->ctx, &t), MF_OK);
    assert_int_equal(s->ops->rollout->telemetry_list(s, &f->ctx, "m", collect_class, &w), MF_OK);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.rows[0], "dev-a v1 [cam-pro]");
    assert_string_equal(w.rows[1], "dev-b v1 []");
    new_rollout(&r, "m", "v2");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &r, ""), MF_OK);
    assert_int_equal(s->ops->rollout->rollout_get(&got, s, &f->ctx, r.id), MF_OK);
    assert_string_equal(got.halted_classes, "");
    (void)snprintf(r.halted_classes, sizeof(r.halted_classes), "cam-lite,cam-x");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &r, "running"), MF_OK);
    assert_int_equal(s->ops->rollout->rollout_get(&got, s, &f->ctx, r.id), MF_OK);
    assert_string_equal(got.halted_classes, "cam-lite,cam-x");
    assert_string_equal(got.state, "running");
}

static void new_rollout(struct mf_store_rollout *r, const char *model, const char *ver)
{
    memset(r, 0, sizeof(*r));
    (void)snprintf(r->model, sizeof(r->model), "%s", model);
    (void)snprintf(r->version, sizeof(r->version), "%s", ver);
    (void)snprintf(r->prev_version, sizeof(r->prev_version), "v1");
    (void)snprintf(r->state, sizeof(r->state), "running");
    (void)snprintf(r->plan, sizeof(r->plan), "{\"waves\":[{\"percent\":10}]}");
    r->created_at = r->updated_at = r->wave_started_at = 50;
}

static int collect_rollout(void *payload, const struct mf_store_rollout *r)
{
    struct seen *w = payload;

    (void)snprintf(w->rows[w->n++], sizeof(w->rows[0]), "%lld %s %s %s %d", (long long)r->id,
                   r->model, r->version, r->state, r->wave);
    return MF_OK;
}

static int collect_event(void *payload, const struct mf_store_rollout_event *e)
{
    struct seen *w = payload;

    (void)snprintf(w->rows[w->n++], sizeof(w->rows[0]), "%lld %lld %s %s", (long long)e->rollout_id,
                   (long long)e->at, e->kind, e->detail);
    return MF_OK;
}

static void test_rollout_store__rollout_state_and_events(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_rollout a, b, got;
    struct mf_store_rollout_event e = {.at = 60};
    struct seen w = {0};

    new_rollout(&a, "m", "v2");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &a, ""), MF_OK);
    new_rollout(&b, "n", "v5");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &b, ""), MF_OK);
    assert_true(a.id > 0 && b.id > a.id);

    a.wave = 1;
    a.wave_started_at = 70;
    a.soak_started_at = 75;
    (void)snprintf(a.control, sizeof(a.control), "{\"p99_latency_us\":[1023,12,600]}");
    (void)snprintf(a.state, sizeof(a.state), "halted");
    (void)snprintf(a.breach, sizeof(a.breach), "p99_latency_us 2047 > 1500");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &a, "running"), MF_OK);
    /* A second writer that still expects "running" loses instead of overwriting. */
    (void)snprintf(a.state, sizeof(a.state), "paused");
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &a, "running"), MF_E_STATE);
    assert_int_equal(s->ops->rollout->rollout_get(&got, s, &f->ctx, a.id), MF_OK);
    assert_string_equal(got.state, "halted");
    assert_int_equal(got.wave, 1);
    assert_int_equal(got.wave_started_at, 70);
    assert_int_equal(got.soak_started_at, 75);
    assert_string_equal(got.control, "{\"p99_latency_us\":[1023,12,600]}");
    assert_string_equal(got.breach, "p99_latency_us 2047 > 1500");
    assert_string_equal(got.plan, "{\"waves\":[{\"percent\":10}]}");
    assert_string_equal(got.prev_version, "v1");
    assert_int_equal(s->ops->rollout->rollout_get(&got, s, &f->ctx, 999), MF_E_NOTFOUND);
    got.id = 999;
    assert_int_equal(s->ops->rollout->rollout_put(s, &f->ctx, &got, ""), MF_E_NOTFOUND);

    assert_int_equal(s->ops->rollout->rollouts_list(s, &f->ctx, "", collect_rollout, &w), MF_OK);
    assert_int_equal(w.n, 2);
    assert_non_null(strstr(w.rows[0], " n v5 running 0")); /* newest first */
    assert_non_null(strstr(w.rows[1], " m v2 halted 1"));
    w.n = 0;
    assert_int_equal(s->ops->rollout->rollouts_list(s, &f->ctx, "n", collect_rollout, &w), MF_OK);
    assert_int_equal(w.n, 1);

    e.rollout_id = a.id;
    (void)snprintf(e.kind, sizeof(e.kind), "created");
    assert_int_equal(s->ops->rollout->rollout_event_add(s, &f->ctx, &e), MF_OK);
    e.at = 61;
    (void)snprintf(e.kind, sizeof(e.kind), "halted");
    (void)snprintf(e.detail, sizeof(e.detail), "wave 1: p99");
    assert_int_equal(s->ops->rollout->rollout_event_add(s, &f->ctx, &e), MF_OK);
    e.rollout_id = b.id;
    assert_int_equal(s->ops->rollout->rollout_event_add(s, &f->ctx, &e), MF_OK);
    w.n = 0;
    assert_int_equal(s->ops->rollout->rollout_events_list(s, &f->ctx, a.id, collect_event, &w),
                     MF_OK);
    assert_int_equal(w.n, 2);
    assert_non_null(strstr(w.rows[0], " 60 created "));
    assert_non_null(strstr(w.rows[1], " 61 halted wave 1: p99"));
}

static void stage(struct rs_fixture *f, const char *version, uint64_t sequence)
{
    struct mf_store_version v = {.size = 1, .created_at = 1, .sequence = sequence};

    (void)snprintf(v.model, sizeof(v.model), "m");
    (void)snprintf(v.version, sizeof(v.version), "%s", version);
    memset(v.sha256, 'a' + (int)sequence, 64);
    memset(v.release_digest, 'b', 64);
    assert_int_equal(f->s->ops->registry->version_insert(f->s, &f->ctx, &v), MF_OK);
    if (sequence)
        assert_int_equal(f->s->ops->registry->release_set(f->s, &f->ctx, &v, "{}", 2), MF_OK);
}

static void expect_default(struct rs_fixture *f, const char *version)
{
    struct mf_store_version got;

    assert_int_equal(f->s->ops->registry->promoted_latest(&got, f->s, &f->ctx, "m"), MF_OK);
    assert_string_equal(got.version, version);
    assert_true(got.promoted > 0);
}

/* Published is not deployed (migration 9): the model's first release is promoted on
 * release, later ones only by release_promote; the default is the promotion made last. */
static void test_rollout_store__releases_are_promoted_explicitly(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_version got;

    assert_int_equal(s->ops->registry->promoted_latest(&got, s, &f->ctx, "m"), MF_E_NOTFOUND);
    stage(f, "v1", 1);
    expect_default(f, "v1");
    stage(f, "v2", 2);
    stage(f, "v3", 0);       /* staged only */
    expect_default(f, "v1"); /* v2 is released, not promoted */
    assert_int_equal(s->ops->registry->version_get(&got, s, &f->ctx, "m", "v2"), MF_OK);
    assert_int_equal(got.promoted, 0);
    assert_int_equal(s->ops->registry->release_latest(&got, s, &f->ctx, "m"), MF_OK);
    assert_string_equal(got.version, "v2"); /* the newest release is still known as such */
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "m", "v3"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "m", "v9"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "x", "v2"), MF_E_NOTFOUND);
    expect_default(f, "v1");
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "m", "v2"), MF_OK);
    expect_default(f, "v2");
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "m", "v2"), MF_OK);
    assert_int_equal(s->ops->registry->version_get(&got, s, &f->ctx, "m", "v2"), MF_OK);
    assert_int_equal(got.promoted, 2); /* again: a no-op, not a new number */
    assert_int_equal(s->ops->registry->release_promote(s, &f->ctx, "m", "v1"), MF_OK);
    expect_default(f, "v1"); /* back to v1: the newest promotion wins */
    assert_int_equal(s->ops->registry->version_get(&got, s, &f->ctx, "m", "v1"), MF_OK);
    assert_int_equal(got.promoted, 3);
}

struct runs_seen {
    int n;
    int64_t ids[8];
    char record[64];
};

static int see_run(void *payload, const struct mf_store_distill_run *r)
{
    struct runs_seen *w = payload;

    if (w->n < 8)
        w->ids[w->n] = r->id;
    w->n++;
    (void)snprintf(w->record, sizeof(w->record), "%s", r->record);
    return MF_OK;
}

static void test_rollout_store__distill_runs(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_distill_run a = {.state = "queued",
                                     .trigger = "manual",
                                     .samples_until = 7,
                                     .record = "",
                                     .created_at = 100,
                                     .updated_at = 100};
    struct mf_store_distill_run b, c;
    struct runs_seen w = {0};
    char *big;

    (void)snprintf(a.model, sizeof(a.model), "fashion");
    b = a;
    c = a;
    (void)snprintf(c.model, sizeof(c.model), "digits");
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &a, ""), MF_OK);
    assert_true(a.id > 0);
    /* one queued or running run per model; another model is independent */
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &b, ""), MF_E_STATE);
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &c, ""), MF_OK);
    /* compare-and-set: only from the state the caller read */
    (void)snprintf(a.state, sizeof(a.state), "running");
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &a, "queued"), MF_OK);
    (void)snprintf(a.state, sizeof(a.state), "failed");
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &a, "queued"), MF_E_STATE);
    (void)snprintf(a.state, sizeof(a.state), "published");
    (void)snprintf(a.version, sizeof(a.version), "d2");
    a.record = "{\"gate\":\"passed\"}";
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &a, "running"), MF_OK);
    assert_int_equal(s->ops->distill->distill_run_get(s, &f->ctx, a.id, see_run, &w), MF_OK);
    assert_int_equal(w.n, 1);
    assert_string_equal(w.record, "{\"gate\":\"passed\"}");
    /* the run ended: a new one of the model may be queued */
    b.id = 0;
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &b, ""), MF_OK);
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->distill->distill_runs_list(s, &f->ctx, "fashion", 0, see_run, &w),
                     MF_OK);
    assert_int_equal(w.n, 2);
    assert_true(w.ids[0] == b.id && w.ids[1] == a.id); /* newest first */
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->distill->distill_runs_list(s, &f->ctx, "", 0, see_run, &w), MF_OK);
    assert_int_equal(w.n, 3);
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->distill->distill_runs_list(s, &f->ctx, "fashion", 1, see_run, &w),
                     MF_OK);
    assert_int_equal(w.n, 1); /* the newest only */
    assert_true(w.ids[0] == b.id);
    assert_int_equal(s->ops->distill->distill_run_get(s, &f->ctx, 9999, see_run, &w),
                     MF_E_NOTFOUND);
    (void)snprintf(c.state, sizeof(c.state), "failed");
    c.id = 9999;
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &c, ""), MF_E_NOTFOUND);
    /* a record over the bound is refused, not truncated */
    big = malloc(MF_STORE_DISTILL_RECORD_MAX + 2);
    assert_non_null(big);
    memset(big, 'x', MF_STORE_DISTILL_RECORD_MAX + 1);
    big[MF_STORE_DISTILL_RECORD_MAX + 1] = '\0';
    a.record = big;
    assert_int_equal(s->ops->distill->distill_run_put(s, &f->ctx, &a, ""), MF_E_LIMIT);
    free(big);
}

/* The console's history (migration 13): a rollout's red lines per evaluation, by time then
 * line, one evaluation per second (the later replaces it), thinned when over the bound. */
struct history_seen {
    size_t n;
    int64_t at[2 * MF_STORE_HISTORY_TICKS];
    struct mf_store_history_line first, last;
};

static int collect_history(void *payload, const struct mf_store_history_line *l)
{
    struct history_seen *h = payload;

    if (h->n < sizeof(h->at) / sizeof(h->at[0]))
        h->at[h->n] = l->at;
    if (h->n == 0)
        h->first = *l;
    h->n++;
    h->last = *l;
    return MF_OK;
}

/* Runs `sql` on the fixture's database behind the store's back. */
static void raw_exec(struct rs_fixture *f, const char *sql)
{
    char path[128];
    sqlite3 *db = NULL;

    if (use_pg) {
        mf_pgtest__exec(f->url, sql);
        return;
    }
    (void)snprintf(path, sizeof(path), "%s/store.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void history_tick(struct rs_fixture *f, int64_t rollout, int64_t at, double value,
                         const char *state)
{
    struct mf_store_history_line l[2] = {
        {.rollout_id = rollout,
         .at = at,
         .line = 0,
         .metric = "p99_latency_us",
         .kind = "relative",
         .value = value,
         .bound = 1500,
         .control = 1000,
         .devices = 4,
         .control_devices = 36},
        {.rollout_id = rollout,
         .at = at,
         .line = 1,
         .metric = "crash_rate",
         .kind = "absolute",
         .value = 0.01,
         .bound = 0.05,
         .devices = 4},
    };

    (void)snprintf(l[0].state, sizeof(l[0].state), "%s", state);
    (void)snprintf(l[1].state, sizeof(l[1].state), "clean");
    assert_int_equal(f->s->ops->rollout->history_add(f->s, &f->ctx, l, 2), MF_OK);
}

static void test_rollout_store__history_is_bounded_and_thinned(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_history_line many[MF_STORE_HISTORY_LINES + 1];
    struct history_seen *h = calloc(1, sizeof(*h));
    size_t ticks = 0;

    assert_non_null(h);
    history_tick(f, 7, 100, 1200, "clean");
    history_tick(f, 7, 100, 1600, "breached"); /* the same second: replaces */
    history_tick(f, 7, 102, 1300, "clean");
    history_tick(f, 8, 101, 900, "clean"); /* another rollout's */
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 7, 0, collect_history, h), MF_OK);
    assert_int_equal(h->n, 4);
    assert_int_equal(h->at[0], 100);
    assert_int_equal(h->at[1], 100);
    assert_int_equal(h->at[2], 102);
    assert_int_equal(h->last.line, 1);
    assert_string_equal(h->last.metric, "crash_rate");
    memset(h, 0, sizeof(*h));
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 7, 100, collect_history, h), MF_OK);
    assert_int_equal(h->n, 4);
    memset(h, 0, sizeof(*h));
    /* since: from then on; the replaced evaluation reads as the later one. */
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 7, 101, collect_history, h), MF_OK);
    assert_int_equal(h->n, 2);
    /* The evaluation of second 100 holds the later numbers of that second. */
    memset(h, 0, sizeof(*h));
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 7, 0, collect_history, h), MF_OK);
    assert_string_equal(h->first.state, "breached");
    assert_true(h->first.value == 1600);
    assert_true(h->first.bound == 1500 && h->first.control == 1000);
    assert_int_equal(h->first.control_devices, 36);
    assert_string_equal(h->first.kind, "relative");
    /* Past the bound the older half is thinned: never more than the bound plus one. A full
     * history is written behind the store's back (one statement, not 512 transactions), the
     * evaluations past it through the op. */
    raw_exec(f, "WITH RECURSIVE t(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM t WHERE k + 1 < 512)"
                " INSERT INTO rollout_history(rollout_id, at, line, metric, kind, state, value,"
                " bound, control, devices, control_devices) SELECT 9, 1000 + k, l,"
                " 'p99_latency_us', 'relative', 'clean', k, 1500, 1000, 4, 36 FROM t,"
                " (SELECT 0 AS l UNION ALL SELECT 1) ls");
    _Static_assert(MF_STORE_HISTORY_TICKS == 512, "the statement above writes a full history");
    for (int64_t t = MF_STORE_HISTORY_TICKS; t < MF_STORE_HISTORY_TICKS + 20; t++)
        history_tick(f, 9, 1000 + t, (double)t, "clean");
    memset(h, 0, sizeof(*h));
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 9, 0, collect_history, h), MF_OK);
    for (size_t i = 0; i < h->n; i += 2) {
        assert_int_equal(h->at[i], h->at[i + 1]); /* both lines of each evaluation stay */
        ticks++;
    }
    assert_true(ticks <= MF_STORE_HISTORY_TICKS + 1);
    assert_true(ticks > MF_STORE_HISTORY_TICKS / 2);
    assert_int_equal(h->at[0], 1000);                                     /* the start stays */
    assert_int_equal(h->last.at, 1000 + MF_STORE_HISTORY_TICKS + 20 - 1); /* and the newest */
    /* Old history is thinned, recent history is whole: the last 100 are every second. */
    for (size_t i = h->n - 200; i + 2 < h->n; i += 2)
        assert_int_equal(h->at[i + 2] - h->at[i], 1);
    assert_true(h->at[4] - h->at[2] > 1);
    /* An evaluation of more lines than a plan may hold is refused, nothing written. */
    memset(many, 0, sizeof(many));
    for (size_t i = 0; i < MF_STORE_HISTORY_LINES + 1; i++)
        many[i] = (struct mf_store_history_line){.rollout_id = 10, .at = 5, .line = (int)i};
    assert_int_equal(s->ops->rollout->history_add(s, &f->ctx, many, MF_STORE_HISTORY_LINES + 1),
                     MF_E_LIMIT);
    memset(h, 0, sizeof(*h));
    assert_int_equal(s->ops->rollout->history_list(s, &f->ctx, 10, 0, collect_history, h), MF_OK);
    assert_int_equal(h->n, 0);
    free(h);
}

/* The fleet's installed versions per bin (migration 13): one snapshot per bin, whoever takes
 * it; only installed reports count; old bins go. */
struct bins_seen {
    size_t n;
    struct mf_store_fleet_bin b[16];
};

static int collect_bin(void *payload, const struct mf_store_fleet_bin *b)
{
    struct bins_seen *w = payload;

    if (w->n < 16)
        w->b[w->n] = *b;
    w->n++;
    return MF_OK;
}

static void fleet_report(struct rs_fixture *f, const char *dev, const char *version,
                         const char *status)
{
    store_fixture_report(f->s, &f->ctx, dev, "det", version, status, "");
}

static void test_rollout_store__fleet_versions_per_bin(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    struct bins_seen w = {0};
    uint8_t hash[MF_SHA256_LEN];
    int taken = -1;

    assert_int_equal(s->ops->devices->fleet_snapshot(&taken, s, &f->ctx, 60, 0), MF_OK);
    assert_int_equal(taken, 0); /* nothing installed: nothing to keep */
    for (int i = 0; i < 3; i++) {
        char id[16];

        (void)snprintf(id, sizeof(id), "dev-%d", i);
        memset(hash, i + 1, sizeof(hash));
        assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, id, hash, 1), MF_OK);
    }
    fleet_report(f, "dev-0", "v1", "installed");
    fleet_report(f, "dev-1", "v1", "installed");
    fleet_report(f, "dev-2", "v2", "failed");
    assert_int_equal(s->ops->devices->fleet_snapshot(&taken, s, &f->ctx, 60, 0), MF_OK);
    assert_int_equal(taken, 1);
    fleet_report(f, "dev-2", "v2", "installed");
    /* The bin has its snapshot: a second node's (or tick's) changes nothing. */
    assert_int_equal(s->ops->devices->fleet_snapshot(&taken, s, &f->ctx, 60, 0), MF_OK);
    assert_int_equal(taken, 0);
    fleet_report(f, "dev-1", "v2", "installed");
    assert_int_equal(s->ops->devices->fleet_snapshot(&taken, s, &f->ctx, 120, 0), MF_OK);
    assert_int_equal(taken, 1);
    assert_int_equal(s->ops->devices->fleet_bins(s, &f->ctx, "det", 0, collect_bin, &w), MF_OK);
    assert_int_equal(w.n, 3);
    assert_int_equal(w.b[0].bin_at, 60);
    assert_string_equal(w.b[0].version, "v1");
    assert_int_equal(w.b[0].devices, 2);
    assert_int_equal(w.b[1].bin_at, 120);
    assert_string_equal(w.b[1].version, "v1");
    assert_int_equal(w.b[1].devices, 1);
    assert_string_equal(w.b[2].version, "v2");
    assert_int_equal(w.b[2].devices, 2);
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->devices->fleet_bins(s, &f->ctx, "det", 61, collect_bin, &w), MF_OK);
    assert_int_equal(w.n, 2);
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->devices->fleet_bins(s, &f->ctx, "other", 0, collect_bin, &w), MF_OK);
    assert_int_equal(w.n, 0);
    /* A new bin drops the bins before the bound. */
    assert_int_equal(s->ops->devices->fleet_snapshot(&taken, s, &f->ctx, 180, 120), MF_OK);
    assert_int_equal(taken, 1);
    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->devices->fleet_bins(s, &f->ctx, "det", 0, collect_bin, &w), MF_OK);
    assert_int_equal(w.n, 4);
    assert_int_equal(w.b[0].bin_at, 120);
}

/* The console's device reads (migration 13): devices per class tag from their reports, the
 * devices of one class, and a device's failed reports newest first, bounded. */
static int count_class(void *payload, const char *tag, const char *unused, int64_t n)
{
    char *out = payload;
    size_t len = strlen(out);

    assert_string_equal(unused, "");
    (void)snprintf(out + len, 256 - len, "%s=%lld;", tag, (long long)n);
    return MF_OK;
}

static int name_device(void *payload, const struct mf_store_device *d)
{
    char *out = payload;
    size_t len = strlen(out);

    (void)snprintf(out + len, 256 - len, "%s;", d->device_id);
    return MF_OK;
}

static int name_failure(void *payload, const struct mf_store_status *st)
{
    char *out = payload;
    size_t len = strlen(out);

    (void)snprintf(out + len, 256 - len, "%s:%s;", st->version, st->detail);
    return MF_OK;
}

static void test_rollout_store__classes_and_failures_of_devices(void **state)
{
    struct rs_fixture *f = *state;
    struct mf_store *s = f->s;
    const struct mf_store_telemetry rows[] = {{"dev-0", "det", "v1", "{}", 10, "cam-pro"},
                                              {"dev-0", "det", "v2", "{}", 20, "cam-pro"},
                                              {"dev-1", "det", "v1", "{}", 10, "cam-lite"},
                                              {"dev-2", "cls", "v1", "{}", 10, "cam-pro"},
                                              {"dev-3", "det", "v1", "{}", 10, ""}};
    uint8_t hash[MF_SHA256_LEN];
    char out[256] = "";

    for (int i = 0; i < 4; i++) {
        char id[16];

        (void)snprintf(id, sizeof(id), "dev-%d", i);
        memset(hash, i + 1, sizeof(hash));
        assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, id, hash, 1), MF_OK);
    }
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        assert_int_equal(s->ops->rollout->telemetry_put(s, &f->ctx, &rows[i]), MF_OK);
    assert_int_equal(s->ops->devices->class_counts(s, &f->ctx, count_class, out), MF_OK);
    assert_string_equal(out, "cam-lite=1;cam-pro=2;"); /* devices, not reports; "" left out */
    out[0] = '\0';
    assert_int_equal(s->ops->devices->devices_of_class(s, &f->ctx, "cam-pro", name_device, out),
                     MF_OK);
    assert_string_equal(out, "dev-0;dev-2;");
    out[0] = '\0';
    assert_int_equal(s->ops->devices->devices_of_class(s, &f->ctx, "none", name_device, out),
                     MF_OK);
    assert_string_equal(out, "");
    fleet_report(f, "dev-0", "v1", "installed");
    fleet_report(f, "dev-0", "v2", "failed"); /* detail "" */
    fleet_report(f, "dev-0", "v3", "failed");
    fleet_report(f, "dev-1", "v4", "failed");
    out[0] = '\0';
    assert_int_equal(s->ops->devices->device_failures(s, &f->ctx, "dev-0", 5, name_failure, out),
                     MF_OK);
    assert_string_equal(out, "v3:;v2:;");
    out[0] = '\0';
    assert_int_equal(s->ops->devices->device_failures(s, &f->ctx, "dev-0", 1, name_failure, out),
                     MF_OK);
    assert_string_equal(out, "v3:;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rollout_store__claim_kind_takes_only_that_kind,
                                        rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__telemetry_is_replaced_never_added,
                                        rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__rollout_state_and_events, rs_setup,
                                        rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__classes_of_reports_and_rollouts,
                                        rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__distill_runs, rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__releases_are_promoted_explicitly,
                                        rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__history_is_bounded_and_thinned,
                                        rs_setup, rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__fleet_versions_per_bin, rs_setup,
                                        rs_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_store__classes_and_failures_of_devices,
                                        rs_setup, rs_teardown),
    };
    int failed = cmocka_run_group_tests_name("rollout_store_sqlite", tests, NULL, NULL);

    use_pg = 1;
    failed += cmocka_run_group_tests_name("rollout_store_pg", tests, NULL, NULL);
    return failed;
}
