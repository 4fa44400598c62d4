/* SPDX-License-Identifier: Apache-2.0 */
/* Confidence scores (max-softmax, margin, negative entropy) over temperature-scaled logits. */
#include "mf_confidence.h"

#include <assert.h>
#include <math.h>

#define SCORE_MAX_CLASSES 64

void mf_softmax(float *probs_out, const float *logits, uint32_t n, float temperature)
{
    float mx = logits[0];
    float sum = 0.0f;

    for (uint32_t k = 1; k < n; k++)
        if (logits[k] > mx)
            mx = logits[k];
    for (uint32_t k = 0; k < n; k++) {
        probs_out[k] = expf((logits[k] - mx) / temperature);
        sum += probs_out[k];
    }
    for (uint32_t k = 0; k < n; k++)
        probs_out[k] /= sum;
}

float mf_score(mf_score_kind kind, const float *logits, uint32_t n, float temperature)
{
    float p[SCORE_MAX_CLASSES];
    float top1 = 0.0f, top2 = 0.0f, ent = 0.0f;

    assert(n >= 2 && n <= SCORE_MAX_CLASSES && temperature > 0.0f);
    mf_softmax(p, logits, n, temperature);
    for (uint32_t k = 0; k < n; k++) {
        if (p[k] > top1) {
            top2 = top1;
            top1 = p[k];
        } else if (p[k] > top2) {
            top2 = p[k];
        }
        if (p[k] > 0.0f)
            ent -= p[k] * logf(p[k]);
    }
    switch (kind) {
    case MF_SCORE_MAX_SOFTMAX:
        return top1;
    case MF_SCORE_MARGIN:
        return top1 - top2;
    case MF_SCORE_NEG_ENTROPY:
        return -ent;
    }
    assert(0 && "unknown mf_score_kind");
    return top1;
}
