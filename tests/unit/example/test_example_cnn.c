/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The int8 CNN student family (examples/mnist/mf_cnn_student.h): the inference against
 * values worked out by hand from the arithmetic in the header (conv centre tap, bias-only
 * channels, ReLU, saturation at 255, the 2x2 max-pool, fc sums and scales), and the strict
 * decoder (a round trip, then one refused file per rule). The bit-for-bit agreement with the
 * PyTorch trainer's reference on all test images is integration_torch_cnn.
 */
#include "mf_test.h"

#include "mf_cnn_student.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct mf_ctx ctx;

#define CELLS (MF_CNN_POOLED * MF_CNN_POOLED)

/* A hand-made model; unit scales so every product is the integer sum itself. */
static mf_cnn_student *hand_model(void)
{
    mf_cnn_student *m = calloc(1, sizeof(*m));

    assert_non_null(m);
    m->in_scale = m->conv_scale = m->hidden_scale = m->fc_scale = m->temperature = 1.0f;
    m->conv_w[0 * 9 + 4] = 2;  /* channel 0: the centre tap only */
    m->conv_b[1] = 3.0f;       /* channel 1: bias only -> 3 everywhere */
    m->conv_b[2] = -5.0f;      /* channel 2: negative -> ReLU gives 0 */
    m->conv_b[3] = 300.0f;     /* channel 3: saturates at 255 */
    m->conv_w[4 * 9 + 0] = -1; /* channel 4: top-left tap, negative pixel products -> 0 */
    m->fc_w[0 * MF_CNN_FEATURES + 0] = 5;
    m->fc_w[1 * MF_CNN_FEATURES + CELLS] = -2;
    for (uint32_t f = 0; f < CELLS; f++)
        m->fc_w[2 * MF_CNN_FEATURES + CELLS + f] = 1;
    m->fc_b[3] = 0.25f;
    m->fc_w[4 * MF_CNN_FEATURES + 2 * CELLS] = 100;
    m->fc_w[5 * MF_CNN_FEATURES + 3 * CELLS + 7] = 1;
    m->fc_w[6 * MF_CNN_FEATURES + 4 * CELLS] = 100;
    m->fc_w[7 * MF_CNN_FEATURES + 1] = 1; /* pooled cell (0, 1) of channel 0 */
    return m;
}

static void test_example_cnn__inference_by_hand(void **state)
{
    mf_cnn_student *m = hand_model();
    uint8_t x[MF_CNN_SIDE * MF_CNN_SIDE] = {0};
    float z[MF_CNN_CLASSES];

    (void)state;
    /* conv(0,0) of channel 0 sees pixel (1,1) at its centre: 10 * 2 = 20. The pool over
     * conv rows 0-1, cols 0-1 takes it; conv(1,3) (centre pixel (2,4) = 7 -> 14) lands in
     * pooled cell (0,1), and conv(0,2) (pixel (1,3) = 9 -> 18) in the same cell wins. */
    x[1 * MF_CNN_SIDE + 1] = 10;
    x[2 * MF_CNN_SIDE + 4] = 7;
    x[1 * MF_CNN_SIDE + 3] = 9;
    mf_cnn_student_logits(m, x, z);
    assert_float_equal(z[0], 100.0, 0);       /* 20 * 5 */
    assert_float_equal(z[1], -6.0, 0);        /* 3 * -2 */
    assert_float_equal(z[2], 3.0 * CELLS, 0); /* 169 cells of 3 */
    assert_float_equal(z[3], 0.25, 0);        /* bias only */
    assert_float_equal(z[4], 0.0, 0);         /* ReLU'd channel */
    assert_float_equal(z[5], 255.0, 0);       /* saturated */
    assert_float_equal(z[6], 0.0, 0);         /* negative products clamp to 0 */
    assert_float_equal(z[7], 18.0, 0);        /* the larger of 18 and 14 in cell (0,1) */
    /* scales multiply the sums: hidden 0.5 doubles q, fc 0.25 -> logit 100 * 2 * 0.5 * 0.25 */
    m->hidden_scale = 0.5f;
    m->fc_scale = 0.25f;
    mf_cnn_student_logits(m, x, z);
    assert_float_equal(z[0], 40.0 * 5 * 0.125, 0);
    free(m);
}

