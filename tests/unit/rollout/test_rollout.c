/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of rollouts (server/rollout/rollout_plan.h): stable, cumulative wave
 * membership by percentage, group and list; plan parsing with a clear error per bad field;
 * red lines absolute and relative to the previous version, computed from merged histograms.
 */
#include "mf_test.h"
#include "kit_case.h"

#include "rollout/rollout_plan.h"
#include "rollout/rollout_report.h"

#include <stdio.h>
#include <string.h>

static int parse(struct mf_rollout_plan *p, struct mf_ctx *ctx, const char *json)
{
    cJSON *body = cJSON_Parse(json);
    int err;

    assert_non_null(body);
    err = mf_rollout__plan_parse(p, ctx, body, MF_PLAN_STRICT);
    cJSON_Delete(body);
    return err;
}

/* parse as a table's parser (kit_case.h): the plan is the payload. */
static int parse_plan(void *plan, struct mf_ctx *ctx, const char *json)
{
    return parse(plan, ctx, json);
}

/* The two red lines the evidence tests share: P99 relative to the control, peak memory absolute. */
#define P99_AND_MEMORY_LINES                                                                       \
    "{\"metric\":\"p99_latency_us\",\"relative\":1.5},"                                            \
    "{\"metric\":\"peak_memory\",\"max\":1000000},"

/* A plan the test relies on being valid: parsed strictly, refused loudly. */
static void plan_ok(struct mf_rollout_plan *p, const char *json)
{
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(parse(p, &ctx, json), MF_OK);
}

static void test_rollout__percent_waves_are_stable_and_cumulative(void **state)
{
    struct mf_rollout_plan p;
    unsigned in_wave[3] = {0};
    char id[32];

    (void)state;
    plan_ok(&p, "{\"waves\":[{\"percent\":5},{\"percent\":25},"
                "{\"percent\":100}],\"allow_no_red_lines\":true}");
    assert_int_equal(p.n_waves, 3);
    for (int i = 0; i < 10000; i++) {
        int w;

        (void)snprintf(id, sizeof(id), "cam-%05d", i);
        w = mf_rollout__wave_of(&p, id, NULL, 0);
        assert_true(w >= 0 && w < 3);
        assert_int_equal(w, mf_rollout__wave_of(&p, id, NULL, 0)); /* keeps its wave */
        in_wave[w]++;
    }
    /* 5 %, then 20 % more, then the rest, within 1.5 points on 10,000 ids. */
    assert_in_range(in_wave[0], 350, 650);
    assert_in_range(in_wave[1], 1850, 2150);
    assert_int_equal(in_wave[0] + in_wave[1] + in_wave[2], 10000);
    /* The hash is fixed: a known id has a known bucket on every node and build. */
    assert_int_equal(mf_rollout__bucket("cam-00001"), mf_rollout__bucket("cam-00001"));
    assert_true(mf_rollout__bucket("a") != mf_rollout__bucket("b"));
}

static void test_rollout__group_and_list_waves(void **state)
{
    static const char *const lab[] = {"eu", "lab"};
    struct mf_rollout_plan p;

    (void)state;
    plan_ok(&p, "{\"waves\":[{\"devices\":[\"cam-7\",\"cam-9\"]},"
                "{\"group\":\"lab\"},{\"percent\":100}],\"allow_no_red_lines\":true}");
    assert_int_equal(mf_rollout__wave_of(&p, "cam-9", lab, 2), 0);
    assert_int_equal(mf_rollout__wave_of(&p, "cam-1", lab, 2), 1);
    assert_int_equal(mf_rollout__wave_of(&p, "cam-1", lab, 1), 2);
    plan_ok(&p, "{\"waves\":[{\"group\":\"lab\"}],\"allow_no_red_lines\":true}");
    assert_int_equal(mf_rollout__wave_of(&p, "cam-1", NULL, 0), -1);
}

