/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics: the Prometheus exposition of http/http_metrics.h plus gauges from the store
 * (shared by every node, so queue depths agree whichever node is scraped), and the rollout
 * series of metrics_rollouts.c. */
#include "handlers/handlers.h"

#include "director/director.h"
#include "director/checkin_batch.h"
#include "director/checkin_stage.h"
#include "director/director_policy.h"
#include "http/http_conns.h"
#include "http/http_metrics.h"

#define METRICS_BODY_MAX (1024u * 1024u) /* 256 rollouts' states are some 120 KiB of it */

_Static_assert(MF_METRICS_RULES == MF_POLICY_CLASS_ROLLBACK + 1, "one counter per rule");
_Static_assert(MF_METRICS_CONN_RULES == MF_CONN_RULES, "one counter per connection rule");

int mf_handlers__metrics(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_metrics_gauges g = {0};
    struct mf_metrics_labels l = {.routes = r->env->routes, .n_routes = r->env->n_routes};
    struct mf_dynbuf out;
    int err;

    err = s->ops->jobs->job_counts(&g.jobs_queued, &g.jobs_running, s, &r->ctx, mf_handlers__now());
    if (err == MF_OK)
        err = s->ops->registry->delta_count(&g.deltas_stored, s, &r->ctx);
    if (err < 0)
        return err;
    if (r->env->checkins)
        mf_checkin_batch__stats(r->env->checkins, &g.checkin_groups, &g.checkin_grouped);
    if (r->env->stage) {
        uint64_t groups, checkins;

        /* The stage's groups are store groups too: one checkin_begin each. */
        mf_checkin_stage__stats(r->env->stage, &groups, &checkins);
        g.checkin_groups += groups;
        g.checkin_grouped += checkins;
    }
    mf_director__stats(r->env->director, &g.director_signatures, &g.director_assignments);
    for (int k = 0; k < MF_METRICS_RULES; k++)
        l.rules[k] = mf_policy__rule_name((enum mf_policy_rule)k);
    for (int k = 0; k < MF_METRICS_CONN_RULES; k++)
        l.conn_rules[k] = mf_httpd__conn_rule_name((enum mf_conn_rule)k);
    mf_dynbuf__init(&out, &r->ctx.alloc, METRICS_BODY_MAX);
    err = mf_metrics__render(&out, r->env->metrics, &g, &l);
    if (err == MF_OK)
        err = mf_handlers__metrics_rollouts(&out, s, &r->ctx);
    if (err == MF_E_LIMIT || err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, err, "metrics exposition exceeds %u bytes", METRICS_BODY_MAX);
    else if (err == MF_OK)
        err = mf_httpd__reply_bytes(r, MHD_HTTP_OK, out.data, out.len,
                                    "text/plain; version=0.0.4; charset=utf-8");
    mf_dynbuf__free(&out);
    return err;
}
