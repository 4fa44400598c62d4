/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The int8 CNN student (arithmetic in mf_cnn_student.h). Each pooled cell is computed from
 * its four conv outputs and added straight into the ten fc accumulators, so no feature map
 * is stored: stack use is a few dozen bytes whatever the input.
 */
#include "mf_cnn_student.h"

#include "mf_ctx.h"
#include "mf_safetensors.h"

#include <math.h>
#include <string.h>

static int32_t conv_at(const int8_t *w, const uint8_t *x, uint32_t y, uint32_t c)
{
    int32_t acc = 0;

    for (uint32_t dy = 0; dy < 3; dy++)
        for (uint32_t dx = 0; dx < 3; dx++)
            acc += (int32_t)x[(y + dy) * MF_CNN_SIDE + c + dx] * (int32_t)w[dy * 3 + dx];
    return acc;
}

static int32_t requant(float h, float inv)
{
    float r;

    if (h <= 0.0f)
        return 0;
    r = h * inv + 0.5f;
    return r >= 255.0f ? 255 : (int32_t)r;
}

void mf_cnn_student_logits(const mf_cnn_student *m, const uint8_t *x,
                           float logits_out[MF_CNN_CLASSES])
{
    int32_t acc2[MF_CNN_CLASSES] = {0};
    const float m1 = m->in_scale * m->conv_scale;
    const float inv = 1.0f / m->hidden_scale;
    const float m2 = m->hidden_scale * m->fc_scale;

    for (uint32_t ch = 0; ch < MF_CNN_CH; ch++) {
        const int8_t *w = m->conv_w + ch * 9;
        for (uint32_t i = 0; i < MF_CNN_POOLED; i++)
            for (uint32_t j = 0; j < MF_CNN_POOLED; j++) {
                int32_t p = 0;
                for (uint32_t cell = 0; cell < 4; cell++) {
                    const int32_t acc = conv_at(w, x, 2 * i + cell / 2, 2 * j + cell % 2);
                    const int32_t q = requant((float)acc * m1 + m->conv_b[ch], inv);
                    p = q > p ? q : p;
                }
                if (p == 0)
                    continue;
                const size_t f = (size_t)ch * MF_CNN_POOLED * MF_CNN_POOLED + i * MF_CNN_POOLED + j;
                for (uint32_t k = 0; k < MF_CNN_CLASSES; k++)
                    acc2[k] += p * (int32_t)m->fc_w[(size_t)k * MF_CNN_FEATURES + f];
            }
    }
    for (uint32_t k = 0; k < MF_CNN_CLASSES; k++)
        logits_out[k] = (float)acc2[k] * m2 + m->fc_b[k];
}

static int take(void *dst, struct mf_ctx *ctx, const mf_safetensors *st, const char *name,
                mf_st_dtype dtype, uint32_t rank, const uint64_t *shape, size_t bytes)
{
    const mf_st_tensor *t;
    int err = mf_safetensors_get(&t, ctx, st, name, dtype, rank, shape);

    if (err < 0)
        return err;
    memcpy(dst, t->data, bytes); /* tensor data is not aligned */
    return MF_OK;
}

static int finite_all(const float *v, size_t n, int positive)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (positive && !(v[i] > 0.0f)))
            return 0;
    return 1;
}

int mf_cnn_student_decode(mf_cnn_student *out, struct mf_ctx *ctx, const uint8_t *buf, size_t len)
{
    static const uint64_t conv_shape[] = {MF_CNN_CH, 1, 3, 3}, conv_b[] = {MF_CNN_CH},
                          fc_shape[] = {MF_CNN_CLASSES, MF_CNN_FEATURES}, fc_b[] = {MF_CNN_CLASSES},
                          scales_shape[] = {5};
    mf_safetensors *st = NULL;
    float scales[5];
    const char *fmt;
    int err = mf_safetensors_parse(&st, ctx, NULL, buf, len);

    if (err < 0)
        return err;
    fmt = mf_safetensors_meta(st, "format");
    if (!fmt || strcmp(fmt, MF_CNN_FORMAT) != 0)
        err = mf_fail(ctx, MF_E_INVALID, "not a %s file (format %s)", MF_CNN_FORMAT,
                      fmt ? fmt : "missing");
    else if (mf_safetensors_count(st) != 5)
        err = mf_fail(ctx, MF_E_INVALID, "a %s file has 5 tensors, this one %zu", MF_CNN_FORMAT,
                      mf_safetensors_count(st));
    if (err == MF_OK)
        err =
            take(out->conv_w, ctx, st, "conv.weight", MF_ST_I8, 4, conv_shape, sizeof(out->conv_w));
    if (err == MF_OK)
        err = take(out->conv_b, ctx, st, "conv.bias", MF_ST_F32, 1, conv_b, sizeof(out->conv_b));
    if (err == MF_OK)
        err = take(out->fc_w, ctx, st, "fc.weight", MF_ST_I8, 2, fc_shape, sizeof(out->fc_w));
    if (err == MF_OK)
        err = take(out->fc_b, ctx, st, "fc.bias", MF_ST_F32, 1, fc_b, sizeof(out->fc_b));
    if (err == MF_OK)
        err = take(scales, ctx, st, "scales", MF_ST_F32, 1, scales_shape, sizeof(scales));
    mf_safetensors_free(st);
    if (err < 0)
        return err;
    if (!finite_all(scales, 5, 1))
        return mf_fail(ctx, MF_E_INVALID, "%s scales must be finite and > 0", MF_CNN_FORMAT);
    if (!finite_all(out->conv_b, MF_CNN_CH, 0) || !finite_all(out->fc_b, MF_CNN_CLASSES, 0))
        return mf_fail(ctx, MF_E_INVALID, "%s biases must be finite", MF_CNN_FORMAT);
    out->in_scale = scales[0];
    out->conv_scale = scales[1];
    out->hidden_scale = scales[2];
    out->fc_scale = scales[3];
    out->temperature = scales[4];
    return MF_OK;
}
