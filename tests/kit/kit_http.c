/* SPDX-License-Identifier: Apache-2.0 */
/* The fake HTTP server of the unit tests (kit_http.h). */
#define _GNU_SOURCE /* strcasestr */
#include "kit_http.h"
#include "mf_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct mf_kit_http_conn {
    struct mf_kit_http *srv;
    int fd;
    int detached; /* the socket was handed to the handler */
};

static int stopping(struct mf_kit_http *s)
{
    int stop;

    pthread_mutex_lock(&s->lock);
    stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

void mf_kit_http_sleep(struct mf_kit_http *s, unsigned ms)
{
    /* In 10 ms slices so a stopping server is not held up by a "slow" reply. */
    for (unsigned done = 0; done < ms && !stopping(s); done += 10) {
        struct timespec ts = {0, 10000000L};

        (void)nanosleep(&ts, NULL);
    }
}

void mf_kit_http_send_fd(int fd, const void *p, size_t n)
{
    const char *b = p;

    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

        if (w <= 0)
            return; /* the client went away: nothing more to tell it */
        b += w;
        n -= (size_t)w;
    }
}

void mf_kit_http_send(struct mf_kit_http_conn *c, const void *p, size_t n)
{
    mf_kit_http_send_fd(c->fd, p, n);
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

/* The body with the reply's faults: cut after cut_at bytes, one byte flipped. */
static void send_body(struct mf_kit_http_conn *c, const struct mf_kit_http_reply *r, size_t len)
{
    size_t end = r->cut_at > 0 && r->cut_at < len ? (size_t)r->cut_at : len;
    const uint8_t *b = (const uint8_t *)r->body;

    if (r->corrupt && r->corrupt_at < end) {
        uint8_t bad = b[r->corrupt_at] ^ 0x5a;

        mf_kit_http_send(c, b, (size_t)r->corrupt_at);
        mf_kit_http_send(c, &bad, 1);
        mf_kit_http_send(c, b + r->corrupt_at + 1, end - (size_t)r->corrupt_at - 1);
    } else {
        mf_kit_http_send(c, b, end);
    }
}

/* Counted before the first byte goes out: a client that has its answer finds it counted. */
static void count_answer(struct mf_kit_http_conn *c)
{
    pthread_mutex_lock(&c->srv->lock);
    c->srv->n_answered++;
    pthread_mutex_unlock(&c->srv->lock);
}

void mf_kit_http_reply(struct mf_kit_http_conn *c, const struct mf_kit_http_reply *r)
{
    size_t len = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
    char head[1024];
    int n;

    if (r->delay_ms)
        mf_kit_http_sleep(c->srv, r->delay_ms);
    if (r->status == 0 && !r->raw)
        return; /* a lost answer: the connection closes unanswered */
    count_answer(c);
    if (r->raw) {
        mf_kit_http_send(c, r->raw, strlen(r->raw));
        return;
    }
    n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
    if (r->body || r->content_type)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Type: %s\r\n",
                      r->content_type ? r->content_type : "application/json");
    if (r->chunked)
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Transfer-Encoding: chunked\r\n%sConnection: close\r\n\r\n%zx\r\n",
                      r->headers ? r->headers : "", len);
    else
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
                      r->headers ? r->headers : "", len);
    assert_true(n > 0 && (size_t)n < sizeof(head));
    mf_kit_http_send(c, head, (size_t)n);
    if (len)
        send_body(c, r, len);
    if (r->chunked && (r->cut_at == 0 || r->cut_at >= len))
        mf_kit_http_send(c, "\r\n0\r\n\r\n", 7);
}

void mf_kit_http_json(struct mf_kit_http_conn *c, int status, const char *body)
{
    struct mf_kit_http_reply r = {.status = status, .body = body[0] ? body : NULL};

    if (!body[0])
        r.content_type = "application/json";
    mf_kit_http_reply(c, &r);
}

int mf_kit_http_detach(struct mf_kit_http_conn *c)
{
    int fd = dup(c->fd);

    assert_true(fd >= 0);
    c->detached = 1;
    return fd;
}

/* Reads one request into s->buf: head, then Content-Length bytes of body. Returns the offset
 * of the body and its length, or -1 (closed, silent too long, too large: 413). */
