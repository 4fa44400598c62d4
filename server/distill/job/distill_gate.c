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

#include <assert.h>
#include <math.h>
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

int mf_distill__outputs_builtin(struct mf_distill_outputs *o, struct mf_ctx *ctx,
                                const mf_student_model *m, const struct mf_distill_data *d)
{
    const mf_dataset *h = d->heldout, *tr = d->train;
    int err = mf_distill__outputs_alloc(o, ctx, h->n, d->n_calib);

    if (err < 0)
        return err;
    for (size_t i = 0; i < d->n_calib; i++)
        mf_eval_student(NULL, &o->calib[i], &m->net, tr->x + d->perm[d->n_seed + i] * tr->dim, 1,
                        MF_SCORE_MAX_SOFTMAX);
    mf_eval_student(o->pred, o->score, &m->net, h->x, h->n, MF_SCORE_MAX_SOFTMAX);
    return MF_OK;
}

int mf_distill__evaluate(struct mf_distill_eval *out, struct mf_ctx *ctx,
                         const struct mf_distill_outputs *o, const struct mf_distill_data *d,
                         const uint8_t *teacher_pred, double target_rate)
{
    const mf_dataset *h = d->heldout;
    mf_cascade_inputs in = {h->n, o->pred, o->score, teacher_pred, h->y};
    float thr = 0;
    int err;

    memset(out, 0, sizeof(*out));
    assert(o->n_heldout == h->n);
    err = mf_eval_quantile_threshold(&thr, ctx, o->calib, o->n_calib, target_rate);
    if (err < 0)
        return err;
    out->student_acc = mf_eval_accuracy(o->pred, h->y, h->n);
    mf_eval_cascade(&out->cascade_acc, &out->offload_rate, &in, thr);
    out->threshold = thr;
    return MF_OK;
}

double mf_distill__z_one_sided(double confidence)
{
    double lo = 0, hi = 10;

    assert(confidence >= 0.5 && confidence <= 0.9999);
    /* bisection on the upper tail 0.5 * erfc(z / sqrt 2): monotone, 60 steps are exact */
    for (int i = 0; i < 60; i++) {
        const double mid = (lo + hi) / 2;

        if (0.5 * erfc(mid / sqrt(2.0)) > 1 - confidence)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

static int cascade_right(const struct mf_distill_outputs *o, double thr, const uint8_t *teacher,
                         const uint8_t *label, size_t i)
{
    return ((double)o->score[i] < thr ? teacher[i] : o->pred[i]) == label[i];
}

void mf_distill__paired(struct mf_distill_paired *out, const struct mf_distill_outputs *cand,
                        double cand_thr, const struct mf_distill_outputs *par, double par_thr,
                        const uint8_t *teacher_pred, const uint8_t *label, double confidence)
{
    const size_t n = cand->n_heldout;
    double b, c, se;

    assert(par->n_heldout == n);
    memset(out, 0, sizeof(*out));
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        const int x = cascade_right(cand, cand_thr, teacher_pred, label, i);
        const int y = cascade_right(par, par_thr, teacher_pred, label, i);

        out->candidate_only += (size_t)(x && !y);
        out->parent_only += (size_t)(y && !x);
    }
    out->z = mf_distill__z_one_sided(confidence);
    if (!n)
        return;
    b = (double)out->candidate_only;
    c = (double)out->parent_only;
    out->difference = (b - c) / (double)n;
    /* the variance of the mean of the per-item differences (each -1, 0 or +1) */
    se = sqrt(fmax((b + c) / (double)n - out->difference * out->difference, 0) / (double)n);
    out->lower = out->difference - out->z * se;
    out->upper = out->difference + out->z * se;
}

void mf_distill__calibration_hist(uint64_t *bins, const struct mf_distill_outputs *o)
{
    memset(bins, 0, MF_STORE_HIST_BINS * sizeof(*bins));
    for (size_t i = 0; i < o->n_calib; i++) {
        /* the devices' binning: bin = floor(score * bins), a score of 1 in the last bin */
        size_t b = (size_t)(o->calib[i] * (float)MF_STORE_HIST_BINS);

        bins[b >= MF_STORE_HIST_BINS ? MF_STORE_HIST_BINS - 1 : b]++;
    }
}
