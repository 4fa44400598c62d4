/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit domain of the store (struct mf_store_audit_ops) on SQLite, or on PostgreSQL when
 * the mf_pg fixture names one (ctest unit_server_audit_pg): rows kept as written, the
 * listing's filters and pages, the retention bound, an event and its audit row written
 * together or not at all, the rollout series of /metrics; the rollout events' log line; the
 * ISO 8601 times of the API.
 */
#include "mf_test.h"
#include "store_fixture.h"
#include "common/iso_time.h"
#include "handlers/handlers.h"
#include "mf_dynbuf.h"
#include "rollout/rollout_events.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

static int audit_setup(void **state)
{
    *state = store_fixture_new("audit", 1);
    return 0;
}

static int audit_teardown(void **state)
{
    store_fixture_free(*state);
    return 0;
}

STORE_FIXTURE_COLLECTOR(rows, struct mf_store_audit, 16, collect)

static void list(struct rows *out, struct store_fixture *f, const struct mf_store_audit_query *q)
{
    memset(out, 0, sizeof(*out));
    assert_int_equal(f->s->ops->audit->audit_list(f->s, &f->ctx, q, collect, out), MF_OK);
}

static void add(struct store_fixture *f, int64_t at, const char *id, const char *actor,
                const char *action, const char *target, int status)
{
    struct mf_store_audit a = {.at = at, .status = status};

    (void)snprintf(a.actor_id, sizeof(a.actor_id), "%s", id);
    (void)snprintf(a.actor, sizeof(a.actor), "%s", actor);
    (void)snprintf(a.action, sizeof(a.action), "%s", action);
    (void)snprintf(a.target, sizeof(a.target), "%s", target);
    assert_int_equal(f->s->ops->audit->audit_add(f->s, &f->ctx, &a), MF_OK);
}

/* Five rows of two tokens and the engine, at 100, 200, ..., 500. */
static void add_five(struct store_fixture *f)
{
    add(f, 100, "00000000000000aa", "alice", "PUT /v1/admin/pins/{}/{}/{}", "device/cam-1/det",
        200);
    add(f, 200, "00000000000000bb", "bob", "PUT /v1/admin/models/{}/versions/{}", "det/v2", 201);
    add(f, 300, "00000000000000aa", "alice", "POST /v1/admin/rollouts", "", 403);
    add(f, 400, "", MF_STORE_AUDIT_ENGINE, "rollout.halted", "rollout/1/det/v2", 0);
    add(f, 500, "00000000000000aa", "alice", "DELETE /v1/admin/pins/{}/{}/{}", "device/cam-1/det",
        204);
}

static void test_server_audit__rows_as_written_newest_first(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_audit_query q = {.limit = 100};
    struct rows r;

    add_five(f);
    list(&r, f, &q);
    assert_int_equal(r.n, 5);
    assert_int_equal(r.v[0].at, 500);
    assert_int_equal(r.v[4].at, 100);
    assert_true(r.v[0].seq > r.v[1].seq);
    assert_string_equal(r.v[4].actor_id, "00000000000000aa");
    assert_string_equal(r.v[4].actor, "alice");
    assert_string_equal(r.v[4].action, "PUT /v1/admin/pins/{}/{}/{}");
    assert_string_equal(r.v[4].target, "device/cam-1/det");
    assert_int_equal(r.v[4].status, 200);
    assert_string_equal(r.v[1].actor, MF_STORE_AUDIT_ENGINE);
    assert_int_equal(r.v[1].status, 0);
}

static void test_server_audit__filters_and_pages(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_audit_query q = {.limit = 100};
    struct rows r;
    int64_t before;

    add_five(f);
    /* By token id or name. */
    q.token = "alice";
    list(&r, f, &q);
    assert_int_equal(r.n, 3);
    q.token = "00000000000000bb";
    list(&r, f, &q);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.v[0].actor, "bob");
    /* By action prefix: the method, or the engine's events. */
    q.token = "";
    q.action = "PUT ";
    list(&r, f, &q);
    assert_int_equal(r.n, 2);
    q.action = "rollout.";
    list(&r, f, &q);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].at, 400);
    /* By time: [since, until). */
    q.action = NULL;
    q.since = 200;
    q.until = 400;
    list(&r, f, &q);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.v[0].at, 300);
    assert_int_equal(r.v[1].at, 200);
    /* Pages of two, each below the last seq of the one before, meet every row once. */
    memset(&q, 0, sizeof(q));
    q.limit = 2;
    list(&r, f, &q);
    assert_int_equal(r.n, 2);
    before = r.v[1].seq;
    q.before_seq = before;
    list(&r, f, &q);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.v[0].at, 300);
    q.before_seq = r.v[1].seq;
    list(&r, f, &q);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].at, 100);
}

