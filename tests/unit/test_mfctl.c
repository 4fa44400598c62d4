/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of mfctl (server/mfctl/): argument parsing, table printing, and publish/models
 * against a one-request fake server on 127.0.0.1 (ephemeral port, one thread).
 */
#include "mf_test.h"
#include "mfctl.h"

#include <arpa/inet.h>
#include <mbedtls/sha256.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- running mfctl with captured output ---- */

struct run {
    int rc;
    char *out;
    char *err;
    size_t out_len, err_len;
};

static void run_mfctl(struct run *r, int argc, const char **argv_in)
{
    char *argv[16];
    FILE *out, *err;

    assert_true(argc < 16);
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)argv_in[i]; /* mfctl reorders positional args in place */
    argv[argc] = NULL;
    out = open_memstream(&r->out, &r->out_len);
    err = open_memstream(&r->err, &r->err_len);
    r->rc = mfctl__main(argc, argv, out, err);
    (void)fclose(out);
    (void)fclose(err);
}

static void run_free(struct run *r)
{
    free(r->out); /* open_memstream memory comes from libc */
    free(r->err);
}

#define RUN(r, ...)                                                                                \
    do {                                                                                           \
        const char *args_[] = {"mfctl", __VA_ARGS__};                                              \
        run_mfctl((r), (int)(sizeof(args_) / sizeof(args_[0])), args_);                            \
    } while (0)

static int setup_env(void **state)
{
    (void)state;
    (void)unsetenv("MF_SERVER");
    (void)unsetenv("MF_TOKEN_FILE");
    return 0;
}

static void test_mfctl__global_help_lists_every_command(void **state)
{
    struct run r;

    (void)state;
    RUN(&r, "--help");
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "publish"));
    assert_non_null(strstr(r.out, "models"));
    assert_non_null(strstr(r.out, "devices"));
    assert_non_null(strstr(r.out, "MF_SERVER"));
    run_free(&r);
}

static void test_mfctl__usage_errors_exit_2(void **state)
{
    struct run r;

    (void)state;
    RUN(&r, "frobnicate");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown command \"frobnicate\""));
    run_free(&r);
    RUN(&r, "--bogus", "models");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "\"--bogus\""));
    run_free(&r);
    RUN(&r, "--server");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "--server", "http://x");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "no command"));
    run_free(&r);
    RUN(&r, "publish", "detector", "v1");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "expected NAME VERSION FILE"));
    run_free(&r);
    RUN(&r, "publish", "../etc", "v1", "/dev/null");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "\"../etc\""));
    run_free(&r);
    RUN(&r, "models", "--verbose");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown option \"--verbose\""));
    run_free(&r);
    RUN(&r, "devices", "extra");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unexpected argument \"extra\""));
    run_free(&r);
}

static void test_mfctl__command_help(void **state)
{
    static const char *const cmds[] = {"publish", "upload", "release",
                                       "trust",   "models", "devices"};
    struct run r;

    (void)state;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        RUN(&r, cmds[i], "--help");
        assert_int_equal(r.rc, 0);
        assert_non_null(strstr(r.out, "usage: mfctl"));
        assert_non_null(strstr(r.out, cmds[i]));
        run_free(&r);
    }
}

