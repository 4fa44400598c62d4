/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server under many connections (server/http/http_conns.h, docs/operations.md
 * "Connections"), in-process on loopback with raw sockets: a fleet holding 1,500 keep-alive
 * connections, more than the old default limit (256) and than a soft RLIMIT_NOFILE of 1024,
 * still gets a new request answered at once; beyond the limit a request is told 503 with
 * Retry-After instead of waiting unanswered in the listen backlog; near the limit replies
 * close their connection. The connection rules: a header trickled a byte at a time is closed
 * at the header deadline, a body below the rate floor at its window, the connection over
 * the per-address cap at accept, while a suspended check-in outlives both deadlines.
 * Clients bind addresses of 127.0.0.0/8 (Linux routes all of it to lo) to be several
 * addresses. Every socket has a receive timeout and every loop a bound.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "mf_test.h"
#include "kit_fs.h"
#include "app/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
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

/* The options every test starts from; the caller changes what it tests. */
static void test_options(struct mf_server_options *o)
{
    mf_server__options_init(o);
    o->data_dir = data_dir;
    o->listen = "127.0.0.1:0";
    o->delta_worker = 0;
    o->device_rate = 0;
}

static struct mf_server *start_with(const struct mf_server_options *o)
{
    struct mf_server *srv = NULL;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    if (mf_server__start(&srv, &ctx, o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    return srv;
}

static struct mf_server *start(unsigned conn_limit)
{
    struct mf_server_options o;

    test_options(&o);
    if (conn_limit)
        o.conn_limit = conn_limit;
    return start_with(&o);
}

/* A TCP connection to the server at `host` ("127.0.0.1", "::1") from source address `src`
 * (NULL: the kernel's choice). */
static int connect_host(const char *host, uint16_t port, const char *src)
{
    struct sockaddr_storage a, b;
    struct timeval tv = {.tv_sec = RECV_MS / 1000, .tv_usec = (RECV_MS % 1000) * 1000};
    int v6 = strchr(host, ':') != NULL, fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

    if (fd < 0)
        fail_msg("socket: out of descriptors?");
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    if (v6) {
        ((struct sockaddr_in6 *)&a)->sin6_family = AF_INET6;
        ((struct sockaddr_in6 *)&a)->sin6_port = htons(port);
        assert_int_equal(inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&a)->sin6_addr), 1);
    } else {
        ((struct sockaddr_in *)&a)->sin_family = AF_INET;
        ((struct sockaddr_in *)&a)->sin_port = htons(port);
        assert_int_equal(inet_pton(AF_INET, host, &((struct sockaddr_in *)&a)->sin_addr), 1);
    }
    if (src) {
        b.ss_family = a.ss_family;
        assert_int_equal(inet_pton(AF_INET, src, &((struct sockaddr_in *)&b)->sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&b, len), 0);
    }
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, len), 0);
    return fd;
}

static int connect_from(uint16_t port, const char *src)
{
    return connect_host("127.0.0.1", port, src);
}

static int connect_to(uint16_t port)
{
    return connect_from(port, NULL);
}

/* A source address of 127.0.1.0/24 for the i-th of a fleet spread over `n` addresses: a
 * fleet comes from many addresses, and the per-address cap is not what those tests test. */
static const char *fleet_addr(char buf[16], int i, int n)
{
    (void)snprintf(buf, 16, "127.0.1.%d", 1 + i % n);
    return buf;
}

/* Reads one whole reply (headers and Content-Length body) into `buf`; returns its status,
 * or -1 when none arrived within RECV_MS. */
static int read_reply(char *buf, size_t size, int fd)
{
    size_t n = 0;
    const char *end, *cl;

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

/* Sends `req` and reads its reply (read_reply). */
static int exchange(char *buf, size_t size, int fd, const char *req)
{
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    return read_reply(buf, size, fd);
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
        char src[16];

        fds[i] = connect_from(mf_server__port(srv), fleet_addr(src, i, 16));
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
    for (int i = 0; i < IDLE; i++) {
        char src[16];

        idle[i] = connect_from(mf_server__port(srv), fleet_addr(src, i, 4));
    }
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

static void sleep_ms(long ms)
{
    (void)nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L},
                    NULL);
}