static void test_server_audit__prune_by_age_and_rows(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_audit_query q = {.limit = 100};
    int64_t deleted = -1;
    struct rows r;

    add_five(f);
    /* Older than 250: two rows. */
    assert_int_equal(f->s->ops->audit->audit_prune(&deleted, f->s, &f->ctx, 250, 1000), MF_OK);
    assert_int_equal(deleted, 2);
    list(&r, f, &q);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.v[2].at, 300);
    /* Beyond the newest two: one more. */
    assert_int_equal(f->s->ops->audit->audit_prune(&deleted, f->s, &f->ctx, 0, 2), MF_OK);
    assert_int_equal(deleted, 1);
    list(&r, f, &q);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.v[0].at, 500);
    assert_int_equal(r.v[1].at, 400);
    /* Within both bounds: nothing. */
    assert_int_equal(f->s->ops->audit->audit_prune(&deleted, f->s, &f->ctx, 0, 2), MF_OK);
    assert_int_equal(deleted, 0);
}

/* A rollout of `model` `version` (previous v1) in `state`, not stored. */
static void fill_rollout(struct mf_store_rollout *r, const char *model, const char *version,
                         const char *state)
{
    (void)snprintf(r->model, sizeof(r->model), "%s", model);
    (void)snprintf(r->version, sizeof(r->version), "%s", version);
    (void)snprintf(r->prev_version, sizeof(r->prev_version), "v1");
    (void)snprintf(r->state, sizeof(r->state), "%s", state);
    (void)snprintf(r->plan, sizeof(r->plan), "{}");
}

struct events {
    int n;
    struct mf_store_rollout_event last;
};

static int count_event(void *payload, const struct mf_store_rollout_event *e)
{
    struct events *ev = payload;

    ev->n++;
    ev->last = *e;
    return MF_OK;
}

static void test_server_audit__engine_event_with_its_audit_row(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_rollout r = {.wave = 0};
    struct mf_store_audit_query q = {.limit = 100};
    struct events ev = {0};
    struct rows rows;

    fill_rollout(&r, "det", "v2", "running");
    assert_int_equal(f->s->ops->rollout->rollout_put(f->s, &f->ctx, &r, ""), MF_OK);
    /* An automatic event: its row and an audit row of the engine. */
    assert_int_equal(mf_rollout__emit(f->s, &f->ctx, &r, "halted", "p99 2047 > bound 1500", 1000),
                     MF_OK);
    /* An ops action's event: no engine row (the router writes the token's). */
    assert_int_equal(mf_rollout__emit(f->s, &f->ctx, &r, "paused", "by ops", 1001), MF_OK);
    assert_int_equal(f->s->ops->rollout->rollout_events_list(f->s, &f->ctx, r.id, count_event, &ev),
                     MF_OK);
    assert_int_equal(ev.n, 2);
    list(&rows, f, &q);
    assert_int_equal(rows.n, 1);
    assert_string_equal(rows.v[0].actor, MF_STORE_AUDIT_ENGINE);
    assert_string_equal(rows.v[0].actor_id, "");
    assert_string_equal(rows.v[0].action, "rollout.halted");
    assert_string_equal(rows.v[0].detail, "p99 2047 > bound 1500");
    assert_int_equal(rows.v[0].at, 1000);
    {
        char want[64];

        (void)snprintf(want, sizeof(want), "rollout/%lld/det/v2", (long long)r.id);
        assert_string_equal(rows.v[0].target, want);
    }
}

