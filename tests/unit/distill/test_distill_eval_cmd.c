/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The evaluator contract (server/distill/job/distill_evaluator_cmd.c, docs/distill.md): the
 * .npy outputs parser (probabilities and logits, float32 and float64, and one refused file
 * per rule), and the command on a tiny data set: what it is given (the model, the held-out
 * then the calibration inputs, no label), what the record keeps (argv, stderr, SHA-256 of
 * the outputs), and a crash, a hang past its timeout (its whole process group killed), no
 * output and garbage output, each a clear error with the work directory removed.
 */
#include "mf_test.h"
#include "distill/job/distill_job.h"
#include "kit_fs.h"

#include "mf_hex.h"
#include "mf_sha256.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NH 3 /* held-out items */
#define NC 2 /* calibration items */
#define DIM 4
#define K 3 /* classes */

/* A .npy file of float32 or float64 rows into buf; its length. */
static size_t npy(uint8_t *buf, const char *descr, size_t rows, size_t cols, const double *v)
{
    char head[128];
    int hl = snprintf(head, sizeof(head),
                      "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, rows,
                      cols);
    size_t pad = (64 - (10 + (size_t)hl + 1) % 64) % 64, off, es = descr[2] == '8' ? 8 : 4;

    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)((size_t)hl + pad + 1);
    buf[9] = 0;
    memcpy(buf + 10, head, (size_t)hl);
    memset(buf + 10 + hl, ' ', pad);
    off = 10 + (size_t)hl + pad;
    buf[off++] = '\n';
    for (size_t i = 0; i < rows * cols; i++) {
        if (es == 8) {
            memcpy(buf + off, &v[i], 8);
        } else {
            float f = (float)v[i];

            memcpy(buf + off, &f, 4);
        }
        off += es;
    }
    return off;
}

/* Rows for NH + NC items: held-out predictions 2, 0, 1; calibration scores 0.5 and 0.9. */
static const double probs[] = {0.1,  0.2, 0.7, 0.6, 0.3,  0.1,  0.25, 0.5,
                               0.25, 0.5, 0.3, 0.2, 0.05, 0.05, 0.9};

static int parse(struct mf_ctx *ctx, struct mf_distill_outputs *o, const uint8_t *b, size_t n,
                 int logits)
{
    int err = mf_distill__outputs_alloc(o, ctx, NH, NC);

    assert_int_equal(err, MF_OK);
    err = mf_distill__outputs_parse(o, ctx, b, n, K, logits);
    return err;
}

static void test_distill_eval_cmd__parse_probabilities(void **state)
{
    static const char *const descr[] = {"<f4", "<f8"};
    uint8_t buf[512];
    struct mf_distill_outputs o;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (size_t d = 0; d < 2; d++) {
        size_t n = npy(buf, descr[d], NH + NC, K, probs);

        assert_int_equal(parse(&ctx, &o, buf, n, 0), MF_OK);
        assert_int_equal(o.pred[0], 2);
        assert_int_equal(o.pred[1], 0);
        assert_int_equal(o.pred[2], 1);
        assert_float_equal(o.score[0], 0.7f, 1e-6);
        assert_float_equal(o.score[2], 0.5f, 1e-6);
        assert_float_equal(o.calib[0], 0.5f, 1e-6);
        assert_float_equal(o.calib[1], 0.9f, 1e-6);
        mf_distill__outputs_free(&o, &ctx);
    }
}

static void test_distill_eval_cmd__parse_logits(void **state)
{
    double z[(NH + NC) * K];
    uint8_t buf[512];
    struct mf_distill_outputs o;
    struct mf_ctx ctx;
    size_t n;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    /* logits = log(p) + a per-row shift: the softmax gives the probabilities back */
    for (size_t i = 0; i < (NH + NC) * K; i++)
        z[i] = log(probs[i]) + 3.0 * (double)(i / K);
    n = npy(buf, "<f8", NH + NC, K, z);
    assert_int_equal(parse(&ctx, &o, buf, n, 1), MF_OK);
    assert_int_equal(o.pred[0], 2);
    assert_int_equal(o.pred[1], 0);
    assert_float_equal(o.score[1], 0.6f, 1e-5);
    assert_float_equal(o.calib[1], 0.9f, 1e-5);
    mf_distill__outputs_free(&o, &ctx);
    /* the same rows are no probabilities: negative entries */
    assert_int_equal(parse(&ctx, &o, buf, n, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "not a probability"));
    mf_distill__outputs_free(&o, &ctx);
}

