/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of rollouts (server/rollout/rollout_plan.h): stable, cumulative wave
 * membership by percentage, group and list; plan parsing with a clear error per bad field;
 * red lines absolute and relative to the previous version, computed from merged histograms;
 * every scorecard figure merged exactly across devices against the raw values.
 */
#include "mf_test.h"
#include "kit_case.h"

#include "rollout/rollout_plan.h"
#include "rollout/rollout_report.h"

#include <stdio.h>
#include <stdlib.h>
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
        /* The scorecard: unknown names anywhere, sustained lines need their minute. */
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"p99_after_10\","
         "\"max\":1}]}",
         "red_lines[0].metric is not a known metric"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"energy_uj\",\"max\":9}],"
         "\"goals\":[{\"metric\":\"joules\",\"max\":1}]}",
         "goals[0].metric is not a known metric"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"sustained_p99_us\","
         "\"max\":1}]}",
         "red_lines[0].after_min must be a minute in 0..10"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"sustained_p99_us\","
         "\"after_min\":11,\"max\":1}]}",
         "red_lines[0].after_min must be"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"cold_p99_us\","
         "\"after_min\":3,\"max\":1}]}",
         "red_lines[0].after_min applies to sustained metrics only"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"sustained_rate\","
         "\"after_min\":3,\"max\":1}]}",
         "red_lines[0] needs exactly one of min"},
        {"{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"error_rate\","
         "\"max\":2}]}",
         "fraction in 0..1"},
        {"{\"waves\":[{\"percent\":5}],\"allow_no_red_lines\":true,"
         "\"goals\":[{\"metric\":\"error_rate\",\"max\":0.1,\"maxx\":1}]}",
         "unknown key 'goals[0].maxx'"},
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
    /* Every metric of the table may carry a red line and a goal. */
    assert_int_equal(parse(&p, &ctx,
                           "{\"waves\":[{\"percent\":5}],\"red_lines\":["
                           "{\"metric\":\"sustained_p99_us\",\"after_min\":10,\"max\":2000},"
                           "{\"metric\":\"sustained_rate\",\"after_min\":0,\"relative\":0.8},"
                           "{\"metric\":\"energy_uj\",\"relative\":1.1}],"
                           "\"goals\":[{\"metric\":\"cold_p99_us\",\"max\":50000},"
                           "{\"metric\":\"steady_memory\",\"max\":1000000}]}"),
                     MF_OK);
    assert_int_equal(p.n_lines, 3);
    assert_int_equal(p.lines[0].metric, MF_METRIC_SUSTAINED_P99_US);
    assert_int_equal(p.lines[0].after_min, 10);
    assert_int_equal(p.lines[0].figure, mf_rollout__figure_id(MF_METRIC_SUSTAINED_P99_US, 10));
    assert_int_equal(p.lines[1].figure, mf_rollout__figure_id(MF_METRIC_SUSTAINED_RATE, 0));
    assert_int_equal(p.lines[2].after_min, -1);
    assert_int_equal(p.n_goals, 2);
    assert_int_equal(p.goals[1].metric, MF_METRIC_STEADY_MEMORY);
    for (int m = 0; m < MF_METRIC_COUNT; m++) {
        char json[256];
        unsigned kind = mf_rollout__metric_kind(m);

        (void)snprintf(json, sizeof(json),
                       "{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"%s\",%s"
                       "\"%s\":0.5}]}",
                       mf_rollout__metric_name(m),
                       kind & MF_METRIC_SUSTAINED ? "\"after_min\":2," : "",
                       kind & MF_METRIC_LOWER_IS_WORSE ? "min" : "max");
        if (parse(&p, &ctx, json) != MF_OK)
            fail_msg("%s: %s", json, mf_ctx__errmsg(&ctx));
    }
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
    static struct mf_rollout_row row;

    memset(&row, 0, sizeof(row));
    for (unsigned i = 0; i < n; i++)
        row.v.latency[mf_telemetry_bucket(us + i)]++;
    row.v.peak_memory = mem;
    row.v.install_ok = 1;
    row.v.offload.asked = 100;
    row.v.offload.uncertain = 10;
    row.v.teacher_compared = 100;
    row.v.teacher_agreed = 95;
    for (int d = 0; d < count; d++)
        mf_rollout__agg_add(a, &row);
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

