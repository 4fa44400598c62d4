/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test kit itself (tests/kit/): the allocator fails exactly the allocations it is told to
 * and counts what it hands out; the fake HTTP server answers its script in order, then its
 * default, applies each fault byte for byte, keeps its bounds, and captures what it was sent;
 * the log sink keeps only ERROR lines, the last one truncated to its buffer.
 * A raw socket client reads the wire, so nothing of the product is in the way.
 */
#include "mf_test.h"
#include "kit_alloc.h"
#include "kit_fs.h"
#include "kit_http.h"
#include "kit_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_kit__alloc_fails_the_nth_once_or_from_then_on(void **state)
{
    struct mf_kit_alloc k;
    mf_allocator a = mf_kit_alloc_init(&k, 2, MF_KIT_ALLOC_FAIL_ONE);
    void *p[4];

    (void)state;
    for (int i = 0; i < 4; i++)
        p[i] = mf_alloc(&a, 10 + (size_t)i);
    assert_true(p[0] && p[1] && !p[2] && p[3]);
    assert_int_equal(k.calls, 4);
    assert_int_equal(k.refused, 1);
    assert_int_equal(k.bytes, 10 + 11 + 13);
    assert_int_equal(k.live, 34);
    mf_free(&a, p[1]);
    assert_int_equal(k.live, 23);
    assert_int_equal(k.peak, 34);
    mf_free(&a, p[0]);
    mf_free(&a, p[3]);
    assert_int_equal(k.live, 0);
    /* From the first refusal on, every allocation fails. */
    a = mf_kit_alloc_init(&k, 1, MF_KIT_ALLOC_FAIL_FROM);
    p[0] = mf_alloc(&a, 8);
    assert_non_null(p[0]);
    assert_null(mf_alloc(&a, 8));
    assert_null(mf_alloc(&a, 8));
    assert_int_equal(k.refused, 2);
    mf_free(&a, p[0]);
    /* Rearming keeps what is held and starts the count again. */
    p[0] = mf_alloc(&a, 8);
    assert_null(p[0]);
    mf_kit_alloc_rearm(&k, -1);
    p[0] = mf_alloc(&a, 8);
    assert_non_null(p[0]);
    assert_int_equal(k.calls, 1);
    assert_int_equal(k.refused, 0);
    mf_free(&a, p[0]);
}

struct three_blocks {
    long runs, clean_failures;
};

/* Three allocations, all released whatever fails: a clean error path. */
static void three_blocks(struct mf_kit_alloc *k, long n, void *payload)
{
    struct three_blocks *t = payload;
    void *p[3] = {NULL, NULL, NULL};
    int ok = 1;

    t->runs++;
    for (int i = 0; i < 3 && ok; i++) {
        p[i] = mf_alloc(&k->a, 16);
        ok = p[i] != NULL;
    }
    for (int i = 0; i < 3; i++)
        mf_free(&k->a, p[i]);
    if (!ok) {
        assert_int_equal(k->refused, 1);
        assert_int_equal(k->calls, n + 1); /* nothing was tried after the failure */
        t->clean_failures++;
    }
    assert_int_equal(k->live, 0);
}

static void test_kit__each_failure_visits_every_n(void **state)
{
    struct mf_kit_alloc k;
    struct three_blocks t = {0, 0};

    (void)state;
    (void)mf_kit_alloc_init(&k, -1, MF_KIT_ALLOC_FAIL_ONE);
    assert_int_equal(mf_kit_alloc_each_failure(&k, 10, three_blocks, &t), 3);
    assert_int_equal(t.runs, 4); /* N = 0, 1, 2 fail; N = 3 is never reached */
    assert_int_equal(t.clean_failures, 3);
}

/* ---- a raw client ---- */