static void test_distill_eval_cmd__parse_rejects(void **state)
{
    uint8_t good[512], buf[600];
    double v[(NH + NC + 1) * K];
    struct mf_distill_outputs o;
    struct mf_ctx ctx;
    size_t n = npy(good, "<f4", NH + NC, K, probs), m;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memcpy(v, probs, sizeof(probs));
    v[(NH + NC) * K] = v[(NH + NC) * K + 1] = v[(NH + NC) * K + 2] = 1.0 / 3;

    /* not .npy at all */
    assert_int_equal(parse(&ctx, &o, (const uint8_t *)"not a model\n", 12, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "not a .npy file"));
    mf_distill__outputs_free(&o, &ctx);
    /* cut inside the header, and cut inside the data */
    assert_int_equal(parse(&ctx, &o, good, 40, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "truncated header"));
    mf_distill__outputs_free(&o, &ctx);
    assert_int_equal(parse(&ctx, &o, good, n - 1, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "data bytes"));
    mf_distill__outputs_free(&o, &ctx);
    /* trailing bytes */
    memcpy(buf, good, n);
    buf[n] = 0;
    assert_int_equal(parse(&ctx, &o, buf, n + 1, 0), MF_E_INVALID);
    mf_distill__outputs_free(&o, &ctx);
    /* one row too many, and a wrong number of classes */
    m = npy(buf, "<f4", NH + NC + 1, K, v);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "shape (6, 3)"));
    mf_distill__outputs_free(&o, &ctx);
    m = npy(buf, "<f4", K, NH + NC, probs);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    mf_distill__outputs_free(&o, &ctx);
    /* integers, big-endian floats */
    m = npy(buf, "<i4", NH + NC, K, probs);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "dtype '<i4'"));
    mf_distill__outputs_free(&o, &ctx);
    m = npy(buf, ">f4", NH + NC, K, probs);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    mf_distill__outputs_free(&o, &ctx);
    /* Fortran order, an unknown header key */
    memcpy(buf, good, n);
    memcpy(strstr((char *)buf + 10, "False"), "True ", 5);
    assert_int_equal(parse(&ctx, &o, buf, n, 0), MF_E_INVALID);
    mf_distill__outputs_free(&o, &ctx);
    memcpy(buf, good, n);
    memcpy(strstr((char *)buf + 10, "'shape'"), "'shapx'", 7);
    assert_int_equal(parse(&ctx, &o, buf, n, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "header is not"));
    mf_distill__outputs_free(&o, &ctx);
    /* NaN, a row that does not sum to 1 */
    v[4] = NAN;
    m = npy(buf, "<f8", NH + NC, K, v);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "row 1 holds nan"));
    mf_distill__outputs_free(&o, &ctx);
    assert_int_equal(parse(&ctx, &o, buf, m, 1), MF_E_INVALID); /* not a logit either */
    mf_distill__outputs_free(&o, &ctx);
    v[4] = 0.1;
    m = npy(buf, "<f8", NH + NC, K, v);
    assert_int_equal(parse(&ctx, &o, buf, m, 0), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "row 1 sums to 0.800000, not 1"));
    mf_distill__outputs_free(&o, &ctx);
}

/* ---- the command */

struct fixture {
    char tmp[256], dir[300];
    uint8_t hx[NH * DIM], hy[NH], tx[8 * DIM], ty[8];
    size_t perm[8];
    mf_dataset heldout, train;
    struct mf_distill_data d;
};

static struct fixture fx;

