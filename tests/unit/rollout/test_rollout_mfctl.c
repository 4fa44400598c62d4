/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl rollout and versions stats tables (cmd_rollout.c) from the server's JSON, and their
 * usage errors; the network half runs in tests/integration/rollout_e2e.sh.
 */
#include "mf_test.h"
#include "cmd_rollout.h"
#include "mfctl_fixture.h"
#include "kit_fs.h"
#include "kit_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_rollout_mfctl__status_view_shows_waves_lines_and_events(void **state)
{
    static const char json[] =
        "{\"id\":3,\"model\":\"det\",\"version\":\"v2\",\"previous\":\"v1\",\"state\":\"halted\","
        "\"wave\":0,\"soak_s\":60,\"min_devices\":5,\"reporting\":7,\"wave_reporting\":6,"
        "\"soak_started_at\":120,\"line_min_devices\":3,\"line_min_inferences\":500,"
        "\"control_devices\":11,"
        "\"breach\":\"p99_latency_us 4095 > bound 3070.5\","
        "\"waves\":[{\"kind\":\"percent\",\"percent\":5,\"devices\":9,\"state\":\"admitted\"},"
        "{\"kind\":\"group\",\"group\":\"lab\",\"devices\":4,\"state\":\"waiting\"}],"
        "\"red_lines\":[{\"metric\":\"p99_latency_us\",\"kind\":\"relative\",\"limit\":1.5,"
        "\"evaluated\":true,\"breached\":true,\"value\":4095,\"bound\":3070.5},"
        "{\"metric\":\"teacher_agreement\",\"kind\":\"absolute\",\"limit\":0.9,"
        "\"evaluated\":false,\"breached\":false,\"waiting_for\":\"canary: 2 of 3 devices\"},"
        "{\"metric\":\"peak_memory\",\"kind\":\"absolute\",\"limit\":67108864,"
        "\"evaluated\":true,\"breached\":false,\"value\":41943040,\"bound\":67108864}],"
        "\"scorecard\":[{\"metric\":\"p99_latency_us\",\"version\":4095,\"previous\":2047,"
        "\"devices\":7,\"previous_devices\":11}],"
        "\"classes\":[{\"class\":\"cam-lite\",\"halted\":true,\"scorecard\":[{\"metric\":"
        "\"cold_p99_us\",\"version\":16383,\"previous\":8191,\"devices\":3,"
        "\"previous_devices\":4}]},{\"class\":\"cam-pro\",\"halted\":false,\"scorecard\":[]}],"
        "\"events\":[{\"at\":100,\"kind\":\"created\",\"detail\":\"{}\"},"
        "{\"at\":1764644645,\"kind\":\"halted\",\"detail\":\"p99\"}]}";
    char *text = mfctl_print_with(mfctl__print_rollout, json, MF_OK);

    (void)state;
    MFCTL_TEXT_HAS(text, "rollout 3: det v2 (previous v1)  state halted  wave 1 of 2",
                   "halted by: p99_latency_us 4095 > bound 3070.5", "percent  5 %", "group    lab",
                   "admitted", "x1.50", "4095 us", "3070.5 us  BREACHED",
                   "waiting (canary: 2 of 3 devices)", "40.0 MiB", "64.0 MiB  ok",
                   "soak 60 s once 5 devices of the wave report (6 now, 7 in all admitted waves): "
                   "soaking",
                   "each line counts clean on 3 devices, 500 inferences; control group 11 devices",
                   "2025-12-02T03:04:05Z halted",
                   "scorecard (v2 vs v1):", "class cam-lite (halted) (v2 vs v1):", "16383 us",
                   "8191 us", "class cam-pro (v2 vs v1):");
    /* Figures with units or as integers, never an exponent (issue 17: 4.1943e+07). */
    assert_null(strstr(text, "e+0"));
    free(text);
}

