/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server/distill on sklearn's digits (1,797 8x8 images; seeded 70/30 split, 539 test
 * images): the trainer learns, the int8 student agrees with the trainer's reference on
 * every image, soft-label distillation works, warm starts start from the given student,
 * quantile thresholds hit the requested offload rate, the cascade beats the student alone,
 * the teacher cache round-trips. Everything is seeded, so each run computes the same
 * numbers; the margins below leave room for libm differences between machines.
 */
#include "mf_test.h"

#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_distill.h"
#include "mf_dynbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_N 539
#define EPOCHS 30
#define CLASSES 10

struct fixture {
    mf_dataset *train, *test;
    mf_student_model *student; /* hard labels, default recipe */
    mf_mlp *teacher;           /* 64-128-10 float */
    uint8_t teacher_pred[TEST_N];
    double student_acc;
};

static struct mf_ctx ctx;
static struct fixture fx;

static void student_options(mf_distill_options *o)
{
    assert_int_equal(mf_distill_options_init(o, MF_DISTILL_OPTIONS_VERSION), MF_OK);
    o->in_scale = 1.0f / 16.0f;
    o->train.epochs = EPOCHS;
}

/* The student recipe cut to one epoch at the constant step `lr`. */
static void one_epoch_options(mf_distill_options *o, float lr)
{
    student_options(o);
    o->train.epochs = 1;
    o->train.lr = lr;
    o->train.lr_final = lr;
}

static double student_accuracy(const mf_student_model *m, const mf_dataset *ds)
{
    uint8_t *pred = malloc(ds->n);
    double acc;

    mf_eval_student(pred, NULL, &m->net, ds->x, ds->n, MF_SCORE_MAX_SOFTMAX);
    acc = mf_eval_accuracy(pred, ds->y, ds->n);
    free(pred);
    return acc;
}

static int setup(void **state)
{
    mf_dataset *all = NULL;
    size_t perm[2048];
    mf_distill_options o;
    mf_train_options to;
    const uint32_t tsizes[3] = {64, 128, 10};
    float *logits;
    mf_train_set set;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    if (access(MF_DIGITS_CSV, R_OK) != 0)
        return 0; /* tests skip: python3-sklearn is not installed */
    if (mf_dataset_load_digits(&all, &ctx, NULL, NULL) < 0 || all->n > 2048)
        return -1;
    mf_dataset_permutation(perm, all->n, 42);
    if (mf_dataset_select(&fx.train, &ctx, all, perm, all->n - TEST_N) < 0 ||
        mf_dataset_select(&fx.test, &ctx, all, perm + all->n - TEST_N, TEST_N) < 0)
        return -1;
    mf_dataset_free(all);

    student_options(&o);
    set = (mf_train_set){.n = fx.train->n, .x = fx.train->x, .y = fx.train->y};
    if (mf_distill_student(&fx.student, NULL, &ctx, &set, 64, CLASSES, &o) < 0)
        return -1;
    fx.student_acc = student_accuracy(fx.student, fx.test);

    if (mf_train_options_init(&to, MF_TRAIN_OPTIONS_VERSION) < 0)
        return -1;
    to.epochs = EPOCHS;
    if (mf_teacher_load_or_train(&fx.teacher, NULL, &ctx, fx.train, tsizes, 3, &to, NULL) < 0)
        return -1;
    logits = malloc(TEST_N * CLASSES * sizeof(float));
    if (mf_mlp_logits(logits, &ctx, fx.teacher, fx.test->x, TEST_N, 2) < 0)
        return -1;
    mf_eval_argmax(fx.teacher_pred, logits, TEST_N, CLASSES);
    free(logits);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_student_model_free(fx.student);
    mf_mlp_free(fx.teacher);
    mf_dataset_free(fx.train);
    mf_dataset_free(fx.test);
    return 0;
}

#define NEED_DIGITS()                                                                              \
    do {                                                                                           \
        if (!fx.train)                                                                             \
            MF_SKIP("the digits data set (python3-sklearn) is not installed");                     \
    } while (0)

