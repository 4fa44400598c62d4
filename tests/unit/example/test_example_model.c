/* SPDX-License-Identifier: Apache-2.0 */
/*
 * examples/mnist model side: the safetensors reader/writer (round trip, strict rejects),
 * the student file format, the device inference against hand-derived values of the
 * arithmetic in mf_student.h, the confidence scores, and (when python3 + numpy exist) a
 * cross-check that standard tools read our files.
 */
#include "mf_test.h"
#include "kit_alloc.h"

#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_safetensors.h"
#include "mf_student_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct mf_ctx ctx;

/* A file built from a literal header: 8-byte length, JSON, then `data_len` bytes of 0x5a. */
static size_t make_file(uint8_t *buf, const char *json, size_t data_len)
{
    const size_t jl = strlen(json);

    for (int k = 0; k < 8; k++)
        buf[k] = (uint8_t)((uint64_t)jl >> (8 * k));
    memcpy(buf + 8, json, jl);
    memset(buf + 8 + jl, 0x5a, data_len);
    return 8 + jl + data_len;
}

static void test_example_model__safetensors_round_trip(void **state)
{
    const float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -7.0f};
    const int8_t q[3] = {-128, 0, 127};
    const uint8_t u[1] = {200};
    const mf_st_entry t[] = {
        {"a.weight", MF_ST_F32, 2, {2, 3}, f},
        {"q", MF_ST_I8, 1, {3}, q},
        {"scalar", MF_ST_U8, 0, {0}, u},
    };
    static const char *const meta[] = {"format", "test", "note", "x\"y"};
    struct mf_dynbuf b;
    mf_safetensors *st = NULL;
    const mf_st_tensor *g;
    const uint64_t shape[2] = {2, 3}, wrong[2] = {3, 2};
    float back[6];

    (void)state;
    mf_dynbuf__init(&b, NULL, 1 << 16);
    assert_int_equal(mf_safetensors_write(&b, &ctx, t, 3, meta, 2), MF_OK);
    /* Data starts 8-byte aligned after the padded header. */
    assert_int_equal((b.len - (24 + 3 + 1)) % 8, 0);
    assert_int_equal(mf_safetensors_parse(&st, &ctx, NULL, b.data, b.len), MF_OK);
    assert_int_equal(mf_safetensors_count(st), 3);
    assert_string_equal(mf_safetensors_meta(st, "note"), "x\"y");
    assert_null(mf_safetensors_meta(st, "absent"));
    assert_int_equal(mf_safetensors_get(&g, &ctx, st, "a.weight", MF_ST_F32, 2, shape), MF_OK);
    memcpy(back, g->data, sizeof(back));
    assert_memory_equal(back, f, sizeof(f));
    assert_int_equal(mf_safetensors_get(&g, &ctx, st, "a.weight", MF_ST_F32, 2, wrong),
                     MF_E_INVALID);
    assert_int_equal(mf_safetensors_get(&g, &ctx, st, "a.weight", MF_ST_I8, 2, shape),
                     MF_E_INVALID);
    assert_int_equal(mf_safetensors_get(&g, &ctx, st, "nope", MF_ST_I8, 0, NULL), MF_E_NOTFOUND);
    assert_int_equal(mf_safetensors_get(&g, &ctx, st, "scalar", MF_ST_U8, 0, NULL), MF_OK);
    assert_int_equal(g->data[0], 200);
    /* Tensors come back in offset order, which is the write order. */
    assert_string_equal(mf_safetensors_at(st, 1)->name, "q");
    assert_memory_equal(mf_safetensors_at(st, 1)->data, q, 3);
    mf_safetensors_free(st);
    mf_dynbuf__free(&b);
}