/* Times as ISO 8601 UTC, the whole plan however long, the created event pointing at it. */
static void test_rollout_mfctl__status_view_iso_times_and_plan(void **state)
{
    static const char json[] =
        "{\"id\":4,\"model\":\"det\",\"version\":\"v3\",\"previous\":\"v2\",\"state\":\"running\","
        "\"wave\":0,\"soak_s\":60,\"min_devices\":5,\"reporting\":0,\"breach\":\"\","
        "\"waves\":[],\"red_lines\":[],"
        "\"plan\":{\"soak_s\":60,\"waves\":[{\"percent\":5}],\"red_lines\":[{\"metric\":"
        "\"p99_latency_us\",\"relative\":1.5}],\"note\":\"a plan longer than any event line"
        " keeps every byte of it in the status view\"},"
        "\"events\":[{\"at\":1764646645,\"at_iso\":\"2025-12-02T03:37:25Z\",\"kind\":"
        "\"created\",\"detail\":\"{\\\"soak_s\\\":60,\\\"wa\"},{\"at\":1764646705,\"at_iso\":"
        "\"2025-12-02T03:38:25Z\",\"kind\":\"advanced\",\"detail\":\"wave 1 admitted\"}]}";
    char *text = mfctl_print_with(mfctl__print_rollout, json, MF_OK);

    (void)state;
    MFCTL_TEXT_HAS(text, "plan: {\"soak_s\":60,", "every byte of it in the status view\"}\n",
                   "events (UTC):", "  2025-12-02T03:37:25Z created     (plan above)",
                   "  2025-12-02T03:38:25Z advanced    wave 1 admitted");
    assert_null(strstr(text, "1764646645"));
    free(text);
}

static void test_rollout_mfctl__stats_and_list_tables(void **state)
{
    static const char stats[] =
        "{\"model\":\"det\",\"skipped_reports\":0,\"versions\":[{\"version\":\"v1\","
        "\"devices_running\":30,\"devices_reporting\":31,\"install_ok\":31,\"install_failed\":1,"
        "\"p50_us\":1087,\"p95_us\":1983,\"p99_us\":2047,\"peak_memory\":41943040,"
        "\"offload_rate\":0.05,\"teacher_agreement\":0.97,\"figures\":{"
        "\"energy_uj\":{\"value\":512.5,\"lo\":512.5,\"hi\":512.5,\"devices\":3,\"samples\":0},"
        "\"accuracy\":{\"value\":0.91,\"lo\":0.88,\"hi\":0.94,\"devices\":31,\"samples\":400},"
        "\"sustained_p99_us@5\":{\"value\":4095,\"lo\":4095,\"hi\":4095,\"devices\":31,"
        "\"samples\":900}}}],"
        "\"classes\":[{\"class\":\"cam-lite\",\"versions\":[{\"version\":\"v1\","
        "\"devices_reporting\":7,\"p99_us\":8191,\"figures\":{\"cold_p99_us\":{\"value\":16383,"
        "\"lo\":16383,\"hi\":16383,\"devices\":7,\"samples\":7}}}]}]}";
    static const char list[] = "{\"rollouts\":[{\"id\":4,\"model\":\"det\",\"version\":\"v3\","
                               "\"previous\":\"v2\",\"state\":\"running\",\"wave\":1}]}";
    char *text = mfctl_print_with(mfctl__print_stats, stats, MF_OK);

    (void)state;
    MFCTL_TEXT_HAS(text, "P99_US", "v1", "2047", "40.0 MiB", "0.0500");
    /* Every figure in its unit, the accuracy with its interval; then each class's table. */
    MFCTL_TEXT_HAS(text, "energy_uj", "512.5 uJ  (3 devices, 0 samples)", "accuracy",
                   "0.9100  [0.8800, 0.9400]  (31 devices, 400 samples)", "sustained_p99_us@5",
                   "4095 us", "class cam-lite:", "8191", "cold_p99_us", "16383 us");
    free(text);
    text = mfctl_print_with(mfctl__print_rollouts, list, MF_OK);
    assert_non_null(strstr(text, "4     det"));
    assert_non_null(strstr(text, "running"));
    free(text);
    text = mfctl_print_with(mfctl__print_rollouts, stats, MF_E_INVALID); /* not a rollout list */
    free(text);
    text = mfctl_print_with(mfctl__print_stats, "not json", MF_E_INVALID);
    free(text);
}

