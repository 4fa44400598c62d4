/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection layer of mf-server: per-device rate limiting, a slow client cut off at the
 * idle timeout, and native TLS checked with `curl --cacert`.
 */
#define _XOPEN_SOURCE 700 /* popen, nanosleep */
#include "mf_test.h"
#include "server_fixture.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_server_transport__rate_limit_per_device(void **state)
{
    struct mf_server *limited = NULL;
    char other[MF_TOKEN_LEN + 1];
    const char *body = "{\"nonce\":\"" NONCE "\",\"models\":[]}";
    struct srvfx_resp r;
    uint16_t port;

    (void)state;
    /* A second node on the same data directory, limited to a burst of 2 per device. */
    srvfx_start_server(&limited, NULL, NULL, 0.01, 0);
    port = mf_server__port(limited);
    srvfx_enroll(other, "cam-other");
    for (int i = 0; i < 2; i++) {
        srvfx_call_port(&r, port, "POST", "/v1/checkin", srvfx.device, body, strlen(body), NULL);
        assert_int_equal(r.status, 200);
        free(r.body);
    }
    srvfx_call_port(&r, port, "POST", "/v1/checkin", srvfx.device, body, strlen(body), NULL);
    assert_int_equal(r.status, 429);
    assert_non_null(strstr(r.body, "\"too_many_requests\""));
    assert_true(strtol(r.retry_after, NULL, 10) >= 1);
    free(r.body);
    /* Blob downloads (file reads, resumed in ranges) do not spend the device's tokens. */
    srvfx_call_port(&r, port, "GET",
                    "/v1/blobs/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
                    srvfx.device, NULL, 0, NULL);
    assert_int_equal(r.status, 404);
    free(r.body);
    /* Another device has its own bucket. */
    srvfx_call_port(&r, port, "POST", "/v1/checkin", other, body, strlen(body), NULL);
    assert_int_equal(r.status, 200);
    free(r.body);
    mf_server__stop(limited);
}

/* A client that sends half a request and stalls is cut off at the idle timeout, and the
 * half request changes nothing. */
static void test_server_transport__slow_client_times_out(void **state)
{
    struct mf_server *srv = NULL;
    struct sockaddr_in a = {.sin_family = AF_INET};
    char head[512], buf[256];
    struct srvfx_resp r;
    int fd, closed = 0;

    (void)state;
    srvfx_start_server_timeout(&srv, NULL, NULL, 0, 0, 1);
    a.sin_port = htons(mf_server__port(srv));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    (void)snprintf(head, sizeof(head),
                   "POST /v1/admin/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: 40\r\n\r\n"
                   "{\"role\":\"admin\",\"name\":\"slow",
                   srvfx.admin);
    assert_int_equal(send(fd, head, strlen(head), 0), (ssize_t)strlen(head));
    /* Bounded wait: the server closes within its 1 s timeout (plus scheduling slack). */
    for (int i = 0; i < 100 && !closed; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (poll(&p, 1, 100) > 0)
            closed = recv(fd, buf, sizeof(buf), 0) <= 0;
    }
    (void)close(fd);
    assert_true(closed);
    mf_server__stop(srv);
    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/tokens", srvfx.admin, NULL), 200);
    assert_null(strstr(r.body, "\"slow"));
    free(r.body);
}

/* Runs `cmd` and returns its first output line in `out`. */
static void run_line(char *out, size_t cap, const char *cmd)
{
    FILE *p = popen(cmd, "r");

    assert_non_null(p);
    out[0] = '\0';
    if (!fgets(out, (int)cap, p))
        out[0] = '\0';
    (void)pclose(p);
    out[strcspn(out, "\r\n")] = '\0';
}

static void test_server_transport__tls_with_curl_cacert(void **state)
{
    struct mf_server *tls = NULL;
    char cert[160], key[160], cmd[1024], line[64];
    uint16_t port;

    (void)state;
    if (system("command -v openssl >/dev/null && command -v curl >/dev/null") != 0)
        MF_SKIP("openssl or curl command not installed");
    (void)snprintf(cert, sizeof(cert), "%s/cert.pem", srvfx.dir);
    (void)snprintf(key, sizeof(key), "%s/key.pem", srvfx.dir);
    (void)snprintf(cmd, sizeof(cmd),
                   "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                   "-keyout %s -out %s -days 1 -subj /CN=127.0.0.1 "
                   "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
                   key, cert);
    assert_int_equal(system(cmd), 0);
    srvfx_start_server(&tls, cert, key, 0, 0);
    port = mf_server__port(tls);
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 --cacert %s -o /dev/null -w '%%{http_code}' "
                   "https://127.0.0.1:%u/healthz",
                   cert, (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_equal(line, "200");
    /* Without the CA the certificate is refused; plain HTTP is not served. */
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 -o /dev/null -w '%%{http_code}' https://127.0.0.1:%u/healthz",
                   (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_equal(line, "000");
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%u/healthz",
                   (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_not_equal(line, "200");
    mf_server__stop(tls);
    /* A key without a certificate is a clear error, not a plain-HTTP server. */
    {
        struct mf_server_options o;
        struct mf_ctx ctx;
        struct mf_server *bad = NULL;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        mf_server__options_init(&o);
        o.data_dir = srvfx.data;
        o.listen = "127.0.0.1:0";
        o.tls_key = key;
        assert_int_equal(mf_server__start(&bad, &ctx, &o), MF_E_INVALID);
        assert_null(bad);
    }
}

int main(void)
{
    return MF_TEST_RUN("tests", srvfx_group_setup, srvfx_group_teardown,
                       cmocka_unit_test(test_server_transport__rate_limit_per_device),
                       cmocka_unit_test(test_server_transport__tls_with_curl_cacert),
                       cmocka_unit_test(test_server_transport__slow_client_times_out));
}
