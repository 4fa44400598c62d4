/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The example fleet's bookkeeping (examples/mnist/mf_fleet_stats.h): how one answer of
 * mf_offload_ask() is counted (student vs cascade correctness, teacher, hard, audit,
 * fallbacks by reason), the version table and its bound, the merge of device tables into
 * the fleet's (devices per running version), and the JSON document, parsed back.
 */
#include "mf_test.h"

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_fleet_stats.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mf_offload_answer answer(int route, int reason, int by_teacher, int label, int queued)
{
    mf_offload_answer a;

    memset(&a, 0, sizeof(a));
    a.route = route;
    a.reason = reason;
    a.by_teacher = by_teacher;
    a.label = label;
    a.queued = queued;
    return a;
}

static void test_example_fleet__answers_are_counted(void **state)
{
    static mf_fleet_stats s;
    mf_fleet_counts *c;
    /* truth, student label, answer: each row is one image of a table-driven pass. */
    const struct {
        uint32_t truth, student;
        mf_offload_answer a;
    } rows[] = {
        /* confident and right */
        {3, 3, answer(MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT, 0, 3, 0)},
        /* confident and wrong */
        {4, 9, answer(MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT, 0, 9, 0)},
        /* uncertain, the teacher fixes it */
        {7, 1, answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TEACHER, 1, 7, 0)},
        /* uncertain, the teacher agrees with a right student */
        {2, 2, answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TEACHER, 1, 2, 0)},
        /* uncertain, the teacher breaks a right student */
        {5, 5, answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TEACHER, 1, 6, 0)},
        /* uncertain, the ask timed out: local answer, queued instead */
        {0, 0, answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TIMEOUT, 0, 0, 1)},
        /* confident, drawn for audit: local answer, queued */
        {8, 8, answer(MF_OFFLOAD_ROUTE_AUDIT, MF_OFFLOAD_REASON_AUDIT, 0, 8, 1)},
        /* no policy yet */
        {1, 4, answer(MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_NO_POLICY, 0, 4, 0)},
        /* async policy: uncertain, answered locally, queued as hard */
        {6, 6, answer(MF_OFFLOAD_ROUTE_QUEUE, MF_OFFLOAD_REASON_UNCERTAIN, 0, 6, 1)},
    };

    (void)state;
    memset(&s, 0, sizeof(s));
    c = mf_fleet_stats_version(&s, "v1");
    assert_non_null(c);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        mf_fleet_stats_answer(c, rows[i].truth, rows[i].student, &rows[i].a);
    assert_int_equal(c->images, 9);
    assert_int_equal(c->student_correct, 6); /* rows 0, 3, 4, 5, 6, 8 */
    assert_int_equal(c->cascade_correct, 6); /* the teacher fixed row 2 and broke row 4 */
    assert_int_equal(c->by_teacher, 3);
    assert_int_equal(c->teacher_agreed, 1);
    assert_int_equal(c->hard, 5);
    assert_int_equal(c->audit, 1);
    assert_int_equal(c->queued, 3);
    assert_int_equal(c->reasons[MF_OFFLOAD_REASON_CONFIDENT], 2);
    assert_int_equal(c->reasons[MF_OFFLOAD_REASON_TEACHER], 3);
    assert_int_equal(c->reasons[MF_OFFLOAD_REASON_TIMEOUT], 1);
    assert_int_equal(c->reasons[MF_OFFLOAD_REASON_NO_POLICY], 1);
    assert_int_equal(c->reasons[MF_OFFLOAD_REASON_UNCERTAIN], 1);
    /* The same name gives the same counters. */
    assert_ptr_equal(mf_fleet_stats_version(&s, "v1"), c);
    assert_int_equal(s.n, 1);
}

/* Known vectors, one row per reason: the answers the device gave on its own although it
 * wanted (or was not allowed) to ask are fallbacks; confident, audit and teacher answers
 * are not. The table lists every reason so a new one must be classified here. */