static const uint64_t conv_shape[] = {MF_CNN_CH, 1, 3, 3};

/* Encodes `m` with `fmt`; `drop` names a tensor left out, `bad_fc` writes fc.weight 10x1351. */
static void encode(struct mf_dynbuf *b, const mf_cnn_student *m, const char *fmt, const char *drop,
                   int bad_fc)
{
    const float scales[5] = {m->in_scale, m->conv_scale, m->hidden_scale, m->fc_scale,
                             m->temperature};
    mf_st_entry t[5] = {
        {"conv.weight", MF_ST_I8, 4, {conv_shape[0], 1, 3, 3}, m->conv_w},
        {"conv.bias", MF_ST_F32, 1, {MF_CNN_CH}, m->conv_b},
        {"fc.weight", MF_ST_I8, 2, {MF_CNN_CLASSES, MF_CNN_FEATURES - (bad_fc ? 1 : 0)}, m->fc_w},
        {"fc.bias", MF_ST_F32, 1, {MF_CNN_CLASSES}, m->fc_b},
        {"scales", MF_ST_F32, 1, {5}, scales},
    };
    const char *const meta[] = {"format", fmt, "format_version", "1"};
    mf_st_entry keep[5];
    size_t n = 0;

    for (size_t i = 0; i < 5; i++)
        if (!drop || strcmp(t[i].name, drop) != 0)
            keep[n++] = t[i];
    mf_dynbuf__init(b, NULL, 1 << 20);
    assert_int_equal(mf_safetensors_write(b, &ctx, keep, n, meta, 2), MF_OK);
}

static int decode(const mf_cnn_student *m, const char *fmt, const char *drop, int bad_fc)
{
    struct mf_dynbuf b;
    mf_cnn_student *back = calloc(1, sizeof(*back));
    int err;

    assert_non_null(back);
    encode(&b, m, fmt, drop, bad_fc);
    err = mf_cnn_student_decode(back, &ctx, b.data, b.len);
    if (err == MF_OK)
        assert_memory_equal(back, m, sizeof(*m));
    mf_dynbuf__free(&b);
    free(back);
    return err;
}

static void test_example_cnn__decode_round_trip_and_rejects(void **state)
{
    mf_cnn_student *m = hand_model();

    (void)state;
    assert_int_equal(decode(m, MF_CNN_FORMAT, NULL, 0), MF_OK);
    assert_int_equal(decode(m, "mf-student-int8-mlp", NULL, 0), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "not a mf-student-int8-cnn file"));
    assert_int_equal(decode(m, MF_CNN_FORMAT, "fc.bias", 0), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "has 5 tensors"));
    assert_int_equal(decode(m, MF_CNN_FORMAT, NULL, 1), MF_E_INVALID);
    m->conv_b[5] = NAN;
    assert_int_equal(decode(m, MF_CNN_FORMAT, NULL, 0), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "biases must be finite"));
    m->conv_b[5] = 0.0f;
    m->fc_scale = 0.0f;
    assert_int_equal(decode(m, MF_CNN_FORMAT, NULL, 0), MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "scales must be finite and > 0"));
    m->fc_scale = INFINITY;
    assert_int_equal(decode(m, MF_CNN_FORMAT, NULL, 0), MF_E_INVALID);
    free(m);
}

int main(void)
{
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    return MF_TEST_RUN("example_cnn", NULL, NULL,
                       cmocka_unit_test(test_example_cnn__inference_by_hand),
                       cmocka_unit_test(test_example_cnn__decode_round_trip_and_rejects));
}