static void test_rollout__bad_plans_are_refused(void **state)
{
    static const struct mf_kit_case bad[] = {
        {"{}", "field 'waves'"},
        {"{\"waves\":[]}", "field 'waves'"},
        {"{\"waves\":[{\"percent\":0}]}", "waves[0].percent"},
        {"{\"waves\":[{\"percent\":101}]}", "waves[0].percent"},
        {"{\"waves\":[{\"percent\":5,\"group\":\"g\"}]}", "waves[0] must be"},
        {"{\"waves\":[{\"group\":\"../x\"}]}", "waves[0].group"},
        {"{\"waves\":[{\"devices\":[]}]}", "waves[0].devices"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"speed\",\"max\":1}]}",
         "red_lines[0].metric"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"p99_latency_us\"}]}",
         "exactly one of max"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"teacher_agreement\","
         "\"max\":1}]}",
         "exactly one of min"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"peak_memory\","
         "\"relative\":-1}]}",
         "bound must be"},
        /* Strict plans: the typo, and every other key, type and range named. */
        {"{\"soak\":30,\"waves\":[{\"percent\":5}],\"red_lines\":[]}", "unknown key 'soak'"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[]}", "field 'red_lines' is empty"},
        {"{\"waves\":[{\"percent\":5}]}", "field 'red_lines' is empty"},
        {"{\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":false}",
         "field 'red_lines' is empty"},
        {"{\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":1}", "'allow_no_red_lines'"},
        {"{\"waves\":[{\"percent\":5,\"precent\":5}],\"allow_no_red_lines\":true}",
         "unknown key 'waves[0].precent'"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"p99_latency_us\","
         "\"relative\":1.5,\"relativ\":2}]}",
         "unknown key 'red_lines[0].relativ'"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"p99_latency_us\","
         "\"max\":10,\"min\":1}]}",
         "red_lines[0].min does not apply"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"offload_rate\","
         "\"max\":5}]}",
         "fraction in 0..1"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"peak_memory\","
         "\"relative\":0}]}",
         "relative must be above 0"},
        {"{\"soak_s\":\"30\",\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true}",
         "field 'soak_s'"},
        {"{\"soak_s\":2.5,\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true}",
         "field 'soak_s'"},
        {"{\"min_devices\":0,\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true}",
         "field 'min_devices'"},
        {"{\"line_min_devices\":0,\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true}",
         "field 'line_min_devices'"},
        {"{\"line_min_inferences\":-5,\"waves\":[{\"percent\":5}],"
         "\"allow_no_red_lines\":true}",
         "field 'line_min_inferences'"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[\"p99\"]}", "red_lines[0] must be"},
    };
    struct mf_rollout_plan p;
    struct mf_ctx ctx;

    (void)state;
    mf_kit_case_refused(bad, MF_TEST_COUNT(bad), parse_plan, &p);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    /* The request's own keys sit beside the plan's; the defaults are the safe ones. */
    assert_int_equal(parse(&p, &ctx,
                           "{\"model\":\"m\",\"version\":\"v2\",\"previous\":\"v1\","
                           "\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true}"),
                     MF_OK);
    assert_int_equal(p.soak_s, MF_ROLLOUT_DEFAULT_SOAK_S);
    assert_int_equal(p.line_min_devices, MF_ROLLOUT_DEFAULT_LINE_DEVICES);
    assert_int_equal(p.line_min_inferences, MF_ROLLOUT_DEFAULT_LINE_INFERENCES);
}

/* A plan stored before keys were strict still loads: unknown keys are ignored there. */
static void test_rollout__stored_plans_load_leniently(void **state)
{
    cJSON *body = cJSON_Parse("{\"soak\":30,\"waves\":[{\"percent\":5}],\"red_lines\":[]}");
    struct mf_rollout_plan p;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_non_null(body);
    assert_int_equal(mf_rollout__plan_parse(&p, &ctx, body, MF_PLAN_STORED), MF_OK);
    assert_int_equal(p.n_waves, 1);
    assert_int_equal(mf_rollout__plan_parse(&p, &ctx, body, MF_PLAN_STRICT), MF_E_INVALID);
    cJSON_Delete(body);
}

/* `count` devices, each with a latency sample `us` repeated `n` times and `mem` peak. */
static void add_devices(struct mf_rollout_agg *a, int count, uint64_t us, unsigned n, uint64_t mem)
{
    mf_telemetry_version v;

    memset(&v, 0, sizeof(v));
    for (unsigned i = 0; i < n; i++)
        v.latency[mf_telemetry_bucket(us + i)]++;
    v.peak_memory = mem;
    v.install_ok = 1;
    v.offload.asked = 100;
    v.offload.uncertain = 10;
    v.teacher_compared = 100;
    v.teacher_agreed = 95;
    for (int d = 0; d < count; d++)
        mf_rollout__agg_add(a, &v);
}