static void test_distill__trainer_beats_untrained(void **state)
{
    mf_distill_options o;
    mf_student_model *untrained = NULL;
    mf_train_set set = {.n = fx.train->n, .x = fx.train->x, .y = fx.train->y};
    double acc0;

    (void)state;
    NEED_DIGITS();
    /* The same recipe with a vanishing step size leaves the initial weights in place. */
    one_epoch_options(&o, 1e-12f);
    assert_int_equal(mf_distill_student(&untrained, NULL, &ctx, &set, 64, CLASSES, &o), MF_OK);
    acc0 = student_accuracy(untrained, fx.test);
    print_message("digits: untrained %.4f, trained int8 student %.4f\n", acc0, fx.student_acc);
    assert_true(acc0 < 0.30);
    assert_true(fx.student_acc >= 0.90);
    assert_true(fx.student_acc >= acc0 + 0.60);
    mf_student_model_free(untrained);
}

static void test_distill__device_matches_reference_on_every_image(void **state)
{
    const mf_dataset *sets[2] = {fx.test, fx.train};
    size_t mismatches = 0, images = 0;

    (void)state;
    NEED_DIGITS();
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sets[s]->n; i++) {
            float dev[CLASSES], ref[CLASSES];
            const uint8_t *x = sets[s]->x + i * sets[s]->dim;
            mf_student_logits(&fx.student->net, x, dev);
            mf_distill_ref_logits(fx.student, x, ref);
            mismatches += memcmp(dev, ref, sizeof(dev)) != 0;
            images++;
        }
    print_message("digits: device vs int8 reference: %zu/%zu identical logits\n",
                  images - mismatches, images);
    assert_int_equal(mismatches, 0);
}

static void test_distill__int8_close_to_float(void **state)
{
    mf_distill_options o;
    mf_student_model *q = NULL;
    mf_mlp *fm = NULL;
    mf_train_set set = {.n = fx.train->n, .x = fx.train->x, .y = fx.train->y};
    float *logits = malloc(TEST_N * CLASSES * sizeof(float));
    uint8_t pred[TEST_N];
    double facc, qacc;

    (void)state;
    NEED_DIGITS();
    student_options(&o);
    assert_int_equal(mf_distill_student(&q, &fm, &ctx, &set, 64, CLASSES, &o), MF_OK);
    assert_int_equal(mf_mlp_logits(logits, &ctx, fm, fx.test->x, TEST_N, 1), MF_OK);
    mf_eval_argmax(pred, logits, TEST_N, CLASSES);
    facc = mf_eval_accuracy(pred, fx.test->y, TEST_N);
    qacc = student_accuracy(q, fx.test);
    print_message("digits: float %.4f int8 %.4f\n", facc, qacc);
    /* 2 images of 539; the Fashion-MNIST figure is in docs/example-model.md. */
    assert_true(fabs(facc - qacc) <= 2.0 / TEST_N + 1e-9);
    /* Same seed, same data: training is reproducible to the byte. */
    assert_memory_equal(q->w1, fx.student->w1, 64 * 32);
    mf_student_model_free(q);
    mf_mlp_free(fm);
    free(logits);
}

static void test_distill__soft_labels_match_hard_labels(void **state)
{
    mf_distill_options o;
    mf_student_model *soft_student = NULL;
    float *soft = malloc(fx.train->n * CLASSES * sizeof(float));
    mf_train_set set = {.n = fx.train->n, .x = fx.train->x, .soft = soft};
    double acc;

    (void)state;
    NEED_DIGITS();
    assert_int_equal(
        mf_distill_soft_labels(soft, &ctx, fx.teacher, fx.train->x, fx.train->n, 2.0f, 2), MF_OK);
    for (size_t k = 0; k < CLASSES; k++)
        assert_true(soft[k] > 0.0f && soft[k] < 1.0f); /* softened: no one-hot rows */
    student_options(&o);
    o.train.temperature = 2.0f;
    /* No true label anywhere: the student learns from the teacher alone. */
    assert_int_equal(mf_distill_student(&soft_student, NULL, &ctx, &set, 64, CLASSES, &o), MF_OK);
    acc = student_accuracy(soft_student, fx.test);
    print_message("digits: soft-label student %.4f vs hard-label %.4f\n", acc, fx.student_acc);
    assert_true(acc >= fx.student_acc - 0.02);
    mf_student_model_free(soft_student);
    free(soft);
}

