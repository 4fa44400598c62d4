/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of mfctl (server/mfctl/): argument parsing, table printing, and publish/models
 * against a one-request fake server on 127.0.0.1 (ephemeral port, one thread).
 */
#include "mf_test.h"
#include "mfctl_fixture.h"
#include "cmd_audit.h"

#include "kit_fs.h"
#include "kit_http.h"

#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int setup_env(void **state)
{
    (void)state;
    (void)unsetenv("MF_SERVER");
    (void)unsetenv("MF_TOKEN_FILE");
    return 0;
}

static void test_mfctl__global_help_lists_every_command(void **state)
{
    struct mfctl_run r;

    (void)state;
    MFCTL_RUN(&r, "--help");
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "publish"));
    assert_non_null(strstr(r.out, "models"));
    assert_non_null(strstr(r.out, "devices"));
    assert_non_null(strstr(r.out, "MF_SERVER"));
    assert_non_null(strstr(r.out, "EXIT STATUS"));
    mfctl_run_free(&r);
    MFCTL_RUN(&r, "--version");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "mfctl " MF_VERSION_STRING "\n");
    mfctl_run_free(&r);
}

static void test_mfctl__usage_errors_exit_2(void **state)
{
    (void)state;
    MFCTL_EXPECT(2, "unknown command \"frobnicate\"", "frobnicate");
    MFCTL_EXPECT(2, "\"--bogus\"", "--bogus", "models");
    MFCTL_EXPECT(2, NULL, "--server");
    MFCTL_EXPECT(2, "no command", "--server", "http://x");
    MFCTL_EXPECT(2, "expected NAME VERSION FILE", "publish", "detector", "v1");
    MFCTL_EXPECT(2, "\"../etc\"", "publish", "../etc", "v1", "/dev/null");
    MFCTL_EXPECT(2, "unknown option \"--verbose\"", "models", "--verbose");
    MFCTL_EXPECT(2, "unexpected argument \"extra\"", "devices", "extra");
}

/* `mfctl CMD --help` exits 0 with the usage on stdout (naming CMD when `names_it`). */
static void expect_help(const char *const *cmds, size_t n, int names_it)
{
    for (size_t i = 0; i < n; i++) {
        struct mfctl_run r;

        MFCTL_RUN(&r, cmds[i], "--help");
        assert_int_equal(r.rc, 0);
        assert_non_null(strstr(r.out, "usage: mfctl"));
        if (names_it)
            assert_non_null(strstr(r.out, cmds[i]));
        mfctl_run_free(&r);
    }
}

static void test_mfctl__command_help(void **state)
{
    static const char *const cmds[] = {"publish", "upload", "release",
                                       "trust",   "models", "devices"};

    (void)state;
    expect_help(cmds, MF_TEST_COUNT(cmds), 1);
}

static void test_mfctl__server_and_token_are_required(void **state)
{
    (void)state;
    MFCTL_EXPECT(1, "no server", "models");
    /* The environment supplies the server; the token is still missing. */
    assert_int_equal(setenv("MF_SERVER", "http://127.0.0.1:1", 1), 0);
    MFCTL_EXPECT(1, "no admin token", "models");
    MFCTL_EXPECT(1, "/nonexistent/token", "--token-file", "/nonexistent/token", "devices");
    MFCTL_EXPECT(1, "/nonexistent/model.bin", "publish", "m", "v1", "/nonexistent/model.bin",
                 "--release-key", "/nonexistent/k");
}

