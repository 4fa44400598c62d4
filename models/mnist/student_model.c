/* SPDX-License-Identifier: Apache-2.0 */
/* The owned student and its safetensors encoding (layout in mf_student_model.h). */
#include "mf_student_model.h"

#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mf_dynbuf.h"
#include "mf_safetensors.h"

#include <string.h>

#define N_SCALES 5u

int mf_student_model_new(mf_student_model **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                         uint32_t n_in, uint32_t n_hidden, uint32_t n_out)
{
    const mf_allocator *a = alloc ? alloc : mf_allocator_default();
    mf_student_model *m;

    *out = NULL;
    if (n_in == 0 || n_in > MF_STUDENT_MAX_IN || n_hidden == 0 ||
        n_hidden > MF_STUDENT_MAX_HIDDEN || n_out < 2 || n_out > MF_STUDENT_MAX_OUT)
        return mf_fail(ctx, MF_E_INVALID, "student %u-%u-%u outside the supported bounds", n_in,
                       n_hidden, n_out);
    m = mf_calloc(a, 1, sizeof(*m));
    if (!m)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for a student");
    m->alloc = *a;
    m->w1 = mf_calloc(a, (size_t)n_in * n_hidden, 1);
    m->b1 = mf_calloc(a, n_hidden, sizeof(float));
    m->w2 = mf_calloc(a, (size_t)n_hidden * n_out, 1);
    m->b2 = mf_calloc(a, n_out, sizeof(float));
    if (!m->w1 || !m->b1 || !m->w2 || !m->b2) {
        mf_student_model_free(m);
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for a student");
    }
    m->net = (mf_student){
        .n_in = n_in,
        .n_hidden = n_hidden,
        .n_out = n_out,
        .w1 = m->w1,
        .b1 = m->b1,
        .w2 = m->w2,
        .b2 = m->b2,
        .in_scale = 1.0f,
        .w1_scale = 1.0f,
        .hidden_scale = 1.0f,
        .w2_scale = 1.0f,
        .temperature = 1.0f,
    };
    *out = m;
    return MF_OK;
}

void mf_student_model_free(mf_student_model *m)
{
    mf_allocator a;

    if (!m)
        return;
    a = m->alloc;
    mf_free(&a, m->w1);
    mf_free(&a, m->b1);
    mf_free(&a, m->w2);
    mf_free(&a, m->b2);
    mf_free(&a, m);
}

int mf_student_model_encode(struct mf_dynbuf *out, struct mf_ctx *ctx, const mf_student_model *m)
{
    const mf_student *s = &m->net;
    const float scales[N_SCALES] = {s->in_scale, s->w1_scale, s->hidden_scale, s->w2_scale,
                                    s->temperature};
    const mf_st_entry t[] = {
        {"fc1.weight", MF_ST_I8, 2, {s->n_hidden, s->n_in}, m->w1},
        {"fc1.bias", MF_ST_F32, 1, {s->n_hidden}, m->b1},
        {"fc2.weight", MF_ST_I8, 2, {s->n_out, s->n_hidden}, m->w2},
        {"fc2.bias", MF_ST_F32, 1, {s->n_out}, m->b2},
        {"scales", MF_ST_F32, 1, {N_SCALES}, scales},
    };
    static const char *const meta[] = {"format", MF_STUDENT_FORMAT, "format_version", "1"};

    return mf_safetensors_write(out, ctx, t, sizeof(t) / sizeof(t[0]), meta, 2);
}

/* Copies tensor `name` of the expected dtype/shape into `dst`. */
static int take(void *dst, struct mf_ctx *ctx, const mf_safetensors *st, const char *name,
                mf_st_dtype dtype, uint32_t rank, uint64_t d0, uint64_t d1)
{
    const uint64_t shape[2] = {d0, d1};
    const mf_st_tensor *t;
    int err = mf_safetensors_get(&t, ctx, st, name, dtype, rank, shape);

    if (err < 0)
        return err;
    memcpy(dst, t->data, (size_t)t->nbytes);
    return MF_OK;
}