static void test_distill__warm_start_starts_from_student(void **state)
{
    mf_distill_options o;
    mf_student_model *warm = NULL, *fresh = NULL;
    mf_train_set set = {.n = fx.train->n, .x = fx.train->x, .y = fx.train->y};
    uint8_t a[TEST_N], b[TEST_N], c[TEST_N];
    size_t same_warm = 0, same_fresh = 0;

    (void)state;
    NEED_DIGITS();
    /* One epoch at a tiny step: a warm start must still predict like its parent. */
    one_epoch_options(&o, 1e-6f);
    o.warm_start = fx.student;
    assert_int_equal(mf_distill_student(&warm, NULL, &ctx, &set, 64, CLASSES, &o), MF_OK);
    o.warm_start = NULL;
    assert_int_equal(mf_distill_student(&fresh, NULL, &ctx, &set, 64, CLASSES, &o), MF_OK);
    mf_eval_student(a, NULL, &fx.student->net, fx.test->x, TEST_N, 0);
    mf_eval_student(b, NULL, &warm->net, fx.test->x, TEST_N, 0);
    mf_eval_student(c, NULL, &fresh->net, fx.test->x, TEST_N, 0);
    for (size_t i = 0; i < TEST_N; i++) {
        same_warm += a[i] == b[i];
        same_fresh += a[i] == c[i];
    }
    assert_true(same_warm >= TEST_N * 98 / 100);
    assert_true(same_fresh < TEST_N / 2);
    mf_student_model_free(warm);
    mf_student_model_free(fresh);
}

static void test_distill__rejects_bad_inputs(void **state)
{
    mf_distill_options o;
    mf_student_model *m = NULL;
    uint8_t x[64] = {0}, y[1] = {MF_TRAIN_NO_LABEL};
    mf_train_set none = {.n = 1, .x = x, .y = y};
    mf_mlp *deep = NULL;
    const uint32_t sizes[4] = {64, 8, 8, 10};

    (void)state;
    student_options(&o);
    assert_int_equal(mf_distill_student(&m, NULL, &ctx, &none, 64, CLASSES, &o), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "neither"));
    y[0] = 10;
    assert_int_equal(mf_distill_student(&m, NULL, &ctx, &none, 64, CLASSES, &o), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "label 10"));
    assert_null(m);
    assert_int_equal(mf_mlp_new(&deep, &ctx, NULL, sizes, 4, 1.0f, 1), MF_OK);
    assert_int_equal(mf_distill_quantize(&m, &ctx, deep, x, 1, 1.0f), MF_E_INVALID);
    mf_mlp_free(deep);
}

/* Scores from a fixed distribution: calibrate on 5,000, check the rate on 5,000 others. */
static void test_distill__quantile_threshold_rate(void **state)
{
    static float calib[5000], held[5000];
    static const double rates[] = {0.05, 0.10, 0.20};
    uint64_t rng = 99;

    (void)state;
    for (size_t i = 0; i < 5000; i++) {
        calib[i] = (float)pow(mf_rng_uniform(&rng), 0.2);
        held[i] = (float)pow(mf_rng_uniform(&rng), 0.2);
    }
    for (size_t r = 0; r < 3; r++) {
        float thr;
        size_t below = 0, below_cal = 0;
        assert_int_equal(mf_eval_quantile_threshold(&thr, &ctx, calib, 5000, rates[r]), MF_OK);
        for (size_t i = 0; i < 5000; i++) {
            below += held[i] < thr;
            below_cal += calib[i] < thr;
        }
        assert_int_equal(below_cal, (size_t)(rates[r] * 5000 + 0.5));
        assert_true(fabs((double)below / 5000 - rates[r]) <= 0.015);
    }
    assert_int_equal(mf_eval_quantile_threshold(&(float){0}, &ctx, calib, 0, 0.1), MF_E_INVALID);
}