/* Waits up to `ms` for the server to end the connection: 1 when it did (end of stream or
 * reset), 0 while it is still open. A reply instead fails the test: a rule that should
 * have closed the connection let the request through. */
static int closed_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;
    char c;

    if (poll(&p, 1, ms) == 0)
        return 0;
    n = recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
        return 1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    fail_msg("the server answered where a connection rule should have closed the connection");
    return 0;
}

/* Deadline 1 s, checked every 250 ms: closed within [0.9 s, 1.85 s) of its start. */
#define RULE_MS_MIN 900
#define RULE_MS_MAX 1850

/* Sends the first `n` bytes of `text` one every `gap_ms` and expects the server to close
 * the connection (then closes fd) 1 s after the first, as a rule with a 1 s deadline or
 * window does: not earlier, not only once every byte is sent. */
static void expect_rule_closes(int fd, const char *text, size_t n, int gap_ms)
{
    struct timespec t0;
    double ms = -1;

    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n && ms < 0; i++) {
        if (send(fd, text + i, 1, MSG_NOSIGNAL) != 1 || closed_within(fd, gap_ms))
            ms = ms_since(&t0);
    }
    (void)close(fd);
    if (ms < 0)
        fail_msg("%zu bytes %d ms apart: the connection was never closed", n, gap_ms);
    if (ms < RULE_MS_MIN || ms >= RULE_MS_MAX)
        fail_msg("closed after %.0f ms, not at the 1 s deadline", ms);
}

static void read_file_line(char *out, size_t size, const char *name)
{
    char path[160];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/%s", data_dir, name);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(out, (int)size, f));
    out[strcspn(out, "\r\n")] = '\0';
    (void)fclose(f);
}

/* The server's count of connections closed by `rule` (GET /metrics), asked from an address
 * of its own so that a per-address cap on the test's clients does not refuse it. */
static unsigned long long closed_by(uint16_t port, const char *rule)
{
    static char buf[256 * 1024];
    char token[128], req[256], key[96];
    const char *p;
    int fd = connect_from(port, "127.0.0.254");

    read_file_line(token, sizeof(token), "admin.token");
    (void)snprintf(req, sizeof(req),
                   "GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n\r\n", token);
    assert_int_equal(exchange(buf, sizeof(buf), fd, req), 200);
    (void)close(fd);
    (void)snprintf(key, sizeof(key), "mf_http_connections_closed_total{rule=\"%s\"} ", rule);
    p = strstr(buf, key);
    if (!p)
        fail_msg("no %s in /metrics", key);
    return strtoull(p + strlen(key), NULL, 10);
}

/* One header byte every 150 ms never leaves the connection idle for the 30 s idle timeout,
 * which restarted on every byte: such a client held its connection for as long as it kept
 * trickling. The header deadline closes it; requests that come in time are served, also
 * on a keep-alive connection older than the deadline (each header's clock starts at the
 * end of the request before). */
static void test_server_conns__trickled_header_closed_at_deadline(void **state)
{
    static const char slow[] =
        "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: 0123456789abcdef\r\n\r\n";
    struct mf_server_options o;
    struct mf_server *srv;
    int fd;

    (void)state;
    test_options(&o);
    o.header_timeout_s = 1;
    assert_int_equal(o.conn_timeout_s, 30);
    srv = start_with(&o);
    fd = connect_to(mf_server__port(srv));
    expect_rule_closes(fd, slow, sizeof(slow) - 1, 150);
    assert_int_equal(closed_by(mf_server__port(srv), "header_timeout"), 1);

    fd = connect_to(mf_server__port(srv));
    for (int i = 0; i < 6; i++) { /* 2.4 s on one connection */
        char buf[2048];

        assert_int_equal(exchange(buf, sizeof(buf), fd, health_req), 200);
        assert_null(strstr(buf, "Connection: close"));
        sleep_ms(400);
    }
    /* Idle past the deadline after its last reply: closed (conn-timeout is 30 s). */
    assert_true(closed_within(fd, 2000));
    (void)close(fd);
    assert_int_equal(closed_by(mf_server__port(srv), "header_timeout"), 2);
    mf_server__stop(srv);
}