static void test_server_audit__event_and_audit_row_together_or_not_at_all(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_rollout_event e = {.rollout_id = 9, .at = 5};
    struct mf_store_audit a = {.at = 5};
    struct mf_store_audit_query q = {.limit = 100};
    struct events ev = {0};
    struct rows rows;

    (void)snprintf(e.kind, sizeof(e.kind), "advanced");
    (void)snprintf(a.actor, sizeof(a.actor), "%s", MF_STORE_AUDIT_ENGINE);
    (void)snprintf(a.action, sizeof(a.action), "rollout.advanced");
    assert_int_equal(f->s->ops->audit->event_record(f->s, &f->ctx, &e, &a, "e1", "{}", 5), MF_OK);
    /* The audit table gone: the event row must not stay behind alone. */
    assert_int_equal(f->s->ops->audit->audit_prune(&(int64_t){0}, f->s, &f->ctx, 1000, 1000),
                     MF_OK);
    store_fixture_exec(f, "ALTER TABLE audit_log RENAME TO audit_gone");
    e.at = 6;
    assert_true(f->s->ops->audit->event_record(f->s, &f->ctx, &e, &a, "e2", "{}", 6) < 0);
    assert_int_equal(f->s->ops->rollout->rollout_events_list(f->s, &f->ctx, 9, count_event, &ev),
                     MF_OK);
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.last.at, 5);
    store_fixture_exec(f, "ALTER TABLE audit_gone RENAME TO audit_log");
    list(&rows, f, &q);
    assert_int_equal(rows.n, 0); /* the first one's row was pruned above; none came back */
}

static void put_rollout(struct store_fixture *f, const char *model, const char *version,
                        const char *state, int wave, const char *breach)
{
    struct mf_store_rollout r = {.wave = wave};

    fill_rollout(&r, model, version, state);
    (void)snprintf(r.breach, sizeof(r.breach), "%s", breach);
    assert_int_equal(f->s->ops->rollout->rollout_put(f->s, &f->ctx, &r, ""), MF_OK);
}

static void installed(struct store_fixture *f, const char *device, const char *version)
{
    struct mf_store_status st = {.reported_at = 1};
    uint8_t cred[MF_SHA256_LEN] = {0};

    memcpy(cred, device, strlen(device) < sizeof(cred) ? strlen(device) : sizeof(cred));
    assert_int_equal(f->s->ops->auth->device_enroll(f->s, &f->ctx, device, cred, 1), MF_OK);
    (void)snprintf(st.device_id, sizeof(st.device_id), "%s", device);
    (void)snprintf(st.model, sizeof(st.model), "det");
    (void)snprintf(st.version, sizeof(st.version), "%s", version);
    (void)snprintf(st.status, sizeof(st.status), "installed");
    memset(st.sha256, 'a', 64);
    assert_int_equal(f->s->ops->devices->report_insert(f->s, &f->ctx, &st), MF_OK);
}

/* The rollout series of /metrics on this run's store. */
static void test_server_audit__metrics_rollout_series(void **state)
{
    static const char *const want[] = {
        "mf_rollout_state{model=\"det\",version=\"v3\",state=\"running\"} 1\n",
        "mf_rollout_state{model=\"det\",version=\"v3\",state=\"halted\"} 0\n",
        "mf_rollout_state{model=\"det\",version=\"v2\",state=\"halted\"} 1\n",
        "mf_rollout_wave{model=\"det\",version=\"v3\"} 1\n",
        "mf_rollout_breaches{model=\"det\",line=\"p99_latency_us\"} 2\n",
        "mf_devices{model=\"det\",version=\"v1\"} 2\n",
        "mf_devices{model=\"det\",version=\"v3\"} 1\n",
        "mf_webhook_deliveries{state=\"pending\"} 0\n",
    };
    struct store_fixture *f = *state;
    struct mf_dynbuf out;
    int64_t id = 0;

    /* det v2 halted twice on p99 (the newest rollout of v2 shows), v3 running in wave 1. */
    put_rollout(f, "det", "v2", "halted", 0, "p99_latency_us 2047 > bound 1500");
    put_rollout(f, "det", "v2", "halted", 0, "p99_latency_us 3000 > bound 1500");
    put_rollout(f, "det", "v3", "running", 1, "");
    installed(f, "cam-1", "v1");
    installed(f, "cam-2", "v1");
    installed(f, "cam-3", "v3");
    assert_int_equal(f->s->ops->webhooks->webhook_add(&id, f->s, &f->ctx, "http://127.0.0.1:9/",
                                                      "0123456789abcdef", 1),
                     MF_OK);
    mf_dynbuf__init(&out, &f->ctx.alloc, 1 << 20);
    assert_int_equal(mf_handlers__metrics_rollouts(&out, f->s, &f->ctx), MF_OK);
    assert_int_equal(mf_dynbuf__append(&out, "", 1), MF_OK);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!strstr((const char *)out.data, want[i]))
            fail_msg("no %s in\n%s", want[i], (const char *)out.data);
    }
    /* One series per (model, version): the older v2 rollout is history. */
    {
        const char *first =
            strstr((const char *)out.data, "mf_rollout_wave{model=\"det\",version=\"v2\"}");

        assert_non_null(first);
        assert_null(strstr(first + 1, "mf_rollout_wave{model=\"det\",version=\"v2\"}"));
    }
    mf_dynbuf__free(&out);
}