static void test_example_fleet__fallback_reasons(void **state)
{
    static const struct {
        int reason;
        int fallback;
    } vectors[] = {
        {MF_OFFLOAD_REASON_CONFIDENT, 0},    {MF_OFFLOAD_REASON_UNCERTAIN, 1},
        {MF_OFFLOAD_REASON_AUDIT, 0},        {MF_OFFLOAD_REASON_NO_POLICY, 1},
        {MF_OFFLOAD_REASON_EDGE_ONLY, 1},    {MF_OFFLOAD_REASON_POLICY_STALE, 1},
        {MF_OFFLOAD_REASON_NO_THRESHOLD, 1}, {MF_OFFLOAD_REASON_RATE_CAP, 1},
        {MF_OFFLOAD_REASON_BYTE_BUDGET, 1},  {MF_OFFLOAD_REASON_METERED, 1},
        {MF_OFFLOAD_REASON_OFFLINE, 1},      {MF_OFFLOAD_REASON_TIMEOUT, 1},
        {MF_OFFLOAD_REASON_SERVER_ERROR, 1}, {MF_OFFLOAD_REASON_TEACHER, 0},
    };

    (void)state;
    assert_int_equal(sizeof(vectors) / sizeof(vectors[0]), MF_FLEET_REASONS);
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        assert_int_equal(vectors[i].reason, (int)i); /* rows in enum order, none missing */
        assert_int_equal(mf_fleet_reason_is_fallback(vectors[i].reason), vectors[i].fallback);
    }
}

static void test_example_fleet__version_table_is_bounded(void **state)
{
    static mf_fleet_stats s;
    char name[16], longname[MF_OFFLOAD_NAME_MAX + 2];

    (void)state;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < MF_FLEET_MAX_VERSIONS; i++) {
        (void)snprintf(name, sizeof(name), "v%d", i);
        assert_non_null(mf_fleet_stats_version(&s, name));
    }
    assert_null(mf_fleet_stats_version(&s, "one-too-many"));
    assert_non_null(mf_fleet_stats_version(&s, "v0")); /* known ones still resolve */
    memset(&s, 0, sizeof(s));
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_null(mf_fleet_stats_version(&s, longname));
    assert_int_equal(s.n, 0);
}

