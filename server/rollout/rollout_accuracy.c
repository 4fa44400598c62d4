/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Accuracy without bias (rollout_plan.h, docs/rollouts.md "Accuracy without bias"): each
 * version's agreement with the teacher estimated from the two strata the server labels, the
 * hard samples (below the device's threshold) and the random audit slice (drawn from the
 * confident ones), weighted by their shares of the version's inferences. The naive
 * teacher_agreement counts the hard samples only, so it moves with the threshold.
 */
#include "rollout/rollout_fleet.h"

#include "mf_json.h"

#include <math.h>
#include <string.h>

/* 95 % two-sided normal quantile. */
#define Z95 1.959963984540054

/* One stratum's variance term: share^2 p(1 - p) / n with p = (agreed + 1) / (n + 2), so a
 * stratum where every sample agreed still has a width (a 0/n or n/n count says little on a
 * small n); 0 for a stratum of no share. */
static double stratum_var(double share, uint64_t n, uint64_t agreed)
{
    double p;

    if (share <= 0.0 || n == 0)
        return 0.0;
    p = ((double)agreed + 1.0) / ((double)n + 2.0);
    return share * share * p * (1.0 - p) / (double)n;
}

int mf_rollout__stratified(struct mf_rollout_estimate *out, double share_hard, uint64_t n_hard,
                           uint64_t agreed_hard, uint64_t n_audit, uint64_t agreed_audit)
{
    double share_audit = 1.0 - share_hard, var, half;

    memset(out, 0, sizeof(*out));
    /* A stratum with a share but no labelled sample leaves its part unknown: no estimate. */
    if (share_hard < 0.0 || share_hard > 1.0 || (share_hard > 0.0 && n_hard == 0) ||
        (share_audit > 0.0 && n_audit == 0) || agreed_hard > n_hard || agreed_audit > n_audit)
        return 0;
    out->value = (share_hard > 0.0 ? share_hard * (double)agreed_hard / (double)n_hard : 0.0) +
                 (share_audit > 0.0 ? share_audit * (double)agreed_audit / (double)n_audit : 0.0);
    var = stratum_var(share_hard, n_hard, agreed_hard) +
          stratum_var(share_audit, n_audit, agreed_audit);
    half = Z95 * sqrt(var);
    out->lo = out->value - half < 0.0 ? 0.0 : out->value - half;
    out->hi = out->value + half > 1.0 ? 1.0 : out->value + half;
    out->samples = (share_hard > 0.0 ? n_hard : 0) + (share_audit > 0.0 ? n_audit : 0);
    return 1;
}

/* The index of the largest number of a JSON array, or -1 (not an array of numbers). */
static int argmax(const cJSON *a)
{
    const cJSON *x;
    int i = 0, best = -1;
    double top = 0.0;

    if (!cJSON_IsArray(a))
        return -1;
    cJSON_ArrayForEach(x, a)
    {
        if (!cJSON_IsNumber(x))
            return -1;
        if (best < 0 || x->valuedouble > top) {
            best = i;
            top = x->valuedouble;
        }
        i++;
    }
    return best;
}

/* The top class of a stored output (student logits or probabilities, teacher probabilities),
 * or -1 when it does not parse. */
static int top_class(struct mf_ctx *ctx, const char *text)
{
    size_t len = text ? strlen(text) : 0;
    cJSON *doc = NULL;
    int top;

    if (!len || mf_json__parse(&doc, ctx, text, len, len, MF_JSON_DEPTH_DEFAULT,
                               "stored sample output") < 0)
        return -1;
    top = argmax(doc);
    cJSON_Delete(doc);
    return top;
}

struct acc_walk {
    struct mf_rollout_fleet *fleet;
    struct mf_ctx *ctx;
    mf_rollout_keep_fn keep;
    void *payload;
};

static int add_sample(void *payload, const struct mf_store_sample *smp)
{
    struct acc_walk *w = payload;
    struct mf_store_telemetry t;
    struct mf_rollout_agg *agg = NULL;
    int hard = strcmp(smp->kind, "hard") == 0, student, teacher;

    if (!smp->teacher_version[0])
        return MF_OK; /* not labelled yet */
    memset(&t, 0, sizeof(t));
    memcpy(t.device_id, smp->device_id, sizeof(t.device_id));
    memcpy(t.model, smp->model, sizeof(t.model));
    memcpy(t.version, smp->model_version, sizeof(t.version));
    t.reported_at = smp->received_at;
    if (w->keep && !w->keep(w->payload, &t))
        return MF_OK;
    for (size_t i = 0; i < w->fleet->n && !agg; i++) {
        if (strcmp(w->fleet->v[i].version, smp->model_version) == 0)
            agg = &w->fleet->v[i].agg;
    }
    if (!agg)
        return MF_OK; /* a version no report of this view covers: its shares are unknown */
    student = top_class(w->ctx, smp->output);
    teacher = top_class(w->ctx, smp->teacher_output);
    if (student < 0 || teacher < 0)
        return MF_OK; /* validated on upload and labelling; an unreadable row is skipped */
    agg->labelled[hard ? 0 : 1]++;
    agg->label_agreed[hard ? 0 : 1] += student == teacher;
    return MF_OK;
}

int mf_rollout__accuracy_collect(struct mf_rollout_fleet *fleet, struct mf_store *s,
                                 struct mf_ctx *ctx, const char *model, mf_rollout_keep_fn keep,
                                 void *payload)
{
    struct acc_walk w = {.fleet = fleet, .ctx = ctx, .keep = keep, .payload = payload};
    struct mf_store_sample_query q;

    memset(&q, 0, sizeof(q));
    q.model = model;
    q.version = "";
    q.kind = "";
    q.device_id = "";
    return s->ops->offload->samples_walk(s, ctx, &q, add_sample, &w);
}
