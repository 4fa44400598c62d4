/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_student.h
 * @brief Device-side inference of the example's int8 student (an MLP in-hidden-out).
 *
 * The arithmetic is fixed here, because the trainer's int8 reference (server/distill) must
 * reproduce it bit for bit (docs/example-model.md, "Arithmetic"):
 *
 *     acc1[j]  = sum_i x[i] * w1[j][i]                       uint8 x int8 -> int32, exact
 *     h[j]     = (float)acc1[j] * (in_scale * w1_scale) + b1[j]
 *     q[j]     = h[j] <= 0 ? 0 : min(255, (int32)(h[j] * (1 / hidden_scale) + 0.5f))
 *     acc2[k]  = sum_j q[j] * w2[k][j]                       uint8 x int8 -> int32, exact
 *     logit[k] = (float)acc2[k] * (hidden_scale * w2_scale) + b2[k]
 *
 * All float arithmetic is IEEE single precision without contraction (C11, no -ffast-math);
 * the two products in parentheses are computed once, in float, in the order written.
 *
 * Nothing here allocates or does I/O: an mf_student is a view over weights the caller owns
 * (flash, a loaded file, static arrays). Stack use is bounded by MF_STUDENT_MAX_HIDDEN.
 */
#ifndef MF_EXAMPLE_STUDENT_H
#define MF_EXAMPLE_STUDENT_H

#include "mf/common.h"

MF_BEGIN_DECLS

/** Bounds a student must respect; mf_student_check() enforces them. */
#define MF_STUDENT_MAX_IN 4096
#define MF_STUDENT_MAX_HIDDEN 128
#define MF_STUDENT_MAX_OUT 32

/** A student network: borrowed pointers to its weights plus its scales. */
typedef struct mf_student {
    uint32_t n_in;      /**< input length (784 for 28x28, 64 for 8x8) */
    uint32_t n_hidden;  /**< hidden units, <= MF_STUDENT_MAX_HIDDEN */
    uint32_t n_out;     /**< classes, <= MF_STUDENT_MAX_OUT */
    const int8_t *w1;   /**< [n_hidden][n_in], row-major */
    const float *b1;    /**< [n_hidden] */
    const int8_t *w2;   /**< [n_out][n_hidden], row-major */
    const float *b2;    /**< [n_out] */
    float in_scale;     /**< real input value = x * in_scale (1/255 for pixels) */
    float w1_scale;     /**< real w1 = w1 * w1_scale */
    float hidden_scale; /**< real hidden activation = q * hidden_scale */
    float w2_scale;     /**< real w2 = w2 * w2_scale */
    float temperature;  /**< confidence temperature shipped with the model (1: none) */
} mf_student;

/**
 * @brief Checks dimensions, bounds and scales (finite, > 0) of `s`.
 * @return MF_OK, or MF_E_INVALID when any field is out of range.
 */
MF_EXTERN int mf_student_check(const mf_student *s) MF_WARN_UNUSED_RESULT;

/**
 * @brief Computes the logits of one input. Never allocates, never fails.
 * @param s a student that passed mf_student_check() (otherwise undefined behaviour).
 * @param x `s->n_in` input bytes.
 * @param logits_out receives `s->n_out` floats.
 */
MF_EXTERN void mf_student_logits(const mf_student *s, const uint8_t *x, float *logits_out);

/**
 * @brief Classifies one input.
 * @param logits_out NULL, or receives `s->n_out` logits.
 * @return the arg-max class (the lowest index among ties).
 */
MF_EXTERN uint32_t mf_student_predict(const mf_student *s, const uint8_t *x, float *logits_out);

MF_END_DECLS

#endif /* MF_EXAMPLE_STUDENT_H */