static void test_example_fleet__merge_sums_devices_and_counters(void **state)
{
    static mf_fleet_stats a, b, all;
    mf_offload_answer teacher = answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TEACHER, 1, 1, 0);
    mf_fleet_counts *c;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&all, 0, sizeof(all));
    /* Device a ran v1 then v2; device b ran v2 only (a different first version). */
    c = mf_fleet_stats_version(&a, "v1");
    mf_fleet_stats_answer(c, 1, 0, &teacher);
    c->installs_full = 1;
    c->bytes_full = 3000;
    c = mf_fleet_stats_version(&a, "v2");
    mf_fleet_stats_answer(c, 1, 1, &teacher);
    c->installs_delta = 1;
    c->bytes_delta = 300;
    a.bytes_full = 3000;
    a.bytes_delta = 300;
    c = mf_fleet_stats_version(&b, "v2");
    mf_fleet_stats_answer(c, 2, 2, &teacher);
    c->rejected = 1;
    /* b degraded once and back, 4 images on its fallback (3 right; v2 would have had 2). */
    c->degrades = c->restores = 1;
    c->degraded = 4;
    c->degraded_fallback_ok = 3;
    c->degraded_main_ok = 2;
    (void)snprintf(b.v[0].fallback, sizeof(b.v[0].fallback), "lite"); /* b's v2 */
    b.skipped = 50;
    mf_fleet_stats_merge(&all, &a, "v2");
    mf_fleet_stats_merge(&all, &b, "v2");
    assert_int_equal(all.n, 2);
    assert_string_equal(all.v[0].version, "v1");
    assert_string_equal(all.v[1].version, "v2");
    assert_int_equal(all.v[0].devices, 0);
    assert_int_equal(all.v[1].devices, 2);
    assert_int_equal(all.v[0].c.images, 1);
    assert_int_equal(all.v[1].c.images, 2);
    assert_int_equal(all.v[1].c.cascade_correct, 1);
    assert_int_equal(all.v[1].c.student_correct, 2);
    assert_int_equal(all.v[1].c.teacher_agreed, 1);
    assert_int_equal(all.v[1].c.reasons[MF_OFFLOAD_REASON_TEACHER], 2);
    assert_int_equal(all.v[1].c.rejected, 1);
    assert_int_equal(all.v[1].c.degrades, 1);
    assert_int_equal(all.v[1].c.restores, 1);
    assert_int_equal(all.v[1].c.degraded, 4);
    assert_int_equal(all.v[1].c.degraded_fallback_ok, 3);
    assert_int_equal(all.v[1].c.degraded_main_ok, 2);
    assert_int_equal(all.v[0].c.degrades, 0);
    assert_string_equal(all.v[1].fallback, "lite"); /* the variant that ran degraded */
    assert_string_equal(all.v[0].fallback, "");
    assert_int_equal(all.v[1].c.installs_delta, 1);
    assert_int_equal(all.v[0].c.bytes_full, 3000);
    assert_int_equal(all.skipped, 50);
    assert_int_equal(all.bytes_full, 3000);
    assert_int_equal(all.bytes_delta, 300);
    /* A device that runs nothing adds no device to any version. */
    mf_fleet_stats_merge(&all, &b, "");
    assert_int_equal(all.v[1].devices, 2);
    assert_int_equal(all.v[1].c.images, 3);
    assert_int_equal(all.dropped, 0);
}

static void test_example_fleet__merge_into_a_full_table_counts_dropped(void **state)
{
    static mf_fleet_stats all, dev;
    char name[16];
    mf_offload_answer local = answer(MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT, 0, 0, 0);

    (void)state;
    memset(&all, 0, sizeof(all));
    memset(&dev, 0, sizeof(dev));
    for (int i = 0; i < MF_FLEET_MAX_VERSIONS; i++) {
        (void)snprintf(name, sizeof(name), "v%d", i);
        assert_non_null(mf_fleet_stats_version(&all, name));
    }
    mf_fleet_stats_answer(mf_fleet_stats_version(&dev, "new"), 0, 0, &local);
    mf_fleet_stats_merge(&all, &dev, "new");
    /* The version's images, its table entry and the running device are all lost, and said. */
    assert_int_equal(all.dropped, 3);
    assert_int_equal(all.n, MF_FLEET_MAX_VERSIONS);
}

static const cJSON *member(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    assert_non_null(v);
    return v;
}