static long read_request(struct mf_kit_http_conn *c, size_t *body_len)
{
    struct mf_kit_http *s = c->srv;
    size_t len = 0, need = 0;
    long body = -1;

    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        ssize_t r;

        if (body >= 0 && len >= (size_t)body + need)
            break;
        if (len + 1 >= MF_KIT_HTTP_MAX_REQUEST) {
            mf_kit_http_json(c, 413, "{\"error\":\"too_large\",\"message\":\"kit_http limit\"}");
            return -1;
        }
        if (poll(&p, 1, MF_KIT_HTTP_READ_TIMEOUT_MS) <= 0)
            return -1;
        r = recv(c->fd, s->buf + len, MF_KIT_HTTP_MAX_REQUEST - 1 - len, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        s->buf[len] = '\0';
        if (body < 0) {
            char *end = strstr(s->buf, "\r\n\r\n");
            const char *cl;

            if (!end)
                continue;
            *end = '\0'; /* the header search stays inside the head */
            cl = strcasestr(s->buf, "\r\nContent-Length:");
            need = cl ? (size_t)strtoull(cl + 17, NULL, 10) : 0;
            *end = '\r';
            body = end + 4 - s->buf;
            if (need >= MF_KIT_HTTP_MAX_REQUEST - (size_t)body) {
                mf_kit_http_json(c, 413,
                                 "{\"error\":\"too_large\",\"message\":\"kit_http limit\"}");
                return -1;
            }
        }
    }
    *body_len = need;
    return body;
}

/* The request in s->buf into the next capture slot. */
static struct mf_kit_http_request *capture(struct mf_kit_http *s, long body, size_t body_len)
{
    struct mf_kit_http_request *q;
    size_t head_len = (size_t)body - 4;

    pthread_mutex_lock(&s->lock);
    q = &s->captured[s->n_requests % MF_KIT_HTTP_MAX_CAPTURE];
    free(q->body);
    memset(q, 0, sizeof(*q));
    (void)snprintf(q->head, sizeof(q->head), "%.*s\r\n", (int)head_len, s->buf);
    (void)snprintf(q->line, sizeof(q->line), "%.*s", (int)strcspn(s->buf, "\r"), s->buf);
    (void)sscanf(q->line, "%15s %1023s", q->method, q->target);
    q->body = malloc(body_len + 1);
    assert_non_null(q->body);
    memcpy(q->body, s->buf + body, body_len);
    q->body[body_len] = '\0';
    q->body_len = body_len;
    s->n_requests++;
    pthread_mutex_unlock(&s->lock);
    return q;
}

static struct mf_kit_http_reply copy_reply(char **mem, const struct mf_kit_http_reply *r);

/* The reply is copied under the lock: a test may replace the default (and free its strings)
 * while this thread is still sending it. */
static void answer_scripted(struct mf_kit_http_conn *c, const struct mf_kit_http_request *q)
{
    struct mf_kit_http *s = c->srv;
    struct mf_kit_http_reply r;
    char miss[700], *mem = NULL;

    pthread_mutex_lock(&s->lock);
    if (s->next_script < s->n_script) {
        r = s->script[s->next_script++];
    } else if (s->has_dflt) {
        r = copy_reply(&mem, &s->dflt);
    } else {
        (void)snprintf(miss, sizeof(miss),
                       "{\"error\":\"kit\",\"message\":\"no scripted reply for %.500s\"}", q->line);
        r = (struct mf_kit_http_reply){.status = 500, .body = miss};
    }
    pthread_mutex_unlock(&s->lock);
    mf_kit_http_reply(c, &r);
    free(mem);
}

static void *serve(void *arg)
{
    struct mf_kit_http *s = arg;

    while (!stopping(s)) {
        struct pollfd p = {.fd = s->listen_fd, .events = POLLIN};
        struct mf_kit_http_conn c = {.srv = s};
        struct mf_kit_http_request *q;
        size_t body_len = 0;
        long body;

        if (poll(&p, 1, 20) <= 0)
            continue;
        c.fd = accept(s->listen_fd, NULL, NULL);
        if (c.fd < 0)
            continue;
        body = read_request(&c, &body_len);
        if (body >= 0) {
            q = capture(s, body, body_len);
            if (s->fn)
                s->fn(s->payload, &c, q);
            else
                answer_scripted(&c, q);
        }
        if (!c.detached)
            (void)shutdown(c.fd, SHUT_WR); /* the client sees the end of the answer */
        (void)close(c.fd);
    }
    return NULL;
}

