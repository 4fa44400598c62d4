/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_loop: the offload cascade and the simulated distillation loop of LOOP-NOTES
 * sections 6-7 on Fashion-MNIST, with the project's own C trainer end to end.
 *
 * Per repetition (seeded): train is split into a seed set (10 %, true labels), 5,000
 * calibration images and a pool cut into one disjoint stream per round.
 *  - Cascade: the seed student answers where its max-softmax >= threshold (the r-quantile
 *    of the calibration scores), the 784-512-256-10 teacher elsewhere; r = 5/10/20 %,
 *    against the expected accuracy of offloading the same fraction at random.
 *  - Loop: each round the current student scores its stream and uplinks 10 % (hard: the
 *    lowest scores; random: a random 10 %); the teacher labels them with soft labels at
 *    T = 2; a new student is trained from scratch on seed + all uplinked samples.
 * The teacher is cached (--teacher-cache) after its first training.
 * Usage: bench_loop [--reps N] [--rounds N] [--teacher-epochs N] [--student-epochs N]
 *                   [--teacher-cache PATH] [--dir DIR] [--data fashion|digits]
 * --data digits runs the same on sklearn's digits (70/30 split, 300 calibration images,
 * 300 student epochs by default instead of 20).
 */
#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_distill.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define K 10
#define SEED_FRAC 0.10
#define N_CALIB_FASHION 5000
#define N_CALIB_DIGITS 300 /* of digits' 1,258 training images (70/30 split) */
#define UPLINK 0.10
#define T_SOFT 2.0f
#define MAX_ROUNDS 10
#define MAX_REPS 30

struct cfg {
    unsigned reps, rounds, teacher_epochs, student_epochs;
    const char *cache, *dir;
    int digits; /* --data digits: sklearn's digits, seeded 70/30 split */
};

struct env {
    struct mf_ctx ctx;
    mf_dataset *train, *test;
    size_t n_calib;             /* calibration images taken from train after the seed set */
    uint8_t *teacher_test_pred; /* on test */
    uint8_t *teacher_train_pred;
    float *teacher_soft; /* T = 2 soft labels of every train image */
    double teacher_acc;
};

/* Per-repetition results, averaged at the end. */
struct rep {
    double s_acc, casc[3], rate[3], rnd[3];       /* seed student */
    double full_acc, fcasc[3], frate[3], frnd[3]; /* student on all but calibration */
    double gated[MAX_ROUNDS + 1];                 /* deployed cascade, hard uplink */
    unsigned rejected;                            /* candidates the gate refused */
    double loop_acc[2][MAX_ROUNDS + 1], loop_casc[2][MAX_ROUNDS + 1];
    double t_label_acc[2];
};

static const double rates[3] = {0.05, 0.10, 0.20};

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const struct env *e, const char *what)
{
    (void)fprintf(stderr, "bench_loop: %s: %s\n", what, e->ctx.errmsg);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p) {
        (void)fprintf(stderr, "bench_loop: out of memory\n");
        exit(1);
    }
    return p;
}

static mf_student_model *train_student(struct env *e, const struct cfg *c, const size_t *idx,
                                       const uint8_t *hard, size_t n, uint64_t seed)
{
    mf_distill_options o;
    mf_student_model *s = NULL;
    uint8_t *x = xmalloc(n * e->train->dim), *y = xmalloc(n), *has = xmalloc(n);
    float *soft = xmalloc(n * K * sizeof(float));
    mf_train_set set = {.n = n, .x = x, .y = y, .soft = soft, .has_soft = has};

    /* Seed samples keep their true label; uplinked ones carry only the teacher's output. */
    for (size_t i = 0; i < n; i++) {
        memcpy(x + i * e->train->dim, e->train->x + idx[i] * e->train->dim, e->train->dim);
        y[i] = hard[i] ? e->train->y[idx[i]] : MF_TRAIN_NO_LABEL;
        has[i] = !hard[i];
        memcpy(soft + i * K, e->teacher_soft + idx[i] * K, K * sizeof(float));
    }
    if (mf_distill_options_init(&o, MF_DISTILL_OPTIONS_VERSION) < 0)
        exit(1);
    o.train.epochs = c->student_epochs;
    o.in_scale = 1.0f / (float)e->train->max_value;
    o.train.temperature = T_SOFT;
    o.train.seed = seed;
    o.init_seed = seed * 31 + 7;
    if (mf_distill_student(&s, NULL, &e->ctx, &set, e->train->dim, K, &o) < 0)
        die(e, "training a student");
    free(x);
    free(y);
    free(has);
    free(soft);
    return s;
}