static void test_mfctl__server_and_token_are_required(void **state)
{
    struct run r;

    (void)state;
    RUN(&r, "models");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "no server"));
    run_free(&r);
    /* The environment supplies the server; the token is still missing. */
    assert_int_equal(setenv("MF_SERVER", "http://127.0.0.1:1", 1), 0);
    RUN(&r, "models");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "no admin token"));
    run_free(&r);
    RUN(&r, "--token-file", "/nonexistent/token", "devices");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "/nonexistent/token"));
    run_free(&r);
    RUN(&r, "publish", "m", "v1", "/nonexistent/model.bin", "--release-key", "/nonexistent/k");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "/nonexistent/model.bin"));
    run_free(&r);
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
        "\"reported_at\":1764500100}]},{\"device_id\":\"cam-0002\",\"models\":[]}]}";
    struct mfctl c;
    char *text = NULL;
    size_t len = 0;

    (void)state;
    memset(&c, 0, sizeof(c));
    mf_ctx__init(&c.ctx, NULL, NULL, NULL, "test");
    c.out = open_memstream(&text, &len);
    assert_int_equal(mfctl__print_models(&c, models, strlen(models)), MF_OK);
    assert_int_equal(mfctl__print_devices(&c, devices, strlen(devices)), MF_OK);
    (void)fclose(c.out);
    assert_non_null(strstr(text, "MODEL"));
    assert_non_null(strstr(text, "abcdef012345 ")); /* digest shortened to 12 digits */
    assert_non_null(strstr(text, "2025-11-30 10:53:20"));
    assert_non_null(strstr(text, "empty"));
    assert_non_null(strstr(text, "cam-0001"));
    assert_non_null(strstr(text, "sha256 mismatch"));
    assert_non_null(strstr(text, "cam-0002"));
    free(text);
    c.out = open_memstream(&text, &len);
    assert_int_equal(mfctl__print_models(&c, "{\"devices\":[]}", 14), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&c.ctx), "\"models\""));
    assert_int_equal(mfctl__print_devices(&c, "not json", 8), MF_E_INVALID);
    (void)fclose(c.out);
    free(text);
}

/* ---- a fake server answering one request with a canned response ---- */

struct one_shot {
    int fd;
    pthread_t thread;
    const char *reply; /* full HTTP response */
    char head[4096];
    char *body; /* malloc'd */
    size_t body_len;
};

static void *one_shot_main(void *arg)
{
    struct one_shot *s = arg;
    struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
    size_t len = 0, need = 0, have;
    char *end = NULL;
    int fd;

    if (poll(&pfd, 1, 10000) <= 0)
        return NULL;
    fd = accept(s->fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    while (!end && len < sizeof(s->head) - 1) {
        ssize_t r = recv(fd, s->head + len, sizeof(s->head) - 1 - len, 0);

        if (r <= 0)
            break;
        len += (size_t)r;
        s->head[len] = '\0';
        end = strstr(s->head, "\r\n\r\n");
    }
    if (end) {
        const char *cl = strstr(s->head, "Content-Length: ");

        need = cl ? strtoull(cl + 16, NULL, 10) : 0;
        have = len - (size_t)(end + 4 - s->head);
        s->body = malloc(need + 1);
        memcpy(s->body, end + 4, have);
        while (have < need) {
            ssize_t r = recv(fd, s->body + have, need - have, 0);

            if (r <= 0)
                break;
            have += (size_t)r;
        }
        s->body_len = have;
        end[2] = '\0'; /* keep the head only */
    }
    (void)send(fd, s->reply, strlen(s->reply), MSG_NOSIGNAL);
    (void)close(fd);
    return NULL;
}

static int one_shot_start(struct one_shot *s, const char *reply)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t alen = sizeof(addr);

    memset(s, 0, sizeof(*s));
    s->reply = reply;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(s->fd, 4), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&addr, &alen), 0);
    assert_int_equal(pthread_create(&s->thread, NULL, one_shot_main, s), 0);
    return ntohs(addr.sin_port);
}

static void one_shot_join(struct one_shot *s)
{
    pthread_join(s->thread, NULL);
    (void)close(s->fd);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    (void)fclose(f);
}

