/* SPDX-License-Identifier: Apache-2.0 */
/* The fake Open Inference Protocol server of the teacher tests (see test_teacher_fake.h). */
#define _GNU_SOURCE
#include "test_teacher_fake.h"
#include "mf_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Reads one request (headers, then Content-Length bytes) into the record. */
static int read_request(struct fake_oip *f, int c)
{
    static char buf[70000];
    size_t got = 0, need = 0;
    char *hdr_end = NULL;

    for (int spins = 0; spins < 200; spins++) {
        struct pollfd p = {.fd = c, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, 50) <= 0)
            continue;
        n = read(c, buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
        buf[got] = '\0';
        if (!hdr_end) {
            hdr_end = strstr(buf, "\r\n\r\n");
            if (hdr_end) {
                char *cl = strcasestr(buf, "Content-Length:");

                need = (size_t)(hdr_end - buf) + 4 + (cl ? strtoul(cl + 15, NULL, 10) : 0);
            }
        }
        if (hdr_end && got >= need) {
            pthread_mutex_lock(&f->lock);
            (void)sscanf(buf, "%*s %127s", f->last_path);
            (void)snprintf(f->last_body, sizeof(f->last_body), "%s", hdr_end + 4);
            pthread_mutex_unlock(&f->lock);
            return 0;
        }
    }
    return -1;
}

static void answer(struct fake_oip *f, int c)
{
    char body[1024], resp[1400];
    size_t n = 0;
    int mode;
    unsigned slow;

    pthread_mutex_lock(&f->lock);
    mode = f->mode;
    slow = f->slow_ms;
    n += (size_t)snprintf(body + n, sizeof(body) - n,
                          "{\"model_name\":\"teach\",\"model_version\":\"k-3\",\"outputs\":"
                          "[{\"name\":\"probs\",\"shape\":[1,%zu],\"datatype\":\"FP32\","
                          "\"data\":[",
                          f->n);
    for (size_t i = 0; i < f->n; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%s%.9g", i ? "," : "",
                              (double)f->probs[i]);
    (void)snprintf(body + n, sizeof(body) - n, "]}]}");
    pthread_mutex_unlock(&f->lock);
    if (mode == FAKE_SLOW)
        usleep(slow * 1000u);
    if (mode == FAKE_FAIL)
        (void)snprintf(resp, sizeof(resp),
                       "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n"
                       "Connection: close\r\n\r\n{}");
    else
        (void)snprintf(resp, sizeof(resp),
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                       strlen(body), body);
    (void)!write(c, resp, strlen(resp));
    pthread_mutex_lock(&f->lock);
    f->calls++;
    pthread_mutex_unlock(&f->lock);
}

static void *serve(void *arg)
{
    struct fake_oip *f = arg;

    while (!f->stop) {
        struct pollfd p = {.fd = f->fd, .events = POLLIN};
        int c;

        if (poll(&p, 1, 50) <= 0)
            continue;
        c = accept(f->fd, NULL, NULL);
        if (c < 0)
            continue;
        if (read_request(f, c) == 0)
            answer(f, c);
        (void)close(c);
    }
    return NULL;
}

void fake_oip_start(struct fake_oip *f, const float *probs, size_t n)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    memset(f, 0, sizeof(*f));
    assert_true(n <= 16);
    memcpy(f->probs, probs, n * sizeof(float));
    f->n = n;
    pthread_mutex_init(&f->lock, NULL);
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->fd >= 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->fd, 16), 0);
    assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
}

void fake_oip_set(struct fake_oip *f, int mode, unsigned slow_ms)
{
    pthread_mutex_lock(&f->lock);
    f->mode = mode;
    f->slow_ms = slow_ms;
    pthread_mutex_unlock(&f->lock);
}

unsigned fake_oip_calls(struct fake_oip *f)
{
    unsigned n;

    pthread_mutex_lock(&f->lock);
    n = f->calls;
    pthread_mutex_unlock(&f->lock);
    return n;
}

void fake_oip_stop(struct fake_oip *f)
{
    f->stop = 1;
    pthread_join(f->thread, NULL);
    (void)close(f->fd);
    pthread_mutex_destroy(&f->lock);
}