/* A loopback socket bound to an ephemeral port; `port` gets the port. */
static int bind_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

int mf_kit_http_free_port(void)
{
    int port;

    (void)close(bind_loopback(&port));
    return port;
}

void mf_kit_http_start(struct mf_kit_http *s, mf_kit_http_handler fn, void *payload)
{
    memset(s, 0, sizeof(*s));
    s->fn = fn;
    s->payload = payload;
    s->buf = malloc(MF_KIT_HTTP_MAX_REQUEST);
    assert_non_null(s->buf);
    assert_int_equal(pthread_mutex_init(&s->lock, NULL), 0);
    s->listen_fd = bind_loopback(&s->port);
    assert_int_equal(listen(s->listen_fd, 16), 0);
    (void)snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

void mf_kit_http_stop(struct mf_kit_http *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    (void)close(s->listen_fd);
    pthread_mutex_destroy(&s->lock);
    for (int i = 0; i < MF_KIT_HTTP_MAX_CAPTURE; i++)
        free(s->captured[i].body);
    for (int i = 0; i < s->n_script; i++)
        free(s->script_mem[i]);
    free(s->dflt_mem);
    free(s->buf);
    s->buf = NULL;
}

/* `r` with its strings copied into one block (*mem, freed when the server stops). */
static struct mf_kit_http_reply copy_reply(char **mem, const struct mf_kit_http_reply *r)
{
    struct mf_kit_http_reply out = *r;
    size_t blen = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
    size_t hlen = r->headers ? strlen(r->headers) + 1 : 0;
    size_t clen = r->content_type ? strlen(r->content_type) + 1 : 0;
    size_t rlen = r->raw ? strlen(r->raw) + 1 : 0;
    char *p = malloc(blen + 1 + hlen + clen + rlen);

    assert_non_null(p);
    *mem = p;
    if (r->body) {
        memcpy(p, r->body, blen);
        p[blen] = '\0';
        out.body = p;
        out.body_len = blen;
        p += blen + 1;
    }
    if (r->headers) {
        out.headers = memcpy(p, r->headers, hlen);
        p += hlen;
    }
    if (r->content_type) {
        out.content_type = memcpy(p, r->content_type, clen);
        p += clen;
    }
    if (r->raw)
        out.raw = memcpy(p, r->raw, rlen);
    return out;
}

void mf_kit_http_script(struct mf_kit_http *s, const struct mf_kit_http_reply *r)
{
    pthread_mutex_lock(&s->lock);
    assert_true(s->n_script < MF_KIT_HTTP_MAX_SCRIPT);
    s->script[s->n_script] = copy_reply(&s->script_mem[s->n_script], r);
    s->n_script++;
    pthread_mutex_unlock(&s->lock);
}

void mf_kit_http_set_default(struct mf_kit_http *s, const struct mf_kit_http_reply *r)
{
    char *old;

    pthread_mutex_lock(&s->lock);
    old = s->dflt_mem;
    s->dflt = copy_reply(&s->dflt_mem, r);
    s->has_dflt = 1;
    pthread_mutex_unlock(&s->lock);
    free(old);
}

/* A counter the server thread moves, read under its lock. */
static int counter(struct mf_kit_http *s, const int *field)
{
    int n;

    pthread_mutex_lock(&s->lock);
    n = *field;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int mf_kit_http_requests(struct mf_kit_http *s)
{
    return counter(s, &s->n_requests);
}

int mf_kit_http_answered(struct mf_kit_http *s)
{
    return counter(s, &s->n_answered);
}

const struct mf_kit_http_request *mf_kit_http_request(struct mf_kit_http *s, int i)
{
    int n = mf_kit_http_requests(s);

    if (i < 0)
        i = n + i;
    if (i < 0 || i >= n || i < n - MF_KIT_HTTP_MAX_CAPTURE)
        fail_msg("request %d not captured (%d seen)", i, n);
    return &s->captured[i % MF_KIT_HTTP_MAX_CAPTURE];
}
