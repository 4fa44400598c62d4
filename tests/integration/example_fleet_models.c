/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Models for tests/integration/example_fleet.sh, trained in seconds on scikit-learn's
 * digits with the project's own trainer (server/distill): items [0, TRAIN) train an int8
 * student 64-32-10 (hard labels); items [TRAIN, CALIB) give its calibration scores
 * (max-softmax) that the test uploads for the version, so the server derives the threshold
 * of a target offload rate; the float teacher 64-256-128-10 learns from all of [0, CALIB)
 * (the cloud side has more labelled data than the seed set). A second student, warm-started
 * from the first and trained a little more, stands for the next version (a small delta). A
 * lighter student 64-8-10 on the same items is that version's fallback variant (the way down).
 * Items [CALIB, n) are left for the fleet to stream.
 * Writes OUT/teacher.safetensors, OUT/student-1.safetensors, OUT/student-2.safetensors,
 * OUT/student-lite.safetensors and OUT/calibration.json; prints the accuracies on the
 * streamed items.
 * Usage: example_fleet_models DIGITS_CSV OUT TRAIN CALIB
 */
#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_distill.h"

#include <stdio.h>
#include <stdlib.h>

#define CLASSES 10

static int save_scores(const mf_student_model *s, const mf_dataset *ds, size_t first, size_t end,
                       const char *path)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    (void)fputs("{\"method\": \"max_softmax\", \"scores\": [", f);
    for (size_t i = first; i < end; i++) {
        float logits[CLASSES];

        mf_student_logits(&s->net, ds->x + i * ds->dim, logits);
        (void)fprintf(f, "%s%.6f", i > first ? ", " : "",
                      (double)mf_score(MF_SCORE_MAX_SOFTMAX, logits, CLASSES, 1.0f));
    }
    (void)fputs("]}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Accuracy of the student, or of the teacher when `s` is NULL, on items [first, end). */
static double accuracy(const mf_student_model *s, const mf_mlp *t, const mf_dataset *ds,
                       size_t first, size_t end, struct mf_ctx *ctx)
{
    size_t ok = 0;

    for (size_t i = first; i < end; i++) {
        float logits[CLASSES];
        uint8_t pred;
        const uint8_t *x = ds->x + i * ds->dim;

        if (s)
            mf_student_logits(&s->net, x, logits);
        else if (mf_mlp_logits(logits, ctx, t, x, 1, 1) < 0)
            return -1;
        mf_eval_argmax(&pred, logits, 1, CLASSES);
        ok += pred == ds->y[i];
    }
    return (double)ok / (double)(end - first);
}

int main(int argc, char **argv)
{
    static const uint32_t tsizes[4] = {64, 256, 128, 10};
    char path[1024];
    struct mf_ctx ctx;
    mf_dataset *ds = NULL;
    mf_mlp *teacher = NULL;
    mf_student_model *s1 = NULL, *s2 = NULL, *lite = NULL;
    mf_distill_options o;
    mf_train_options to;
    mf_train_set set;
    size_t train, calib;
    int err;

    if (argc != 5) {
        (void)fprintf(stderr, "usage: %s DIGITS_CSV OUT TRAIN CALIB\n", argv[0]);
        return 2;
    }
    train = strtoul(argv[3], NULL, 10);
    calib = strtoul(argv[4], NULL, 10);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "models");
    err = mf_dataset_load_digits(&ds, &ctx, NULL, argv[1]);
    if (err == MF_OK && !(train > 0 && train < calib && calib < ds->n))
        err = mf_fail(&ctx, MF_E_INVALID, "need 0 < TRAIN < CALIB < %zu", ds->n);
    if (err == MF_OK)
        err = mf_train_options_init(&to, MF_TRAIN_OPTIONS_VERSION);
    if (err == MF_OK) {
        /* mf_teacher_load_or_train() trains on the whole set it gets: give it [0, CALIB),
         * everything the fleet does not stream (the cloud side has more labelled data). */
        mf_dataset head = *ds;

        head.n = calib;
        to.epochs = 30;
        err = mf_teacher_load_or_train(&teacher, NULL, &ctx, &head, tsizes, 4, &to, NULL);
    }
    if (err == MF_OK) {
        (void)snprintf(path, sizeof(path), "%s/teacher.safetensors", argv[2]);
        err = mf_mlp_save(teacher, &ctx, path, NULL, 0);
    }
    if (err == MF_OK)
        err = mf_distill_options_init(&o, MF_DISTILL_OPTIONS_VERSION);
    set = (mf_train_set){.n = train, .x = ds ? ds->x : NULL, .y = ds ? ds->y : NULL};
    if (err == MF_OK) {
        o.in_scale = 1.0f / 16.0f;
        o.train.epochs = 30;
        err = mf_distill_student(&s1, NULL, &ctx, &set, 64, CLASSES, &o);
    }
    if (err == MF_OK) {
        o.warm_start = s1;
        o.train.epochs = 1;
        o.train.lr = o.train.lr_final = 1e-4f;
        err = mf_distill_student(&s2, NULL, &ctx, &set, 64, CLASSES, &o);
    }
    if (err == MF_OK) /* the fallback: a quarter of the hidden units, trained afresh */
        err = mf_distill_options_init(&o, MF_DISTILL_OPTIONS_VERSION);
    if (err == MF_OK) {
        o.in_scale = 1.0f / 16.0f;
        o.hidden = 8;
        o.train.epochs = 30;
        err = mf_distill_student(&lite, NULL, &ctx, &set, 64, CLASSES, &o);
    }
    for (int v = 1; err == MF_OK && v <= 3; v++) {
        if (v < 3)
            (void)snprintf(path, sizeof(path), "%s/student-%d.safetensors", argv[2], v);
        else
            (void)snprintf(path, sizeof(path), "%s/student-lite.safetensors", argv[2]);
        err = mf_student_model_save(v == 1 ? s1 : v == 2 ? s2 : lite, &ctx, path);
    }
    (void)snprintf(path, sizeof(path), "%s/calibration.json", argv[2]);
    if (err == MF_OK && save_scores(s1, ds, train, calib, path) < 0)
        err = mf_fail(&ctx, MF_E_IO, "cannot write %s", path);
    if (err == MF_OK)
        printf("on items %zu..%zu: teacher %.4f student-1 %.4f student-2 %.4f student-lite %.4f\n",
               calib, ds->n - 1, accuracy(NULL, teacher, ds, calib, ds->n, &ctx),
               accuracy(s1, NULL, ds, calib, ds->n, &ctx),
               accuracy(s2, NULL, ds, calib, ds->n, &ctx),
               accuracy(lite, NULL, ds, calib, ds->n, &ctx));
    else
        (void)fprintf(stderr, "%s: %s\n", argv[0], mf_ctx__errmsg(&ctx));
    mf_student_model_free(s1);
    mf_student_model_free(s2);
    mf_student_model_free(lite);
    mf_mlp_free(teacher);
    mf_dataset_free(ds);
    return err == MF_OK ? 0 : 1;
}
