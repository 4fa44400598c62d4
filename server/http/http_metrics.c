/* SPDX-License-Identifier: Apache-2.0 */
/* Request counters and their Prometheus exposition (see http_metrics.h). */
#include "http/http_metrics.h"

#include "http/http_req.h"

#include <inttypes.h>
#include <stdio.h>

/* Status codes with their own series; anything else is counted as "other". */
static const unsigned metric_statuses[MF_METRICS_STATUS_SLOTS - 1] = {
    200, 201, 204, 206, 304, 400, 401, 403, 404, 405, 409, 413, 416, 429, 500, 503};

int mf_metrics__init(struct mf_metrics *m, const mf_allocator *a, size_t n_routes)
{
    *m = (struct mf_metrics){.n_routes = n_routes};
    m->requests = mf_calloc(a, n_routes + 1, sizeof(*m->requests));
    return m->requests ? MF_OK : MF_E_NOMEM;
}

void mf_metrics__free(struct mf_metrics *m, const mf_allocator *a)
{
    mf_free(a, m->requests);
    m->requests = NULL;
}

void mf_metrics__count(atomic_uint_least64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

void mf_metrics__request(struct mf_metrics *m, int route, unsigned status, uint64_t bytes)
{
    size_t slot = MF_METRICS_STATUS_SLOTS - 1;
    size_t r = route < 0 || (size_t)route >= m->n_routes ? m->n_routes : (size_t)route;

    for (size_t i = 0; i < MF_METRICS_STATUS_SLOTS - 1; i++) {
        if (metric_statuses[i] == status)
            slot = i;
    }
    mf_metrics__count(&m->requests[r][slot], 1);
    mf_metrics__count(&m->bytes_served, bytes);
}

void mf_metrics__decision(struct mf_metrics *m, int rule)
{
    if (rule >= 0 && rule < MF_METRICS_RULES)
        mf_metrics__count(&m->decisions[rule], 1);
}

static uint64_t load(const atomic_uint_least64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static int render_requests(struct mf_dynbuf *out, const struct mf_metrics *m,
                           const struct mf_metrics_labels *l)
{
    int err = mf_dynbuf__appendf(out, "# HELP mf_http_requests_total HTTP requests by route "
                                      "and status.\n# TYPE mf_http_requests_total counter\n");

    for (size_t r = 0; err == MF_OK && r <= m->n_routes; r++) {
        const struct mf_httpd_route *rt = r < m->n_routes && r < l->n_routes ? &l->routes[r] : NULL;

        if (!rt && r != m->n_routes)
            continue;
        for (size_t k = 0; err == MF_OK && k < MF_METRICS_STATUS_SLOTS; k++) {
            uint64_t n = load(&m->requests[r][k]);
            char status[8] = "other";

            if (!n)
                continue;
            if (k < MF_METRICS_STATUS_SLOTS - 1)
                (void)snprintf(status, sizeof(status), "%u", metric_statuses[k]);
            err = mf_dynbuf__appendf(
                out,
                "mf_http_requests_total{method=\"%s\",route=\"%s\",status=\"%s\"} %" PRIu64 "\n",
                rt ? rt->method : "", rt ? rt->pattern : "unmatched", status, n);
        }
    }
    return err;
}

int mf_metrics__render(struct mf_dynbuf *out, const struct mf_metrics *m,
                       const struct mf_metrics_gauges *g, const struct mf_metrics_labels *l)
{
    int err = render_requests(out, m, l);

    if (err == MF_OK)
        err = mf_dynbuf__appendf(
            out,
            "# HELP mf_checkins_total Device check-ins.\n# TYPE mf_checkins_total counter\n"
            "mf_checkins_total %" PRIu64 "\n"
            "# HELP mf_bytes_served_total Response body bytes sent.\n"
            "# TYPE mf_bytes_served_total counter\nmf_bytes_served_total %" PRIu64 "\n"
            "# HELP mf_deltas_computed_total Deltas this node's worker stored.\n"
            "# TYPE mf_deltas_computed_total counter\nmf_deltas_computed_total %" PRIu64 "\n"
            "# HELP mf_rate_limited_total Device requests refused with 429.\n"
            "# TYPE mf_rate_limited_total counter\nmf_rate_limited_total %" PRIu64 "\n"
            "# HELP mf_jobs Background jobs by state (all nodes).\n# TYPE mf_jobs gauge\n"
            "mf_jobs{state=\"queued\"} %" PRId64 "\nmf_jobs{state=\"running\"} %" PRId64 "\n"
            "# HELP mf_deltas_stored Precomputed deltas in the store.\n"
            "# TYPE mf_deltas_stored gauge\nmf_deltas_stored %" PRId64 "\n"
            "# HELP mf_director_decisions_total Director decisions by rule.\n"
            "# TYPE mf_director_decisions_total counter\n",
            load(&m->checkins), load(&m->bytes_served), load(&m->deltas_computed),
            load(&m->rate_limited), g->jobs_queued, g->jobs_running, g->deltas_stored);
    for (int k = 0; err == MF_OK && k < MF_METRICS_RULES; k++)
        err = mf_dynbuf__appendf(out, "mf_director_decisions_total{rule=\"%s\"} %" PRIu64 "\n",
                                 l->rules[k], load(&m->decisions[k]));
    if (err == MF_OK)
        err = mf_dynbuf__appendf(out, "# HELP mf_http_connections_closed_total Connections closed"
                                      " by a connection rule (docs/operations.md, Connections).\n"
                                      "# TYPE mf_http_connections_closed_total counter\n");
    for (int k = 0; err == MF_OK && k < MF_METRICS_CONN_RULES; k++)
        err = mf_dynbuf__appendf(out, "mf_http_connections_closed_total{rule=\"%s\"} %" PRIu64 "\n",
                                 l->conn_rules[k], load(&m->conns_closed[k]));
    if (err == MF_OK)
        err = mf_dynbuf__appendf(
            out,
            "# HELP mf_checkin_store_groups_total Store calls for check-ins (each carries the"
            " check-ins that arrived together).\n# TYPE mf_checkin_store_groups_total counter\n"
            "mf_checkin_store_groups_total %" PRIu64 "\n"
            "# HELP mf_checkin_store_grouped_total Check-ins those store calls carried.\n"
            "# TYPE mf_checkin_store_grouped_total counter\n"
            "mf_checkin_store_grouped_total %" PRIu64 "\n",
            g->checkin_groups, g->checkin_grouped);
    if (err == MF_OK)
        err = mf_dynbuf__appendf(
            out,
            "# HELP mf_director_signatures_total Director ECDSA signatures (one per batch).\n"
            "# TYPE mf_director_signatures_total counter\nmf_director_signatures_total %" PRIu64
            "\n# HELP mf_director_assignments_signed_total Assignments those signatures "
            "covered.\n# TYPE mf_director_assignments_signed_total counter\n"
            "mf_director_assignments_signed_total %" PRIu64 "\n",
            g->director_signatures, g->director_assignments);
    return err;
}
