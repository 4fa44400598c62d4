/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_student: the example's int8 student on Fashion-MNIST (Debian dataset-fashion-mnist).
 * Trains a 784-32-10 student on the training split (or a fraction of it), then reports
 * float vs int8 test accuracy, agreement of the device inference (mf_student_logits) with
 * the trainer's int8 reference on all 10,000 test images, the weight and file sizes, and
 * single-core inference time per image.
 * Usage: bench_student [--frac F] [--epochs E] [--out student.safetensors] [--dir DIR]
 */
#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_distill.h"
#include "mf_dynbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int die(const struct mf_ctx *ctx, const char *what)
{
    (void)fprintf(stderr, "bench_student: %s: %s\n", what, ctx->errmsg);
    return 1;
}

int main(int argc, char **argv)
{
    struct mf_ctx ctx;
    mf_dataset *train = NULL, *test = NULL;
    const char *dir = NULL, *out_path = NULL;
    double frac = 1.0, t0, t_train, best = 1e9;
    unsigned epochs = 20;
    mf_distill_options o;
    mf_student_model *s = NULL;
    mf_mlp *fm = NULL;
    struct mf_dynbuf file;
    size_t n_train, agree = 0;
    uint8_t *pred, *fpred;
    float *logits;
    unsigned sink = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--frac") == 0)
            frac = strtod(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--epochs") == 0)
            epochs = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0)
            out_path = argv[i + 1];
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "bench");
    if (mf_dataset_load_fashion(&train, &ctx, NULL, dir, "train") < 0 ||
        mf_dataset_load_fashion(&test, &ctx, NULL, dir, "t10k") < 0)
        return die(&ctx, "loading Fashion-MNIST (apt-get install dataset-fashion-mnist)");
    n_train = (size_t)(frac * (double)train->n);
    if (n_train == 0 || n_train > train->n)
        n_train = train->n;

    if (mf_distill_options_init(&o, MF_DISTILL_OPTIONS_VERSION) < 0)
        return 1;
    o.train.epochs = epochs;
    t0 = now();
    {
        const mf_train_set set = {.n = n_train, .x = train->x, .y = train->y};
        if (mf_distill_student(&s, &fm, &ctx, &set, train->dim, 10, &o) < 0)
            return die(&ctx, "training");
    }
    t_train = now() - t0;

    pred = malloc(test->n);
    fpred = malloc(test->n);
    logits = malloc(test->n * 10 * sizeof(float));
    if (!pred || !fpred || !logits || mf_mlp_logits(logits, &ctx, fm, test->x, test->n, 2) < 0)
        return die(&ctx, "float inference");
    mf_eval_argmax(fpred, logits, test->n, 10);
    for (size_t i = 0; i < test->n; i++) {
        float dev[10], ref[10];
        mf_student_logits(&s->net, test->x + i * test->dim, dev);
        mf_distill_ref_logits(s, test->x + i * test->dim, ref);
        agree += memcmp(dev, ref, sizeof(dev)) == 0;
    }
    /* Best of 5 passes over the test set: one core, predict only (no score). */
    for (int r = 0; r < 5; r++) {
        double dt;
        t0 = now();
        for (size_t i = 0; i < test->n; i++)
            sink += mf_student_predict(&s->net, test->x + i * test->dim, NULL);
        dt = (now() - t0) / (double)test->n;
        best = dt < best ? dt : best;
    }
    mf_eval_student(pred, NULL, &s->net, test->x, test->n, MF_SCORE_MAX_SOFTMAX);
    mf_dynbuf__init(&file, NULL, MF_STUDENT_MAX_FILE);
    if (mf_student_model_encode(&file, &ctx, s) < 0)
        return die(&ctx, "encoding");
    if (out_path && mf_student_model_save(s, &ctx, out_path) < 0)
        return die(&ctx, "saving");

    printf("student 784-%u-10 trained on %zu images, %u epochs, %.1f s (2 threads)\n",
           s->net.n_hidden, n_train, epochs, t_train);
    printf("  float accuracy   %.2f %%\n", 100.0 * mf_eval_accuracy(fpred, test->y, test->n));
    printf("  int8 accuracy    %.2f %%\n", 100.0 * mf_eval_accuracy(pred, test->y, test->n));
    printf("  device == int8 reference (bit-identical logits): %zu / %zu test images\n", agree,
           test->n);
    printf("  int8 weights     %zu B; safetensors file %zu B\n",
           (size_t)s->net.n_in * s->net.n_hidden + (size_t)s->net.n_hidden * s->net.n_out,
           file.len);
    printf("  inference        %.2f us per 28x28 image (one core, best of 5 x %zu) [%u]\n",
           best * 1e6, test->n, sink % 2);
    mf_dynbuf__free(&file);
    free(pred);
    free(fpred);
    free(logits);
    mf_student_model_free(s);
    mf_mlp_free(fm);
    mf_dataset_free(train);
    mf_dataset_free(test);
    return agree == test->n ? 0 : 2;
}