/* Student accuracy and cascade accuracy at `r` with a threshold fitted on `calib`. */
static void evaluate(double *acc, double *casc, double *rate, double *rnd, struct env *e,
                     const mf_student *s, const size_t *calib, double r)
{
    const size_t n = e->test->n;
    uint8_t *pred = xmalloc(n);
    float *score = xmalloc(n * sizeof(float)), *cs = xmalloc(e->n_calib * sizeof(float));
    mf_cascade_inputs in = {n, pred, score, e->teacher_test_pred, e->test->y};
    float thr;

    for (size_t i = 0; i < e->n_calib; i++)
        mf_eval_student(NULL, &cs[i], s, e->train->x + calib[i] * e->train->dim, 1,
                        MF_SCORE_MAX_SOFTMAX);
    if (mf_eval_quantile_threshold(&thr, &e->ctx, cs, e->n_calib, r) < 0)
        die(e, "threshold");
    mf_eval_student(pred, score, s, e->test->x, n, MF_SCORE_MAX_SOFTMAX);
    *acc = mf_eval_accuracy(pred, e->test->y, n);
    mf_eval_cascade(casc, rate, &in, thr);
    if (rnd)
        *rnd = mf_eval_cascade_random(&in, *rate);
    free(pred);
    free(score);
    free(cs);
}

static int cmp_score(const void *a, const void *b)
{
    const float *x = a, *y = b;

    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]); /* index: a stable, seed-free tie break */
}

/* Picks the uplink of one round from `stream` into `out`; returns how many. */
static size_t select_uplink(size_t *out, struct env *e, const mf_student *s, const size_t *stream,
                            size_t n, int hard, uint64_t *rng)
{
    const size_t k = (size_t)(UPLINK * (double)n);

    if (hard) {
        float *sc = xmalloc(n * 2 * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            mf_eval_student(NULL, &sc[2 * i], s, e->train->x + stream[i] * e->train->dim, 1,
                            MF_SCORE_MAX_SOFTMAX);
            sc[2 * i + 1] = (float)i;
        }
        qsort(sc, n, 2 * sizeof(float), cmp_score);
        for (size_t i = 0; i < k; i++)
            out[i] = stream[(size_t)sc[2 * i + 1]];
        free(sc);
    } else {
        size_t *perm = xmalloc(n * sizeof(size_t));
        mf_dataset_permutation(perm, n, mf_rng_next(rng));
        for (size_t i = 0; i < k; i++)
            out[i] = stream[perm[i]];
        free(perm);
    }
    return k;
}

/*
 * The loop's gate: cascade accuracy at 10 % offload on the calibration images, which never
 * enter training (threshold fitted on the same images; the bias is equal for both models).
 */
static double gate_cascade(struct env *e, const mf_student *s, const size_t *calib)
{
    uint8_t *pred = xmalloc(e->n_calib), *tp = xmalloc(e->n_calib), *y = xmalloc(e->n_calib);
    float *sc = xmalloc(e->n_calib * sizeof(float));
    mf_cascade_inputs in = {e->n_calib, pred, sc, tp, y};
    double acc, rate;
    float thr;

    for (size_t i = 0; i < e->n_calib; i++) {
        mf_eval_student(&pred[i], &sc[i], s, e->train->x + calib[i] * e->train->dim, 1,
                        MF_SCORE_MAX_SOFTMAX);
        tp[i] = e->teacher_train_pred[calib[i]];
        y[i] = e->train->y[calib[i]];
    }
    if (mf_eval_quantile_threshold(&thr, &e->ctx, sc, e->n_calib, 0.10) < 0)
        die(e, "threshold");
    mf_eval_cascade(&acc, &rate, &in, thr);
    free(pred);
    free(tp);
    free(y);
    free(sc);
    return acc;
}