static void test_example_model__safetensors_rejects(void **state)
{
    static const struct {
        const char *what, *json;
        size_t data_len;
        int want;
        const char *msg;
    } cases[] = {
        {"ok", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, MF_OK, ""},
        {"not json", "{\"t\":", 0, MF_E_INVALID, "JSON"},
        {"array root", "[1,2]", 0, MF_E_INVALID, "'{'"},
        {"unknown dtype", "{\"t\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8,
         MF_E_INVALID, "dtype"},
        {"shape/size mismatch", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}",
         8, MF_E_INVALID, "shape needing"},
        {"shape beyond data", "{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
         MF_E_INVALID, "more bytes"},
        {"offset past data", "{\"t\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[4,12]}}", 8,
         MF_E_INVALID, "outside"},
        {"hole", "{\"t\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8, MF_E_INVALID,
         "expected 0"},
        {"uncovered tail", "{\"t\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 8,
         MF_E_INVALID, "not covered"},
        {"overlap",
         "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
         6, MF_E_INVALID, "expected 4"},
        {"negative dim", "{\"t\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
         MF_E_INVALID, "bad dimension"},
        {"fractional dim", "{\"t\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1,
         MF_E_INVALID, "bad dimension"},
        {"huge dims overflow",
         "{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
         MF_E_INVALID, "too big"},
        {"rank 5", "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
         MF_E_LIMIT, "dims"},
        {"extra key", "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1,
         MF_E_INVALID, "unexpected key"},
        {"missing offsets", "{\"t\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, MF_E_INVALID,
         "needs dtype"},
        {"duplicate name",
         "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
         2, MF_E_INVALID, "duplicate"},
        {"metadata not string", "{\"__metadata__\":{\"k\":1}}", 0, MF_E_INVALID, "not a string"},
    };
    static uint8_t buf[4096];
    size_t n;
    mf_safetensors *st;

    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int err;
        n = make_file(buf, cases[c].json, cases[c].data_len);
        st = NULL;
        ctx.errmsg[0] = 0;
        err = mf_safetensors_parse(&st, &ctx, NULL, buf, n);
        if (err != cases[c].want || !strstr(ctx.errmsg, cases[c].msg))
            fail_msg("case '%s': got %d (%s)", cases[c].what, err, ctx.errmsg);
        mf_safetensors_free(st);
    }
    /* Header length beyond the file, over the cap, and a file shorter than 8 bytes. */
    n = make_file(buf, "{}", 0);
    buf[0] = 200;
    assert_int_equal(mf_safetensors_parse(&st, &ctx, NULL, buf, n), MF_E_INVALID);
    buf[0] = 0;
    buf[3] = 1; /* 16 MiB header */
    assert_int_equal(mf_safetensors_parse(&st, &ctx, NULL, buf, n), MF_E_LIMIT);
    assert_int_equal(mf_safetensors_parse(&st, &ctx, NULL, buf, 7), MF_E_INVALID);
}

/* A 3-2-2 student whose logits can be worked out by hand from the spec in mf_student.h. */
static void tiny_student(mf_student_model *m)
{
    static const int8_t w1[6] = {1, 2, 3, -4, 5, -6};
    static const int8_t w2[4] = {10, -10, -3, 7};

    memcpy(m->w1, w1, sizeof(w1));
    memcpy(m->w2, w2, sizeof(w2));
    m->b1[0] = 0.25f;
    m->b1[1] = -1.0f;
    m->b2[0] = 0.5f;
    m->b2[1] = -0.5f;
    m->net.in_scale = 0.5f;
    m->net.w1_scale = 0.25f;
    m->net.hidden_scale = 0.125f;
    m->net.w2_scale = 0.5f;
}

static void test_example_model__student_spec_by_hand(void **state)
{
    const uint8_t x[3] = {4, 2, 1};
    mf_student_model *m = NULL;
    float l[2];

    (void)state;
    assert_int_equal(mf_student_model_new(&m, &ctx, NULL, 3, 2, 2), MF_OK);
    tiny_student(m);
    assert_int_equal(mf_student_check(&m->net), MF_OK);
    /*
     * acc1 = [4+4+3, -16+10-6] = [11, -12]; m1 = 0.125
     * h = [11*0.125+0.25, -12*0.125-1] = [1.625, -2.5] -> q = [trunc(13+0.5), 0] = [13, 0]
     * acc2 = [130, -39]; m2 = 0.0625 -> logits = [8.125+0.5, -2.4375-0.5]
     */
    assert_int_equal(mf_student_predict(&m->net, x, l), 0);
    assert_true(l[0] == 8.625f);
    assert_true(l[1] == -2.9375f);
    /* Saturation: a huge first-layer output clamps q at 255. */
    m->b1[0] = 1000.0f;
    mf_student_logits(&m->net, x, l);
    assert_true(l[0] == 255 * 10 * 0.0625f + 0.5f);
    mf_student_model_free(m);
}

static void test_example_model__student_check_rejects(void **state)
{
    mf_student_model *m = NULL;
    mf_student s;

    (void)state;
    assert_int_equal(mf_student_model_new(&m, &ctx, NULL, 3, 2, 2), MF_OK);
    tiny_student(m);
    s = m->net;
    s.hidden_scale = 0.0f;
    assert_int_equal(mf_student_check(&s), MF_E_INVALID);
    s = m->net;
    s.w1_scale = NAN;
    assert_int_equal(mf_student_check(&s), MF_E_INVALID);
    s = m->net;
    s.n_hidden = MF_STUDENT_MAX_HIDDEN + 1;
    assert_int_equal(mf_student_check(&s), MF_E_INVALID);
    m->b2[1] = INFINITY;
    assert_int_equal(mf_student_check(&m->net), MF_E_INVALID);
    assert_int_equal(mf_student_model_new(&(mf_student_model *){NULL}, &ctx, NULL, 784, 129, 10),
                     MF_E_INVALID);
    mf_student_model_free(m);
}

