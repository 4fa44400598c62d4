/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server under many connections (server/http/http_conns.h, docs/operations.md
 * "Connections"), in-process on 127.0.0.1 with raw sockets: a fleet holding 1,500 keep-alive
 * connections, more than the old default limit (256) and than a soft RLIMIT_NOFILE of 1024,
 * still gets a new request answered at once; beyond the limit a request is told 503 with
 * Retry-After instead of waiting unanswered in the listen backlog; near the limit replies
 * close their connection. Every socket has a receive timeout, so nothing waits unbounded.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "mf_test.h"
#include "kit_fs.h"
#include "app/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLEET 1500     /* held connections: over 256 and over a soft limit of 1024 */
#define RECV_MS 3000   /* per reply; the old server never answered past its limit */
#define ANSWER_MS 1000 /* a new request during the flood is answered within this */

/* POST with a JSON body: the router replies once the body is in, and keeps the connection
 * (a reply queued before the body would make libmicrohttpd close it). */
#define ENROLL_BODY "{\"enrollment_token\":\"mfe_x\",\"device_id\":\"d\"}"
static const char enroll_req[] =
    "POST /v1/enroll HTTP/1.1\r\nHost: t\r\n"
    "Content-Type: application/json\r\nContent-Length: 44\r\n\r\n" ENROLL_BODY;
_Static_assert(sizeof(ENROLL_BODY) - 1 == 44, "Content-Length of enroll_req");
static const char health_req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

static char data_dir[96], tmp_dir[64];

static int group_setup(void **state)
{
    struct mf_ctx ctx;
    int changed = 0;

    (void)state;
    (void)signal(SIGPIPE, SIG_IGN);
    mf_kit_fs_mkdtemp(tmp_dir, sizeof(tmp_dir), "mf-conns");
    (void)snprintf(data_dir, sizeof(data_dir), "%s/data", tmp_dir);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    if (mf_server__init_data_dir(&changed, &ctx, data_dir, NULL) < 0)
        fail_msg("init: %s", mf_ctx__errmsg(&ctx));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    mf_kit_fs_rmtree(tmp_dir);
    return 0;
}