static void test_distill__cascade_on_digits(void **state)
{
    /*
     * Two-fold: fit the threshold on one half of the test split, measure the cascade on the
     * other, then swap. 270 calibration scores make one fold's rate swing by a few points
     * (LOOP-NOTES), so the rate check uses the mean of both folds.
     */
    const size_t half = TEST_N / 2;
    const size_t lo[2] = {0, half}, len[2] = {half, TEST_N - half};
    uint8_t pred[TEST_N];
    float score[TEST_N];
    double acc = 0.0, rate = 0.0, rnd = 0.0, s_acc, t_acc;
    mf_cascade_inputs in;

    (void)state;
    NEED_DIGITS();
    mf_eval_student(pred, score, &fx.student->net, fx.test->x, TEST_N, MF_SCORE_MAX_SOFTMAX);
    for (int f = 0; f < 2; f++) {
        const int other = 1 - f;
        double a, r;
        float thr;
        assert_int_equal(mf_eval_quantile_threshold(&thr, &ctx, score + lo[f], len[f], 0.10),
                         MF_OK);
        in = (mf_cascade_inputs){len[other], pred + lo[other], score + lo[other],
                                 fx.teacher_pred + lo[other], fx.test->y + lo[other]};
        mf_eval_cascade(&a, &r, &in, thr);
        acc += a * (double)len[other] / TEST_N;
        rate += r * (double)len[other] / TEST_N;
        rnd += mf_eval_cascade_random(&in, r) * (double)len[other] / TEST_N;
    }
    s_acc = mf_eval_accuracy(pred, fx.test->y, TEST_N);
    t_acc = mf_eval_accuracy(fx.teacher_pred, fx.test->y, TEST_N);
    print_message("digits: student %.4f teacher %.4f cascade@10%% %.4f (rate %.3f) random %.4f\n",
                  s_acc, t_acc, acc, rate, rnd);
    assert_true(acc >= s_acc);
    assert_true(acc - s_acc >= rnd - s_acc); /* gating is no worse than random offload */
    assert_true(rate >= 0.06 && rate <= 0.14);
    /* Threshold extremes: nothing or everything offloaded. */
    in = (mf_cascade_inputs){TEST_N, pred, score, fx.teacher_pred, fx.test->y};
    mf_eval_cascade(&acc, &rate, &in, -INFINITY);
    assert_true(rate == 0.0 && fabs(acc - s_acc) < 1e-12);
    mf_eval_cascade(&acc, &rate, &in, INFINITY);
    assert_true(rate == 1.0 && fabs(acc - t_acc) < 1e-12);
}

static void test_distill__teacher_cache(void **state)
{
    char path[] = "/tmp/mf_teacher_XXXXXX";
    const uint32_t sizes[3] = {64, 16, 10};
    mf_train_options to;
    mf_mlp *a = NULL, *b = NULL, *c = NULL;
    int trained = -1;
    float la[CLASSES * 4], lb[CLASSES * 4];
    mf_dataset sub;
    int fd = mkstemp(path);

    (void)state;
    NEED_DIGITS();
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mf_train_options_init(&to, MF_TRAIN_OPTIONS_VERSION), MF_OK);
    to.epochs = 2;
    /* The empty temp file is not a valid cache: the teacher is trained and written. */
    assert_int_equal(mf_teacher_load_or_train(&a, &trained, &ctx, fx.train, sizes, 3, &to, path),
                     MF_OK);
    assert_int_equal(trained, 1);
    assert_int_equal(mf_teacher_load_or_train(&b, &trained, &ctx, fx.train, sizes, 3, &to, path),
                     MF_OK);
    assert_int_equal(trained, 0);
    assert_int_equal(mf_mlp_logits(la, &ctx, a, fx.test->x, 4, 1), MF_OK);
    assert_int_equal(mf_mlp_logits(lb, &ctx, b, fx.test->x, 4, 1), MF_OK);
    assert_memory_equal(la, lb, sizeof(la));
    /* Other training data: the cached file does not match and is retrained over. */
    sub = *fx.train;
    sub.n -= 1;
    assert_int_equal(mf_teacher_load_or_train(&c, &trained, &ctx, &sub, sizes, 3, &to, path),
                     MF_OK);
    assert_int_equal(trained, 1);
    unlink(path);
    mf_mlp_free(a);
    mf_mlp_free(b);
    mf_mlp_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distill__trainer_beats_untrained),
        cmocka_unit_test(test_distill__device_matches_reference_on_every_image),
        cmocka_unit_test(test_distill__int8_close_to_float),
        cmocka_unit_test(test_distill__soft_labels_match_hard_labels),
        cmocka_unit_test(test_distill__warm_start_starts_from_student),
        cmocka_unit_test(test_distill__rejects_bad_inputs),
        cmocka_unit_test(test_distill__quantile_threshold_rate),
        cmocka_unit_test(test_distill__cascade_on_digits),
        cmocka_unit_test(test_distill__teacher_cache),
    };

    return cmocka_run_group_tests_name("distill", tests, setup, teardown);
}