static void test_mfctl__tables(void **state)
{
    static const char models[] =
        "{\"models\":[{\"name\":\"detector\",\"versions\":["
        "{\"version\":\"v1\",\"sha256\":\"abcdef0123456789ffff\",\"size\":1234,"
        "\"created_at\":1764500000},"
        "{\"version\":\"v2\",\"sha256\":\"0123\",\"size\":5,\"created_at\":1764500100}]},"
        "{\"name\":\"empty\",\"versions\":[]}]}";
    static const char devices[] =
        "{\"devices\":[{\"device_id\":\"cam-0001\",\"enrolled_at\":1764500000,"
        "\"last_seen\":1764500100,\"models\":[{\"name\":\"detector\",\"version\":\"v2\","
        "\"sha256\":\"x\",\"status\":\"failed\",\"detail\":\"sha256 mismatch\","
        "\"reported_at\":1764500100,\"running_version\":\"v1\"}]},"
        "{\"device_id\":\"cam-0002\",\"models\":[]},"
        "{\"device_id\":\"cam-0003\",\"last_seen\":1764500100,\"models\":["
        "{\"name\":\"detector\",\"version\":\"v2\",\"status\":\"failed\","
        "\"detail\":\"rolled back: health check failed\",\"running_version\":\"v1\"},"
        "{\"name\":\"ocr\",\"version\":\"o3\",\"status\":\"installed\",\"detail\":\"\","
        "\"running_version\":\"o3\"},"
        "{\"name\":\"seg\",\"version\":\"s2\",\"status\":\"pending_install\","
        "\"detail\":\"installs in the window\",\"running_version\":\"s1\"}]}]}";
    struct mfctl_capture k;

    (void)state;
    mfctl_capture(&k);
    assert_int_equal(mfctl__print_models(&k.c, models, strlen(models)), MF_OK);
    assert_int_equal(mfctl__print_devices(&k.c, devices, strlen(devices)), MF_OK);
    (void)fclose(k.c.out);
    assert_non_null(strstr(k.text, "MODEL"));
    assert_non_null(strstr(k.text, "abcdef012345 ")); /* digest shortened to 12 digits */
    MFCTL_TEXT_HAS(k.text, "2025-11-30T10:53:20Z", "empty", "cam-0002", "RUNNING", "ROLLED BACK");
    /* A failed install leaves the device on what it ran; a rollback shows both versions,
     * each in its own column (issue 17: the rolled-back version was shown as running). */
    MFCTL_TEXT_HAS(
        k.text,
        "cam-0001             2025-11-30T10:55:00Z  detector         v1           failed  "
        "     -            v2: sha256 mismatch",
        "cam-0003             2025-11-30T10:55:00Z  detector         v1           "
        "rolled back  v2           health check failed",
        "cam-0003             2025-11-30T10:55:00Z  ocr              o3           "
        "installed    -",
        /* downloaded, waiting for its install window: still runs the old version */
        "cam-0003             2025-11-30T10:55:00Z  seg              s1           "
        "pending_install -            s2: installs in the window");
    free(k.text);
    k.c.out = open_memstream(&k.text, &k.len);
    assert_int_equal(mfctl__print_models(&k.c, "{\"devices\":[]}", 14), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&k.c.ctx), "\"models\""));
    assert_int_equal(mfctl__print_devices(&k.c, "not json", 8), MF_E_INVALID);
    (void)fclose(k.c.out);
    free(k.text);
}

/* ---- a fake server answering one request with a canned response ---- */

/* Starts `s` answering its first request with the HTTP response `raw`; `url` gets its
 * address. The request is read back with mf_kit_http_request(s, 0). */
static void serve_once(struct mf_kit_http *s, const char *raw, char *url, size_t cap)
{
    struct mf_kit_http_reply r = {.raw = raw};

    mf_kit_http_start(s, NULL, NULL);
    mf_kit_http_script(s, &r);
    (void)snprintf(url, cap, "%s", s->url);
}

/* Runs `mfctl --server <s> --token-file tok ARGS` (up to 6 ARGS, NULL-ended) against `s`
 * answering `reply`; stop `s` and free `r` after. */
static void run_against(struct mfctl_run *r, struct mf_kit_http *s, const char *tok,
                        const char *reply, const char *const *args)
{
    char url[64];
    const char *argv[12] = {"mfctl", "--server", url, "--token-file", tok};
    int argc = 5;

    serve_once(s, reply, url, sizeof(url));
    for (int k = 0; k < 6 && args[k]; k++)
        argv[argc++] = args[k];
    mfctl_run(r, argc, argv);
}

