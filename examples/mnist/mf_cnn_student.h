/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_cnn_student.h
 * @brief A second int8 student family, one the server knows nothing about (docs/distill.md,
 * "A family the server does not know"): conv 3x3 x8 (valid) - ReLU - 2x2 max-pool - fc
 * 1352-10 on 28x28 uint8 images, trained by examples/mnist/torch/student_trainer.py
 * (--family cnn) and judged through the evaluator contract by mf-example-cnn-eval.
 *
 * Arithmetic (normative; the trainer's numpy reference implements it independently and the
 * two agree bit for bit on every Fashion-MNIST test image, integration_torch_trainer):
 *   acc[c][y][x] = sum_{dy,dx < 3} x[y+dy][x+dx] * conv_w[c][dy][dx]     int32, exact
 *   h            = (float)acc * (in_scale * conv_scale) + conv_b[c]
 *   q            = h <= 0 ? 0 : min(255, (int32)(h * (1 / hidden_scale) + 0.5f))
 *   p[c][i][j]   = max of q over the 2x2 cell (2i..2i+1, 2j..2j+1), i, j < 13
 *   logit[k]     = (float)(sum p[c][i][j] * fc_w[k][c*169 + i*13 + j]) * (hidden_scale *
 *                  fc_scale) + fc_b[k]
 * File (safetensors, format = mf-student-int8-cnn, format_version = 1): conv.weight I8
 * [8,1,3,3], conv.bias F32 [8], fc.weight I8 [10,1352], fc.bias F32 [10], scales F32 [5] =
 * input, conv.weight, hidden, fc.weight, temperature.
 */
#ifndef MF_EXAMPLE_CNN_STUDENT_H
#define MF_EXAMPLE_CNN_STUDENT_H

#include "mf/error.h"

#include <stddef.h>
#include <stdint.h>

struct mf_ctx;

MF_BEGIN_DECLS

#define MF_CNN_FORMAT "mf-student-int8-cnn"
#define MF_CNN_SIDE 28u
#define MF_CNN_CH 8u
#define MF_CNN_POOLED 13u
#define MF_CNN_FEATURES (MF_CNN_CH * MF_CNN_POOLED * MF_CNN_POOLED)
#define MF_CNN_CLASSES 10u

/** The model, weights inline (13.6 KB): a caller keeps it static, in flash or on the heap. */
typedef struct mf_cnn_student {
    int8_t conv_w[MF_CNN_CH * 9];
    float conv_b[MF_CNN_CH];
    int8_t fc_w[MF_CNN_CLASSES * MF_CNN_FEATURES];
    float fc_b[MF_CNN_CLASSES];
    float in_scale, conv_scale, hidden_scale, fc_scale, temperature;
} mf_cnn_student;

/**
 * @brief Decodes a student file (strict: format tag, the five tensors and their shapes,
 * finite positive scales, finite biases).
 * @return MF_OK; MF_E_INVALID (naming the rule); MF_E_NOTFOUND (missing tensor); MF_E_NOMEM.
 */
MF_EXTERN int mf_cnn_student_decode(mf_cnn_student *out, struct mf_ctx *ctx, const uint8_t *buf,
                                    size_t len) MF_WARN_UNUSED_RESULT;

/** @brief Logits of one 28x28 image (784 bytes, row major); no allocation, small stack. */
MF_EXTERN void mf_cnn_student_logits(const mf_cnn_student *m, const uint8_t *x,
                                     float logits_out[MF_CNN_CLASSES]);

MF_END_DECLS

#endif /* MF_EXAMPLE_CNN_STUDENT_H */