static void run_rep(struct rep *out, struct env *e, const struct cfg *c, unsigned rep)
{
    const size_t n = e->train->n, n_seed = (size_t)(SEED_FRAC * (double)n);
    const size_t pool0 = n_seed + e->n_calib, per_round = (n - pool0) / c->rounds;
    size_t *perm = xmalloc(n * sizeof(size_t));
    size_t *idx = xmalloc(n * sizeof(size_t));
    uint8_t *hard = xmalloc(n);
    mf_student_model *seed_student;
    uint64_t rng = 0xB0B0 + rep;

    mf_dataset_permutation(perm, n, 1000 + rep);
    memcpy(idx, perm, n_seed * sizeof(size_t));
    memset(hard, 1, n_seed);
    seed_student = train_student(e, c, idx, hard, n_seed, 100 + rep);
    for (int r = 0; r < 3; r++)
        evaluate(&out->s_acc, &out->casc[r], &out->rate[r], &out->rnd[r], e, &seed_student->net,
                 perm + n_seed, rates[r]);

    {
        /* All of train except the calibration images, true labels: LOOP-NOTES' C1-C3. */
        size_t *fidx = xmalloc(n * sizeof(size_t));
        uint8_t *fh = xmalloc(n);
        size_t nf = 0;
        mf_student_model *full;
        for (size_t i = 0; i < n; i++)
            if (i < n_seed || i >= pool0)
                fidx[nf++] = perm[i];
        memset(fh, 1, nf);
        full = train_student(e, c, fidx, fh, nf, 300 + rep);
        for (int r = 0; r < 3; r++)
            evaluate(&out->full_acc, &out->fcasc[r], &out->frate[r], &out->frnd[r], e, &full->net,
                     perm + n_seed, rates[r]);
        mf_student_model_free(full);
        free(fidx);
        free(fh);
    }
    for (int strat = 0; strat < 2; strat++) {
        mf_student_model *cur = seed_student, *deployed = seed_student;
        double deployed_gate = gate_cascade(e, &seed_student->net, perm + n_seed);
        size_t n_set = n_seed, t_ok = 0, t_n = 0;
        out->loop_acc[strat][0] = out->s_acc;
        out->loop_casc[strat][0] = out->casc[1];
        out->gated[0] = out->casc[1];
        for (unsigned round = 1; round <= c->rounds; round++) {
            const size_t *stream = perm + pool0 + (round - 1) * per_round;
            const size_t k = select_uplink(idx + n_set, e, strat == 0 ? &deployed->net : &cur->net,
                                           stream, per_round, strat == 0, &rng);
            double rate;
            for (size_t i = 0; i < k; i++) {
                t_ok += e->teacher_train_pred[idx[n_set + i]] == e->train->y[idx[n_set + i]];
                hard[n_set + i] = 0;
            }
            t_n += k;
            n_set += k;
            if (cur != seed_student && cur != deployed)
                mf_student_model_free(cur);
            cur = train_student(e, c, idx, hard, n_set, 200 + rep * 100 + round);
            evaluate(&out->loop_acc[strat][round], &out->loop_casc[strat][round], &rate, NULL, e,
                     &cur->net, perm + n_seed, 0.10);
            if (strat == 0) {
                /* Deploy only a candidate that is not worse on the gate set. */
                const double g = gate_cascade(e, &cur->net, perm + n_seed);
                if (g >= deployed_gate) {
                    if (deployed != seed_student)
                        mf_student_model_free(deployed);
                    deployed = cur;
                    deployed_gate = g;
                    out->gated[round] = out->loop_casc[0][round];
                } else {
                    out->rejected++;
                    out->gated[round] = out->gated[round - 1];
                }
            }
        }
        out->t_label_acc[strat] = t_n ? (double)t_ok / (double)t_n : 0.0;
        if (cur != seed_student && cur != deployed)
            mf_student_model_free(cur);
        if (deployed != seed_student)
            mf_student_model_free(deployed);
    }
    mf_student_model_free(seed_student);
    free(perm);
    free(idx);
    free(hard);
}

