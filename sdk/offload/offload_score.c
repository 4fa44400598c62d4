/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Confidence scores in two passes and no scratch memory. With z_i = (x_i - x_max) / T
 * (logits) or z_i = ln(p_i / p_max) / T (probabilities), e_i = exp(z_i) and S = sum e_i:
 *   max-softmax = e_max / S = 1 / S                     (e_max = exp(0) = 1)
 *   margin      = (1 - e_2) / S                         (e_2: second largest e_i)
 *   entropy     H = ln S - (sum e_i z_i) / S, reported as 1 - H / ln n
 * Subtracting the maximum keeps every e_i in (0, 1], so nothing overflows; an e_i that
 * underflows to 0 contributes 0 to S and to the entropy sum (the limit of e ln e). For
 * probabilities, p^(1/T) renormalised equals softmax(ln p / T), and T = 1 needs no pow.
 */
#include "mf_offload_int.h"

#include <math.h>

static int valid_args(int method, int kind, const float *output, size_t n, float temperature)
{
    if (method != MF_OFFLOAD_MAX_SOFTMAX && method != MF_OFFLOAD_MARGIN &&
        method != MF_OFFLOAD_ENTROPY)
        return 0;
    if (kind != MF_OFFLOAD_LOGITS && kind != MF_OFFLOAD_PROBS)
        return 0;
    if (!output || n < 2 || n > MF_OFFLOAD_MAX_CLASSES)
        return 0;
    return isfinite(temperature) && temperature > 0.0f;
}

/* Largest value, or NAN when any value is not finite (or a probability is negative). */
static float max_of(int kind, const float *x, size_t n)
{
    float m = x[0];

    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || (kind == MF_OFFLOAD_PROBS && x[i] < 0.0f))
            return NAN;
        if (x[i] > m)
            m = x[i];
    }
    return m;
}

/* e_i and z_i of one class (see the file comment). */
static float exp_term(int kind, float x, float max, float inv_t, float *z_out)
{
    if (kind == MF_OFFLOAD_LOGITS) {
        *z_out = (x - max) * inv_t;
        return expf(*z_out);
    }
    if (x <= 0.0f) {
        *z_out = 0.0f;
        return 0.0f;
    }
    if (inv_t == 1.0f) {
        float e = x / max;

        *z_out = logf(e);
        return e;
    }
    *z_out = logf(x / max) * inv_t;
    return expf(*z_out);
}

int mf_offload_score(float *score_out, mf_offload_method method, mf_offload_output_kind kind,
                     const float *output, size_t n, float temperature)
{
    float max, inv_t, sum = 0.0f, ez = 0.0f, e2 = 0.0f, score;
    int seen_max = 0;

    *score_out = 0.0f;
    if (!valid_args(method, kind, output, n, temperature))
        return MF_E_INVALID;
    max = max_of(kind, output, n);
    if (isnan(max) || (kind == MF_OFFLOAD_PROBS && max <= 0.0f))
        return MF_E_INVALID;
    inv_t = 1.0f / temperature;
    for (size_t i = 0; i < n; i++) {
        float z, e = exp_term(kind, output[i], max, inv_t, &z);

        sum += e;
        if (e > 0.0f)
            ez += e * z;
        /* The first maximum is top-1; every other value competes for top-2 (ties count). */
        if (output[i] == max && !seen_max)
            seen_max = 1;
        else if (e > e2)
            e2 = e;
    }
    switch (method) {
    case MF_OFFLOAD_MAX_SOFTMAX:
        score = 1.0f / sum;
        break;
    case MF_OFFLOAD_MARGIN:
        score = (1.0f - e2) / sum;
        break;
    case MF_OFFLOAD_ENTROPY:
    default: /* valid_args() refused any other value */
        score = 1.0f - (logf(sum) - ez / sum) / logf((float)n);
        break;
    }
    /* Rounding can step a hair outside [0, 1]; thresholds compare against the clamped value. */
    *score_out = score < 0.0f ? 0.0f : (score > 1.0f ? 1.0f : score);
    return MF_OK;
}
