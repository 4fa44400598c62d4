/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the mf-agent configuration parser (device/agent/agent_config.c). */
#include "mf_test.h"
#include "kit_alloc.h"
#include "agent_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOOD                                                                                       \
    "{\n  \"server_url\": \"http://127.0.0.1:8080\",\n  \"device_id\": \"cam-1\",\n"               \
    "  \"enrollment_token_file\": \"/etc/mf/enroll.token\",\n  \"state_dir\": \"/var/lib/mf\",\n"  \
    "  \"models\": [\"detector\", \"classifier\"],\n  \"poll_interval_s\": 30,\n"                  \
    "  \"log_level\": \"debug\",\n  \"trust_root_file\": \"/etc/mf/root.json\",\n"                 \
    "  \"confirm\": \"manual\", \"max_unconfirmed_starts\": 5, \"metered\": true,\n"               \
    "  \"max_recv_bytes_per_s\": 1048576, \"stall_timeout_s\": 20,\n"                              \
    "  \"report_telemetry\": false\n}\n"

/* The delivery and confirmation settings, checked as one block by both the every-key and the
 * defaults case (a flag is compared as set or not). */
static void expect_delivery(const struct mf_agent_config *c, int confirm_manual,
                            long max_unconfirmed_starts, int metered, long max_recv_bytes_per_s,
                            long stall_timeout_s)
{
    assert_int_equal(c->confirm_manual != 0, confirm_manual);
    assert_int_equal(c->max_unconfirmed_starts, max_unconfirmed_starts);
    assert_int_equal(c->metered != 0, metered);
    assert_int_equal(c->max_recv_bytes_per_s, max_recv_bytes_per_s);
    assert_int_equal(c->stall_timeout_s, stall_timeout_s);
}

static void test_agent_config__parses_every_key(void **state)
{
    struct mf_agent_config c;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_agent_config__parse(&c, &ctx, "a.json", GOOD, strlen(GOOD)), MF_OK);
    assert_string_equal(c.server_url, "http://127.0.0.1:8080");
    assert_string_equal(c.device_id, "cam-1");
    assert_string_equal(c.enrollment_token_file, "/etc/mf/enroll.token");
    assert_string_equal(c.state_dir, "/var/lib/mf");
    assert_int_equal(c.n_models, 2);
    assert_string_equal(c.models[1], "classifier");
    assert_int_equal(c.poll_interval_s, 30);
    assert_int_equal(c.log_level, MF_LOG_DEBUG);
    assert_string_equal(c.trust_root_file, "/etc/mf/root.json");
    assert_null(c.ca_file);
    expect_delivery(&c, 1, 5, 1, 1048576, 20);
    assert_false(c.report_telemetry);
    mf_agent_config__free(&c, &ctx);
}

static void test_agent_config__defaults(void **state)
{
    static const char min[] = "{\"server_url\":\"http://h\",\"device_id\":\"d\","
                              "\"state_dir\":\"s\",\"models\":[\"m\"],\"trust_root_file\":\"r\"}";
    struct mf_agent_config c;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_agent_config__parse(&c, &ctx, "m.json", min, strlen(min)), MF_OK);
    assert_int_equal(c.poll_interval_s, 60);
    assert_int_equal(c.log_level, MF_LOG_INFO);
    assert_null(c.enrollment_token_file);
    expect_delivery(&c, 0, 3, 0, 0, 60);
    assert_true(c.report_telemetry); /* plain agents report, so rollouts can advance */
    mf_agent_config__free(&c, &ctx);
}