static void test_mfctl__upload_streams_file_with_sha256(void **state)
{
    static const char reply[] = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                                "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    char tok[] = "/tmp/mfctl-tok-XXXXXX", model[] = "/tmp/mfctl-model-XXXXXX";
    char url[64], sha_hex[65], expect[128];
    static uint8_t data[200000]; /* several upload chunks */
    const struct mf_kit_http_request *q;
    struct mf_kit_http s;
    uint8_t d[32];
    struct mfctl_run r;

    (void)state;
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    (void)close(mkstemp(tok));
    (void)close(mkstemp(model));
    mf_kit_fs_write(tok, "mfa_secret\n", 11);
    mf_kit_fs_write(model, data, sizeof(data));
    mbedtls_sha256_ret(data, sizeof(data), d, 0);
    for (int i = 0; i < 32; i++)
        (void)snprintf(sha_hex + 2 * i, 3, "%02x", d[i]);
    serve_once(&s, reply, url, sizeof(url));
    (void)snprintf(url + strlen(url), sizeof(url) - strlen(url), "/"); /* a trailing slash too */
    MFCTL_RUN(&r, "--server", url, "--token-file", tok, "upload", "detector", "v7", model);
    q = mf_kit_http_request(&s, 0);
    if (r.rc != 0)
        print_error("%s", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "uploaded detector v7"));
    assert_non_null(strstr(r.out, "staged until released"));
    assert_non_null(strstr(r.out, sha_hex));
    assert_non_null(strstr(q->head, "PUT /v1/admin/models/detector/versions/v7 HTTP/1.1"));
    assert_non_null(strstr(q->head, "Authorization: Bearer mfa_secret\r\n"));
    (void)snprintf(expect, sizeof(expect), "X-MF-Sha256: %s\r\n", sha_hex);
    assert_non_null(strstr(q->head, expect));
    assert_int_equal(q->body_len, sizeof(data));
    assert_memory_equal(q->body, data, sizeof(data));
    mf_kit_http_stop(&s);
    mfctl_run_free(&r);
    (void)unlink(tok);
    (void)unlink(model);
}

static void test_mfctl__publish_conflict_is_reported(void **state)
{
    static const char reply[] =
        "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 68\r\n"
        "Connection: close\r\n\r\n"
        "{\"error\":\"conflict\",\"message\":\"detector v7 exists with other bytes\"}";
    char tok[] = "/tmp/mfctl-tok-XXXXXX", model[] = "/tmp/mfctl-model-XXXXXX";
    char key[] = "/tmp/mfctl-key-XXXXXX";
    char url[64];
    struct mf_kit_http s;
    struct mfctl_run r;

    (void)state;
    (void)close(mkstemp(tok));
    (void)close(mkstemp(model));
    (void)close(mkstemp(key));
    (void)unlink(key); /* keys gen never overwrites */
    mf_kit_fs_write(tok, "mfa_secret", 10);
    mf_kit_fs_write(model, "abc", 3);
    MFCTL_EXPECT(0, NULL, "keys", "gen", key);
    serve_once(&s, reply, url, sizeof(url));
    assert_int_equal(setenv("MF_SERVER", url, 1), 0);
    assert_int_equal(setenv("MF_TOKEN_FILE", tok, 1), 0);
    /* Unsigned publishing does not exist: no request is even made. */
    MFCTL_EXPECT(2, "--release-key is required", "publish", "detector", "v7", model);
    /* Signed locally first (--sequence: no question to the server), then the upload, whose
     * 409 is reported. */
    MFCTL_RUN(&r, "publish", "detector", "v7", model, "--release-key", key, "--sequence", "3");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "HTTP 409"));
    assert_non_null(strstr(r.err, "exists with other bytes"));
    assert_int_equal(mf_kit_http_requests(&s), 1);
    assert_non_null(strstr(mf_kit_http_request(&s, 0)->head,
                           "PUT /v1/admin/models/detector/versions/v7 HTTP/1.1"));
    mf_kit_http_stop(&s);
    mfctl_run_free(&r);
    (void)unlink(tok);
    (void)unlink(model);
    (void)unlink(key);
}