static void test_mfctl__upload_streams_file_with_sha256(void **state)
{
    static const char reply[] = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                                "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    char tok[] = "/tmp/mfctl-tok-XXXXXX", model[] = "/tmp/mfctl-model-XXXXXX";
    char url[64], sha_hex[65], expect[128];
    static uint8_t data[200000]; /* several upload chunks */
    struct one_shot s;
    uint8_t d[32];
    struct run r;
    int port;

    (void)state;
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    (void)close(mkstemp(tok));
    (void)close(mkstemp(model));
    write_file(tok, "mfa_secret\n", 11);
    write_file(model, data, sizeof(data));
    mbedtls_sha256_ret(data, sizeof(data), d, 0);
    for (int i = 0; i < 32; i++)
        (void)snprintf(sha_hex + 2 * i, 3, "%02x", d[i]);
    port = one_shot_start(&s, reply);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    RUN(&r, "--server", url, "--token-file", tok, "upload", "detector", "v7", model);
    one_shot_join(&s);
    if (r.rc != 0)
        print_error("%s", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "uploaded detector v7"));
    assert_non_null(strstr(r.out, "staged until released"));
    assert_non_null(strstr(r.out, sha_hex));
    assert_non_null(strstr(s.head, "PUT /v1/admin/models/detector/versions/v7 HTTP/1.1"));
    assert_non_null(strstr(s.head, "Authorization: Bearer mfa_secret\r\n"));
    (void)snprintf(expect, sizeof(expect), "X-MF-Sha256: %s\r\n", sha_hex);
    assert_non_null(strstr(s.head, expect));
    assert_int_equal(s.body_len, sizeof(data));
    assert_memory_equal(s.body, data, sizeof(data));
    free(s.body);
    run_free(&r);
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
    struct one_shot s;
    struct run r;
    int port;

    (void)state;
    (void)close(mkstemp(tok));
    (void)close(mkstemp(model));
    (void)close(mkstemp(key));
    (void)unlink(key); /* keys gen never overwrites */
    write_file(tok, "mfa_secret", 10);
    write_file(model, "abc", 3);
    RUN(&r, "keys", "gen", key);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    port = one_shot_start(&s, reply);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    assert_int_equal(setenv("MF_SERVER", url, 1), 0);
    assert_int_equal(setenv("MF_TOKEN_FILE", tok, 1), 0);
    /* Unsigned publishing does not exist: no request is even made. */
    RUN(&r, "publish", "detector", "v7", model);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--release-key is required"));
    run_free(&r);
    /* Signed locally first (--sequence: no question to the server), then the upload, whose
     * 409 is reported. */
    RUN(&r, "publish", "detector", "v7", model, "--release-key", key, "--sequence", "3");
    one_shot_join(&s);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "HTTP 409"));
    assert_non_null(strstr(r.err, "exists with other bytes"));
    assert_non_null(strstr(s.head, "PUT /v1/admin/models/detector/versions/v7 HTTP/1.1"));
    free(s.body);
    run_free(&r);
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
    struct one_shot s;
    struct run r;
    int port;

    (void)state;
    assert_int_equal(strlen(strstr(reply, "\r\n\r\n") + 4), 100);
    (void)close(mkstemp(tok));
    write_file(tok, "mfa_x", 5);
    for (int json = 0; json < 2; json++) {
        port = one_shot_start(&s, reply);
        (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
        if (json)
            RUN(&r, "--server", url, "--token-file", tok, "models", "--json");
        else
            RUN(&r, "--server", url, "--token-file", tok, "models");
        one_shot_join(&s);
        assert_int_equal(r.rc, 0);
        assert_non_null(strstr(s.head, "GET /v1/admin/models HTTP/1.1"));
        assert_non_null(strstr(r.out, json ? "{\"models\":[" : "MODEL"));
        assert_non_null(strstr(r.out, "detector"));
        free(s.body);
        run_free(&r);
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
    static const char models[] = "{\"models\":[{\"name\":\"a\",\"versions\":[{\"version\":"
                                 "\"va\"}]},{\"name\":\"b\",\"versions\":[{\"version\":\"vb\"}]}]}";
    struct mfctl c;
    char *text = NULL;
    size_t len = 0;

    (void)state;
    memset(&c, 0, sizeof(c));
    mf_ctx__init(&c.ctx, NULL, NULL, NULL, "test");
    c.out = open_memstream(&text, &len);
    assert_int_equal(mfctl__print_pins(&c, pins, strlen(pins)), MF_OK);
    assert_int_equal(mfctl__print_tokens(&c, tokens, strlen(tokens)), MF_OK);
    assert_int_equal(mfctl__print_groups(&c, groups, strlen(groups)), MF_OK);
    assert_int_equal(mfctl__print_versions(&c, models, strlen(models), "b"), MF_OK);
    assert_int_equal(mfctl__print_pins(&c, tokens, strlen(tokens)), MF_E_INVALID);
    (void)fclose(c.out);
    assert_non_null(strstr(text, "SCOPE"));
    assert_non_null(strstr(text, "group    lab"));
    assert_non_null(strstr(text, "fleet    *"));
    assert_non_null(strstr(text, "0123456789abcdef ops    alice"));
    assert_non_null(strstr(text, "revoked"));
    assert_non_null(strstr(text, "cam-1,cam-2"));
    assert_non_null(strstr(text, "vb"));
    assert_null(strstr(text, "va")); /* versions MODEL prints that model only */
    free(text);
}

static void test_mfctl__fleet_usage_errors(void **state)
{
    static const char *const cmds[] = {"device", "groups",   "pins", "rollback",
                                       "tokens", "versions", "blobs"};
    struct run r;

    (void)state;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        RUN(&r, cmds[i], "--help");
        assert_int_equal(r.rc, 0);
        assert_non_null(strstr(r.out, "usage: mfctl"));
        run_free(&r);
    }
    RUN(&r, "pins", "set", "device", "cam-1");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "pins", "set", "device", "../x", "det", "v1");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "\"../x\""));
    run_free(&r);
    RUN(&r, "device", "groups", "cam-1", "a,,b");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "device", "reboot", "cam-1");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "tokens", "create", "ops");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "rollback", "start", "det");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "versions");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "blobs");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    RUN(&r, "blobs", "sweep", "--force");
    assert_int_equal(r.rc, 2);
    run_free(&r);
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
    static const struct {
        const char *args[6];
        const char *reply, *head, *body, *out;
    } cases[] = {
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
        {{"tokens", "create", "ops", "alice"},
         token,
         "POST /v1/admin/tokens HTTP/1.1",
         "{\"role\":\"ops\",\"name\":\"alice\"}",
         "mfa_secret"},
    };
    char tok[] = "/tmp/mfctl-tok-XXXXXX";
    char url[64];

    (void)state;
    assert_int_equal(strlen(strstr(token, "\r\n\r\n") + 4), 59);
    assert_int_equal(strlen(strstr(swept_dry, "\r\n\r\n") + 4), 101);
    assert_int_equal(strlen(strstr(swept, "\r\n\r\n") + 4), 97);
    (void)close(mkstemp(tok));
    write_file(tok, "mfa_x", 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *argv[12] = {"mfctl", "--server", url, "--token-file", tok};
        struct one_shot s;
        struct run r;
        int argc = 5, port = one_shot_start(&s, cases[i].reply);

        (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
        for (int k = 0; k < 6 && cases[i].args[k]; k++)
            argv[argc++] = cases[i].args[k];
        run_mfctl(&r, argc, argv);
        one_shot_join(&s);
        if (r.rc != 0)
            fail_msg("mfctl %s: rc %d: %s", cases[i].args[0], r.rc, r.err);
        if (!strstr(s.head, cases[i].head))
            fail_msg("mfctl %s: sent %s", cases[i].args[0], s.head);
        if (cases[i].body) {
            assert_int_equal(s.body_len, strlen(cases[i].body));
            assert_memory_equal(s.body, cases[i].body, s.body_len);
        }
        assert_non_null(strstr(r.out, cases[i].out));
        free(s.body);
        run_free(&r);
    }
    (void)unlink(tok);
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
        T(test_mfctl__fleet_requests),
    };
#undef T
    return cmocka_run_group_tests_name("mfctl", tests, NULL, NULL);
}
