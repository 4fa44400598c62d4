/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout series of GET /metrics (docs/operations.md, "Metrics"), from the store so every
 * node answers the same: each (model, version) rollout's state and current wave (its newest
 * rollout), halted rollouts by the red line that breached, the devices that run each
 * version, and the webhook deliveries by state.
 */
#include "handlers/handlers.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define METRICS_ROLLOUTS_MAX 256 /* newest rollouts shown; older ones are history */

static const char *const rollout_states[] = {"running", "paused", "aborted",
                                             "done",    "halted", "rolled_back"};

struct seen_rollout {
    char model[MF_STORE_NAME_SIZE], version[MF_STORE_NAME_SIZE];
    char state[16], line[32];
    int wave;
};

struct rollout_rows {
    struct seen_rollout v[METRICS_ROLLOUTS_MAX];
    size_t n;
};

/* The red line of a breach record: its first word ("p99_latency_us 2047 > ..."), as a label. */
static void breach_line(char *out, size_t size, const char *breach)
{
    size_t n = 0;

    for (const char *p = breach; *p && *p != ' ' && n + 1 < size; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
            out[n++] = *p;
    }
    out[n] = '\0';
}

static int collect(void *payload, const struct mf_store_rollout *r)
{
    struct rollout_rows *rows = payload;
    struct seen_rollout *x;

    if (rows->n == METRICS_ROLLOUTS_MAX)
        return MF_OK;
    x = &rows->v[rows->n++];
    (void)snprintf(x->model, sizeof(x->model), "%s", r->model);
    (void)snprintf(x->version, sizeof(x->version), "%s", r->version);
    (void)snprintf(x->state, sizeof(x->state), "%s", r->state);
    breach_line(x->line, sizeof(x->line), strcmp(r->state, "halted") == 0 ? r->breach : "");
    x->wave = r->wave;
    return MF_OK;
}

/* Whether an earlier (newer) row is of the same (model, version). */
static int shadowed(const struct rollout_rows *rows, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (strcmp(rows->v[j].model, rows->v[i].model) == 0 &&
            strcmp(rows->v[j].version, rows->v[i].version) == 0)
            return 1;
    }
    return 0;
}

static int render_states(struct mf_dynbuf *out, const struct rollout_rows *rows)
{
    int err = mf_dynbuf__appendf(
        out, "# HELP mf_rollout_state The state of each model version's newest rollout (1).\n"
             "# TYPE mf_rollout_state gauge\n");

    for (size_t i = 0; err == MF_OK && i < rows->n; i++) {
        for (size_t k = 0; !shadowed(rows, i) && err == MF_OK &&
                           k < sizeof(rollout_states) / sizeof(rollout_states[0]);
             k++)
            err = mf_dynbuf__appendf(
                out, "mf_rollout_state{model=\"%s\",version=\"%s\",state=\"%s\"} %d\n",
                rows->v[i].model, rows->v[i].version, rollout_states[k],
                strcmp(rows->v[i].state, rollout_states[k]) == 0);
    }
    if (err == MF_OK)
        err = mf_dynbuf__appendf(out, "# HELP mf_rollout_wave The wave (0-based) admitted last.\n"
                                      "# TYPE mf_rollout_wave gauge\n");
    for (size_t i = 0; err == MF_OK && i < rows->n; i++) {
        if (!shadowed(rows, i))
            err = mf_dynbuf__appendf(out, "mf_rollout_wave{model=\"%s\",version=\"%s\"} %d\n",
                                     rows->v[i].model, rows->v[i].version, rows->v[i].wave);
    }
    return err;
}

/* Halted rollouts per (model, red line), each pair once. */
static int render_breaches(struct mf_dynbuf *out, const struct rollout_rows *rows)
{
    int err = mf_dynbuf__appendf(
        out, "# HELP mf_rollout_breaches Rollouts halted by a red line, by model and line.\n"
             "# TYPE mf_rollout_breaches gauge\n");

    for (size_t i = 0; err == MF_OK && i < rows->n; i++) {
        const struct seen_rollout *x = &rows->v[i];
        int first = x->line[0] != '\0', count = 0;

        for (size_t j = 0; first && j < rows->n; j++) {
            int same =
                strcmp(rows->v[j].model, x->model) == 0 && strcmp(rows->v[j].line, x->line) == 0;

            first = !(same && j < i);
            count += same;
        }
        if (first)
            err = mf_dynbuf__appendf(out, "mf_rollout_breaches{model=\"%s\",line=\"%s\"} %d\n",
                                     x->model, x->line, count);
    }
    return err;
}

static int add_count(void *payload, const char *model, const char *version, int64_t n)
{
    return mf_dynbuf__appendf(payload, "mf_devices{model=\"%s\",version=\"%s\"} %" PRId64 "\n",
                              model, version, n);
}

static int add_deliveries(void *payload, const struct mf_store_webhook *w)
{
    int64_t *sum = payload;

    sum[0] += w->pending;
    sum[1] += w->failed;
    sum[2] += w->delivered;
    return MF_OK;
}

int mf_handlers__metrics_rollouts(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx)
{
    struct rollout_rows *rows = mf_calloc(NULL, 1, sizeof(*rows));
    int64_t sum[3] = {0, 0, 0};
    int err;

    if (!rows)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading rollouts for metrics");
    /* The store walks first, the text after: a visitor must not call the store. */
    err = s->ops->rollout->rollouts_list(s, ctx, "", collect, rows);
    if (err == MF_OK)
        err = render_states(out, rows);
    if (err == MF_OK)
        err = render_breaches(out, rows);
    mf_free(NULL, rows);
    if (err == MF_OK)
        err = mf_dynbuf__appendf(out, "# HELP mf_devices Devices that reported a model version"
                                      " installed.\n# TYPE mf_devices gauge\n");
    if (err == MF_OK)
        err = s->ops->devices->version_counts(s, ctx, add_count, out);
    if (err == MF_OK)
        err = s->ops->webhooks->webhooks_list(s, ctx, add_deliveries, sum);
    if (err == MF_OK)
        err = mf_dynbuf__appendf(out,
                                 "# HELP mf_webhook_deliveries Webhook deliveries by state.\n"
                                 "# TYPE mf_webhook_deliveries gauge\n"
                                 "mf_webhook_deliveries{state=\"pending\"} %" PRId64 "\n"
                                 "mf_webhook_deliveries{state=\"failed\"} %" PRId64 "\n"
                                 "mf_webhook_deliveries{state=\"delivered\"} %" PRId64 "\n",
                                 sum[0], sum[1], sum[2]);
    return err;
}
