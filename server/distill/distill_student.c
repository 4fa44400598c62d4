/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Distillation of one student: float training (fresh He init or warm start from the
 * current student's dequantised weights), then post-training int8 quantisation calibrated
 * on the training inputs, which are the distribution the device will see.
 */
#include "mf_distill.h"

#include "mf_confidence.h"
#include "mf_ctx.h"

/* mf_score()/mf_softmax() callers keep a stack copy of one row of logits. */
#define SOFT_MAX_CLASSES 64u

int mf_distill_options_init(mf_distill_options *o, unsigned int version)
{
    int err;

    if (version != MF_DISTILL_OPTIONS_VERSION)
        return MF_E_INVALID;
    *o = (mf_distill_options){
        .version = version,
        .hidden = 32,
        .in_scale = 1.0f / 255.0f,
        .score_temperature = 1.0f,
        .init_seed = 7,
    };
    err = mf_train_options_init(&o->train, MF_TRAIN_OPTIONS_VERSION);
    return err;
}

int mf_distill_student(mf_student_model **out, mf_mlp **float_out, struct mf_ctx *ctx,
                       const mf_train_set *set, uint32_t n_in, uint32_t n_out,
                       const mf_distill_options *o)
{
    const uint32_t sizes[3] = {n_in, o->hidden, n_out};
    mf_mlp *fm = NULL;
    int err;

    *out = NULL;
    if (float_out)
        *float_out = NULL;
    if (o->version != MF_DISTILL_OPTIONS_VERSION)
        return mf_fail(ctx, MF_E_INVALID, "unknown distill options version %u", o->version);
    if (o->warm_start) {
        const mf_student *w = &o->warm_start->net;
        if (w->n_in != n_in || w->n_out != n_out)
            return mf_fail(ctx, MF_E_INVALID, "warm start is %u-%u-%u, data needs %u-..-%u",
                           w->n_in, w->n_hidden, w->n_out, n_in, n_out);
        err = mf_distill_dequantize(&fm, ctx, o->warm_start);
    } else {
        err = mf_mlp_new(&fm, ctx, NULL, sizes, 3, o->in_scale, o->init_seed);
    }
    if (err < 0)
        return err;
    err = mf_mlp_train(fm, ctx, set, &o->train, NULL);
    if (err == MF_OK)
        err = mf_distill_quantize(out, ctx, fm, set->x, set->n, o->score_temperature);
    if (err == MF_OK && float_out) {
        *float_out = fm;
        fm = NULL;
    }
    mf_mlp_free(fm);
    return err;
}

int mf_distill_soft_labels(float *probs_out, struct mf_ctx *ctx, const mf_mlp *teacher,
                           const uint8_t *x, size_t n, float temperature, uint32_t threads)
{
    const uint32_t k = teacher->sizes[teacher->n_layers];
    int err;

    if (k > SOFT_MAX_CLASSES)
        return mf_fail(ctx, MF_E_INVALID, "teacher has %u classes, soft labels support %u", k,
                       SOFT_MAX_CLASSES);
    err = mf_mlp_logits(probs_out, ctx, teacher, x, n, threads);
    if (err < 0)
        return err;
    /* In place: each row's logits become its probabilities. */
    for (size_t i = 0; i < n; i++) {
        float z[SOFT_MAX_CLASSES];
        for (uint32_t c = 0; c < k; c++)
            z[c] = probs_out[i * k + c];
        mf_softmax(probs_out + i * k, z, k, temperature);
    }
    return MF_OK;
}