static void test_example_model__student_file_round_trip_and_rejects(void **state)
{
    const uint8_t x[3] = {9, 0, 7};
    mf_student_model *m = NULL, *back = NULL;
    struct mf_dynbuf b;
    float l1[2], l2[2];
    uint8_t *copy;

    (void)state;
    assert_int_equal(mf_student_model_new(&m, &ctx, NULL, 3, 2, 2), MF_OK);
    tiny_student(m);
    m->net.temperature = 1.75f;
    mf_dynbuf__init(&b, NULL, MF_STUDENT_MAX_FILE);
    assert_int_equal(mf_student_model_encode(&b, &ctx, m), MF_OK);
    assert_int_equal(mf_student_model_decode(&back, &ctx, NULL, b.data, b.len), MF_OK);
    assert_int_equal(back->net.n_in, 3);
    assert_true(back->net.temperature == 1.75f);
    assert_memory_equal(back->w1, m->w1, 6);
    mf_student_logits(&m->net, x, l1);
    mf_student_logits(&back->net, x, l2);
    assert_memory_equal(l1, l2, sizeof(l1));
    mf_student_model_free(back);

    /* A valid safetensors file that is not a student, and a student with a zero scale. */
    copy = malloc(b.len);
    memcpy(copy, b.data, b.len);
    {
        const size_t fl = strlen(MF_STUDENT_FORMAT);
        size_t at = 0;
        while (at + fl <= b.len && memcmp(copy + at, MF_STUDENT_FORMAT, fl) != 0)
            at++;
        assert_true(at + fl <= b.len);
        copy[at] = 'X';
        assert_int_equal(mf_student_model_decode(&back, &ctx, NULL, copy, b.len), MF_E_INVALID);
        assert_non_null(strstr(ctx.errmsg, "not a student"));
    }
    memcpy(copy, b.data, b.len);
    /* scales is the last tensor: zero its "hidden" entry (index 2). */
    memset(copy + b.len - 5 * sizeof(float) + 2 * sizeof(float), 0, sizeof(float));
    assert_int_equal(mf_student_model_decode(&back, &ctx, NULL, copy, b.len), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "scale"));
    /* Truncation anywhere is refused. */
    for (size_t cut = 0; cut < b.len; cut += 7)
        assert_true(mf_student_model_decode(&back, &ctx, NULL, b.data, cut) < 0);
    free(copy);
    mf_dynbuf__free(&b);
    mf_student_model_free(m);
}

/* One decode with allocation `n` failing: a clean MF_E_NOMEM, or the model as encoded. */
static void decode_with_failure(struct mf_kit_alloc *k, long n, void *payload)
{
    const mf_student_model *m = payload;
    mf_student_model *back = NULL;
    struct mf_dynbuf b;
    int err;

    (void)n;
    mf_dynbuf__init(&b, NULL, MF_STUDENT_MAX_FILE);
    assert_int_equal(mf_student_model_encode(&b, &ctx, m), MF_OK);
    err = mf_student_model_decode(&back, &ctx, &k->a, b.data, b.len);
    mf_dynbuf__free(&b);
    if (err != MF_OK) {
        assert_int_equal(err, MF_E_NOMEM);
        assert_null(back);
        return;
    }
    assert_memory_equal(back->w1, m->w1, 6);
    mf_student_model_free(back);
}

static void test_example_model__decode_survives_every_failed_allocation(void **state)
{
    mf_student_model *m = NULL;
    struct mf_kit_alloc f;

    (void)state;
    assert_int_equal(mf_student_model_new(&m, &ctx, NULL, 3, 2, 2), MF_OK);
    tiny_student(m);
    /* Fail call 0, 1, 2, ... until decoding needs no more calls than that: each failure
     * must come back as MF_E_NOMEM with nothing leaked (cmocka checks at test end). */
    (void)mf_kit_alloc_init(&f, -1, MF_KIT_ALLOC_FAIL_ONE);
    assert_true(mf_kit_alloc_each_failure(&f, 1000, decode_with_failure, m) > 3);
    mf_student_model_free(m);
}

