/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters behind GET /metrics (Prometheus text format 0.0.4). Lock-free: every request
 * bumps a relaxed atomic, and the exposition reads whatever the counters hold then.
 */
#ifndef MF_SERVER_HTTP_METRICS_H
#define MF_SERVER_HTTP_METRICS_H

#include "mf_dynbuf.h"
#include "mf/alloc.h"

#include <stdatomic.h>
#include <stdint.h>

#define MF_METRICS_STATUS_SLOTS 17
#define MF_METRICS_RULES 10     /* enum mf_policy_rule */
#define MF_METRICS_CONN_RULES 3 /* enum mf_conn_rule (http_conns.h) */

struct mf_metrics {
    /* One row per route of the table (as many as it has: mf_metrics__init), then one for
     * requests no route matched. */
    atomic_uint_least64_t (*requests)[MF_METRICS_STATUS_SLOTS];
    size_t n_routes;
    atomic_uint_least64_t checkins;
    atomic_uint_least64_t bytes_served;
    atomic_uint_least64_t deltas_computed; /* by this node's worker */
    atomic_uint_least64_t rate_limited;
    atomic_uint_least64_t decisions[MF_METRICS_RULES];
    atomic_uint_least64_t conns_closed[MF_METRICS_CONN_RULES]; /* by connection rule */
};

/* Zeroes `m` and gives it request counters for a table of `n_routes` routes. MF_OK or
 * MF_E_NOMEM. */
int mf_metrics__init(struct mf_metrics *m, const mf_allocator *a, size_t n_routes);
void mf_metrics__free(struct mf_metrics *m, const mf_allocator *a);

void mf_metrics__count(atomic_uint_least64_t *counter, uint64_t n);
/* One finished request: `route` is its index in the table, or -1 when none matched. */
void mf_metrics__request(struct mf_metrics *m, int route, unsigned status, uint64_t bytes);
/* One director decision (enum mf_policy_rule). */
void mf_metrics__decision(struct mf_metrics *m, int rule);

/* Values read when /metrics is scraped: gauges from the store, and the director's own
 * counters (it counts as it signs; director/director.h). */
struct mf_metrics_gauges {
    int64_t jobs_queued;
    int64_t jobs_running;
    int64_t deltas_stored;
    /* This node's check-ins' store work: groups run, check-ins they carried
     * (director/checkin_batch.h); their ratio is the grouping factor. */
    uint64_t checkin_groups, checkin_grouped;
    uint64_t director_signatures;  /* ECDSA signatures made by this node's director */
    uint64_t director_assignments; /* assignments they covered (batch factor: ratio) */
};

/* What the exposition labels its series with, given by the /metrics handler so that http/
 * needs nothing from the layers above it: the routing table (`routes` of the env, in the
 * order of the request counters) and the director's rule names (enum mf_policy_rule); and
 * the connection rules' names (enum mf_conn_rule), so that the counters and the connection
 * rules, which count into them, do not call each other. */
struct mf_httpd_route;
struct mf_metrics_labels {
    const struct mf_httpd_route *routes;
    size_t n_routes;
    const char *rules[MF_METRICS_RULES];
    const char *conn_rules[MF_METRICS_CONN_RULES];
};

/* Appends the exposition text to `out`. MF_OK or MF_E_LIMIT/MF_E_NOMEM from the buffer. */
int mf_metrics__render(struct mf_dynbuf *out, const struct mf_metrics *m,
                       const struct mf_metrics_gauges *g, const struct mf_metrics_labels *l);

#endif /* MF_SERVER_HTTP_METRICS_H */