/* A JSON body for POST /v1/enroll of exactly `len` bytes (padded with spaces). */
static void enroll_body(char *out, size_t len)
{
    static const char obj[] = "{\"enrollment_token\":\"mfe_x\",\"device_id\":\"d\"}";

    assert_true(len >= sizeof(obj));
    memset(out, ' ', len);
    memcpy(out, obj, sizeof(obj) - 1);
    out[len] = '\0';
}

static void send_enroll_header(int fd, size_t len)
{
    char head[160];

    (void)snprintf(head, sizeof(head),
                   "POST /v1/enroll HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   len);
    assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
}

/* Below the floor (10 bytes/s against 200 over 1 s windows) a body is closed at the end of
 * its first window; at 1,000 bytes/s one of 4,000 bytes spans four windows and is answered. */
static void test_server_conns__slow_body_closed_healthy_body_served(void **state)
{
    enum { SLOW_LEN = 2000, OK_LEN = 4000, CHUNK = 100 };
    static char body[OK_LEN + 1];
    struct mf_server_options o;
    struct mf_server *srv;
    char buf[2048];
    int fd;

    (void)state;
    test_options(&o);
    o.body_min_rate = 200;
    o.body_rate_window_s = 1;
    srv = start_with(&o);
    fd = connect_to(mf_server__port(srv));
    enroll_body(body, SLOW_LEN);
    send_enroll_header(fd, SLOW_LEN);
    expect_rule_closes(fd, body, 60, 100);
    assert_int_equal(closed_by(mf_server__port(srv), "body_rate"), 1);

    fd = connect_to(mf_server__port(srv));
    enroll_body(body, OK_LEN);
    send_enroll_header(fd, OK_LEN);
    for (size_t off = 0; off < OK_LEN; off += CHUNK) {
        assert_int_equal(send(fd, body + off, CHUNK, MSG_NOSIGNAL), CHUNK);
        sleep_ms(100);
    }
    assert_int_equal(read_reply(buf, sizeof(buf), fd), 401); /* the token is not valid */
    (void)close(fd);
    assert_int_equal(closed_by(mf_server__port(srv), "body_rate"), 1);
    mf_server__stop(srv);
}

/* Holds `n` connections from `host` (each served once, so the server has surely counted
 * it), checks the next one from `src` is closed unanswered, and returns it closed. */
static void fill_address(int *held, int n, const char *host, uint16_t port, const char *src)
{
    char buf[2048];
    int fd;

    for (int i = 0; i < n; i++) {
        held[i] = connect_host(host, port, src);
        assert_int_equal(exchange(buf, sizeof(buf), held[i], health_req), 200);
    }
    fd = connect_host(host, port, src);
    (void)send(fd, health_req, strlen(health_req), MSG_NOSIGNAL);
    if (!closed_within(fd, RECV_MS))
        fail_msg("connection %d from one address was not closed", n + 1);
    (void)close(fd);
}

/* With a cap of 4 per address the 5th connection from 127.0.0.1 is closed at accept, while
 * 127.0.0.2 is served; once one of the four leaves, 127.0.0.1 is served again. */
static void test_server_conns__per_address_cap(void **state)
{
    enum { CAP = 4 };
    struct mf_server_options o;
    struct mf_server *srv;
    int held[CAP], fd, status = -1;
    char buf[2048];

    (void)state;
    test_options(&o);
    o.conn_per_addr = CAP;
    srv = start_with(&o);
    fill_address(held, CAP, "127.0.0.1", mf_server__port(srv), "127.0.0.1");
    assert_int_equal(closed_by(mf_server__port(srv), "per_address"), 1);
    fd = connect_from(mf_server__port(srv), "127.0.0.2");
    assert_int_equal(exchange(buf, sizeof(buf), fd, health_req), 200);
    (void)close(fd);
    (void)close(held[0]);
    /* The server sees the close a moment later: bounded retries, 20 ms apart. */
    for (int tries = 0; tries < 50 && status != 200; tries++) {
        sleep_ms(20);
        fd = connect_from(mf_server__port(srv), "127.0.0.1");
        status = exchange(buf, sizeof(buf), fd, health_req);
        (void)close(fd);
    }
    assert_int_equal(status, 200);
    for (int i = 1; i < CAP; i++)
        (void)close(held[i]);
    mf_server__stop(srv);
}

/* IPv6 clients are capped by their address too (::1 here). Skipped without ::1. */
static void test_server_conns__per_address_cap_ipv6(void **state)
{
    enum { CAP = 2 };
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    struct mf_server_options o;
    struct mf_server *srv;
    int held[CAP], probe = socket(AF_INET6, SOCK_STREAM, 0);

    (void)state;
    if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (probe >= 0)
            (void)close(probe);
        MF_SKIP("no IPv6 loopback (::1) on this machine");
    }
    (void)close(probe);
    test_options(&o);
    o.listen = "[::1]:0";
    o.conn_per_addr = CAP;
    srv = start_with(&o);
    fill_address(held, CAP, "::1", mf_server__port(srv), NULL);
    for (int i = 0; i < CAP; i++)
        (void)close(held[i]);
    mf_server__stop(srv);
}