static void test_rollout__red_lines(void **state)
{
    struct mf_rollout_agg prev_a, cur_a;
    struct mf_rollout_figures prev, cur;
    struct mf_rollout_verdict v[MF_ROLLOUT_MAX_LINES];
    struct mf_rollout_plan p;

    (void)state;
    plan_ok(&p, "{\"waves\":[{\"percent\":10}],\"red_lines\":[" P99_AND_MEMORY_LINES
                "{\"metric\":\"teacher_agreement\",\"min\":0.9},"
                "{\"metric\":\"install_failure_rate\",\"max\":0.2}]}");
    memset(&prev_a, 0, sizeof(prev_a));
    memset(&cur_a, 0, sizeof(cur_a));
    add_devices(&prev_a, 10, 1000, 100, 500000);
    add_devices(&cur_a, 10, 1000, 100, 500000);
    mf_rollout__figures(&prev, &prev_a);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &prev), -1);
    assert_true(v[0].evaluated && !v[0].breached);
    assert_true(v[2].evaluated && v[2].value > 0.94 && v[2].value < 0.96);
    assert_false(v[3].evaluated == 0);

    /* The same devices at 2x latency breach the relative P99 line, with the numbers. */
    memset(&cur_a, 0, sizeof(cur_a));
    add_devices(&cur_a, 10, 2000, 100, 500000);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &prev), 0);
    assert_true(v[0].breached);
    assert_true(v[0].value >= 2000 && v[0].bound >= 1500 && v[0].bound < 1800);

    /* No control group: a relative line is not evaluated (it waits), absolute ones are; a
     * breach counts on one device's data, since halting is the safe direction. */
    memset(&cur_a, 0, sizeof(cur_a));
    add_devices(&cur_a, 1, 1000, 10, 2000000);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, NULL), 1);
    assert_false(v[0].evaluated);
    assert_non_null(strstr(v[0].waiting, "control: 0 of 2 devices"));
    assert_true(v[1].breached);
    assert_string_equal(mf_rollout__metric_name(MF_METRIC_PEAK_MEMORY), "peak_memory");
}

/* A line counts clean only on enough evidence: devices with data and, for the figures drawn
 * on inferences, enough samples; a relative line also on a control group with enough. Until
 * then it waits, with what it lacks. */
static void test_rollout__lines_wait_for_evidence(void **state)
{
    struct mf_rollout_agg ctl_a, cur_a;
    struct mf_rollout_figures ctl, cur, none;
    struct mf_rollout_verdict v[MF_ROLLOUT_MAX_LINES];
    struct mf_rollout_plan p;

    (void)state;
    plan_ok(&p, "{\"waves\":[{\"percent\":10}],\"line_min_devices\":3,"
                "\"line_min_inferences\":250,\"red_lines\":[" P99_AND_MEMORY_LINES
                "{\"metric\":\"teacher_agreement\",\"min\":0.5}]}");
    memset(&none, 0, sizeof(none));
    memset(&ctl_a, 0, sizeof(ctl_a));
    memset(&cur_a, 0, sizeof(cur_a));
    /* No data at all: every line waits, none breaches, and waiting counts all three. */
    assert_int_equal(mf_rollout__check(v, &p, &none, &none), -1);
    assert_int_equal(mf_rollout__waiting(v, p.n_lines), 3);
    assert_non_null(strstr(v[1].waiting, "canary: 0 of 3 devices"));
    /* Two healthy canary devices (2 x 100 samples): still short of 3 devices. */
    add_devices(&ctl_a, 5, 1000, 100, 500000);
    add_devices(&cur_a, 2, 1000, 100, 500000);
    mf_rollout__figures(&ctl, &ctl_a);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &ctl), -1);
    assert_int_equal(mf_rollout__waiting(v, p.n_lines), 3);
    assert_non_null(strstr(v[0].waiting, "canary: 2 of 3 devices"));
    /* A third device: the device-drawn line is clean; 300 latency samples clear the 250
     * inferences, while teacher_agreement (100 comparisons each) has enough too. */
    add_devices(&cur_a, 1, 1000, 100, 500000);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &ctl), -1);
    assert_int_equal(mf_rollout__waiting(v, p.n_lines), 0);
    assert_true(v[0].evaluated && v[1].evaluated && v[2].evaluated);
    assert_int_equal(v[0].devices, 3);
    assert_int_equal(v[0].samples, 300);
    assert_int_equal(v[0].control_devices, 5);
    /* Few inferences: three devices with 50 samples each wait on inferences. */
    memset(&cur_a, 0, sizeof(cur_a));
    add_devices(&cur_a, 3, 1000, 50, 500000);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &ctl), -1);
    assert_false(v[0].evaluated);
    assert_non_null(strstr(v[0].waiting, "canary: 150 of 250 inferences"));
    assert_true(v[1].evaluated);
    /* A control group too small leaves the relative line without a bound: waiting. */
    memset(&ctl_a, 0, sizeof(ctl_a));
    add_devices(&ctl_a, 1, 1000, 400, 500000);
    mf_rollout__figures(&ctl, &ctl_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &ctl), -1);
    assert_non_null(strstr(v[0].waiting, "control: 1 of 3 devices"));
    /* A breach counts on little evidence: one canary device at over 2x P99 over a control. */
    add_devices(&ctl_a, 4, 1000, 100, 500000);
    mf_rollout__figures(&ctl, &ctl_a);
    memset(&cur_a, 0, sizeof(cur_a));
    add_devices(&cur_a, 1, 3000, 20, 500000);
    mf_rollout__figures(&cur, &cur_a);
    assert_int_equal(mf_rollout__check(v, &p, &cur, &ctl), 0);
    assert_true(v[0].breached && v[0].evaluated);
    assert_true(v[0].control >= 1000 && v[0].control < 1500);
    assert_true(v[0].bound > v[0].control && v[0].value > v[0].bound);
}