static void test_example_model__confidence_scores(void **state)
{
    const float flat[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    const float peaked[4] = {9.0f, 0.0f, 0.0f, 0.0f};
    const float two[4] = {3.0f, 3.0f, -5.0f, -5.0f};

    (void)state;
    assert_float_equal(mf_score(MF_SCORE_MAX_SOFTMAX, flat, 4, 1.0f), 0.25, 1e-6);
    assert_float_equal(mf_score(MF_SCORE_MARGIN, flat, 4, 1.0f), 0.0, 1e-6);
    assert_float_equal(mf_score(MF_SCORE_NEG_ENTROPY, flat, 4, 1.0f), -log(4.0), 1e-5);
    assert_true(mf_score(MF_SCORE_MAX_SOFTMAX, peaked, 4, 1.0f) > 0.99f);
    /* A tie between the top two gives margin ~0 but max-softmax ~0.5. */
    assert_float_equal(mf_score(MF_SCORE_MARGIN, two, 4, 1.0f), 0.0, 1e-6);
    assert_float_equal(mf_score(MF_SCORE_MAX_SOFTMAX, two, 4, 1.0f), 0.5, 1e-3);
    /* Temperature > 1 flattens: every score drops. */
    for (int k = 0; k < 3; k++)
        assert_true(mf_score((mf_score_kind)k, peaked, 4, 4.0f) <
                    mf_score((mf_score_kind)k, peaked, 4, 1.0f));
    /* Huge logits must not overflow expf. */
    {
        const float big[2] = {1e30f, 0.0f};
        assert_float_equal(mf_score(MF_SCORE_MAX_SOFTMAX, big, 2, 1.0f), 1.0, 1e-6);
    }
}

/* Standard tools read our student file: json + numpy, as a data team would. */
static void test_example_model__python_reads_student(void **state)
{
    static const char *const pythons[] = {"python3", "/usr/bin/python3"};
    const char *py = NULL;
    char path[] = "/tmp/mf_student_XXXXXX";
    char cmd[2048], line[256];
    mf_student_model *m = NULL;
    long sum = 0, py_sum = 0;
    double py_hidden = 0;
    FILE *p;
    int fd;

    (void)state;
    /* PATH may lead to a python3 without numpy (pyenv, venv); Debian's has it with sklearn. */
    for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]) && !py; i++) {
        (void)snprintf(cmd, sizeof(cmd), "%s -c 'import numpy' >/dev/null 2>&1", pythons[i]);
        if (system(cmd) == 0)
            py = pythons[i];
    }
    if (!py)
        MF_SKIP("python3 with numpy not installed"); /* the C side needs neither */
    assert_int_equal(mf_student_model_new(&m, &ctx, NULL, 5, 3, 2), MF_OK);
    for (size_t i = 0; i < 15; i++) {
        m->w1[i] = (int8_t)(i * 17 - 100);
        sum += m->w1[i];
    }
    m->net.hidden_scale = 0.375f;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mf_student_model_save(m, &ctx, path), MF_OK);
    (void)snprintf(cmd, sizeof(cmd),
                   "%s -c \"import json,struct,numpy as np;b=open('%s','rb').read();"
                   "n=struct.unpack('<Q',b[:8])[0];h=json.loads(b[8:8+n]);d=b[8+n:];"
                   "t=h['fc1.weight'];o=t['data_offsets'];"
                   "w=np.frombuffer(d[o[0]:o[1]],dtype=np.int8).reshape(t['shape']);"
                   "s=h['scales']['data_offsets'];sc=np.frombuffer(d[s[0]:s[1]],dtype='<f4');"
                   "print(int(w.sum()),w.shape[0],w.shape[1],float(sc[2]),"
                   "h['__metadata__']['format'])\"",
                   py, path);
    p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof(line), p));
    assert_int_equal(pclose(p), 0);
    unlink(path);
    {
        int rows = 0, cols = 0;
        char fmt[64] = "";
        assert_int_equal(sscanf(line, "%ld %d %d %lf %63s", &py_sum, &rows, &cols, &py_hidden, fmt),
                         5);
        assert_int_equal(rows, 3);
        assert_int_equal(cols, 5);
        assert_string_equal(fmt, MF_STUDENT_FORMAT);
    }
    assert_int_equal(py_sum, sum);
    assert_float_equal(py_hidden, 0.375, 0);
    mf_student_model_free(m);
}

int main(void)
{
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    return MF_TEST_RUN(
        "example_model", NULL, NULL, cmocka_unit_test(test_example_model__safetensors_round_trip),
        cmocka_unit_test(test_example_model__safetensors_rejects),
        cmocka_unit_test(test_example_model__student_spec_by_hand),
        cmocka_unit_test(test_example_model__student_check_rejects),
        cmocka_unit_test(test_example_model__student_file_round_trip_and_rejects),
        cmocka_unit_test(test_example_model__decode_survives_every_failed_allocation),
        cmocka_unit_test(test_example_model__confidence_scores),
        cmocka_unit_test(test_example_model__python_reads_student));
}
