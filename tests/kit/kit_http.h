/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake HTTP server of the unit tests: plain sockets on 127.0.0.1 and an ephemeral port,
 * one thread, one request per connection (every answer says Connection: close). Bounded: the
 * accept loop polls its stop flag every 20 ms, a request is read within
 * MF_KIT_HTTP_READ_TIMEOUT_MS and MF_KIT_HTTP_MAX_REQUEST bytes (larger ones get 413), delays
 * end early when the server stops.
 *
 * It answers in one of two ways:
 * - scripted: replies queued with mf_kit_http_script() are used one per request, in order, then
 *   the default reply (mf_kit_http_set_default()), else a 500 naming the request;
 * - by a handler (mf_kit_http_start()'s `fn`), which sees each request and answers through
 *   mf_kit_http_reply()/mf_kit_http_send(): the protocol fakes of the agent and offload tests.
 * A reply can carry faults: a delay, no answer at all, a body cut after N bytes (Content-Length
 * announcing all of it), a corrupted byte, chunked encoding, or a raw response sent as is.
 * Every request is captured (request line, head, body) for assertions.
 */
#ifndef MF_KIT_HTTP_H
#define MF_KIT_HTTP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define MF_KIT_HTTP_MAX_REQUEST (2u << 20) /* head + body of one request */
#define MF_KIT_HTTP_READ_TIMEOUT_MS 5000   /* silence allowed while a request is read */
#define MF_KIT_HTTP_MAX_SCRIPT 16          /* replies queued at once */
#define MF_KIT_HTTP_MAX_CAPTURE 16         /* last requests kept */

struct mf_kit_http_reply {
    int status;               /* 0: read the request, answer nothing, close (a lost answer) */
    const char *body;         /* NULL: no body */
    size_t body_len;          /* 0 with a body: strlen(body) */
    const char *content_type; /* NULL: application/json when there is a body */
    const char *headers;      /* more header lines, each ending in "\r\n", or NULL */
    const char *raw;          /* the whole response, status line on, sent as is (else NULL) */
    unsigned delay_ms;        /* silence before the answer */
    uint64_t cut_at;          /* close after this many body bytes (0: send every byte) */
    int corrupt;              /* flip the body byte at corrupt_at */
    uint64_t corrupt_at;
    int chunked; /* no Content-Length: chunked encoding, one chunk */
};

/* A request as the server read it; every string is NUL-terminated. */
struct mf_kit_http_request {
    char line[512];    /* request line, without CRLF */
    char method[16];   /* "GET" */
    char target[1024]; /* path and query */
    char head[8192];   /* request line and headers, up to the blank line */
    char *body;        /* malloc'd, NUL after body_len bytes */
    size_t body_len;
};

struct mf_kit_http;
struct mf_kit_http_conn;
typedef void (*mf_kit_http_handler)(void *payload, struct mf_kit_http_conn *c,
                                    const struct mf_kit_http_request *req);

struct mf_kit_http {
    int port;
    char url[40]; /* "http://127.0.0.1:<port>", no trailing slash */
    /* private */
    int listen_fd;
    pthread_t thread;
    pthread_mutex_t lock;
    int stop;
    mf_kit_http_handler fn;
    void *payload;
    char *buf; /* the request being read */
    struct mf_kit_http_reply script[MF_KIT_HTTP_MAX_SCRIPT];
    char *script_mem[MF_KIT_HTTP_MAX_SCRIPT];
    int n_script, next_script;
    struct mf_kit_http_reply dflt;
    char *dflt_mem;
    int has_dflt;
    struct mf_kit_http_request captured[MF_KIT_HTTP_MAX_CAPTURE];
    int n_requests, n_answered;
};

/* Listens on 127.0.0.1 (ephemeral port) and serves from a thread: requests go to `fn` or, when
 * `fn` is NULL, get the scripted replies. */
void mf_kit_http_start(struct mf_kit_http *s, mf_kit_http_handler fn, void *payload);
/* Stops the thread and closes the socket; frees what the server holds (captures too). */
void mf_kit_http_stop(struct mf_kit_http *s);

/* A loopback port that was free a moment ago: nothing listens there (connection refused). */
int mf_kit_http_free_port(void);

/* Queues `r` (strings are copied) as the reply to the next request not yet scripted. */
void mf_kit_http_script(struct mf_kit_http *s, const struct mf_kit_http_reply *r);
/* The reply (copied) once the script is used up, until set again. */
void mf_kit_http_set_default(struct mf_kit_http *s, const struct mf_kit_http_reply *r);

/* Requests read so far, and replies begun through mf_kit_http_reply() (lost answers do not
 * count; bytes a handler sends with mf_kit_http_send() alone do not either). */
int mf_kit_http_requests(struct mf_kit_http *s);
int mf_kit_http_answered(struct mf_kit_http *s);
/* Request `i` (0: the first) while it is among the last MF_KIT_HTTP_MAX_CAPTURE; -1: the last
 * one. Borrowed until the server stops; the case fails when there is no such request. */
const struct mf_kit_http_request *mf_kit_http_request(struct mf_kit_http *s, int i);

/* For handlers: answer with `r` (its faults included). */
void mf_kit_http_reply(struct mf_kit_http_conn *c, const struct mf_kit_http_reply *r);
/* For handlers: a JSON answer (the body may be ""). */
void mf_kit_http_json(struct mf_kit_http_conn *c, int status, const char *body);
/* For handlers: bytes on the wire as they are. */
void mf_kit_http_send(struct mf_kit_http_conn *c, const void *p, size_t n);
/* The bytes on a detached socket (a client gone away ends the sending quietly). */
void mf_kit_http_send_fd(int fd, const void *p, size_t n);
/* For handlers: a duplicate of the connection's socket, which the caller now closes; the server
 * does not shut it down (a response finished later, from a thread). */
int mf_kit_http_detach(struct mf_kit_http_conn *c);
/* Sleeps `ms`, ending early when the server stops. */
void mf_kit_http_sleep(struct mf_kit_http *s, unsigned ms);

#endif /* MF_KIT_HTTP_H */
