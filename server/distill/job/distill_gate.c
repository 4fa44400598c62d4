/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate's figures. A student is judged as it will be deployed: the device offloads the
 * items whose max-softmax score falls below a threshold fitted, as the server fits it for
 * devices, as the target-rate quantile of the student's scores on the calibration items;
 * the teacher answers those. Cascade accuracy on the held-out set is what must not drop.
 */
#include "distill/job/distill_job.h"

#include "mf_confidence.h"
#include "mf_distill.h"
#include "offload/teacher.h"

#include <string.h>

int mf_distill__teacher_preds(uint8_t *pred_out, struct mf_ctx *ctx, struct mf_teacher *t,
                              const mf_dataset *ds)
{
    float probs[MF_DATASET_CLASSES];
    char version[MF_STORE_NAME_SIZE];

    for (size_t i = 0; i < ds->n; i++) {
        int err = mf_teacher__ask(probs, version, t, ctx, ds->x + i * ds->dim, ds->dim,
                                  MF_DATASET_CLASSES, 0);
        uint8_t best = 0;

        if (err < 0)
            return mf_fail(ctx, err, "teacher on held-out item %zu: %s", i, mf_ctx__errmsg(ctx));
        for (uint8_t k = 1; k < MF_DATASET_CLASSES; k++)
            best = probs[k] > probs[best] ? k : best;
        pred_out[i] = best;
    }
    return MF_OK;
}

int mf_distill__evaluate(struct mf_distill_eval *out, struct mf_ctx *ctx, const mf_student_model *m,
                         const struct mf_distill_data *d, const uint8_t *teacher_pred,
                         double target_rate)
{
    const mf_dataset *h = d->heldout, *tr = d->train;
    uint8_t *pred = mf_alloc(&ctx->alloc, h->n ? h->n : 1);
    float *score = mf_calloc(&ctx->alloc, h->n ? h->n : 1, sizeof(float));
    float *cs = mf_calloc(&ctx->alloc, d->n_calib ? d->n_calib : 1, sizeof(float));
    mf_cascade_inputs in = {h->n, pred, score, teacher_pred, h->y};
    float thr = 0;
    int err = MF_OK;

    memset(out, 0, sizeof(*out));
    if (!pred || !score || !cs)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory evaluating a student");
    for (size_t i = 0; err == MF_OK && i < d->n_calib; i++)
        mf_eval_student(NULL, &cs[i], &m->net, tr->x + d->perm[d->n_seed + i] * tr->dim, 1,
                        MF_SCORE_MAX_SOFTMAX);
    if (err == MF_OK)
        err = mf_eval_quantile_threshold(&thr, ctx, cs, d->n_calib, target_rate);
    if (err == MF_OK) {
        mf_eval_student(pred, score, &m->net, h->x, h->n, MF_SCORE_MAX_SOFTMAX);
        out->student_acc = mf_eval_accuracy(pred, h->y, h->n);
        mf_eval_cascade(&out->cascade_acc, &out->offload_rate, &in, thr);
        out->threshold = thr;
    }
    mf_free(&ctx->alloc, pred);
    mf_free(&ctx->alloc, score);
    mf_free(&ctx->alloc, cs);
    return err;
}

void mf_distill__calibration_hist(uint64_t *bins, const mf_student_model *m,
                                  const struct mf_distill_data *d)
{
    const mf_dataset *tr = d->train;

    memset(bins, 0, MF_STORE_HIST_BINS * sizeof(*bins));
    for (size_t i = 0; i < d->n_calib; i++) {
        float sc = 0;
        size_t b;

        mf_eval_student(NULL, &sc, &m->net, tr->x + d->perm[d->n_seed + i] * tr->dim, 1,
                        MF_SCORE_MAX_SOFTMAX);
        /* the devices' binning: bin = floor(score * bins), a score of 1 in the last bin */
        b = (size_t)(sc * (float)MF_STORE_HIST_BINS);
        bins[b >= MF_STORE_HIST_BINS ? MF_STORE_HIST_BINS - 1 : b]++;
    }
}