static void test_server_audit__event_line(void **state)
{
    struct mf_store_rollout r = {.id = 7, .wave = 1};
    char line[512], tiny[24];

    (void)state;
    fill_rollout(&r, "det", "v2", "halted");
    mf_rollout__event_line(line, sizeof(line), &r, "halted", "p99 \"2047\"\nover\\", 1764646645);
    assert_string_equal(line, "event=rollout.halted rollout=7 model=det version=v2 previous=v1"
                              " state=halted wave=1 at=2025-12-02T03:37:25Z"
                              " detail=\"p99 \\\"2047\\\"?over\\\\\"");
    /* Cut short, still one terminated line. */
    mf_rollout__event_line(tiny, sizeof(tiny), &r, "halted", "x", 0);
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
    assert_true(mf_rollout__event_automatic("advanced") && mf_rollout__event_automatic("halted"));
    assert_false(mf_rollout__event_automatic("paused") || mf_rollout__event_automatic("created"));
}

static void test_server_audit__iso_times(void **state)
{
    static const char *const bad[] = {
        "",
        "2026-02-30T00:00:00Z",
        "2026-12-02 03:37:25",
        "2026-12-02T03:37:25",
        "-1",
        "2026-13-01T00:00:00Z",
        "1e9",
        "2026-12-02T03:37:25+01:00",
        "9999999999999",
    };
    char out[MF_ISO_TIME_SIZE];
    int64_t t = -1;

    (void)state;
    assert_string_equal(mf_iso_time__format(out, 0), "1970-01-01T00:00:00Z");
    assert_string_equal(mf_iso_time__format(out, 1764646645), "2025-12-02T03:37:25Z");
    assert_int_equal(mf_iso_time__parse(&t, "2025-12-02T03:37:25Z"), 0);
    assert_int_equal(t, 1764646645);
    assert_int_equal(mf_iso_time__parse(&t, "1764646646"), 0);
    assert_int_equal(t, 1764646646);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t = 42;
        if (mf_iso_time__parse(&t, bad[i]) != -1 || t != 42)
            fail_msg("'%s' was taken as a time", bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_server_audit__rows_as_written_newest_first,
                                        audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_server_audit__filters_and_pages, audit_setup,
                                        audit_teardown),
        cmocka_unit_test_setup_teardown(test_server_audit__prune_by_age_and_rows, audit_setup,
                                        audit_teardown),
        cmocka_unit_test_setup_teardown(test_server_audit__engine_event_with_its_audit_row,
                                        audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(
            test_server_audit__event_and_audit_row_together_or_not_at_all, audit_setup,
            audit_teardown),
        cmocka_unit_test_setup_teardown(test_server_audit__metrics_rollout_series, audit_setup,
                                        audit_teardown),
    };
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_server_audit__event_line),
        cmocka_unit_test(test_server_audit__iso_times),
    };

    /* The pure cases once, in the SQLite run. */
    return mf_test__run_group("server_audit", tests, MF_TEST_COUNT(tests), pure,
                              MF_TEST_COUNT(pure), !mf_pgtest__enabled(), NULL, NULL);
}