static void test_example_fleet__json_document(void **state)
{
    static mf_fleet_stats s;
    mf_offload_answer t = answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_TEACHER, 1, 1, 0);
    mf_offload_answer off = answer(MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_SERVER_ERROR, 0, 0, 1);
    mf_offload_answer conf = answer(MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT, 0, 0, 0);
    struct mf_dynbuf b;
    const cJSON *v, *fb;
    cJSON *doc;
    mf_fleet_counts *c;

    (void)state;
    memset(&s, 0, sizeof(s));
    c = mf_fleet_stats_version(&s, "v7");
    mf_fleet_stats_answer(c, 1, 0, &t);
    mf_fleet_stats_answer(c, 0, 0, &off);
    mf_fleet_stats_answer(c, 0, 0, &off);
    mf_fleet_stats_answer(c, 1, 0, &conf);
    s.v[0].devices = 3;
    s.skipped = 12;
    c->degrades = 2;
    c->restores = 1;
    c->degraded = 8;
    c->degraded_fallback_ok = 6;
    c->degraded_main_ok = 7;
    (void)snprintf(s.v[0].fallback, sizeof(s.v[0].fallback), "lite");
    mf_dynbuf__init(&b, NULL, 1 << 16);
    assert_int_equal(mf_fleet_stats_json(&b, &s, "digits", 5, 4, 1), MF_OK);
    doc = cJSON_Parse((const char *)b.data);
    assert_non_null(doc);
    assert_string_equal(member(doc, "model")->valuestring, "digits");
    assert_int_equal(member(doc, "pass")->valueint, 5);
    assert_true(cJSON_IsTrue(member(doc, "finished")));
    assert_int_equal(member(doc, "devices")->valueint, 4);
    assert_int_equal(member(doc, "skipped")->valueint, 12);
    assert_int_equal(cJSON_GetArraySize(member(doc, "versions")), 1);
    v = cJSON_GetArrayItem(member(doc, "versions"), 0);
    assert_string_equal(member(v, "version")->valuestring, "v7");
    assert_int_equal(member(v, "devices")->valueint, 3);
    assert_int_equal(member(v, "images")->valueint, 4);
    assert_int_equal(member(v, "student_correct")->valueint, 2);
    assert_int_equal(member(v, "cascade_correct")->valueint, 3);
    assert_int_equal(member(v, "by_teacher")->valueint, 1);
    assert_int_equal(member(v, "hard")->valueint, 3);
    assert_int_equal(member(v, "queued")->valueint, 2);
    assert_true(member(v, "offload_rate")->valuedouble == 0.25);
    assert_true(member(v, "cascade_accuracy")->valuedouble == 0.75);
    /* The way down: switches, and both accuracies over the degraded images. */
    assert_int_equal(member(v, "degrades")->valueint, 2);
    assert_int_equal(member(v, "restores")->valueint, 1);
    assert_int_equal(member(v, "degraded")->valueint, 8);
    assert_true(member(v, "degraded_fallback_accuracy")->valuedouble == 0.75);
    assert_true(member(v, "degraded_main_accuracy")->valuedouble == 0.875);
    assert_string_equal(member(v, "fallback_variant")->valuestring, "lite");
    /* Only the fallback reasons that happened: not "confident", not "teacher". */
    fb = member(v, "fallbacks");
    assert_int_equal(cJSON_GetArraySize(fb), 1);
    assert_int_equal(member(fb, "server_error")->valueint, 2);
    cJSON_Delete(doc);
    /* A table without versions is still a document; a bound too small is MF_E_LIMIT. */
    memset(&s, 0, sizeof(s));
    mf_dynbuf__reset(&b);
    assert_int_equal(mf_fleet_stats_json(&b, &s, "digits", 0, 1, 0), MF_OK);
    doc = cJSON_Parse((const char *)b.data);
    assert_non_null(doc);
    assert_true(cJSON_IsFalse(member(doc, "finished")));
    assert_int_equal(cJSON_GetArraySize(member(doc, "versions")), 0);
    cJSON_Delete(doc);
    mf_dynbuf__free(&b);
    mf_dynbuf__init(&b, NULL, 16);
    assert_int_equal(mf_fleet_stats_json(&b, &s, "digits", 0, 1, 0), MF_E_LIMIT);
    mf_dynbuf__free(&b);
}

static void test_example_fleet__write_replaces_the_file(void **state)
{
    static mf_fleet_stats s;
    char dir[] = "/tmp/mf_fleet_stats_XXXXXX", path[64], buf[4096];
    struct mf_ctx ctx;
    FILE *f;
    size_t n;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memset(&s, 0, sizeof(s));
    assert_non_null(mkdtemp(dir));
    (void)snprintf(path, sizeof(path), "%s/stats.json", dir);
    assert_int_equal(mf_fleet_stats_write(&ctx, path, &s, "m", 1, 2, 0), MF_OK);
    assert_non_null(mf_fleet_stats_version(&s, "v1"));
    assert_int_equal(mf_fleet_stats_write(&ctx, path, &s, "m", 2, 2, 1), MF_OK);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    (void)fclose(f);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "\"pass\": 2, \"finished\": true"));
    assert_non_null(strstr(buf, "\"version\": \"v1\""));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
    (void)snprintf(path, sizeof(path), "%s/stats.json", dir);
    assert_int_equal(mf_fleet_stats_write(&ctx, path, &s, "m", 1, 2, 0), MF_E_IO);
}