static void fixture_init(void)
{
    memset(&fx, 0, sizeof(fx));
    mf_kit_fs_mkdtemp(fx.tmp, sizeof(fx.tmp), "mf-evalcmd");
    (void)snprintf(fx.dir, sizeof(fx.dir), "%s/work", fx.tmp);
    for (size_t i = 0; i < sizeof(fx.hx); i++)
        fx.hx[i] = (uint8_t)(100 + i);
    for (size_t i = 0; i < sizeof(fx.tx); i++)
        fx.tx[i] = (uint8_t)i;
    for (size_t i = 0; i < 8; i++)
        fx.perm[i] = 7 - i; /* seed = items 7..4, calibration = items 3 and 2 */
    fx.heldout = (mf_dataset){.n = NH, .rows = 2, .cols = 2, .dim = DIM, .x = fx.hx, .y = fx.hy};
    fx.train = (mf_dataset){.n = 8, .rows = 2, .cols = 2, .dim = DIM, .x = fx.tx, .y = fx.ty};
    fx.d.heldout = &fx.heldout;
    fx.d.train = &fx.train;
    fx.d.perm = fx.perm;
    fx.d.n_seed = 4;
    fx.d.n_calib = NC;
}

/* Writes the evaluator script `body` ($1: the work dir, $T: the test's scratch dir). */
static void script(const char *body)
{
    char path[400], text[2048];
    int n = snprintf(text, sizeof(text), "T=%s\n%s\n", fx.tmp, body);

    (void)snprintf(path, sizeof(path), "%s/eval.sh", fx.tmp);
    mf_kit_fs_write(path, text, (size_t)n);
}

static int run_eval(struct mf_distill_outputs *o, struct mf_ctx *ctx, unsigned timeout_s,
                    cJSON *note)
{
    static char path[400];
    static const char *argv[3];
    const uint8_t model[] = "a model the server cannot read";
    struct mf_distill_eval_cmd e = {{"evaluator", argv, timeout_s, 42}, K, 0};

    (void)snprintf(path, sizeof(path), "%s/eval.sh", fx.tmp);
    argv[0] = "/bin/sh";
    argv[1] = path;
    argv[2] = NULL;
    return mf_distill__outputs_command(o, ctx, &e, &fx.d, model, sizeof(model) - 1, fx.dir, note);
}

static void test_distill_eval_cmd__command_contract(void **state)
{
    uint8_t buf[512], *in, *ls, *job, *model;
    char path[400], hex[MF_SHA256_HEX_LEN + 1];
    uint8_t digest[MF_SHA256_DIGEST_LEN];
    struct mf_distill_outputs o;
    struct mf_ctx ctx;
    cJSON *note = cJSON_CreateObject();
    size_t n = npy(buf, "<f4", NH + NC, K, probs), len;

    (void)state;
    fixture_init();
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    (void)snprintf(path, sizeof(path), "%s/good.npy", fx.tmp);
    mf_kit_fs_write(path, buf, n);
    script("cp \"$1/inputs.npy\" \"$1/job.json\" \"$1/model.bin\" \"$T/\"\n"
           "(cd \"$1\" && ls) >\"$T/ls.txt\"\n"
           "echo 'hello from the evaluator' >&2\n"
           "cp \"$T/good.npy\" \"$1/out/outputs.npy\"");
    assert_int_equal(run_eval(&o, &ctx, 30, note), MF_OK);
    assert_int_equal(o.pred[0], 2);
    assert_float_equal(o.calib[1], 0.9f, 1e-6);
    mf_distill__outputs_free(&o, &ctx);
    /* what the command saw: the model, inputs and job; no label anywhere */
    ls = mf_kit_fs_slurp(fx.tmp, "ls.txt", &len);
    assert_non_null(ls);
    assert_string_equal((char *)ls, "inputs.npy\njob.json\nmodel.bin\nout\nstderr.txt\n");
    model = mf_kit_fs_slurp(fx.tmp, "model.bin", &len);
    assert_non_null(model);
    assert_string_equal((char *)model, "a model the server cannot read");
    job = mf_kit_fs_slurp(fx.tmp, "job.json", &len);
    assert_non_null(job);
    assert_non_null(strstr((char *)job, "\"n\":5,\"dim\":4,\"classes\":3,\"heldout\":3"));
    assert_null(strstr((char *)job, "label"));
    /* inputs.npy: uint8 (5, 4): the held-out rows, then calibration items 3 and 2 */
    in = mf_kit_fs_slurp(fx.tmp, "inputs.npy", &len);
    assert_non_null(in);
    assert_true(len > 5 * DIM && (len - 5 * DIM) % 64 == 0);
    assert_memory_equal(in, "\x93NUMPY\x01\x00", 8);
    assert_non_null(strstr((char *)in + 10, "'descr': '|u1', 'fortran_order': False, "
                                            "'shape': (5, 4)"));
    assert_memory_equal(in + len - 5 * DIM, fx.hx, NH * DIM);
    assert_memory_equal(in + len - 2 * DIM, fx.tx + 3 * DIM, DIM);
    assert_memory_equal(in + len - DIM, fx.tx + 2 * DIM, DIM);
    /* the record: argv, stderr, outputs digest; the work dir is gone */
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(note, "command"), 0)->valuestring,
                        "/bin/sh");
    assert_string_equal(cJSON_GetObjectItem(note, "stderr")->valuestring,
                        "hello from the evaluator\n");
    mf_sha256__digest(digest, buf, n);
    mf_hex__encode(hex, digest, sizeof(digest));
    assert_string_equal(cJSON_GetObjectItem(note, "outputs_sha256")->valuestring, hex);
    assert_false(mf_kit_fs_exists(fx.tmp, "work"));
    test_free(ls);
    test_free(model);
    test_free(job);
    test_free(in);
    cJSON_Delete(note);
    mf_kit_fs_rmtree(fx.tmp);
}