static void setup_teacher(struct env *e, const struct cfg *c)
{
    const uint32_t sizes[4] = {e->train->dim, 512, 256, 10};
    const size_t nt = e->test->n, n = e->train->n;
    float *logits = xmalloc(nt * K * sizeof(float));
    mf_train_options to;
    mf_mlp *t = NULL;
    int trained = 0;
    double t0 = now();

    if (mf_train_options_init(&to, MF_TRAIN_OPTIONS_VERSION) < 0)
        exit(1);
    to.epochs = c->teacher_epochs;
    to.batch = 128;
    to.lr = 1e-3f;
    to.lr_final = 5e-5f;
    to.seed = 2024;
    if (mf_teacher_load_or_train(&t, &trained, &e->ctx, e->train, sizes, 4, &to, c->cache) < 0)
        die(e, "teacher");
    printf("teacher %u-512-256-10: %s in %.1f s (%s)\n", e->train->dim,
           trained ? "trained" : "loaded", now() - t0, c->cache ? c->cache : "not cached");
    e->teacher_test_pred = xmalloc(nt);
    e->teacher_train_pred = xmalloc(n);
    e->teacher_soft = xmalloc(n * K * sizeof(float));
    if (mf_mlp_logits(logits, &e->ctx, t, e->test->x, nt, 2) < 0)
        die(e, "teacher inference");
    mf_eval_argmax(e->teacher_test_pred, logits, nt, K);
    e->teacher_acc = mf_eval_accuracy(e->teacher_test_pred, e->test->y, nt);
    if (mf_distill_soft_labels(e->teacher_soft, &e->ctx, t, e->train->x, n, T_SOFT, 2) < 0)
        die(e, "soft labels");
    mf_eval_argmax(e->teacher_train_pred, e->teacher_soft, n, K);
    free(logits);
    mf_mlp_free(t);
}

