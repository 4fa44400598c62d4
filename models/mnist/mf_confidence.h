/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_confidence.h
 * @brief Confidence scores of a classifier's logits, for offload gating and threshold fitting.
 *
 * Every score grows with confidence, so one rule serves all of them: offload when
 * score < threshold. Plain math, no allocation; usable on the device and in the cloud.
 */
#ifndef MF_EXAMPLE_CONFIDENCE_H
#define MF_EXAMPLE_CONFIDENCE_H

#include "mf/common.h"

MF_BEGIN_DECLS

typedef enum mf_score_kind {
    MF_SCORE_MAX_SOFTMAX = 0, /**< max_k softmax(z / T)_k, in (1/n, 1] */
    MF_SCORE_MARGIN = 1,      /**< top-1 minus top-2 probability of softmax(z / T), in [0, 1) */
    MF_SCORE_NEG_ENTROPY = 2  /**< minus the entropy (nats) of softmax(z / T), in [-ln n, 0] */
} mf_score_kind;

/**
 * @brief Scores `n` logits (2 <= n <= 64) at temperature `temperature` (> 0).
 * @return the score; higher means more confident.
 */
MF_EXTERN float mf_score(mf_score_kind kind, const float *logits, uint32_t n, float temperature);

/**
 * @brief Writes softmax(logits / temperature) to `probs_out` (n floats), max-subtracted so
 * large logits cannot overflow.
 */
MF_EXTERN void mf_softmax(float *probs_out, const float *logits, uint32_t n, float temperature);

MF_END_DECLS

#endif /* MF_EXAMPLE_CONFIDENCE_H */
