/* SPDX-License-Identifier: Apache-2.0 */
/* Counting connections for the limit and keep-alive decisions (see http_conns.h). */
#include "http/http_conns.h"

void mf_httpd__conns_init(struct mf_httpd_conns *c, unsigned limit)
{
    atomic_init(&c->open, 0);
    c->limit = limit ? limit : 1;
    c->keep = c->limit / 2;
}

unsigned mf_httpd__conns_mhd_limit(unsigned limit)
{
    /* A quarter more, at least 16: enough for a burst to be told 503 while the served
     * connections finish; MHD splits its limit over the worker threads, so not less. */
    return limit + limit / 4 + 16;
}

void mf_httpd__on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct mf_httpd_conns *c = cls;

    (void)conn;
    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add_explicit(&c->open, 1, memory_order_relaxed);
    else if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub_explicit(&c->open, 1, memory_order_relaxed);
}

int mf_httpd__conns_over(const struct mf_httpd_conns *c)
{
    return c && atomic_load_explicit(&c->open, memory_order_relaxed) > c->limit;
}

int mf_httpd__conns_close_after(const struct mf_httpd_conns *c)
{
    return c && atomic_load_explicit(&c->open, memory_order_relaxed) > c->keep;
}