static double mean(const double *v, unsigned n)
{
    double s = 0.0;

    for (unsigned i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

/* Mean over repetitions of the double at byte offset `off` of struct rep. */
static double avg_at(const struct rep *r, unsigned reps, size_t off)
{
    double v[MAX_REPS];

    for (unsigned i = 0; i < reps; i++)
        memcpy(&v[i], (const char *)&r[i] + off, sizeof(double));
    return mean(v, reps);
}

static const char *verdict(int ok)
{
    return ok ? "met" : "NOT met";
}

#define AVG(field) avg_at(r, reps, offsetof(struct rep, field))
#define AVG_I(field, i) avg_at(r, reps, offsetof(struct rep, field) + (size_t)(i) * sizeof(double))

static void cascade_table(const char *title, double s_acc, const double *casc, const double *rate,
                          const double *rnd, double t_acc)
{
    printf("%s: student %.2f %%, teacher %.2f %%\n", title, 100 * s_acc, 100 * t_acc);
    printf("  target  realised   cascade  of teacher  gap closed  gain pt  random pt  ratio\n");
    for (int k = 0; k < 3; k++)
        printf("  %4.0f %%  %6.2f %%  %6.2f %%  %7.2f %%  %7.1f %%  %+7.2f  %+8.2f  %5.1fx\n",
               100 * rates[k], 100 * rate[k], 100 * casc[k], 100 * casc[k] / t_acc,
               100 * (casc[k] - s_acc) / (t_acc - s_acc), 100 * (casc[k] - s_acc),
               100 * (rnd[k] - s_acc), (casc[k] - s_acc) / (rnd[k] - s_acc));
}

static void report(const struct rep *r, unsigned reps, const struct env *e, const struct cfg *c)
{
    double s_acc = AVG(s_acc), f_acc = AVG(full_acc), casc[3], rate[3], rnd[3], fc[3], fr[3], fd[3],
           acc[2][MAX_ROUNDS + 1], cz[2][MAX_ROUNDS + 1], gz[MAX_ROUNDS + 1];
    double worst_drop = 0.0;
    unsigned rejected = 0;
    const double t_acc = e->teacher_acc;

    for (int k = 0; k < 3; k++) {
        casc[k] = AVG_I(casc, k);
        rate[k] = AVG_I(rate, k);
        rnd[k] = AVG_I(rnd, k);
        fc[k] = AVG_I(fcasc, k);
        fr[k] = AVG_I(frate, k);
        fd[k] = AVG_I(frnd, k);
    }
    for (unsigned k = 0; k <= c->rounds; k++) {
        for (int s = 0; s < 2; s++) {
            acc[s][k] = AVG_I(loop_acc, (size_t)s * (MAX_ROUNDS + 1) + k);
            cz[s][k] = AVG_I(loop_casc, (size_t)s * (MAX_ROUNDS + 1) + k);
        }
        gz[k] = AVG_I(gated, k);
    }
    for (unsigned i = 0; i < reps; i++) {
        rejected += r[i].rejected;
        for (unsigned k = 1; k <= c->rounds; k++)
            if (r[i].gated[k - 1] - r[i].gated[k] > worst_drop)
                worst_drop = r[i].gated[k - 1] - r[i].gated[k];
    }

    printf("\n== cascade: max-softmax threshold = r-quantile of %zu calibration scores; "
           "means over %u repetition(s), %zu test images ==\n",
           e->n_calib, reps, e->test->n);
    {
        char title[96];

        (void)snprintf(title, sizeof(title), "student on all train but calibration (%zu images)",
                       e->train->n - e->n_calib);
        cascade_table(title, f_acc, fc, fr, fd, t_acc);
    }
    cascade_table("seed student (10 % of train)", s_acc, casc, rate, rnd, t_acc);
    printf("\n== loop: %u rounds, %.0f %% uplink of a %zu-image stream per round, teacher soft "
           "labels T=%.0f, student retrained from scratch ==\n",
           c->rounds, 100 * UPLINK,
           (e->train->n - (size_t)(SEED_FRAC * (double)e->train->n) - e->n_calib) / c->rounds,
           (double)T_SOFT);
    printf("round  hard: student  cascade@10%%  deployed(gated)   random: student  cascade@10%%\n");
    for (unsigned k = 0; k <= c->rounds; k++)
        printf("%-5u  %11.2f %%  %9.2f %%  %13.2f %%   %13.2f %%  %9.2f %%\n", k, 100 * acc[0][k],
               100 * cz[0][k], 100 * gz[k], 100 * acc[1][k], 100 * cz[1][k]);
    printf("gate refused %u of %u hard-uplink candidates; teacher label accuracy on uplinked "
           "samples: hard %.1f %%, random %.1f %%\n",
           rejected, reps * c->rounds, 100 * AVG_I(t_label_acc, 0), 100 * AVG_I(t_label_acc, 1));

    printf("\n== LOOP-NOTES section 6 goals (C1-C3 on the all-data student as there) ==\n");
    printf("C1 10 %%: >= 98.5 %% of teacher, >= +1.2 pt: %.2f %%, %+.2f pt: %s\n",
           100 * fc[1] / t_acc, 100 * (fc[1] - f_acc),
           verdict(fc[1] / t_acc >= 0.985 && fc[1] - f_acc >= 0.012));
    printf("C2 20 %% >= 99.5 %% of teacher; 5 %% >= +0.7 pt: %.2f %%, %+.2f pt: %s\n",
           100 * fc[2] / t_acc, 100 * (fc[0] - f_acc),
           verdict(fc[2] / t_acc >= 0.995 && fc[0] - f_acc >= 0.007));
    printf("C3 gating gain >= 5x random at 10 %%: %.1fx (seed student %.1fx): %s\n",
           (fc[1] - f_acc) / (fd[1] - f_acc), (casc[1] - s_acc) / (rnd[1] - s_acc),
           verdict(fc[1] - f_acc >= 5 * (fd[1] - f_acc)));
    {
        int ok = 1;
        for (int k = 0; k < 3; k++)
            ok &= fr[k] - rates[k] >= -0.005 && fr[k] - rates[k] <= 0.015 &&
                  rate[k] - rates[k] >= -0.005 && rate[k] - rates[k] <= 0.015;
        printf("C6 realised rate within -0.5/+1.5 pt: %+.2f / %+.2f / %+.2f pt (seed: %+.2f / "
               "%+.2f / %+.2f): %s\n",
               100 * (fr[0] - rates[0]), 100 * (fr[1] - rates[1]), 100 * (fr[2] - rates[2]),
               100 * (rate[0] - rates[0]), 100 * (rate[1] - rates[1]), 100 * (rate[2] - rates[2]),
               verdict(ok));
    }
    {
        /* LOOP-NOTES 6b: the loop goals are larger on digits than on Fashion-MNIST */
        const double l1 = c->digits ? 0.035 : 0.008, l2 = c->digits ? 0.010 : 0.005,
                     l5 = c->digits ? 0.020 : 0.005;

        if (c->rounds >= 5)
            printf("L1 student gain after 5 rounds >= +%.1f pt: %+.2f pt: %s\n", 100 * l1,
                   100 * (acc[0][5] - acc[0][0]), verdict(acc[0][5] - acc[0][0] >= l1));
        if (c->rounds >= 3)
            printf("L2 hard beats random after 3 rounds by >= +%.1f pt: %+.2f pt: %s\n", 100 * l2,
                   100 * (acc[0][3] - acc[1][3]), verdict(acc[0][3] - acc[1][3] >= l2));
        printf("L5 deployed cascade never drops > 0.1 pt between rounds (worst drop in any "
               "repetition %.2f pt), rises >= +%.1f pt over 4 rounds (%+.2f pt): %s\n",
               100 * worst_drop, 100 * l5, 100 * (gz[c->rounds < 4 ? c->rounds : 4] - gz[0]),
               verdict(worst_drop <= 0.001 && c->rounds >= 4 && gz[4] - gz[0] >= l5));
    }
}

/* sklearn's digits, split 70/30 by a fixed seeded permutation (as
 * tests/unit/distill/test_distill.c). */
static void load_digits(struct env *e)
{
    mf_dataset *all = NULL;
    size_t *perm, n_train;

    if (mf_dataset_load_digits(&all, &e->ctx, NULL, NULL) < 0)
        die(e, "loading digits (apt-get install python3-sklearn)");
    perm = xmalloc(all->n * sizeof(size_t));
    mf_dataset_permutation(perm, all->n, 42);
    n_train = all->n * 7 / 10;
    if (mf_dataset_select(&e->train, &e->ctx, all, perm, n_train) < 0 ||
        mf_dataset_select(&e->test, &e->ctx, all, perm + n_train, all->n - n_train) < 0)
        die(e, "splitting digits");
    free(perm);
    mf_dataset_free(all);
}

int main(int argc, char **argv)
{
    struct cfg c = {1, 5, 15, 0, NULL, NULL, 0};
    int cache_set = 0;
    static struct rep reps[MAX_REPS];
    struct env e;
    double t0 = now();

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0)
            c.reps = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0)
            c.rounds = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--teacher-epochs") == 0)
            c.teacher_epochs = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--student-epochs") == 0)
            c.student_epochs = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--teacher-cache") == 0) {
            c.cache = strcmp(argv[i + 1], "none") == 0 ? NULL : argv[i + 1];
            cache_set = 1;
        } else if (strcmp(argv[i], "--data") == 0)
            c.digits = strcmp(argv[i + 1], "digits") == 0;
        else if (strcmp(argv[i], "--dir") == 0)
            c.dir = argv[i + 1];
    }
    if (c.reps < 1 || c.reps > MAX_REPS || c.rounds < 1 || c.rounds > MAX_ROUNDS) {
        (void)fprintf(stderr, "bench_loop: --reps 1..%d, --rounds 1..%d\n", MAX_REPS, MAX_ROUNDS);
        return 2;
    }
    memset(&e, 0, sizeof(e));
    mf_ctx__init(&e.ctx, NULL, NULL, NULL, "bench");
    if (!c.student_epochs) /* digits' seed set is 125 images: it needs many more passes */
        c.student_epochs = c.digits ? 300 : 20;
    if (!cache_set)
        c.cache = c.digits ? "mf_teacher_digits.safetensors" : "mf_teacher_fashion.safetensors";
    if (c.digits)
        load_digits(&e);
    else if (mf_dataset_load_fashion(&e.train, &e.ctx, NULL, c.dir, "train") < 0 ||
             mf_dataset_load_fashion(&e.test, &e.ctx, NULL, c.dir, "t10k") < 0)
        die(&e, "loading Fashion-MNIST (apt-get install dataset-fashion-mnist)");
    e.n_calib = c.digits ? N_CALIB_DIGITS : N_CALIB_FASHION;
    setup_teacher(&e, &c);
    for (unsigned r = 0; r < c.reps; r++) {
        double tr = now();
        run_rep(&reps[r], &e, &c, r);
        printf("repetition %u: %.1f s\n", r + 1, now() - tr);
        (void)fflush(stdout);
    }
    report(reps, c.reps, &e, &c);
    printf("\ntotal %.1f s\n", now() - t0);
    free(e.teacher_test_pred);
    free(e.teacher_train_pred);
    free(e.teacher_soft);
    mf_dataset_free(e.train);
    mf_dataset_free(e.test);
    return 0;
}
