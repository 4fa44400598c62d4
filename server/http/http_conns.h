/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection limit (docs/operations.md, "Connections"): how many connections the server
 * serves at once, and what happens around it. libmicrohttpd's own limit, once reached,
 * stops accept(): new clients then wait unanswered in the listen backlog until an idle
 * keep-alive connection times out, which looks like a dead server. So MHD is given some
 * headroom above the limit, and the router answers a request on a connection beyond the
 * limit at once with 503 (Retry-After, connection closed), and, once half the limit is in
 * use, closes each connection after its reply instead of keeping it idle for its client.
 */
#ifndef MF_SERVER_HTTP_CONNS_H
#define MF_SERVER_HTTP_CONNS_H

#include <microhttpd.h>
#include <stdatomic.h>

struct mf_httpd_conns {
    atomic_uint open; /* connections MHD holds now (accepted, not yet closed) */
    unsigned limit;   /* served at once; requests beyond it get 503 */
    unsigned keep;    /* above this many open, replies close their connection */
};

/* Sets the limit (>= 1) with nothing open. */
void mf_httpd__conns_init(struct mf_httpd_conns *c, unsigned limit);

/* What MHD itself is allowed to hold: the limit plus the headroom in which over-limit
 * clients are still accepted and told 503 rather than left in the backlog. */
unsigned mf_httpd__conns_mhd_limit(unsigned limit);

/* MHD_OPTION_NOTIFY_CONNECTION callback; `cls` is the struct mf_httpd_conns. */
void mf_httpd__on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe);

/* 1 when a request arriving now is over the limit (answer 503). NULL: never. */
int mf_httpd__conns_over(const struct mf_httpd_conns *c);

/* 1 when a reply sent now should close its connection (no keep-alive). NULL: never. */
int mf_httpd__conns_close_after(const struct mf_httpd_conns *c);

#endif /* MF_SERVER_HTTP_CONNS_H */