static void test_mfctl__models_table_and_json(void **state)
{
    static const char reply[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
        "Connection: close\r\n\r\n"
        "{\"models\":[{\"name\":\"detector\",\"versions\":[{\"version\":\"v1\",\"sha256\":\"aa\","
        "\"size\":1,\"created_at\":0}]}]}";
    char tok[] = "/tmp/mfctl-tok-XXXXXX";
    char url[64];
    struct mf_kit_http s;
    struct mfctl_run r;

    (void)state;
    assert_int_equal(strlen(strstr(reply, "\r\n\r\n") + 4), 100);
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    for (int json = 0; json < 2; json++) {
        serve_once(&s, reply, url, sizeof(url));
        if (json)
            MFCTL_RUN(&r, "--server", url, "--token-file", tok, "models", "--json");
        else
            MFCTL_RUN(&r, "--server", url, "--token-file", tok, "models");
        assert_int_equal(r.rc, 0);
        assert_non_null(strstr(mf_kit_http_request(&s, 0)->head, "GET /v1/admin/models HTTP/1.1"));
        assert_non_null(strstr(r.out, json ? "{\"models\":[" : "MODEL"));
        assert_non_null(strstr(r.out, "detector"));
        mf_kit_http_stop(&s);
        mfctl_run_free(&r);
    }
    (void)unlink(tok);
}

static void test_mfctl__fleet_tables(void **state)
{
    static const char pins[] = "{\"pins\":[{\"scope\":\"group\",\"target\":\"lab\","
                               "\"model\":\"det\",\"version\":\"v1\"},{\"scope\":\"fleet\","
                               "\"target\":\"*\",\"model\":\"det\",\"version\":\"v0\"}]}";
    static const char tokens[] = "{\"tokens\":[{\"id\":\"0123456789abcdef\",\"name\":\"alice\","
                                 "\"role\":\"ops\",\"revoked\":true}]}";
    static const char groups[] =
        "{\"groups\":[{\"name\":\"lab\",\"devices\":[\"cam-1\",\"cam-2\"]}]}";
    static const char settings[] =
        "{\"group_settings\":[{\"group\":\"eu\",\"poll_interval_s\":null,\"poll_jitter_pct\":null,"
        "\"install_window\":{\"start\":\"22:30\",\"end\":\"04:00\",\"utc_offset_min\":-330}},"
        "{\"group\":\"lab\",\"poll_interval_s\":300,\"poll_jitter_pct\":10,"
        "\"install_window\":null}]}";
    static const char audit[] =
        "{\"audit\":[{\"seq\":7,\"at\":\"2026-12-02T03:37:25Z\",\"token_id\":\"\","
        "\"actor\":\"rollout-engine\",\"action\":\"rollout.halted\",\"target\":"
        "\"rollout/4/det/v2\",\"status\":0,\"detail\":\"p99_latency_us 2047 > bound 1500\"}],"
        "\"next\":7}";
    static const char models[] = "{\"models\":[{\"name\":\"a\",\"versions\":[{\"version\":"
                                 "\"va\"}]},{\"name\":\"b\",\"versions\":[{\"version\":\"vb\"}]}]}";
    struct mfctl_capture k;

    (void)state;
    mfctl_capture(&k);
    assert_int_equal(mfctl__print_pins(&k.c, pins, strlen(pins)), MF_OK);
    assert_int_equal(mfctl__print_tokens(&k.c, tokens, strlen(tokens)), MF_OK);
    assert_int_equal(mfctl__print_groups(&k.c, groups, strlen(groups)), MF_OK);
    assert_int_equal(mfctl__print_versions(&k.c, models, strlen(models), "b"), MF_OK);
    assert_int_equal(mfctl__print_pins(&k.c, tokens, strlen(tokens)), MF_E_INVALID);
    assert_int_equal(mfctl__print_group_settings(&k.c, settings, strlen(settings)), MF_OK);
    assert_int_equal(mfctl__print_audit(&k.c, audit, strlen(audit)), MF_OK);
    (void)fclose(k.c.out);
    MFCTL_TEXT_HAS(k.text, "SCOPE", "group    lab", "fleet    *", "0123456789abcdef ops    alice",
                   "revoked", "cam-1,cam-2", "vb", "INSTALL WINDOW",
                   "eu                       -              22:30-04:00 UTC-05:30",
                   "lab                      300 s +-10%    -", "AT (UTC)", "rollout-engine",
                   "rollout-engine        -  rollout.halted", "rollout/4/det/v2",
                   "p99_latency_us 2047 > bound 1500", "more: mfctl audit ... --before 7");
    assert_null(strstr(k.text, "va")); /* versions MODEL prints that model only */
    free(k.text);
}

static void test_mfctl__fleet_usage_errors(void **state)
{
    static const char *const cmds[] = {"device", "groups",   "pins",  "rollback",
                                       "tokens", "versions", "blobs", "audit"};

    (void)state;
    expect_help(cmds, MF_TEST_COUNT(cmds), 0);
    MFCTL_EXPECT(2, NULL, "pins", "set", "device", "cam-1");
    MFCTL_EXPECT(2, "\"../x\"", "pins", "set", "device", "../x", "det", "v1");
    MFCTL_EXPECT(2, NULL, "device", "groups", "cam-1", "a,,b");
    MFCTL_EXPECT(2, NULL, "device", "reboot", "cam-1");
    MFCTL_EXPECT(2, NULL, "tokens", "create", "ops");
    MFCTL_EXPECT(2, NULL, "rollback", "start", "det");
    MFCTL_EXPECT(2, NULL, "versions");
    MFCTL_EXPECT(2, NULL, "blobs");
    MFCTL_EXPECT(2, NULL, "blobs", "sweep", "--force");
    MFCTL_EXPECT(2, "SECONDS must be 1..86400", "groups", "set-poll", "lab", "0");
    MFCTL_EXPECT(2, "SECONDS must be 1..86400", "groups", "set-poll", "lab", "86401");
    MFCTL_EXPECT(2, "JITTER_PCT 0..50", "groups", "set-poll", "lab", "60", "51");
    MFCTL_EXPECT(2, "HH:MM-HH:MM", "groups", "set-window", "lab", "2:00-5:00");
    MFCTL_EXPECT(2, "UTC+HH:MM", "groups", "set-window", "lab", "02:00-05:00", "CET");
    MFCTL_EXPECT(2, "UTC+HH:MM", "groups", "set-window", "lab", "02:00-05:00", "UTC+01:60");
    MFCTL_EXPECT(2, "\"../x\"", "groups", "set-poll", "../x", "60");
    MFCTL_EXPECT(2, NULL, "groups", "clear-poll");
    MFCTL_EXPECT(2, "unknown option or argument \"--who\"", "audit", "--who", "alice");
    MFCTL_EXPECT(2, "no value for \"--limit\"", "audit", "--limit");
    MFCTL_EXPECT(2, "unknown option or argument \"extra\"", "audit", "extra");
}

/* An id the server does not know: mfctl exits 1 with the server's message, and prints no
 * success (issue 17: `pins set device cam-9999` said "pinned", `versions nosuchmodel` printed
 * an empty table, `samples export --model fashoin` exported 0). */
static void test_mfctl__unknown_ids_exit_1_with_the_message(void **state)
{
#define NOT_FOUND(msg)                                                                             \
    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"        \
    "{\"error\":\"not_found\",\"message\":\"" msg "\"}"
    static const struct {
        const char *args[6];
        const char *reply, *head, *message;
    } cases[] = {
        {{"pins", "set", "device", "cam-9999", "det", "v1"},
         NOT_FOUND("unknown device 'cam-9999'"),
         "PUT /v1/admin/pins/device/cam-9999/det HTTP/1.1",
         "unknown device 'cam-9999'"},
        {{"devices", "show", "cam-9999"},
         NOT_FOUND("unknown device 'cam-9999'"),
         "GET /v1/admin/devices/cam-9999 HTTP/1.1",
         "unknown device 'cam-9999'"},
        {{"versions", "nosuchmodel"},
         NOT_FOUND("unknown model 'nosuchmodel'"),
         "GET /v1/admin/models/nosuchmodel HTTP/1.1",
         "unknown model 'nosuchmodel'"},
        {{"versions", "nosuchmodel", "--json"},
         NOT_FOUND("unknown model 'nosuchmodel'"),
         "GET /v1/admin/models/nosuchmodel HTTP/1.1",
         "unknown model 'nosuchmodel'"},
        {{"device", "groups", "cam-9999", "lab"},
         NOT_FOUND("unknown device 'cam-9999'"),
         "PUT /v1/admin/devices/cam-9999/groups HTTP/1.1",
         "unknown device 'cam-9999'"},
        {{"rollback", "start", "fashoin", "v1"},
         NOT_FOUND("unknown model 'fashoin'"),
         "PUT /v1/admin/rollbacks/fashoin HTTP/1.1",
         "unknown model 'fashoin'"},
        {{"samples", "export", "--model", "fashoin", "/tmp/mfctl-never-written"},
         NOT_FOUND("unknown model 'fashoin'"),
         "GET /v1/admin/samples?model=fashoin",
         "unknown model 'fashoin'"},
    };
#undef NOT_FOUND
    char tok[] = "/tmp/mfctl-tok-XXXXXX";

    (void)state;
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mf_kit_http s;
        struct mfctl_run r;

        run_against(&r, &s, tok, cases[i].reply, cases[i].args);
        if (r.rc != 1 || !strstr(r.err, cases[i].message))
            fail_msg("mfctl %s %s: rc %d, stderr %s", cases[i].args[0], cases[i].args[1], r.rc,
                     r.err);
        if (!strstr(mf_kit_http_request(&s, 0)->head, cases[i].head))
            fail_msg("mfctl %s: sent %s", cases[i].args[0], mf_kit_http_request(&s, 0)->head);
        assert_null(strstr(r.out, "pinned"));
        assert_null(strstr(r.out, "MODEL"));
        mf_kit_http_stop(&s);
        mfctl_run_free(&r);
    }
    assert_int_equal(access("/tmp/mfctl-never-written/samples.jsonl", F_OK), -1);
    (void)unlink(tok);
}

/* `devices show`: the device's degrade state and its switches, newest first, with reasons. */
static void test_mfctl__devices_show_lists_switches(void **state)
{
#define DEVICE_DOC                                                                                 \
    "{\"device_id\":\"cam-1\",\"last_seen\":1764500100,\"degraded\":true,\"switches\":["           \
    "{\"seq\":2,\"at\":1764500100,\"received_at\":1764500101,\"degraded\":true,"                   \
    "\"reason\":\"thermal\"},{\"seq\":1,\"at\":0,\"received_at\":1764500000,"                      \
    "\"degraded\":false,\"reason\":\"recovered\"}]}"
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\n\r\n" DEVICE_DOC;
#undef DEVICE_DOC
    const char *args[] = {"devices", "show", "cam-1", NULL};
    const char *bad[] = {"devices", "show", NULL};
    char tok[] = "/tmp/mfctl-tok-XXXXXX";
    struct mf_kit_http s;
    struct mfctl_run r;

    (void)state;
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    run_against(&r, &s, tok, reply, args);
    if (r.rc != 0)
        print_error("%s", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(mf_kit_http_request(&s, 0)->head, "GET /v1/admin/devices/cam-1 HTTP"));
    MFCTL_TEXT_HAS(r.out, "DEVICE    cam-1\n", "DEGRADED  yes\n",
                   "2      2025-11-30T10:55:00Z 2025-11-30T10:55:01Z degrade   thermal\n",
                   "1      -                    2025-11-30T10:53:20Z restore   recovered\n");
    mf_kit_http_stop(&s);
    mfctl_run_free(&r);
    MFCTL_RUN(&r, "--server", "http://127.0.0.1:1", "--token-file", tok, bad[0], bad[1]);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "expected one DEVICE id"));
    mfctl_run_free(&r);
    (void)unlink(tok);
}