/* Each bad input fails with MF_E_INVALID and a message naming the file and the culprit. */
static void test_agent_config__errors_cite_file_and_key(void **state)
{
    static const struct {
        const char *json;
        const char *expect;
    } cases[] = {
        {"{\"device_id\":\"d\",\"state_dir\":\"s\",\"models\":[\"m\"]}",
         "missing key \"server_url\""},
        {"{\"server_url\":\"http://h\",\"device_id\":\"d\",\"state_dir\":\"s\",\"models\":[\"m\"],"
         "\"poll_interval\":5}",
         "unknown key \"poll_interval\""},
        {"{\"server_url\":7}", "key \"server_url\": expected a non-empty string"},
        {"{\"server_url\":\"\"}", "key \"server_url\": expected a non-empty string"},
        {"{\"models\":[]}", "key \"models\": expected an array"},
        {"{\"models\":\"detector\"}", "key \"models\": expected an array"},
        {"{\"models\":[\"a\", 3]}", "key \"models\"[1]: expected a string"},
        {"{\"poll_interval_s\":0}", "key \"poll_interval_s\""},
        {"{\"poll_interval_s\":1.5}", "key \"poll_interval_s\""},
        {"{\"poll_interval_s\":\"60\"}", "key \"poll_interval_s\""},
        {"{\"log_level\":\"loud\"}", "key \"log_level\""},
        {"{\"confirm\":\"sometimes\"}", "key \"confirm\": expected \"auto\" or \"manual\""},
        {"{\"metered\":1}", "key \"metered\": expected true or false"},
        {"{\"report_telemetry\":\"yes\"}", "key \"report_telemetry\": expected true or false"},
        {"{\"max_unconfirmed_starts\":0}",
         "key \"max_unconfirmed_starts\": expected an integer in 1..1000"},
        {"{\"max_recv_bytes_per_s\":-1}", "key \"max_recv_bytes_per_s\""},
        {"{\"stall_timeout_s\":3601}", "key \"stall_timeout_s\": expected an integer in 1..3600"},
        {"{\"device_id\":\"a\",\"device_id\":\"b\"}", "duplicate member name 'device_id'"},
        /* No trust on first use: the provisioned root is required. */
        {"{\"server_url\":\"http://h\",\"device_id\":\"d\",\"state_dir\":\"s\",\"models\":[\"m\"]}",
         "missing key \"trust_root_file\""},
        {"{\"trust_root_file\":\"\"}", "key \"trust_root_file\": expected a non-empty string"},
        {"[1,2]", "expected a JSON object"},
        {"{\n\"server_url\": \"x\",\n\"device_id\" \"d\"\n}", "line 3: not valid JSON"},
        {"", "line 1: not valid JSON"},
    };
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mf_agent_config c;
        int err =
            mf_agent_config__parse(&c, &ctx, "agent.json", cases[i].json, strlen(cases[i].json));

        if (err != MF_E_INVALID || !strstr(mf_ctx__errmsg(&ctx), cases[i].expect) ||
            strncmp(mf_ctx__errmsg(&ctx), "agent.json: ", 12) != 0)
            print_error("case %zu: %d \"%s\"\n", i, err, mf_ctx__errmsg(&ctx));
        assert_int_equal(err, MF_E_INVALID);
        assert_non_null(strstr(mf_ctx__errmsg(&ctx), cases[i].expect));
        assert_int_equal(strncmp(mf_ctx__errmsg(&ctx), "agent.json: ", 12), 0);
        assert_null(c.server_url); /* nothing left to free */
        assert_null(c.models);
    }
}

/* One parse with allocation `n` failing: MF_E_NOMEM saying so, or the config. */
static void parse_with_failure(struct mf_kit_alloc *k, long n, void *payload)
{
    struct mf_agent_config c;
    struct mf_ctx ctx;
    int err;

    (void)n;
    (void)payload;
    mf_ctx__init(&ctx, &k->a, NULL, NULL, "test");
    err = mf_agent_config__parse(&c, &ctx, "a.json", GOOD, strlen(GOOD));
    if (err == MF_E_NOMEM) {
        assert_non_null(strstr(mf_ctx__errmsg(&ctx), "no memory"));
        return;
    }
    assert_int_equal(err, MF_OK);
    mf_agent_config__free(&c, &ctx);
}

static void test_agent_config__every_allocation_failure_is_clean(void **state)
{
    struct mf_kit_alloc k;

    (void)state;
    (void)mf_kit_alloc_init(&k, -1, MF_KIT_ALLOC_FAIL_ONE);
    /* several allocations were failed one by one */
    assert_true(mf_kit_alloc_each_failure(&k, 100, parse_with_failure, NULL) >= 5);
}

static void write_tmp(char *path, const char *text)
{
    int fd = mkstemp(path);
    FILE *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    (void)fputs(text, f);
    (void)fclose(f);
}

static void test_agent_config__load_and_secret_files(void **state)
{
    char cfg_path[] = "/tmp/mf-cfg-XXXXXX", tok_path[] = "/tmp/mf-tok-XXXXXX";
    char empty_path[] = "/tmp/mf-tok-XXXXXX";
    struct mf_agent_config c;
    struct mf_ctx ctx;
    char token[16];

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    write_tmp(cfg_path, GOOD);
    assert_int_equal(mf_agent_config__load(&c, &ctx, cfg_path), MF_OK);
    assert_string_equal(c.device_id, "cam-1");
    mf_agent_config__free(&c, &ctx);
    assert_int_equal(mf_agent_config__load(&c, &ctx, "/nonexistent/agent.json"), MF_E_IO);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "/nonexistent/agent.json"));

    write_tmp(tok_path, "mfe_abc\r\n");
    assert_int_equal(mf_agent_config__read_secret(token, sizeof(token), &ctx, tok_path), MF_OK);
    assert_string_equal(token, "mfe_abc");
    assert_int_equal(mf_agent_config__read_secret(token, 4, &ctx, tok_path), MF_E_LIMIT);
    (void)unlink(tok_path);
    write_tmp(empty_path, "\n");
    assert_int_equal(mf_agent_config__read_secret(token, sizeof(token), &ctx, empty_path),
                     MF_E_INVALID);
    (void)unlink(empty_path);
    (void)unlink(cfg_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_config__parses_every_key),
        cmocka_unit_test(test_agent_config__defaults),
        cmocka_unit_test(test_agent_config__errors_cite_file_and_key),
        cmocka_unit_test(test_agent_config__every_allocation_failure_is_clean),
        cmocka_unit_test(test_agent_config__load_and_secret_files),
    };
    return cmocka_run_group_tests_name("agent_config", tests, NULL, NULL);
}