static int dial(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int err = errno;

        (void)close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Sends `req` and reads the answer until the server closes; returns its length. */
static size_t exchange(char *out, size_t cap, int port, const char *req)
{
    int fd = dial(port);
    size_t len = 0;

    assert_true(fd >= 0);
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t r;

        assert_true(poll(&p, 1, 10000) == 1);
        r = recv(fd, out + len, cap - 1 - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        assert_true(len < cap - 1);
    }
    out[len] = '\0';
    (void)close(fd);
    return len;
}

static const char *body_of(const char *answer)
{
    const char *end = strstr(answer, "\r\n\r\n");

    assert_non_null(end);
    return end + 4;
}

static void test_kit__http_script_then_default_and_capture(void **state)
{
    struct mf_kit_http_reply created = {.status = 201, .body = "{\"id\":7}"};
    struct mf_kit_http_reply lost = {.status = 0};
    struct mf_kit_http_reply dflt = {.status = 204};
    const struct mf_kit_http_request *q;
    struct mf_kit_http s;
    char buf[4096];

    (void)state;
    mf_kit_http_start(&s, NULL, NULL);
    mf_kit_http_script(&s, &created);
    mf_kit_http_script(&s, &lost);
    mf_kit_http_set_default(&s, &dflt);
    exchange(buf, sizeof(buf), s.port,
             "POST /v1/x?a=1 HTTP/1.1\r\nHost: k\r\nContent-Length: 5\r\n\r\nhello");
    assert_int_equal(strncmp(buf, "HTTP/1.1 201 Created\r\n", 22), 0);
    assert_non_null(strstr(buf, "Content-Type: application/json\r\n"));
    assert_non_null(strstr(buf, "Content-Length: 8\r\n"));
    assert_string_equal(body_of(buf), "{\"id\":7}");
    assert_int_equal(exchange(buf, sizeof(buf), s.port, "GET /lost HTTP/1.1\r\n\r\n"), 0);
    for (int i = 0; i < 2; i++) {
        exchange(buf, sizeof(buf), s.port, "DELETE /d HTTP/1.1\r\n\r\n");
        assert_int_equal(strncmp(buf, "HTTP/1.1 204 No Content\r\n", 25), 0);
    }
    assert_int_equal(mf_kit_http_requests(&s), 4);
    assert_int_equal(mf_kit_http_answered(&s), 3); /* the lost answer does not count */
    q = mf_kit_http_request(&s, 0);
    assert_string_equal(q->line, "POST /v1/x?a=1 HTTP/1.1");
    assert_string_equal(q->method, "POST");
    assert_string_equal(q->target, "/v1/x?a=1");
    assert_non_null(strstr(q->head, "Host: k\r\n"));
    assert_int_equal(q->body_len, 5);
    assert_string_equal(q->body, "hello");
    assert_string_equal(mf_kit_http_request(&s, -1)->target, "/d");
    mf_kit_http_stop(&s);
}

static void test_kit__http_faults_byte_for_byte(void **state)
{
    static const char digits[] = "0123456789";
    struct mf_kit_http_reply cut = {.status = 200, .body = digits, .cut_at = 4};
    struct mf_kit_http_reply bad = {.status = 206, .body = digits, .corrupt = 1, .corrupt_at = 2};
    struct mf_kit_http_reply chunked = {
        .status = 200, .body = digits, .content_type = "application/octet-stream", .chunked = 1};
    struct mf_kit_http_reply raw = {.raw = "HTTP/1.1 418 Teapot\r\n\r\nshort"};
    struct mf_kit_http_reply slow = {
        .status = 200, .body = "{}", .delay_ms = 200, .headers = "ETag: \"e\"\r\n"};
    struct mf_kit_http s;
    struct timespec t0, t1;
    char buf[4096], want[16];

    (void)state;
    mf_kit_http_start(&s, NULL, NULL);
    mf_kit_http_script(&s, &cut);
    mf_kit_http_script(&s, &bad);
    mf_kit_http_script(&s, &chunked);
    mf_kit_http_script(&s, &raw);
    mf_kit_http_script(&s, &slow);
    exchange(buf, sizeof(buf), s.port, "GET / HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(buf, "Content-Length: 10\r\n")); /* all announced, 4 sent */
    assert_string_equal(body_of(buf), "0123");
    exchange(buf, sizeof(buf), s.port, "GET / HTTP/1.1\r\n\r\n");
    memcpy(want, digits, sizeof(digits));
    want[2] ^= 0x5a;
    assert_string_equal(body_of(buf), want);
    exchange(buf, sizeof(buf), s.port, "GET / HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(buf, "Transfer-Encoding: chunked\r\n"));
    assert_null(strstr(buf, "Content-Length"));
    assert_string_equal(body_of(buf), "a\r\n0123456789\r\n0\r\n\r\n");
    exchange(buf, sizeof(buf), s.port, "GET / HTTP/1.1\r\n\r\n");
    assert_string_equal(buf, "HTTP/1.1 418 Teapot\r\n\r\nshort");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    exchange(buf, sizeof(buf), s.port, "GET / HTTP/1.1\r\n\r\n");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 190);
    assert_non_null(strstr(buf, "ETag: \"e\"\r\nContent-Length: 2\r\n"));
    mf_kit_http_stop(&s);
}

static void test_kit__http_bounds(void **state)
{
    struct mf_kit_http s;
    char buf[4096], req[128];
    int port = mf_kit_http_free_port();

    (void)state;
    assert_int_equal(dial(port), -1); /* nothing listens on a free port */
    assert_int_equal(errno, ECONNREFUSED);
    mf_kit_http_start(&s, NULL, NULL);
    /* A body beyond the bound is refused before it is read. */
    (void)snprintf(req, sizeof(req), "PUT /big HTTP/1.1\r\nContent-Length: %u\r\n\r\n",
                   MF_KIT_HTTP_MAX_REQUEST);
    exchange(buf, sizeof(buf), s.port, req);
    assert_int_equal(strncmp(buf, "HTTP/1.1 413 ", 13), 0);
    assert_int_equal(mf_kit_http_requests(&s), 0);
    /* Unscripted: a 500 that names the request. */
    exchange(buf, sizeof(buf), s.port, "GET /nothing HTTP/1.1\r\n\r\n");
    assert_int_equal(strncmp(buf, "HTTP/1.1 500 ", 13), 0);
    assert_non_null(strstr(body_of(buf), "GET /nothing HTTP/1.1"));
    mf_kit_http_stop(&s);
}

static void test_kit__fs_scratch_dir(void **state)
{
    char dir[64], path[128], line[16];
    uint8_t *got;
    size_t len = 0;

    (void)state;
    mf_kit_fs_mkdtemp(dir, sizeof(dir), "mf-kit");
    (void)snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    (void)snprintf(path, sizeof(path), "%s/sub/token", dir);
    mf_kit_fs_write(path, "mfa_x\r\nrest", 11);
    assert_true(mf_kit_fs_exists(dir, "sub/token"));
    assert_null(mf_kit_fs_slurp(dir, "missing", &len));
    got = mf_kit_fs_slurp(dir, "sub/token", &len);
    assert_int_equal(len, 11);
    assert_memory_equal(got, "mfa_x\r\nrest", 12); /* NUL after the bytes */
    test_free(got);
    mf_kit_fs_read_line(line, sizeof(line), dir, "sub/token");
    assert_string_equal(line, "mfa_x");
    mf_kit_fs_rmtree(dir);
    assert_false(mf_kit_fs_exists(dir, ""));
}

/* Only ERROR lines count; the last one is kept, cut to the buffer and still terminated. */
static void test_kit__log_keeps_errors_only(void **state)
{
    struct mf_kit_log log = {0};
    char longer[400];

    (void)state;
    mf_kit_log_errors(&log, MF_LOG_WARN, "m", "a warning");
    mf_kit_log_errors(&log, MF_LOG_DEBUG, "m", "a debug line");
    assert_int_equal(log.errors, 0);
    assert_string_equal(log.last, "");
    mf_kit_log_errors(&log, MF_LOG_ERROR, "m", "first");
    mf_kit_log_errors(&log, MF_LOG_ERROR, "m", "second");
    assert_int_equal(log.errors, 2);
    assert_string_equal(log.last, "second");
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    mf_kit_log_errors(&log, MF_LOG_ERROR, "m", longer);
    assert_int_equal(log.errors, 3);
    assert_int_equal(strlen(log.last), sizeof(log.last) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kit__alloc_fails_the_nth_once_or_from_then_on),
        cmocka_unit_test(test_kit__each_failure_visits_every_n),
        cmocka_unit_test(test_kit__http_script_then_default_and_capture),
        cmocka_unit_test(test_kit__http_faults_byte_for_byte),
        cmocka_unit_test(test_kit__http_bounds),
        cmocka_unit_test(test_kit__fs_scratch_dir),
        cmocka_unit_test(test_kit__log_keeps_errors_only),
    };

    return cmocka_run_group_tests_name("kit", tests, NULL, NULL);
}
