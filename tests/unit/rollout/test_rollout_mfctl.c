/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl rollout and versions stats tables (cmd_rollout.c) from the server's JSON, and their
 * usage errors; the network half runs in tests/integration/rollout_e2e.sh.
 */
#include "mf_test.h"
#include "cmd_rollout.h"
#include "mfctl_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "\"evaluated\":false,\"breached\":false,\"waiting_for\":\"canary: 2 of 3 devices\"}],"
        "\"events\":[{\"at\":100,\"kind\":\"created\",\"detail\":\"{}\"},"
        "{\"at\":160,\"kind\":\"halted\",\"detail\":\"p99\"}]}";
    char *text = mfctl_print_with(mfctl__print_rollout, json, MF_OK);

    (void)state;
    MFCTL_TEXT_HAS(text, "rollout 3: det v2 (previous v1)  state halted  wave 1 of 2",
                   "halted by: p99_latency_us 4095 > bound 3070.5", "percent  5 %", "group    lab",
                   "admitted", "3070.5  BREACHED", "waiting (canary: 2 of 3 devices)",
                   "soak 60 s once 5 devices of the wave report (6 now, 7 in all admitted waves): "
                   "soaking",
                   "each line counts clean on 3 devices, 500 inferences; control group 11 devices",
                   "160 halted");
    free(text);
}

static void test_rollout_mfctl__stats_and_list_tables(void **state)
{
    static const char stats[] =
        "{\"model\":\"det\",\"skipped_reports\":0,\"versions\":[{\"version\":\"v1\","
        "\"devices_running\":30,\"devices_reporting\":31,\"install_ok\":31,\"install_failed\":1,"
        "\"p50_us\":1087,\"p95_us\":1983,\"p99_us\":2047,\"peak_memory\":41943040,"
        "\"offload_rate\":0.05,\"teacher_agreement\":0.97}]}";
    static const char list[] = "{\"rollouts\":[{\"id\":4,\"model\":\"det\",\"version\":\"v3\","
                               "\"previous\":\"v2\",\"state\":\"running\",\"wave\":1}]}";
    char *text = mfctl_print_with(mfctl__print_stats, stats, MF_OK);

    (void)state;
    MFCTL_TEXT_HAS(text, "P99_US", "v1", "2047", "41943040", "0.0500");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollout_mfctl__status_view_shows_waves_lines_and_events),
        cmocka_unit_test(test_rollout_mfctl__stats_and_list_tables),
        cmocka_unit_test(test_rollout_mfctl__usage_errors),
    };

    return cmocka_run_group_tests_name("rollout_mfctl", tests, NULL, NULL);
}