static struct mf_server *start(unsigned conn_limit)
{
    struct mf_server_options o;
    struct mf_server *srv = NULL;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_server__options_init(&o);
    o.data_dir = data_dir;
    o.listen = "127.0.0.1:0";
    o.delta_worker = 0;
    o.device_rate = 0;
    if (conn_limit)
        o.conn_limit = conn_limit;
    if (mf_server__start(&srv, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    return srv;
}

static int connect_to(uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {.tv_sec = RECV_MS / 1000, .tv_usec = (RECV_MS % 1000) * 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        fail_msg("socket: out of descriptors?");
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Sends `req` and reads one whole reply (headers and Content-Length body) into `buf`;
 * returns its status, or -1 when none arrived within RECV_MS. */
static int exchange(char *buf, size_t size, int fd, const char *req)
{
    size_t n = 0;
    const char *end, *cl;

    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    for (;;) {
        ssize_t got = recv(fd, buf + n, size - 1 - n, 0);

        if (got <= 0)
            return -1;
        n += (size_t)got;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
        cl = strstr(buf, "Content-Length: ");
        if (end && cl && n >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
            break;
        if (n + 1 >= size)
            return -1;
    }
    return (int)strtol(buf + 9, NULL, 10);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;

    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* GET /healthz on fresh connections until the status is `want` or 50 tries (20 ms apart)
 * have passed; returns the last status, its reply in `buf`. */
static int health_until(char *buf, size_t size, uint16_t port, int want)
{
    int status = -1;

    for (int tries = 0; tries < 50 && status != want; tries++) {
        int fd = connect_to(port);

        if (tries)
            (void)nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
        status = exchange(buf, size, fd, health_req);
        (void)close(fd);
    }
    return status;
}

static void test_server_conns__fleet_beyond_old_limits(void **state)
{
    static int fds[FLEET];
    struct rlimit rl;
    struct mf_server *srv;
    struct timespec t0;
    char buf[2048];
    int fd;

    (void)state;
    /* Start from the common soft limit of 1024: the server must raise it itself. Client
     * and server ends both live in this process, so 2 x FLEET descriptors are needed. */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * FLEET + 512) {
        (void)fprintf(stderr, "hard open file limit %llu is below %d; skipping\n",
                      (unsigned long long)rl.rlim_max, 2 * FLEET + 512);
        MF_SKIP("hard open file limit too low");
    }
    rl.rlim_cur = 1024;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    srv = start(0);
    for (int i = 0; i < FLEET; i++) {
        fds[i] = connect_to(mf_server__port(srv));
        if (exchange(buf, sizeof(buf), fds[i], enroll_req) != 401)
            fail_msg("connection %d of %d got no reply within %d ms", i + 1, FLEET, RECV_MS);
        assert_null(strstr(buf, "Connection: close")); /* kept: far below the limit */
    }
    /* All FLEET connections are open and idle; a newcomer is served at once. */
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    fd = connect_to(mf_server__port(srv));
    assert_int_equal(exchange(buf, sizeof(buf), fd, health_req), 200);
    if (ms_since(&t0) > ANSWER_MS)
        fail_msg("a new request took %.0f ms with %d connections open", ms_since(&t0), FLEET);
    (void)close(fd);
    for (int i = 0; i < FLEET; i++)
        (void)close(fds[i]);
    mf_server__stop(srv);
}

static void test_server_conns__over_limit_is_503_then_served(void **state)
{
    enum { LIMIT = 8, IDLE = 20 }; /* IDLE stays within libmicrohttpd's headroom */
    struct mf_server *srv = start(LIMIT);
    struct timespec t0;
    int idle[IDLE], closes = 0;
    char buf[2048];

    (void)state;
    /* Keep-alive replies close their connection once half the limit is open. */
    for (int i = 0; i < LIMIT; i++) {
        idle[i] = connect_to(mf_server__port(srv));
        assert_int_equal(exchange(buf, sizeof(buf), idle[i], enroll_req), 401);
        closes += strstr(buf, "Connection: close") != NULL;
    }
    assert_int_equal(closes, LIMIT - LIMIT / 2);
    for (int i = 0; i < LIMIT; i++)
        (void)close(idle[i]);
    /* Connections that send nothing fill the limit: a request beyond it is refused now. */
    for (int i = 0; i < IDLE; i++)
        idle[i] = connect_to(mf_server__port(srv));
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Retried while the server is still accepting the IDLE ones (bounded). */
    assert_int_equal(health_until(buf, sizeof(buf), mf_server__port(srv), 503), 503);
    assert_non_null(strstr(buf, "Retry-After: 1"));
    assert_non_null(strstr(buf, "Connection: close"));
    assert_non_null(strstr(buf, "\"error\":\"unavailable\""));
    assert_true(ms_since(&t0) < ANSWER_MS + 1000);
    /* The slots free up as soon as their clients leave. */
    for (int i = 0; i < IDLE; i++)
        (void)close(idle[i]);
    assert_int_equal(health_until(buf, sizeof(buf), mf_server__port(srv), 200), 200);
    mf_server__stop(srv);
}

/* A hard open file limit too low for the connection limit: the server serves fewer
 * connections, as many as its descriptors can hold, instead of failing accept() later. In
 * a child process, since a lowered hard limit cannot be raised again. */
static void test_server_conns__low_descriptor_limit_lowers_the_limit(void **state)
{
    int status = -1;
    pid_t pid;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* no cmocka asserts here: a failure is the exit status */
        struct rlimit rl = {.rlim_cur = 256, .rlim_max = 400};
        struct mf_server_options o;
        struct mf_server *srv = NULL;
        struct mf_ctx ctx;
        unsigned limit;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        mf_server__options_init(&o); /* asks for the default, 4096 connections */
        o.data_dir = data_dir;
        o.listen = "127.0.0.1:0";
        o.delta_worker = 0;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || mf_server__start(&srv, &ctx, &o) < 0)
            _exit(3);
        limit = mf_server__conn_limit(srv);
        mf_server__stop(srv);
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(4);
        /* Raised to the hard limit; the limit plus MHD's headroom and the reserve fit. */
        _exit(rl.rlim_cur == 400 && limit >= 100 && limit + limit / 4 + 16 + 128 <= 400 ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_conns__fleet_beyond_old_limits),
        cmocka_unit_test(test_server_conns__over_limit_is_503_then_served),
        cmocka_unit_test(test_server_conns__low_descriptor_limit_lowers_the_limit),
    };

    return cmocka_run_group_tests_name("server_conns", tests, group_setup, group_teardown);
}
