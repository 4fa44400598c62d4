/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection limit (docs/operations.md, "Connections"): how many connections the server
 * serves at once, and what happens around it. libmicrohttpd's own limit, once reached,
 * stops accept(): new clients then wait unanswered in the listen backlog until an idle
 * keep-alive connection times out, which looks like a dead server. So MHD is given some
 * headroom above the limit, and the router answers a request on a connection beyond the
 * limit at once with 503 (Retry-After, connection closed), and, once half the limit is in
 * use, closes each connection after its reply instead of keeping it idle for its client.
 *
 * The connection rules keep slow clients from holding those slots: MHD's idle timeout
 * restarts on every byte, so a client trickling a byte a second would keep its connection
 * forever. Three deadlines that bytes cannot extend:
 *   - the header deadline: a request's whole header is in within header_timeout_s of the
 *     connection's accept, or of the end of its previous request (keep-alive); the close
 *     comes between that and 1.25 x that, spread per connection so that sockets opened
 *     together are not all closed (and reopened) together;
 *   - the body rate floor: from the end of the headers, a request body delivers at least
 *     body_min_rate bytes/s averaged over each body_window_s (the first window is the grace);
 *   - the per-address cap: at most per_addr connections from one client address (IPv4, or
 *     IPv6 with IPv4-mapped addresses taken as IPv4) are served; more are closed at accept.
 * A request that is the server's turn (complete, being handled, suspended on the check-in
 * stage, or being answered) is never closed by a rule. MHD cannot be told to close a
 * connection from outside, so a sweeper thread shuts the socket down (shutdown(2); MHD
 * then sees the end of the stream and closes it) under the mutex that the close
 * notification takes before MHD closes the descriptor: a reused descriptor is never hit.
 * The hot path costs a few relaxed atomic stores per request, no lock.
 */
#ifndef MF_SERVER_HTTP_CONNS_H
#define MF_SERVER_HTTP_CONNS_H

#include "mf_ctx.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

struct mf_metrics;
struct mf_conn_guard;
struct mf_httpd_conn; /* one tracked connection (MHD's socket_context) */

/* What a rule closed a connection for; indexes mf_metrics.conns_closed. */
enum mf_conn_rule {
    MF_CONN_RULE_HEADER,    /* header not complete within header_timeout_s */
    MF_CONN_RULE_BODY_RATE, /* body below body_min_rate over a window */
    MF_CONN_RULE_PER_ADDR,  /* over per_addr connections from one address */
    MF_CONN_RULES
};

/* The rules' settings; 0 turns a rule off (body_window_s must be >= 1 with a rate). */
struct mf_conn_rules {
    unsigned header_timeout_s;
    unsigned body_min_rate; /* bytes per second */
    unsigned body_window_s;
    unsigned per_addr;
};

struct mf_httpd_conns {
    atomic_uint open;            /* connections MHD holds now (accepted, not yet closed) */
    unsigned limit;              /* served at once; requests beyond it get 503 */
    unsigned keep;               /* above this many open, replies close their connection */
    struct mf_conn_guard *guard; /* the rules; NULL: none (counting only) */
};

/* Sets the limit (>= 1) with nothing open and no rules. */
void mf_httpd__conns_init(struct mf_httpd_conns *c, unsigned limit);

/* What MHD itself is allowed to hold: the limit plus the headroom in which over-limit
 * clients are still accepted and told 503 rather than left in the backlog. */
unsigned mf_httpd__conns_mhd_limit(unsigned limit);

/* The rule names of /metrics and of the log lines ("header_timeout", ...). */
const char *mf_httpd__conn_rule_name(enum mf_conn_rule rule);

/*
 * Starts enforcing `rules` on the connections of `c` (after mf_httpd__conns_init, before
 * MHD starts): tracks up to mf_httpd__conns_mhd_limit(c->limit) connections and starts the
 * sweeper thread, which counts each closing in `m` and logs through (log_fn, log_payload;
 * NULL: no lines) at most one line per rule every 10 s. MF_E_INVALID for a rate without a window,
 * MF_E_NOMEM, or MF_E_GENERIC (no thread). Release with mf_httpd__conns_stop(), after
 * MHD_stop_daemon.
 */
int mf_httpd__conns_start(struct mf_httpd_conns *c, struct mf_ctx *ctx,
                          const struct mf_conn_rules *rules, struct mf_metrics *m, mf_log_fn log_fn,
                          void *log_payload);
/* Joins the sweeper and frees the tables. No-op without rules. */
void mf_httpd__conns_stop(struct mf_httpd_conns *c);

/* MHD_OPTION_NOTIFY_CONNECTION callback; `cls` is the struct mf_httpd_conns. */
void mf_httpd__on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe);

/* MHD's accept policy (MHD_start_daemon's apc; `cls` is the struct mf_httpd_conns): MHD_NO
 * for a client already at the per-address cap, counted and logged as that rule. */
enum MHD_Result mf_httpd__accept_policy(void *cls, const struct sockaddr *addr, socklen_t len);

/* 1 when a request arriving now is over the limit (answer 503). NULL: never. */
int mf_httpd__conns_over(const struct mf_httpd_conns *c);

/* 1 when a reply sent now should close its connection (no keep-alive). NULL: never. */
int mf_httpd__conns_close_after(const struct mf_httpd_conns *c);

/*
 * The router's marks on a connection's request, from the MHD worker that serves it. Each is
 * a relaxed atomic store or two; NULL (an untracked connection, or no rules) is a no-op.
 *   of:            the connection's tracking entry, borrowed until MHD closes it;
 *   headers_in:    the header is complete (the access handler's first call) at `at`;
 *   body:          `n` more body bytes arrived;
 *   server_turn:   the request is complete: no rule applies until request_done;
 *   request_done:  MHD finished the request at `at`: the next header's deadline starts.
 */
struct mf_httpd_conn *mf_httpd__conn_of(struct MHD_Connection *conn);
void mf_httpd__conn_headers_in(struct mf_httpd_conn *k, const struct timespec *at);
void mf_httpd__conn_body(struct mf_httpd_conn *k, size_t n);
void mf_httpd__conn_server_turn(struct mf_httpd_conn *k);
void mf_httpd__conn_request_done(struct mf_httpd_conn *k, const struct timespec *at);

#endif /* MF_SERVER_HTTP_CONNS_H */
