/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The console's history (rollout_ctl.h, docs/console.md): each evaluation of a watched
 * rollout keeps its red lines (value, bound, control, verdict) in the store, and the
 * worker's tick keeps a snapshot of the fleet's installed versions per time bin. Both are
 * bounded in the store (store.h: history_add, fleet_snapshot), so a long rollout or a
 * week of bins costs a fixed number of rows whatever the fleet's size.
 */
#include "rollout/rollout_ctl.h"

#include <stdio.h>
#include <string.h>

const char *mf_rollout__line_state(const struct mf_rollout_verdict *v, int goal)
{
    if (!v->evaluated)
        return "waiting";
    if (v->breached)
        return goal ? "missed" : "breached";
    return goal ? "met" : "clean";
}

int mf_rollout__history_record(struct mf_store *s, struct mf_ctx *ctx,
                               const struct mf_rollout_status *st, int64_t now)
{
    struct mf_store_history_line lines[MF_STORE_HISTORY_LINES];
    size_t n =
        st->plan.n_lines < MF_STORE_HISTORY_LINES ? st->plan.n_lines : MF_STORE_HISTORY_LINES;

    _Static_assert(MF_ROLLOUT_MAX_LINES <= MF_STORE_HISTORY_LINES,
                   "every red line of a plan fits one evaluation's history");
    for (size_t i = 0; i < n; i++) {
        const struct mf_rollout_line *l = &st->plan.lines[i];
        const struct mf_rollout_verdict *v = &st->verdicts[i];
        struct mf_store_history_line *h = &lines[i];

        memset(h, 0, sizeof(*h));
        h->rollout_id = st->r.id;
        h->at = now;
        h->line = (int)i;
        mf_rollout__figure_name(h->metric, sizeof(h->metric), l->figure);
        (void)snprintf(h->kind, sizeof(h->kind), "%s", l->relative ? "relative" : "absolute");
        (void)snprintf(h->state, sizeof(h->state), "%s", mf_rollout__line_state(v, 0));
        if (v->evaluated) {
            h->value = v->value;
            h->bound = v->bound;
            h->control = l->relative ? v->control : 0;
        }
        h->devices = (int64_t)v->devices;
        h->control_devices = l->relative ? (int64_t)v->control_devices : 0;
    }
    return s->ops->rollout->history_add(s, ctx, lines, n);
}

void mf_rollout__fleet_tick(struct mf_store *s, struct mf_ctx *ctx, int64_t now)
{
    int64_t bin = now - now % MF_STORE_FLEET_BIN_S;
    int taken = 0;

    if (s->ops->devices->fleet_snapshot(&taken, s, ctx, bin, bin - MF_STORE_FLEET_KEEP_S) < 0)
        MF_LOG_WARN(ctx, "taking the fleet's versions snapshot: %s", mf_ctx__errmsg(ctx));
}