/* `t`'s check-in JSON for model "det" read back by the server into got[0..*n-1]. */
static void read_back(struct mf_rollout_row *got, size_t *n, const mf_telemetry *t)
{
    static char json[MF_TELEMETRY_JSON_MAX];
    struct mf_ctx ctx;
    size_t len = 0;
    cJSON *root;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_telemetry_checkin_json(&len, json, sizeof(json), t, "det"), MF_OK);
    root = cJSON_Parse(json);
    assert_non_null(root);
    assert_int_equal(mf_rollout__report_parse(got, n, &ctx, "det", root), MF_OK);
    cJSON_Delete(root);
}

/* What a device writes (mf_telemetry_checkin_json) the server reads back bucket for bucket,
 * so fleet percentiles merge exactly what devices counted. */
static void test_rollout__report_round_trip(void **state)
{
    static struct mf_rollout_row got[MF_TELEMETRY_MAX_VERSIONS];
    const mf_telemetry_version *want;
    mf_offload_telemetry o;
    mf_telemetry *t = NULL;
    size_t n = 0;

    (void)state;
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
    read_back(got, &n, t);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        const mf_telemetry_version *g = &got[i].v;

        want = mf_telemetry_get(t, "det", g->version);
        assert_non_null(want);
        assert_memory_equal(g->latency, want->latency, sizeof(want->latency));
        assert_memory_equal(g->offload.hist, want->offload.hist, sizeof(want->offload.hist));
        assert_int_equal(g->inferences, want->inferences);
        assert_int_equal(g->peak_memory, want->peak_memory);
        assert_int_equal(g->offload.uncertain, want->offload.uncertain);
        assert_int_equal(g->teacher_agreed, want->teacher_agreed);
        assert_string_equal(g->last_rollback, want->last_rollback);
    }
    mf_telemetry_free(t);
}

/* A device's telemetry report `json` for model det into `rows`. */
static int parse_report(void *rows, struct mf_ctx *ctx, const char *json)
{
    cJSON *root = cJSON_Parse(json);
    size_t n;
    int rc;

    assert_non_null(root);
    rc = mf_rollout__report_parse(rows, &n, ctx, "det", root);
    cJSON_Delete(root);
    return rc;
}

static void test_rollout__bad_reports_are_refused(void **state)
{
    static const struct mf_kit_case bad[] = {
        {"[]", "telemetry of model 'det' needs buckets"},
        {"{\"versions\":[]}", "telemetry of model 'det' needs buckets"},
        {"{\"buckets\":\"linear\",\"versions\":[]}", "telemetry of model 'det' needs buckets"},
        {"{\"buckets\":\"log2x8\",\"versions\":{}}", "telemetry of model 'det' needs 'versions'"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{}]}", "telemetry versions need a valid 'version'"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"..\"}]}",
         "telemetry versions need a valid 'version'"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"inferences\":-1}]}",
         "telemetry field 'inferences' must be"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"inferences\":1.5}]}",
         "telemetry field 'inferences' must be"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[240,1]]}]}",
         "telemetry 'latency_us' needs [index < 240"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[1]]}]}",
         "telemetry 'latency_us' needs [index < 240"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"confidence\":[[100,1]]}]}",
         "telemetry 'confidence' needs [index < 100"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[1,4294967296]]"
         "}]}",
         "telemetry 'latency_us' needs [index < 240"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"last_rollback\":3}]}",
         "telemetry field 'last_rollback' must be a string"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"a\"},{\"version\":\"b\"},"
         "{\"version\":\"c\"},{\"version\":\"d\"},{\"version\":\"e\"}]}",
         "telemetry of model 'det' needs 'versions'"},
        /* The scorecard's fields. */
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"cold_us\":[[240,1]]}]}",
         "telemetry 'cold_us' needs [index < 240"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"errors\":-2}]}",
         "telemetry field 'errors' must be"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"energy_uj\":5}]}",
         "telemetry 'energy_uj' needs 'energy_inferences'"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"sustained\":{}}]}",
         "telemetry 'sustained' must be an array of at most 11"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"sustained\":"
         "[[11,1,[]]]}]}",
         "telemetry 'sustained' needs [window < 11"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"sustained\":"
         "[[1,1,[]],[1,2,[]]]}]}",
         "telemetry 'sustained' needs [window < 11"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"sustained\":"
         "[[1,1,[[120,1]]]]}]}",
         "telemetry 'sustained' needs [index < 120"},
        {"{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\",\"sustained\":"
         "[[1,1]]}]}",
         "telemetry 'sustained' needs [window < 11"},
    };
    static struct mf_rollout_row got[MF_TELEMETRY_MAX_VERSIONS];

    (void)state;
    mf_kit_case_refused(bad, MF_TEST_COUNT(bad), parse_report, got);
}