/* A check-in waits on the check-in stage, its connection suspended, while the store is
 * busy (the test holds SQLite's write lock for 2.5 s): the server's turn, which neither the
 * 1 s header deadline nor the body rate floor may cut short. Answered 200 after the lock. */
static void test_server_conns__suspended_checkin_outlives_deadlines(void **state)
{
    static const char checkin[] = "{\"nonce\":\"00112233445566778899aabbccddeeff\",\"models\":"
                                  "[{\"name\":\"det\",\"version\":null,\"sha256\":null}]}";
    static char buf[64 * 1024];
    struct mf_server_options o;
    struct mf_server *srv;
    struct timespec t0;
    char token[128], body[256], req[1024], path[160], *cred, *end;
    sqlite3 *db = NULL;
    int fd;

    (void)state;
    test_options(&o);
    o.header_timeout_s = 1;
    o.body_min_rate = 1000;
    o.body_rate_window_s = 1;
    assert_int_equal(o.checkin_stage, 1);
    srv = start_with(&o);
    read_file_line(token, sizeof(token), "enroll.token");
    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"stage-1\"}",
                   token);
    (void)snprintf(req, sizeof(req),
                   "POST /v1/enroll HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n%s",
                   strlen(body), body);
    fd = connect_to(mf_server__port(srv));
    assert_int_equal(exchange(buf, sizeof(buf), fd, req), 201);
    (void)close(fd);
    cred = strstr(buf, "\"credential\":\"");
    assert_non_null(cred);
    cred += 14;
    end = strchr(cred, '"');
    assert_non_null(end);
    *end = '\0';
    (void)snprintf(req, sizeof(req),
                   "POST /v1/checkin HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                   cred, sizeof(checkin) - 1, checkin);

    (void)snprintf(path, sizeof(path), "%s/store.db", data_dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    fd = connect_to(mf_server__port(srv));
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    assert_false(closed_within(fd, 2500)); /* nothing yet: neither answered nor closed */
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(read_reply(buf, sizeof(buf), fd), 200);
    assert_true(ms_since(&t0) >= 2500);
    (void)close(fd);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    assert_int_equal(closed_by(mf_server__port(srv), "header_timeout"), 0);
    assert_int_equal(closed_by(mf_server__port(srv), "body_rate"), 0);
    mf_server__stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_conns__fleet_beyond_old_limits),
        cmocka_unit_test(test_server_conns__over_limit_is_503_then_served),
        cmocka_unit_test(test_server_conns__low_descriptor_limit_lowers_the_limit),
        cmocka_unit_test(test_server_conns__trickled_header_closed_at_deadline),
        cmocka_unit_test(test_server_conns__slow_body_closed_healthy_body_served),
        cmocka_unit_test(test_server_conns__per_address_cap),
        cmocka_unit_test(test_server_conns__per_address_cap_ipv6),
        cmocka_unit_test(test_server_conns__suspended_checkin_outlives_deadlines),
    };

    return cmocka_run_group_tests_name("server_conns", tests, group_setup, group_teardown);
}