/* 1 when `pid` is gone or a zombie. */
static int dead(long pid)
{
    char path[64], stat[256];
    FILE *f;
    size_t n;

    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    (void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return 1;
    n = fread(stat, 1, sizeof(stat) - 1, f);
    (void)fclose(f);
    stat[n] = '\0';
    return strstr(stat, ") Z ") != NULL;
}

static void test_distill_eval_cmd__command_faults(void **state)
{
    static const struct {
        const char *body, *msg;
        int err;
        unsigned timeout_s;
    } cases[] = {
        {"echo 'evaluator: out of memory' >&2; exit 7", "evaluator /bin/sh failed (exit status 7)",
         MF_E_GENERIC, 30},
        {"kill -9 $$", "evaluator /bin/sh failed (signal 9)", MF_E_GENERIC, 30},
        {"sleep 30 & echo $! >\"$T/child.pid\"; wait", "evaluator /bin/sh: killed after 1 s",
         MF_E_LIMIT, 1},
        {"exit 0", "evaluator /bin/sh wrote no out/outputs.npy", MF_E_INVALID, 30},
        {"echo 'not an array' >\"$1/out/outputs.npy\"", "not a .npy file", MF_E_INVALID, 30},
    };
    struct mf_distill_outputs o;
    struct mf_ctx ctx;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *note = cJSON_CreateObject();
        int err;

        fixture_init();
        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        script(cases[i].body);
        err = run_eval(&o, &ctx, cases[i].timeout_s, note);
        if (err != cases[i].err || !strstr(mf_ctx__errmsg(&ctx), cases[i].msg))
            fail_msg("case %zu: %d '%s', expected %d '%s'", i, err, mf_ctx__errmsg(&ctx),
                     cases[i].err, cases[i].msg);
        assert_null(o.pred); /* nothing half-filled is left */
        assert_non_null(cJSON_GetObjectItem(note, "command"));
        assert_false(mf_kit_fs_exists(fx.tmp, "work"));
        if (i == 0)
            assert_string_equal(cJSON_GetObjectItem(note, "stderr")->valuestring,
                                "evaluator: out of memory\n");
        if (cases[i].err == MF_E_LIMIT) {
            char line[32];
            int gone = 0;

            /* the shell's child died with it: the whole process group was killed */
            mf_kit_fs_read_line(line, sizeof(line), fx.tmp, "child.pid");
            for (int t = 0; t < 100 && !gone; t++) {
                const struct timespec step = {0, 20 * 1000000L};

                gone = dead(strtol(line, NULL, 10));
                if (!gone)
                    (void)nanosleep(&step, NULL);
            }
            assert_true(gone);
        }
        cJSON_Delete(note);
        mf_kit_fs_rmtree(fx.tmp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distill_eval_cmd__parse_probabilities),
        cmocka_unit_test(test_distill_eval_cmd__parse_logits),
        cmocka_unit_test(test_distill_eval_cmd__parse_rejects),
        cmocka_unit_test(test_distill_eval_cmd__command_contract),
        cmocka_unit_test(test_distill_eval_cmd__command_faults),
    };
    return cmocka_run_group_tests_name("distill_eval_cmd", tests, NULL, NULL);
}