#define SC_DEVICES 24
#define SC_MINUTES 13 /* minutes 0..12 after the activation: windows 0..9, then 10 for 10..12 */
#define SC_PER_MINUTE 20

static uint64_t sc_clock_ms;

static uint64_t sc_clock(void *payload)
{
    (void)payload;
    return sc_clock_ms;
}

static uint32_t sc_rng(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static int sc_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* The nearest-rank P99 of raw samples (sorted in place). */
static uint64_t sc_p99(uint64_t *raw, size_t n)
{
    size_t rank = (size_t)(0.99 * (double)n);

    if ((double)rank < 0.99 * (double)n)
        rank++;
    qsort(raw, n, sizeof(raw[0]), sc_cmp);
    return raw[rank - 1];
}

struct sc_raw {
    uint64_t cold[SC_DEVICES];
    uint64_t steady[SC_DEVICES * SC_MINUTES * SC_PER_MINUTE];
    int minute_of[SC_DEVICES * SC_MINUTES * SC_PER_MINUTE];
    size_t n_steady;
    uint64_t energy_uj, energy_n, steady_max;
    uint64_t counters[MF_TELEMETRY_COUNTERS];
    uint64_t energy_devices;
};

/* One device: an activation (cold inference), SC_PER_MINUTE inferences a minute for
 * SC_MINUTES simulated minutes that slow down after minute 4, steady-memory samples, and
 * (on two devices in three) energy and counters; the raw values are kept in `raw`. */
static void sc_device(mf_telemetry *t, struct sc_raw *raw, int d, uint32_t *seed)
{
    uint64_t mem_sum = 0;

    sc_clock_ms = 1000000u * (uint64_t)(d + 1);
    raw->cold[d] = 20000 + sc_rng(seed) % 30000;
    assert_int_equal(mf_telemetry_record_cold_latency(t, "det", "v2", raw->cold[d]), MF_OK);
    for (int m = 0; m < SC_MINUTES; m++) {
        for (int k = 0; k < SC_PER_MINUTE; k++) {
            uint64_t us = (m < 5 ? 1000 : 3000) + sc_rng(seed) % 2000;

            sc_clock_ms = 1000000u * (uint64_t)(d + 1) + (uint64_t)m * 60000u +
                          (uint64_t)k * (60000u / SC_PER_MINUTE);
            raw->steady[raw->n_steady] = us;
            raw->minute_of[raw->n_steady++] = m;
            assert_int_equal(mf_telemetry_record_latency(t, "det", "v2", us), MF_OK);
        }
    }
    for (int k = 0; k < 5; k++) {
        uint64_t b = (30u << 20) + sc_rng(seed) % (8u << 20);

        mem_sum += b;
        assert_int_equal(mf_telemetry_record_steady_memory(t, "det", "v2", b), MF_OK);
    }
    if (mem_sum / 5 > raw->steady_max)
        raw->steady_max = mem_sum / 5;
    if (d % 3 != 0) {
        uint64_t uj = 1000 + sc_rng(seed) % 100000, n = 1 + sc_rng(seed) % 300;

        assert_int_equal(mf_telemetry_record_energy(t, "det", "v2", uj, n), MF_OK);
        raw->energy_uj += uj;
        raw->energy_n += n;
        raw->energy_devices++;
        for (int c = 0; c < MF_TELEMETRY_COUNTERS; c++) {
            unsigned times = sc_rng(seed) % 7;

            for (unsigned k = 0; k < times; k++)
                assert_int_equal(mf_telemetry_count(t, "det", "v2", (mf_telemetry_counter)c),
                                 MF_OK);
            raw->counters[c] += times;
        }
    }
}

/* The device's check-in JSON, read by the server, into the fleet aggregate. */
static void sc_ingest(struct mf_rollout_agg *a, mf_telemetry *t)
{
    static struct mf_rollout_row got[MF_TELEMETRY_MAX_VERSIONS];
    size_t n = 0;

    read_back(got, &n, t);
    assert_int_equal(n, 1);
    mf_rollout__agg_add(a, &got[0]);
}

/* Every scorecard figure of a fleet, merged by the server from what devices sent, against
 * the raw values: percentiles in the bucket of the raw nearest-rank sample (never below),
 * sums and ratios exact, the sustained windows by minute after the activation. */
static void test_rollout__scorecard_merges_exactly(void **state)
{
    static struct sc_raw raw;
    static struct mf_rollout_agg a;
    static struct mf_rollout_figures f;
    static uint64_t tail[SC_DEVICES * SC_MINUTES * SC_PER_MINUTE];
    mf_platform_ops ops;
    uint32_t seed = 5;
    uint64_t ran, tried, want;

    (void)state;
    memset(&raw, 0, sizeof(raw));
    memset(&a, 0, sizeof(a));
    memset(&ops, 0, sizeof(ops));
    ops.version = MF_PLATFORM_OPS_VERSION;
    ops.monotonic_ms = sc_clock;
    for (int d = 0; d < SC_DEVICES; d++) {
        mf_telemetry *t = NULL;

        assert_int_equal(mf_telemetry_new(&t, NULL, &ops, "t"), MF_OK);
        sc_device(t, &raw, d, &seed);
        sc_ingest(&a, t);
        mf_telemetry_free(t);
    }
    mf_rollout__figures(&f, &a);
    /* Cold: one first inference per device, P99 from the merged cold histogram. */
    want = sc_p99(raw.cold, SC_DEVICES);
    assert_true(f.have[MF_METRIC_COLD_P99_US]);
    assert_true(f.v[MF_METRIC_COLD_P99_US] >= (double)want);
    assert_true(f.v[MF_METRIC_COLD_P99_US] ==
                (double)mf_telemetry_bucket_high(mf_telemetry_bucket(want)));
    assert_int_equal(f.devices[MF_METRIC_COLD_P99_US], SC_DEVICES);
    /* Sustained: P99 and rate from every starting minute, against the raw samples. */
    for (int after = 0; after < MF_TELEMETRY_SUSTAINED_WINDOWS; after++) {
        int p = mf_rollout__figure_id(MF_METRIC_SUSTAINED_P99_US, after);
        int r = mf_rollout__figure_id(MF_METRIC_SUSTAINED_RATE, after);
        size_t n = 0;
        /* Windows 0..9 are one minute each, window 10 holds minutes 10..12. */
        uint64_t minutes = (uint64_t)(SC_MINUTES - after) * SC_DEVICES;
        unsigned b;

        for (size_t i = 0; i < raw.n_steady; i++) {
            if (raw.minute_of[i] >= after)
                tail[n++] = raw.steady[i];
        }
        want = sc_p99(tail, n);
        b = mf_telemetry_bucket(want) / 2u;
        assert_true(f.have[p]);
        assert_true(f.v[p] >= (double)want);
        assert_true(f.v[p] == (double)mf_telemetry_bucket_high(2u * b + 1u));
        assert_int_equal(f.samples[p], n);
        assert_int_equal(f.devices[p], SC_DEVICES);
        assert_true(f.v[r] == (double)n / ((double)minutes * 60.0));
    }
    /* The throttling shows: from minute 5 on the P99 is the slow one. */
    assert_true(f.v[mf_rollout__figure_id(MF_METRIC_SUSTAINED_P99_US, 5)] >= 4000.0);
    assert_true(f.v[MF_METRIC_P99_LATENCY_US] >= 4000.0);
    /* Steady memory: the largest device mean; energy: the fleet's microjoules over the
     * inferences they cover, on the devices that measured it only. */
    assert_true(f.v[MF_METRIC_STEADY_MEMORY] == (double)raw.steady_max);
    assert_true(f.v[MF_METRIC_ENERGY_UJ] == (double)raw.energy_uj / (double)raw.energy_n);
    assert_int_equal(f.devices[MF_METRIC_ENERGY_UJ], raw.energy_devices);
    assert_int_equal(f.samples[MF_METRIC_ENERGY_UJ], raw.energy_n);
    /* Counters: summed, over inferences (steady + cold) or attempts (+ errors, timeouts). */
    ran = raw.n_steady + SC_DEVICES;
    tried = ran + raw.counters[MF_TELEMETRY_ERROR] + raw.counters[MF_TELEMETRY_TIMEOUT];
    assert_true(f.v[MF_METRIC_FALLBACK_RATE] ==
                (double)raw.counters[MF_TELEMETRY_FALLBACK] / (double)ran);
    assert_true(f.v[MF_METRIC_MEM_PRESSURE_RATE] ==
                (double)raw.counters[MF_TELEMETRY_MEM_PRESSURE] / (double)ran);
    assert_true(f.v[MF_METRIC_THERMAL_RATE] ==
                (double)raw.counters[MF_TELEMETRY_HOT] / (double)ran);
    assert_true(f.v[MF_METRIC_ERROR_RATE] ==
                (double)raw.counters[MF_TELEMETRY_ERROR] / (double)tried);
    assert_true(f.v[MF_METRIC_TIMEOUT_RATE] ==
                (double)raw.counters[MF_TELEMETRY_TIMEOUT] / (double)tried);
    /* A fleet with no energy counter anywhere has no energy figure: absent, not 0. */
    memset(&a, 0, sizeof(a));
    for (int d = 0; d < 3; d++) {
        mf_telemetry *t = NULL;

        assert_int_equal(mf_telemetry_new(&t, NULL, &ops, "t"), MF_OK);
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v2", 100), MF_OK);
        sc_ingest(&a, t);
        mf_telemetry_free(t);
    }
    mf_rollout__figures(&f, &a);
    assert_false(f.have[MF_METRIC_ENERGY_UJ]);
    assert_false(f.have[MF_METRIC_COLD_P99_US]);
    assert_false(f.have[MF_METRIC_STEADY_MEMORY]);
    assert_true(f.have[MF_METRIC_P99_LATENCY_US]);
}

/* The stratified estimate against a hand computation: 20 % of the inferences are hard
 * (uncertain), 30 of 50 labelled hard samples agree with the teacher, 38 of 40 audit
 * samples do. By hand: 0.2 x 30/50 + 0.8 x 38/40 = 0.12 + 0.76 = 0.88; per stratum
 * p = (x + 1)/(n + 2): 31/52 and 39/42, variance 0.2^2 x (31/52)(21/52)/50 + 0.8^2 x
 * (39/42)(3/42)/40 = 0.00019260 + 0.00106122 = 0.00125383, half-width 1.96 x 0.035410 =
 * 0.069401: [0.81060, 0.94940]. The hard samples alone (today's teacher_agreement) say 0.6. */
static void test_rollout__stratified_estimate_by_hand(void **state)
{
    struct mf_rollout_estimate e;

    (void)state;
    assert_int_equal(mf_rollout__stratified(&e, 0.2, 50, 30, 40, 38), 1);
    assert_float_equal(e.value, 0.88, 1e-12);
    assert_float_equal(e.lo, 0.81060, 1e-5);
    assert_float_equal(e.hi, 0.94940, 1e-5);
    assert_int_equal(e.samples, 90);
    /* Every sample agreeing still leaves a width; the interval stays inside [0, 1]. */
    assert_int_equal(mf_rollout__stratified(&e, 0.5, 10, 10, 10, 10), 1);
    assert_float_equal(e.value, 1.0, 1e-12);
    assert_true(e.lo < 0.99);
    assert_float_equal(e.hi, 1.0, 1e-12);
    /* No hard inference: the audit slice alone, and the hard samples do not count. */
    assert_int_equal(mf_rollout__stratified(&e, 0.0, 0, 0, 40, 38), 1);
    assert_float_equal(e.value, 0.95, 1e-12);
    assert_int_equal(e.samples, 40);
    /* A stratum with a share but no labelled sample: no estimate, never a guess. */
    assert_int_equal(mf_rollout__stratified(&e, 0.2, 0, 0, 40, 38), 0);
    assert_int_equal(mf_rollout__stratified(&e, 0.2, 50, 30, 0, 0), 0);
    assert_int_equal(mf_rollout__stratified(&e, 0.2, 5, 6, 40, 38), 0);
}

/* The accuracy red line acts only on an interval that excludes its bound: below it
 * breaches, above it is clean, straddling it waits (and blocks advancing). */
static void test_rollout__accuracy_line_acts_on_the_interval(void **state)
{
    static const struct {
        double min;
        int evaluated, breached;
    } cases[] = {{0.97, 1, 1}, {0.88, 0, 0}, {0.80, 1, 0}};
    static struct mf_rollout_agg a;
    struct mf_rollout_figures f;
    struct mf_rollout_verdict v[MF_ROLLOUT_MAX_LINES];
    struct mf_rollout_plan p;
    struct mf_ctx ctx;
    char json[256];

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memset(&a, 0, sizeof(a));
    add_devices(&a, 4, 1000, 50, 1000); /* each: 10 of 100 asks uncertain */
    a.labelled[0] = 100;                /* hard: 60 % agree */
    a.label_agreed[0] = 60;
    a.labelled[1] = 200; /* audit: 95 % agree */
    a.label_agreed[1] = 190;
    mf_rollout__figures(&f, &a);
    assert_true(f.have[MF_METRIC_ACCURACY]);
    assert_float_equal(f.v[MF_METRIC_ACCURACY], 0.1 * 0.6 + 0.9 * 0.95, 1e-12);
    assert_true(f.lo[MF_METRIC_ACCURACY] < 0.915 && f.hi[MF_METRIC_ACCURACY] > 0.915);
    assert_int_equal(f.samples[MF_METRIC_ACCURACY], 300);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double lo = f.lo[MF_METRIC_ACCURACY], hi = f.hi[MF_METRIC_ACCURACY];

        /* The bounds sit where the case says: above the interval, inside it, below it. */
        if (c == 1)
            assert_true(lo < 0.915 - 0.02 && hi > 0.915 + 0.02);
        (void)snprintf(json, sizeof(json),
                       "{\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":\"accuracy\","
                       "\"min\":%.6f}]}",
                       c == 1 ? 0.915 : cases[c].min);
        assert_int_equal(parse(&p, &ctx, json), MF_OK);
        (void)mf_rollout__check(v, &p, &f, NULL);
        assert_int_equal(v[0].evaluated, cases[c].evaluated);
        assert_int_equal(v[0].breached, cases[c].breached);
        if (!cases[c].evaluated)
            assert_non_null(strstr(v[0].waiting, "holds the bound"));
    }
    /* Without labelled audit samples there is no estimate: the line waits. */
    a.labelled[1] = a.label_agreed[1] = 0;
    mf_rollout__figures(&f, &a);
    assert_false(f.have[MF_METRIC_ACCURACY]);
    (void)mf_rollout__check(v, &p, &f, NULL);
    assert_false(v[0].evaluated);
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
        cmocka_unit_test(test_rollout__scorecard_merges_exactly),
        cmocka_unit_test(test_rollout__stratified_estimate_by_hand),
        cmocka_unit_test(test_rollout__accuracy_line_acts_on_the_interval),
    };
    return cmocka_run_group_tests_name("rollout", tests, NULL, NULL);
}
