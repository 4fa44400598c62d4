/* SPDX-License-Identifier: Apache-2.0 */
/* Accuracy, cascade accuracy (confidence-gated and random) and quantile thresholds. */
#include "mf_distill.h"

#include "mf_confidence.h"
#include "mf_ctx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mf_eval_accuracy(const uint8_t *pred, const uint8_t *label, size_t n)
{
    size_t ok = 0;

    for (size_t i = 0; i < n; i++)
        ok += pred[i] == label[i];
    return n ? (double)ok / (double)n : 0.0;
}

void mf_eval_cascade(double *acc_out, double *rate_out, const mf_cascade_inputs *in,
                     float threshold)
{
    size_t ok = 0, off = 0;

    for (size_t i = 0; i < in->n; i++) {
        const int offload = in->student_score[i] < threshold;
        const uint8_t p = offload ? in->teacher_pred[i] : in->student_pred[i];
        off += (size_t)offload;
        ok += p == in->label[i];
    }
    *acc_out = in->n ? (double)ok / (double)in->n : 0.0;
    *rate_out = in->n ? (double)off / (double)in->n : 0.0;
}

double mf_eval_cascade_random(const mf_cascade_inputs *in, double rate)
{
    const double k = (double)llround(rate * (double)in->n);
    long s_ok = 0, gain = 0;

    /*
     * Offloading a uniformly random k of n inputs replaces each input's student answer by
     * the teacher's with probability k / n, so the expectation is exact and needs no draws.
     */
    for (size_t i = 0; i < in->n; i++) {
        const int s = in->student_pred[i] == in->label[i];
        const int t = in->teacher_pred[i] == in->label[i];
        s_ok += s;
        gain += t - s;
    }
    if (in->n == 0)
        return 0.0;
    return ((double)s_ok + k / (double)in->n * (double)gain) / (double)in->n;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;

    return (x > y) - (x < y);
}

int mf_eval_quantile_threshold(float *threshold_out, struct mf_ctx *ctx, const float *scores,
                               size_t n, double r)
{
    float *s;
    size_t k;

    if (n == 0)
        return mf_fail(ctx, MF_E_INVALID, "no calibration scores");
    if (r <= 0.0) {
        *threshold_out = -INFINITY;
        return MF_OK;
    }
    if (r >= 1.0) {
        *threshold_out = INFINITY;
        return MF_OK;
    }
    s = mf_alloc(&ctx->alloc, n * sizeof(float));
    if (!s)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory sorting %zu scores", n);
    memcpy(s, scores, n * sizeof(float));
    qsort(s, n, sizeof(float), cmp_float);
    k = (size_t)floor(r * (double)n);
    *threshold_out = s[k < n ? k : n - 1];
    mf_free(&ctx->alloc, s);
    return MF_OK;
}

void mf_eval_student(uint8_t *pred_out, float *score_out, const mf_student *s, const uint8_t *x,
                     size_t n, int score_kind)
{
    float logits[MF_STUDENT_MAX_OUT];

    for (size_t i = 0; i < n; i++) {
        const uint32_t p = mf_student_predict(s, x + i * s->n_in, logits);
        if (pred_out)
            pred_out[i] = (uint8_t)p;
        if (score_out)
            score_out[i] = mf_score((mf_score_kind)score_kind, logits, s->n_out, s->temperature);
    }
}

void mf_eval_argmax(uint8_t *pred_out, const float *logits, size_t n, uint32_t k)
{
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * k;
        uint32_t best = 0;
        for (uint32_t c = 1; c < k; c++)
            if (z[c] > z[best])
                best = c;
        pred_out[i] = (uint8_t)best;
    }
}