/* The handle's counters as the offload library keeps them between check-ins. */
static void count(mf_offload_telemetry *h, unsigned asked, unsigned bin)
{
    h->asked += asked;
    h->uncertain += asked / 2;
    h->hist[bin] += asked;
    h->bytes_up += 100u * asked;
}

static void test_example_fleet__offload_counters_reported_once(void **state)
{
    mf_fleet_offload_tracker t;
    mf_offload_telemetry h, add, sum;

    (void)state;
    memset(&t, 0, sizeof(t));
    memset(&h, 0, sizeof(h));
    memset(&sum, 0, sizeof(sum));
    (void)snprintf(h.model_version, sizeof(h.model_version), "v1");
    /* Nothing happened yet: nothing to add. */
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 0);
    /* Pass 1, then a check-in that fails (no reset): all of pass 1 is added once. */
    count(&h, 10, 3);
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 1);
    mf_offload_telemetry_merge(&sum, &add);
    mf_fleet_offload_checked_in(&t, &h);
    /* Pass 2: only pass 2 is new, though the handle still holds pass 1 too. */
    count(&h, 4, 7);
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 1);
    assert_int_equal(add.asked, 4);
    assert_int_equal(add.hist[3], 0);
    assert_int_equal(add.hist[7], 4);
    mf_offload_telemetry_merge(&sum, &add);
    /* The check-in succeeds: the agent resets the handle. */
    memset(&h, 0, sizeof(h));
    (void)snprintf(h.model_version, sizeof(h.model_version), "v1");
    mf_fleet_offload_checked_in(&t, &h);
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 0);
    /* Pass 3 after the reset: counted from zero again. */
    count(&h, 6, 3);
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 1);
    assert_int_equal(add.asked, 6);
    mf_offload_telemetry_merge(&sum, &add);
    assert_int_equal(sum.asked, 20);
    assert_int_equal(sum.uncertain, 5 + 2 + 3);
    assert_int_equal(sum.hist[3], 16);
    assert_int_equal(sum.bytes_up, 2000);
    /* A new version installed during the step: the handle's first slot is the new one. */
    memset(&h, 0, sizeof(h));
    (void)snprintf(h.model_version, sizeof(h.model_version), "v2");
    mf_fleet_offload_checked_in(&t, &h);
    count(&h, 2, 9);
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 1);
    assert_string_equal(add.model_version, "v2");
    assert_int_equal(add.asked, 2);
    /* Only a drain since the last add (bytes, no asks) is still something to add. */
    h.bytes_up += 50;
    assert_int_equal(mf_fleet_offload_unreported(&add, &t, &h), 1);
    assert_int_equal(add.asked, 0);
    assert_int_equal(add.bytes_up, 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_fleet__answers_are_counted),
        cmocka_unit_test(test_example_fleet__fallback_reasons),
        cmocka_unit_test(test_example_fleet__version_table_is_bounded),
        cmocka_unit_test(test_example_fleet__merge_sums_devices_and_counters),
        cmocka_unit_test(test_example_fleet__merge_into_a_full_table_counts_dropped),
        cmocka_unit_test(test_example_fleet__json_document),
        cmocka_unit_test(test_example_fleet__write_replaces_the_file),
        cmocka_unit_test(test_example_fleet__offload_counters_reported_once),
    };
    return cmocka_run_group_tests_name("example_fleet", tests, NULL, NULL);
}