static void test_rollout_mfctl__usage_errors(void **state)
{
    static const char *const bad[][6] = {
        {"mfctl", "rollout", NULL},
        {"mfctl", "rollout", "pause", NULL},
        {"mfctl", "rollout", "pause", "x1", NULL},
        {"mfctl", "rollout", "launch", "1", NULL},
        {"mfctl", "rollout", "create", "det", "v/2", "plan.json"},
        {"mfctl", "versions", "stats", NULL},
        /* promote deploys with no canary: only with --force, and a model and version */
        {"mfctl", "promote", "det", "v2", NULL},
        {"mfctl", "promote", "det", "--force", NULL},
        {"mfctl", "promote", "det", "v/2", "--force", NULL},
        {"mfctl", "promote", "det", "v2", "--forse", NULL},
        {"mfctl", "rollout", "status", "--watch", NULL},
        {"mfctl", "rollout", "status", "3", "--watch", "--interval"},
        {"mfctl", "rollout", "status", "3", "--interval", "0"},
        {"mfctl", "rollout", "status", "3", "--interval", "2"},
        {"mfctl", "rollout", "pause", "3", "--watch", NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct mfctl_run r;
        int argc = 0;

        while (argc < 6 && bad[i][argc])
            argc++;
        mfctl_run(&r, argc, bad[i]);
        assert_int_equal(r.rc, 2);
        assert_non_null(strstr(r.err, "usage: mfctl"));
        if (i == 6) /* the refusal says why */
            assert_non_null(strstr(r.err, "--force is required"));
        mfctl_run_free(&r);
    }
}

/* A status answer of rollout 5 in `state` (Connection: close: one per request). */
static void script_state(struct mf_kit_http *s, const char *state, char *buf, size_t cap)
{
    char body[256];
    struct mf_kit_http_reply r = {.raw = buf};

    (void)snprintf(body, sizeof(body),
                   "{\"id\":5,\"model\":\"det\",\"version\":\"v3\",\"previous\":\"v2\","
                   "\"state\":\"%s\",\"wave\":0,\"waves\":[],\"red_lines\":[],\"events\":[]}",
                   state);
    (void)snprintf(buf, cap,
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n%s",
                   strlen(body), body);
    mf_kit_http_script(s, &r);
}

/* --watch redraws until the rollout ends; 0 only when it ended done. */
static void test_rollout_mfctl__watch_until_the_end(void **state)
{
    static const struct {
        const char *last;
        int rc;
        const char *err;
    } cases[] = {{"done", 0, NULL}, {"halted", 1, "rollout 5 ended halted"}};
    char tok[] = "/tmp/mfctl-watch-XXXXXX";

    (void)state;
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char a[512], b[512], c[512];
        struct mf_kit_http s;
        struct mfctl_run r;
        const char *first;

        mf_kit_http_start(&s, NULL, NULL);
        script_state(&s, "running", a, sizeof(a));
        script_state(&s, "paused", b, sizeof(b));
        script_state(&s, cases[i].last, c, sizeof(c));
        MFCTL_RUN(&r, "--server", s.url, "--token-file", tok, "rollout", "status", "5", "--watch",
                  "--interval", "1");
        assert_int_equal(r.rc, cases[i].rc);
        assert_int_equal(mf_kit_http_requests(&s), 3);
        assert_non_null(strstr(mf_kit_http_request(&s, 2)->head, "GET /v1/admin/rollouts/5 "));
        first = strstr(r.out, "state running");
        assert_non_null(first);
        assert_non_null(strstr(first, "state paused"));
        assert_non_null(strstr(strstr(first, "state paused"), cases[i].last));
        if (cases[i].err)
            assert_non_null(strstr(r.err, cases[i].err));
        mf_kit_http_stop(&s);
        mfctl_run_free(&r);
    }
    (void)unlink(tok);
}

int main(void)
{
    return MF_TEST_RUN(
        "rollout_mfctl", NULL, NULL,
        cmocka_unit_test(test_rollout_mfctl__status_view_shows_waves_lines_and_events),
        cmocka_unit_test(test_rollout_mfctl__status_view_iso_times_and_plan),
        cmocka_unit_test(test_rollout_mfctl__stats_and_list_tables),
        cmocka_unit_test(test_rollout_mfctl__usage_errors),
        cmocka_unit_test(test_rollout_mfctl__watch_until_the_end));
}
