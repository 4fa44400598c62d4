/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device-side int8 inference (arithmetic specified in mf_student.h). The layer loops keep
 * one int32 accumulator per output row and walk contiguous int8 rows, which the compiler
 * turns into widening multiply-adds; the float work is only n_hidden + n_out operations.
 */
#include "mf_student.h"

#include "mf/error.h"

#include <math.h>

static int scale_ok(float v)
{
    return isfinite(v) && v > 0.0f;
}

int mf_student_check(const mf_student *s)
{
    if (s->n_in == 0 || s->n_in > MF_STUDENT_MAX_IN || s->n_hidden == 0 ||
        s->n_hidden > MF_STUDENT_MAX_HIDDEN || s->n_out < 2 || s->n_out > MF_STUDENT_MAX_OUT)
        return MF_E_INVALID;
    if (!s->w1 || !s->b1 || !s->w2 || !s->b2)
        return MF_E_INVALID;
    if (!scale_ok(s->in_scale) || !scale_ok(s->w1_scale) || !scale_ok(s->hidden_scale) ||
        !scale_ok(s->w2_scale) || !scale_ok(s->temperature))
        return MF_E_INVALID;
    /* Biases come from files: a NaN would poison every logit silently. */
    for (uint32_t j = 0; j < s->n_hidden; j++)
        if (!isfinite(s->b1[j]))
            return MF_E_INVALID;
    for (uint32_t k = 0; k < s->n_out; k++)
        if (!isfinite(s->b2[k]))
            return MF_E_INVALID;
    /* MF_STUDENT_MAX_IN keeps 255 * 127 * n_in inside an int32 accumulator. */
    return MF_OK;
}

static int32_t dot_u8_i8(const uint8_t *x, const int8_t *w, uint32_t n)
{
    int32_t acc = 0;

    for (uint32_t i = 0; i < n; i++)
        acc += (int32_t)x[i] * (int32_t)w[i];
    return acc;
}

void mf_student_logits(const mf_student *s, const uint8_t *x, float *logits_out)
{
    uint8_t q[MF_STUDENT_MAX_HIDDEN];
    const float m1 = s->in_scale * s->w1_scale;
    const float inv_hidden = 1.0f / s->hidden_scale;
    const float m2 = s->hidden_scale * s->w2_scale;

    for (uint32_t j = 0; j < s->n_hidden; j++) {
        const float h = (float)dot_u8_i8(x, s->w1 + (size_t)j * s->n_in, s->n_in) * m1 + s->b1[j];
        if (h <= 0.0f) {
            q[j] = 0;
        } else {
            const float r = h * inv_hidden + 0.5f;
            q[j] = r >= 255.0f ? 255 : (uint8_t)(int32_t)r;
        }
    }
    for (uint32_t k = 0; k < s->n_out; k++)
        logits_out[k] =
            (float)dot_u8_i8(q, s->w2 + (size_t)k * s->n_hidden, s->n_hidden) * m2 + s->b2[k];
}

uint32_t mf_student_predict(const mf_student *s, const uint8_t *x, float *logits_out)
{
    float buf[MF_STUDENT_MAX_OUT];
    float *l = logits_out ? logits_out : buf;
    uint32_t best = 0;

    mf_student_logits(s, x, l);
    for (uint32_t k = 1; k < s->n_out; k++)
        if (l[k] > l[best])
            best = k;
    return best;
}