/* What a device writes (mf_telemetry_checkin_json) the server reads back bucket for bucket,
 * so fleet percentiles merge exactly what devices counted. */
static void test_rollout__report_round_trip(void **state)
{
    static char json[MF_TELEMETRY_JSON_MAX];
    mf_telemetry_version got[MF_TELEMETRY_MAX_VERSIONS];
    const mf_telemetry_version *want;
    mf_offload_telemetry o;
    mf_telemetry *t = NULL;
    struct mf_ctx ctx;
    size_t len = 0, n = 0;
    cJSON *root;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memset(&o, 0, sizeof(o));
    o.asked = 50;
    o.uncertain = 7;
    o.hist[3] = 7;
    o.hist[90] = 43;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    for (uint64_t us = 1; us < 3000000; us = us * 3 + 1)
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v2", us), MF_OK);
    assert_int_equal(mf_telemetry_record_memory(t, "det", "v2", 123456789), MF_OK);
    assert_int_equal(mf_telemetry_record_rollback(t, "det", "v2", "probe \"x\""), MF_OK);
    assert_int_equal(mf_telemetry_record_teacher(t, "det", "v2", 1), MF_OK);
    assert_int_equal(mf_telemetry_add_offload(t, "det", "v2", &o), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 40), MF_OK);
    assert_int_equal(mf_telemetry_checkin_json(&len, json, sizeof(json), t, "det"), MF_OK);
    root = cJSON_Parse(json);
    assert_non_null(root);
    assert_int_equal(mf_rollout__report_parse(got, &n, &ctx, "det", root), MF_OK);
    cJSON_Delete(root);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        want = mf_telemetry_get(t, "det", got[i].version);
        assert_non_null(want);
        assert_memory_equal(got[i].latency, want->latency, sizeof(want->latency));
        assert_memory_equal(got[i].offload.hist, want->offload.hist, sizeof(want->offload.hist));
        assert_int_equal(got[i].inferences, want->inferences);
        assert_int_equal(got[i].peak_memory, want->peak_memory);
        assert_int_equal(got[i].offload.uncertain, want->offload.uncertain);
        assert_int_equal(got[i].teacher_agreed, want->teacher_agreed);
        assert_string_equal(got[i].last_rollback, want->last_rollback);
    }
    mf_telemetry_free(t);
}

static void test_rollout__bad_reports_are_refused(void **state)
{
    static const char *const bad[] = {
        "[]",
        "{\"versions\":[]}",
        "{\"buckets\":\"linear\",\"versions\":[]}",
        "{\"buckets\":\"log2x8\",\"versions\":{}}",
        "{\"buckets\":\"log2x8\",\"versions\":[{}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"..\"}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"inferences\":-1}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"inferences\":1.5}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[240,1]]}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[1]]}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"confidence\":[[100,1]]}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[1,4294967296]]}"
        "]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"last_rollback\":3}]}",
        "{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"a\"},{\"version\":\"b\"},"
        "{\"version\":\"c\"},{\"version\":\"d\"},{\"version\":\"e\"}]}",
    };
    mf_telemetry_version got[MF_TELEMETRY_MAX_VERSIONS];
    struct mf_ctx ctx;
    size_t n;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *root = cJSON_Parse(bad[i]);

        assert_non_null(root);
        if (mf_rollout__report_parse(got, &n, &ctx, "det", root) != MF_E_INVALID)
            fail_msg("accepted: %s", bad[i]);
        assert_true(strstr(mf_ctx__errmsg(&ctx), "telemetry") != NULL);
        cJSON_Delete(root);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollout__percent_waves_are_stable_and_cumulative),
        cmocka_unit_test(test_rollout__group_and_list_waves),
        cmocka_unit_test(test_rollout__bad_plans_are_refused),
        cmocka_unit_test(test_rollout__stored_plans_load_leniently),
        cmocka_unit_test(test_rollout__lines_wait_for_evidence),
        cmocka_unit_test(test_rollout__red_lines),
        cmocka_unit_test(test_rollout__report_round_trip),
        cmocka_unit_test(test_rollout__bad_reports_are_refused),
    };
    return cmocka_run_group_tests_name("rollout", tests, NULL, NULL);
}
