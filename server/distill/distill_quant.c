/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Post-training quantisation of the float student and the trainer's int8 reference.
 * The reference is deliberately written apart from the device loop (input-major int64
 * accumulation, no shared helpers), so agreement tests check the device code against the
 * specification rather than against itself.
 */
#include "mf_distill.h"

#include "mf_ctx.h"

#include <math.h>
#include <string.h>

static float absmax(const float *v, size_t n)
{
    float m = 0.0f;

    for (size_t i = 0; i < n; i++)
        m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
    return m;
}

/* Symmetric per-tensor scale; an all-zero tensor keeps scale 1 (any value works). */
static float quantize_tensor(int8_t *dst, const float *w_in_out, uint32_t nin, uint32_t nout)
{
    const float mx = absmax(w_in_out, (size_t)nin * nout);
    const float s = mx > 0.0f ? mx / 127.0f : 1.0f;

    /* Float storage is [in][out]; the student wants [out][in]. */
    for (uint32_t i = 0; i < nin; i++)
        for (uint32_t o = 0; o < nout; o++) {
            float q = roundf(w_in_out[(size_t)i * nout + o] / s);
            q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
            dst[(size_t)o * nin + i] = (int8_t)q;
        }
    return s;
}

/* Hidden pre-requantisation values h[j] of the reference (spec step 2). */
static void ref_hidden(float *h, const mf_student_model *m, const uint8_t *x)
{
    const mf_student *s = &m->net;
    int64_t acc[MF_STUDENT_MAX_HIDDEN] = {0};
    const float m1 = s->in_scale * s->w1_scale;

    for (uint32_t i = 0; i < s->n_in; i++) {
        if (x[i] == 0)
            continue;
        for (uint32_t j = 0; j < s->n_hidden; j++)
            acc[j] += (int64_t)x[i] * m->w1[(size_t)j * s->n_in + i];
    }
    for (uint32_t j = 0; j < s->n_hidden; j++)
        h[j] = (float)(int32_t)acc[j] * m1 + m->b1[j];
}

void mf_distill_ref_logits(const mf_student_model *m, const uint8_t *x, float *logits_out)
{
    const mf_student *s = &m->net;
    float h[MF_STUDENT_MAX_HIDDEN];
    int32_t q[MF_STUDENT_MAX_HIDDEN];
    const float inv = 1.0f / s->hidden_scale;
    const float m2 = s->hidden_scale * s->w2_scale;

    ref_hidden(h, m, x);
    for (uint32_t j = 0; j < s->n_hidden; j++) {
        int32_t v = 0;
        if (h[j] > 0.0f) {
            const float r = h[j] * inv + 0.5f;
            v = r < 255.0f ? (int32_t)r : 255;
        }
        q[j] = v;
    }
    for (uint32_t k = 0; k < s->n_out; k++) {
        int64_t acc = 0;
        for (uint32_t j = 0; j < s->n_hidden; j++)
            acc += (int64_t)q[j] * m->w2[(size_t)k * s->n_hidden + j];
        logits_out[k] = (float)(int32_t)acc * m2 + m->b2[k];
    }
}

int mf_distill_quantize(mf_student_model **out, struct mf_ctx *ctx, const mf_mlp *fm,
                        const uint8_t *calib, size_t n_calib, float temperature)
{
    mf_student_model *m;
    float hmax = 0.0f;
    int err;

    *out = NULL;
    if (fm->n_layers != 2)
        return mf_fail(ctx, MF_E_INVALID, "a student has 2 layers, the MLP has %u", fm->n_layers);
    if (n_calib == 0)
        return mf_fail(ctx, MF_E_INVALID, "quantisation needs calibration inputs");
    if (!(temperature > 0.0f))
        return mf_fail(ctx, MF_E_INVALID, "student temperature must be > 0");
    err = mf_student_model_new(&m, ctx, &fm->alloc, fm->sizes[0], fm->sizes[1], fm->sizes[2]);
    if (err < 0)
        return err;
    m->net.in_scale = fm->in_scale;
    m->net.w1_scale = quantize_tensor(m->w1, fm->w[0], fm->sizes[0], fm->sizes[1]);
    m->net.w2_scale = quantize_tensor(m->w2, fm->w[1], fm->sizes[1], fm->sizes[2]);
    memcpy(m->b1, fm->b[0], fm->sizes[1] * sizeof(float));
    memcpy(m->b2, fm->b[1], fm->sizes[2] * sizeof(float));
    m->net.temperature = temperature;
    /* Calibrate on what the device will actually compute: the int8 first layer. */
    for (size_t s = 0; s < n_calib; s++) {
        float h[MF_STUDENT_MAX_HIDDEN];
        ref_hidden(h, m, calib + s * fm->sizes[0]);
        hmax = absmax(h, fm->sizes[1]) > hmax ? absmax(h, fm->sizes[1]) : hmax;
    }
    m->net.hidden_scale = hmax > 0.0f ? hmax / 255.0f : 1.0f;
    *out = m;
    return MF_OK;
}

int mf_distill_dequantize(mf_mlp **out, struct mf_ctx *ctx, const mf_student_model *s)
{
    const uint32_t sizes[3] = {s->net.n_in, s->net.n_hidden, s->net.n_out};
    mf_mlp *m;
    int err = mf_mlp_new(&m, ctx, &s->alloc, sizes, 3, s->net.in_scale, 0);

    if (err < 0)
        return err;
    for (uint32_t i = 0; i < sizes[0]; i++)
        for (uint32_t j = 0; j < sizes[1]; j++)
            m->w[0][(size_t)i * sizes[1] + j] = s->w1[(size_t)j * sizes[0] + i] * s->net.w1_scale;
    for (uint32_t j = 0; j < sizes[1]; j++)
        for (uint32_t k = 0; k < sizes[2]; k++)
            m->w[1][(size_t)j * sizes[2] + k] = s->w2[(size_t)k * sizes[1] + j] * s->net.w2_scale;
    memcpy(m->b[0], s->b1, sizes[1] * sizeof(float));
    memcpy(m->b[1], s->b2, sizes[2] * sizeof(float));
    *out = m;
    return MF_OK;
}