/* Each fleet command sends the request of docs/openapi.yaml. */
static void test_mfctl__fleet_requests(void **state)
{
    static const char no_content[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    static const char token[] =
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 59\r\n"
        "Connection: close\r\n\r\n"
        "{\"id\":\"0123456789abcdef\",\"role\":\"ops\",\"token\":\"mfa_secret\"}";
    static const char swept_dry[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 101\r\n"
        "Connection: close\r\n\r\n"
        "{\"dry_run\":true,\"would_remove\":[{\"sha256\":\"ab12\"}],\"orphans\":1,\"referenced\":2,"
        "\"young\":3,\"grace_s\":60}";
    static const char swept[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 97\r\n"
        "Connection: close\r\n\r\n"
        "{\"dry_run\":false,\"removed\":[{\"sha256\":\"cd34\"}],\"orphans\":1,\"referenced\":0,"
        "\"young\":0,\"grace_s\":60}";
    static const char audit[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 185\r\n"
        "Connection: close\r\n\r\n"
        "{\"audit\":[{\"seq\":3,\"at\":\"2026-12-02T03:37:25Z\",\"token_id\":\"0123456789abcdef\","
        "\"actor\":\"alice\",\"action\":\"PUT /v1/admin/pins/{}/{}/{}\",\"target\":\"a/b/c\","
        "\"status\":204,\"detail\":\"\"}],\"next\":0}";
    static const struct {
        const char *args[6];
        const char *reply, *head, *body, *out;
    } cases[] = {
        {{"audit", "--token", "alice", "--action", "PUT /v1/admin/pins"},
         audit,
         "GET /v1/admin/audit?token=alice&action=PUT%20%2Fv1%2Fadmin%2Fpins HTTP/1.1",
         NULL,
         "2026-12-02T03:37:25Z  0123456789abcdef alice               204  PUT "
         "/v1/admin/pins/{}/{}/{}"},
        {{"blobs", "sweep", "--dry-run"},
         swept_dry,
         "POST /v1/admin/blobs/sweep?dry_run=1 HTTP/1.1",
         "{}",
         "would remove ab12\ndry run: 1 orphan blob(s); kept 2 referenced and 3 younger than 60 s"},
        {{"blobs", "sweep"},
         swept,
         "POST /v1/admin/blobs/sweep HTTP/1.1",
         "{}",
         "removed cd34\n1 orphan blob(s)"},
        {{"pins", "set", "device", "cam-1", "det", "v1"},
         no_content,
         "PUT /v1/admin/pins/device/cam-1/det HTTP/1.1",
         "{\"version\":\"v1\"}",
         "pinned"},
        {{"pins", "clear", "group", "lab", "det"},
         no_content,
         "DELETE /v1/admin/pins/group/lab/det HTTP/1.1",
         NULL,
         "pin cleared"},
        {{"rollback", "start", "det", "v0"},
         no_content,
         "PUT /v1/admin/rollbacks/det HTTP/1.1",
         "{\"version\":\"v0\"}",
         "fleet rollback active"},
        {{"device", "groups", "cam-1", "lab,eu"},
         no_content,
         "PUT /v1/admin/devices/cam-1/groups HTTP/1.1",
         "{\"groups\":[\"lab\",\"eu\"]}",
         "groups set"},
        {{"device", "channel", "cam-1", "beta"},
         no_content,
         "PUT /v1/admin/devices/cam-1/channel HTTP/1.1",
         "{\"channel\":\"beta\"}",
         "channel set"},
        {{"device", "revoke", "cam-1"},
         no_content,
         "DELETE /v1/admin/devices/cam-1/credential HTTP/1.1",
         NULL,
         "credential revoked"},
        {{"groups", "set-poll", "lab", "300"},
         no_content,
         "PUT /v1/admin/groups/lab/poll HTTP/1.1",
         "{\"interval_s\":300,\"jitter_pct\":10}",
         "poll interval set"},
        {{"groups", "set-poll", "lab", "60", "0"},
         no_content,
         "PUT /v1/admin/groups/lab/poll HTTP/1.1",
         "{\"interval_s\":60,\"jitter_pct\":0}",
         "poll interval set"},
        {{"groups", "clear-poll", "lab"},
         no_content,
         "DELETE /v1/admin/groups/lab/poll HTTP/1.1",
         NULL,
         "poll interval cleared"},
        {{"groups", "set-window", "lab", "22:30-04:00", "UTC-05:30"},
         no_content,
         "PUT /v1/admin/groups/lab/install-window HTTP/1.1",
         "{\"start\":\"22:30\",\"end\":\"04:00\",\"utc_offset_min\":-330}",
         "install window set"},
        {{"groups", "set-window", "lab", "02:00-05:00"},
         no_content,
         "PUT /v1/admin/groups/lab/install-window HTTP/1.1",
         "{\"start\":\"02:00\",\"end\":\"05:00\",\"utc_offset_min\":0}",
         "install window set"},
        {{"groups", "clear-window", "lab"},
         no_content,
         "DELETE /v1/admin/groups/lab/install-window HTTP/1.1",
         NULL,
         "install window cleared"},
        {{"tokens", "create", "ops", "alice"},
         token,
         "POST /v1/admin/tokens HTTP/1.1",
         "{\"role\":\"ops\",\"name\":\"alice\"}",
         "mfa_secret"},
    };
    char tok[] = "/tmp/mfctl-tok-XXXXXX";

    (void)state;
    assert_int_equal(strlen(strstr(token, "\r\n\r\n") + 4), 59);
    assert_int_equal(strlen(strstr(audit, "\r\n\r\n") + 4), 185);
    assert_int_equal(strlen(strstr(swept_dry, "\r\n\r\n") + 4), 101);
    assert_int_equal(strlen(strstr(swept, "\r\n\r\n") + 4), 97);
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct mf_kit_http_request *q;
        struct mf_kit_http s;
        struct mfctl_run r;

        run_against(&r, &s, tok, cases[i].reply, cases[i].args);
        if (r.rc != 0)
            fail_msg("mfctl %s: rc %d: %s", cases[i].args[0], r.rc, r.err);
        q = mf_kit_http_request(&s, 0);
        if (!strstr(q->head, cases[i].head))
            fail_msg("mfctl %s: sent %s", cases[i].args[0], q->head);
        if (cases[i].body) {
            assert_int_equal(q->body_len, strlen(cases[i].body));
            assert_memory_equal(q->body, cases[i].body, q->body_len);
        }
        assert_non_null(strstr(r.out, cases[i].out));
        mf_kit_http_stop(&s);
        mfctl_run_free(&r);
    }
    (void)unlink(tok);
}

/* mfctl webhooks: the secret from its file into the body, removal by id, bad use. */
static void test_mfctl__webhooks(void **state)
{
    static const char created[] =
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        "Connection: close\r\n\r\n{}";
    static const char gone[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    static const char list[] = "{\"webhooks\":[{\"id\":3,\"url\":\"https://h/x\",\"created_at\":"
                               "\"2026-12-02T03:37:25Z\",\"pending\":1,\"failed\":0,"
                               "\"delivered\":9}]}";
    char tok[] = "/tmp/mfctl-tok-XXXXXX", sec[] = "/tmp/mfctl-sec-XXXXXX";
    const struct mf_kit_http_request *q;
    char url[64], *text;
    struct mf_kit_http s;
    struct mfctl_run r;

    (void)state;
    (void)close(mkstemp(tok));
    mf_kit_fs_write(tok, "mfa_x", 5);
    (void)close(mkstemp(sec));
    mf_kit_fs_write(sec, "0123456789abcdef-s\n", 19);
    serve_once(&s, created, url, sizeof(url));
    MFCTL_RUN(&r, "--server", url, "--token-file", tok, "webhooks", "add", "https://h/x",
              "--secret-file", sec);
    assert_int_equal(r.rc, 0);
    q = mf_kit_http_request(&s, 0);
    assert_non_null(strstr(q->head, "POST /v1/admin/webhooks HTTP/1.1"));
    assert_string_equal(q->body, "{\"url\":\"https://h/x\",\"secret\":\"0123456789abcdef-s\"}");
    assert_non_null(strstr(r.out, "webhook registered"));
    mf_kit_http_stop(&s);
    mfctl_run_free(&r);
    serve_once(&s, gone, url, sizeof(url));
    MFCTL_RUN(&r, "--server", url, "--token-file", tok, "webhooks", "remove", "3");
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(mf_kit_http_request(&s, 0)->head, "DELETE /v1/admin/webhooks/3 HTTP"));
    mf_kit_http_stop(&s);
    mfctl_run_free(&r);
    MFCTL_EXPECT(2, "expected list, add URL", "webhooks", "add", "https://h/x");
    MFCTL_EXPECT(2, "expected list, add URL", "webhooks", "remove", "x1");
    MFCTL_EXPECT(1, "cannot read a secret from /nonexistent/s", "--server", "http://127.0.0.1:9",
                 "--token-file", tok, "webhooks", "add", "https://h/x", "--secret-file",
                 "/nonexistent/s");
    text = mfctl_print_with(mfctl__print_webhooks, list, MF_OK);
    MFCTL_TEXT_HAS(text, "DELIVERED", "3      2026-12-02T03:37:25Z",
                   "1        0         9  https://h/x");
    free(text);
    (void)unlink(tok);
    (void)unlink(sec);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup(fn, setup_env)
    const struct CMUnitTest tests[] = {
        T(test_mfctl__global_help_lists_every_command),
        T(test_mfctl__usage_errors_exit_2),
        T(test_mfctl__command_help),
        T(test_mfctl__server_and_token_are_required),
        T(test_mfctl__tables),
        T(test_mfctl__upload_streams_file_with_sha256),
        T(test_mfctl__publish_conflict_is_reported),
        T(test_mfctl__models_table_and_json),
        T(test_mfctl__fleet_tables),
        T(test_mfctl__fleet_usage_errors),
        T(test_mfctl__devices_show_lists_switches),
        T(test_mfctl__fleet_requests),
        T(test_mfctl__unknown_ids_exit_1_with_the_message),
        T(test_mfctl__webhooks),
    };
#undef T
    return cmocka_run_group_tests_name("mfctl", tests, NULL, NULL);
}