static int decode_from(mf_student_model **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                       const mf_safetensors *st)
{
    const mf_st_tensor *w1 = NULL, *w2 = NULL;
    const char *fmt = mf_safetensors_meta(st, "format");
    float scales[N_SCALES];
    mf_student_model *m;
    int err;

    if (!fmt || strcmp(fmt, MF_STUDENT_FORMAT) != 0)
        return mf_fail(ctx, MF_E_INVALID, "not a student file (format '%.32s')",
                       fmt ? fmt : "(none)");
    /* The two weight matrices carry the dimensions; everything else is checked against them. */
    for (size_t i = 0; i < mf_safetensors_count(st); i++) {
        const mf_st_tensor *t = mf_safetensors_at(st, i);
        if (strcmp(t->name, "fc1.weight") == 0)
            w1 = t;
        else if (strcmp(t->name, "fc2.weight") == 0)
            w2 = t;
    }
    if (!w1 || !w2 || w1->rank != 2 || w2->rank != 2)
        return mf_fail(ctx, MF_E_INVALID, "student file needs 2-d fc1.weight and fc2.weight");
    if (w1->shape[0] > MF_STUDENT_MAX_HIDDEN || w1->shape[1] > MF_STUDENT_MAX_IN ||
        w2->shape[0] > MF_STUDENT_MAX_OUT)
        return mf_fail(ctx, MF_E_LIMIT, "student dims %llux%llu, %llu outputs over the bounds",
                       (unsigned long long)w1->shape[0], (unsigned long long)w1->shape[1],
                       (unsigned long long)w2->shape[0]);
    err = mf_student_model_new(&m, ctx, alloc, (uint32_t)w1->shape[1], (uint32_t)w1->shape[0],
                               (uint32_t)w2->shape[0]);
    if (err < 0)
        return err;
    err = take(m->w1, ctx, st, "fc1.weight", MF_ST_I8, 2, m->net.n_hidden, m->net.n_in);
    if (err == MF_OK)
        err = take(m->b1, ctx, st, "fc1.bias", MF_ST_F32, 1, m->net.n_hidden, 0);
    if (err == MF_OK)
        err = take(m->w2, ctx, st, "fc2.weight", MF_ST_I8, 2, m->net.n_out, m->net.n_hidden);
    if (err == MF_OK)
        err = take(m->b2, ctx, st, "fc2.bias", MF_ST_F32, 1, m->net.n_out, 0);
    if (err == MF_OK)
        err = take(scales, ctx, st, "scales", MF_ST_F32, 1, N_SCALES, 0);
    if (err == MF_OK && mf_safetensors_count(st) != 5)
        err = mf_fail(ctx, MF_E_INVALID, "student file has %zu tensors, want 5",
                      mf_safetensors_count(st));
    if (err == MF_OK) {
        m->net.in_scale = scales[0];
        m->net.w1_scale = scales[1];
        m->net.hidden_scale = scales[2];
        m->net.w2_scale = scales[3];
        m->net.temperature = scales[4];
        if (mf_student_check(&m->net) < 0)
            err = mf_fail(ctx, MF_E_INVALID,
                          "student file has a non-finite or <= 0 scale "
                          "or a non-finite bias");
    }
    if (err < 0) {
        mf_student_model_free(m);
        return err;
    }
    *out = m;
    return MF_OK;
}

int mf_student_model_decode(mf_student_model **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                            const uint8_t *buf, size_t len)
{
    mf_safetensors *st;
    int err;

    *out = NULL;
    err = mf_safetensors_parse(&st, ctx, alloc, buf, len);
    if (err < 0)
        return err;
    err = decode_from(out, ctx, alloc, st);
    mf_safetensors_free(st);
    return err;
}

int mf_student_model_save(const mf_student_model *m, struct mf_ctx *ctx, const char *path)
{
    struct mf_dynbuf b;
    int err;

    mf_dynbuf__init(&b, &m->alloc, MF_STUDENT_MAX_FILE);
    err = mf_student_model_encode(&b, ctx, m);
    if (err == MF_OK)
        err = mf_file_write_atomic(ctx, path, b.data, b.len);
    mf_dynbuf__free(&b);
    return err;
}

int mf_student_model_load(mf_student_model **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                          const char *path)
{
    uint8_t *buf;
    size_t len;
    int err;

    *out = NULL;
    err = mf_file_read_all(&buf, &len, ctx, alloc, path, MF_STUDENT_MAX_FILE);
    if (err < 0)
        return err;
    err = mf_student_model_decode(out, ctx, alloc, buf, len);
    mf_free(alloc, buf);
    return err;
}
