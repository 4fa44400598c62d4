/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate's figures from a model's outputs (server/distill/job/distill_gate.c): cascade
 * accuracy and offload rate at the calibration-fitted threshold, and the paired comparison
 * of two cascades on the same items (counts, difference, one-sided bounds), checked against
 * values worked out by hand; the normal quantile against known values.
 */
#include "mf_test.h"
#include "distill/job/distill_job.h"

#include <math.h>
#include <string.h>

#define N 10

static void test_distill_gate__z(void **state)
{
    (void)state;
    assert_float_equal(mf_distill__z_one_sided(0.5), 0.0, 1e-9);
    assert_float_equal(mf_distill__z_one_sided(0.95), 1.6448536, 1e-6);
    assert_float_equal(mf_distill__z_one_sided(0.975), 1.9599640, 1e-6);
    assert_float_equal(mf_distill__z_one_sided(0.99), 2.3263479, 1e-6);
}

static void fill(struct mf_distill_outputs *o, uint8_t *pred, float *score, float *calib,
                 const uint8_t *p, const float *s)
{
    memcpy(pred, p, N);
    memcpy(score, s, N * sizeof(float));
    for (size_t i = 0; i < N; i++)
        calib[i] = (float)(i + 1) / 10.0f; /* 0.1 ... 1.0: the 10 % quantile is 0.2 */
    *o = (struct mf_distill_outputs){N, N, pred, score, calib};
}

static void test_distill_gate__evaluate_and_paired(void **state)
{
    static const uint8_t label[N] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const uint8_t teacher[N] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0}; /* wrong on item 9 */
    /* candidate: wrong on items 1, 2 (2 is offloaded: the teacher fixes it) */
    static const uint8_t cp[N] = {0, 0, 0, 3, 4, 5, 6, 7, 8, 9};
    static const float cs[N] = {.9f, .9f, .1f, .9f, .9f, .9f, .9f, .9f, .9f, .9f};
    /* parent: wrong on items 3, 4, 5; item 9 offloaded to the wrong teacher */
    static const uint8_t pp[N] = {0, 1, 2, 0, 0, 0, 6, 7, 8, 9};
    static const float ps[N] = {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .9f, .9f, .15f};
    uint8_t cpred[N], ppred[N], heldout_y[N];
    float cscore[N], pscore[N], ccal[N], pcal[N];
    struct mf_distill_outputs co, po;
    struct mf_distill_eval ce, pe;
    struct mf_distill_paired pr;
    mf_dataset heldout = {.n = N, .dim = 1, .y = heldout_y};
    struct mf_distill_data d = {.heldout = &heldout};
    struct mf_ctx ctx;
    double se;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memcpy(heldout_y, label, N);
    fill(&co, cpred, cscore, ccal, cp, cs);
    fill(&po, ppred, pscore, pcal, pp, ps);
    assert_int_equal(mf_distill__evaluate(&ce, &ctx, &co, &d, teacher, 0.1), MF_OK);
    assert_int_equal(mf_distill__evaluate(&pe, &ctx, &po, &d, teacher, 0.1), MF_OK);
    assert_float_equal(ce.threshold, 0.2, 1e-6);
    assert_float_equal(ce.student_acc, 0.8, 1e-9); /* all but 1 and 2 */
    assert_float_equal(ce.cascade_acc, 0.9, 1e-9); /* item 2 fixed by the teacher */
    assert_float_equal(ce.offload_rate, 0.1, 1e-9);
    assert_float_equal(pe.student_acc, 0.7, 1e-9);
    assert_float_equal(pe.cascade_acc, 0.6, 1e-9); /* item 9 broken by the teacher */
    /* paired: candidate-only right 3, 4, 5, 9; parent-only right 1 */
    mf_distill__paired(&pr, &co, ce.threshold, &po, pe.threshold, teacher, label, 0.95);
    assert_int_equal(pr.n, N);
    assert_int_equal(pr.candidate_only, 4);
    assert_int_equal(pr.parent_only, 1);
    assert_float_equal(pr.difference, ce.cascade_acc - pe.cascade_acc, 1e-12);
    se = sqrt((5.0 / N - 0.09) / N);
    assert_float_equal(pr.lower, 0.3 - 1.6448536 * se, 1e-6);
    assert_float_equal(pr.upper, 0.3 + 1.6448536 * se, 1e-6);
    /* +30 pt on 10 items is no proof at 95 %: the paired gate with tolerance 0 refuses it,
     * where the raw comparison would take it */
    assert_true(pr.difference > 0 && pr.lower < 0);
    mf_distill__paired(&pr, &co, ce.threshold, &po, pe.threshold, teacher, label, 0.6);
    assert_true(pr.lower > 0); /* at 60 % confidence the bound is above 0 */
    /* the same model against itself: no discordant item, bounds collapse to 0 */
    mf_distill__paired(&pr, &co, ce.threshold, &co, ce.threshold, teacher, label, 0.95);
    assert_true(pr.candidate_only == 0 && pr.parent_only == 0 && pr.lower == 0 && pr.upper == 0);
    /* swapped: the parent is the better one, the bounds mirror */
    mf_distill__paired(&pr, &po, pe.threshold, &co, ce.threshold, teacher, label, 0.95);
    assert_int_equal(pr.candidate_only, 1);
    assert_float_equal(pr.difference, -0.3, 1e-12);
    assert_float_equal(pr.upper, -0.3 + 1.6448536 * se, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distill_gate__z),
        cmocka_unit_test(test_distill_gate__evaluate_and_paired),
    };
    return cmocka_run_group_tests_name("distill_gate", tests, NULL, NULL);
}
