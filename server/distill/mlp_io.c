/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Float MLP <-> safetensors. The file uses PyTorch's [out, in] orientation so that
 * `torch.nn.Linear` or numpy code reads it directly; memory keeps [in][out] for the
 * trainer's axpy loops, so each weight is transposed on the way in and out.
 */
#include "mf_mlp.h"

#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mf_dynbuf.h"
#include "mf_safetensors.h"

#include <stdio.h>
#include <string.h>

#define MLP_FORMAT "mf-float-mlp"
#define MLP_MAX_FILE (256u << 20)
#define MLP_MAX_META 8u

static void transpose(float *dst, const float *src, uint32_t rows, uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

int mf_mlp_save(const mf_mlp *m, struct mf_ctx *ctx, const char *path, const char *const *meta,
                size_t n_meta)
{
    mf_st_entry t[2 * MF_MLP_MAX_LAYERS + 1];
    char names[2 * MF_MLP_MAX_LAYERS][32];
    const char *md[2 * (MLP_MAX_META + 1)];
    float *wt[MF_MLP_MAX_LAYERS] = {0};
    struct mf_dynbuf b;
    size_t nt = 0;
    int err = MF_OK;

    if (n_meta > MLP_MAX_META)
        return mf_fail(ctx, MF_E_INVALID, "too many metadata pairs");
    md[0] = "format";
    md[1] = MLP_FORMAT;
    for (size_t i = 0; i < 2 * n_meta; i++)
        md[2 + i] = meta[i];
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const uint32_t nin = m->sizes[l], nout = m->sizes[l + 1];
        wt[l] = mf_alloc(&m->alloc, (size_t)nin * nout * sizeof(float));
        if (!wt[l]) {
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory saving an MLP");
            goto out;
        }
        transpose(wt[l], m->w[l], nin, nout);
        (void)snprintf(names[2 * l], sizeof(names[0]), "layers.%u.weight", l);
        (void)snprintf(names[2 * l + 1], sizeof(names[0]), "layers.%u.bias", l);
        t[nt++] = (mf_st_entry){names[2 * l], MF_ST_F32, 2, {nout, nin}, wt[l]};
        t[nt++] = (mf_st_entry){names[2 * l + 1], MF_ST_F32, 1, {nout}, m->b[l]};
    }
    t[nt++] = (mf_st_entry){"input_scale", MF_ST_F32, 1, {1}, &m->in_scale};
    mf_dynbuf__init(&b, &m->alloc, MLP_MAX_FILE);
    err = mf_safetensors_write(&b, ctx, t, nt, md, n_meta + 1);
    if (err == MF_OK)
        err = mf_file_write_atomic(ctx, path, b.data, b.len);
    mf_dynbuf__free(&b);
out:
    for (uint32_t l = 0; l < m->n_layers; l++)
        mf_free(&m->alloc, wt[l]);
    return err;
}

static int load_from(mf_mlp **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                     const mf_safetensors *st)
{
    uint32_t sizes[MF_MLP_MAX_LAYERS + 1];
    uint32_t n_layers = 0;
    const mf_st_tensor *t;
    const uint64_t one = 1;
    float in_scale;
    mf_mlp *m;
    int err;

    /* Layer count and widths come from the weight shapes, checked to chain. */
    for (uint32_t l = 0; l < MF_MLP_MAX_LAYERS; l++) {
        char name[32];
        const mf_st_tensor *w = NULL;
        (void)snprintf(name, sizeof(name), "layers.%u.weight", l);
        for (size_t i = 0; i < mf_safetensors_count(st); i++)
            if (strcmp(mf_safetensors_at(st, i)->name, name) == 0)
                w = mf_safetensors_at(st, i);
        if (!w)
            break;
        if (w->dtype != MF_ST_F32 || w->rank != 2 || w->shape[0] == 0 ||
            w->shape[0] > MF_MLP_MAX_WIDTH || w->shape[1] == 0 || w->shape[1] > MF_MLP_MAX_WIDTH ||
            (l > 0 && w->shape[1] != sizes[l]))
            return mf_fail(ctx, MF_E_INVALID, "MLP file: bad shape of %s", name);
        sizes[l] = (uint32_t)w->shape[1];
        sizes[l + 1] = (uint32_t)w->shape[0];
        n_layers++;
    }
    if (n_layers == 0 || mf_safetensors_count(st) != 2 * n_layers + 1)
        return mf_fail(ctx, MF_E_INVALID, "MLP file: %u layers but %zu tensors", n_layers,
                       mf_safetensors_count(st));
    err = mf_safetensors_get(&t, ctx, st, "input_scale", MF_ST_F32, 1, &one);
    if (err < 0)
        return err;
    memcpy(&in_scale, t->data, sizeof(in_scale));
    err = mf_mlp_new(&m, ctx, alloc, sizes, n_layers + 1, in_scale, 0);
    if (err < 0)
        return err;
    for (uint32_t l = 0; l < n_layers && err == MF_OK; l++) {
        char name[32];
        const uint64_t wshape[2] = {sizes[l + 1], sizes[l]};
        const uint64_t bshape[1] = {sizes[l + 1]};
        (void)snprintf(name, sizeof(name), "layers.%u.weight", l);
        err = mf_safetensors_get(&t, ctx, st, name, MF_ST_F32, 2, wshape);
        if (err == MF_OK) {
            /* Copy first: tensor data is not aligned for float access. */
            memcpy(m->w[l], t->data, (size_t)t->nbytes);
            (void)snprintf(name, sizeof(name), "layers.%u.bias", l);
            err = mf_safetensors_get(&t, ctx, st, name, MF_ST_F32, 1, bshape);
        }
        if (err == MF_OK) {
            memcpy(m->b[l], t->data, (size_t)t->nbytes);
            /* m->w[l] holds [out][in]; transpose it in place through a scratch copy. */
            float *tmp = mf_alloc(&m->alloc, (size_t)sizes[l] * sizes[l + 1] * sizeof(float));
            if (!tmp) {
                err = mf_fail(ctx, MF_E_NOMEM, "out of memory loading an MLP");
                break;
            }
            memcpy(tmp, m->w[l], (size_t)sizes[l] * sizes[l + 1] * sizeof(float));
            transpose(m->w[l], tmp, sizes[l + 1], sizes[l]);
            mf_free(&m->alloc, tmp);
        }
    }
    if (err < 0) {
        mf_mlp_free(m);
        return err;
    }
    *out = m;
    return MF_OK;
}

int mf_mlp_load(mf_mlp **out, struct mf_ctx *ctx, const mf_allocator *alloc, const char *path,
                const char *key_name, const char *key_value)
{
    mf_safetensors *st = NULL;
    uint8_t *buf = NULL;
    const char *fmt, *v;
    size_t len;
    int err;

    *out = NULL;
    err = mf_file_read_all(&buf, &len, ctx, alloc, path, MLP_MAX_FILE);
    if (err < 0)
        return err;
    err = mf_safetensors_parse(&st, ctx, alloc, buf, len);
    if (err < 0)
        goto out;
    fmt = mf_safetensors_meta(st, "format");
    if (!fmt || strcmp(fmt, MLP_FORMAT) != 0) {
        err = mf_fail(ctx, MF_E_INVALID, "%s is not a float MLP file", path);
        goto out;
    }
    if (key_name) {
        v = mf_safetensors_meta(st, key_name);
        if (!v || strcmp(v, key_value) != 0) {
            err = mf_fail(ctx, MF_E_NOTFOUND, "%s: %s is '%.64s', want '%.64s'", path, key_name,
                          v ? v : "(none)", key_value);
            goto out;
        }
    }
    err = load_from(out, ctx, alloc, st);
out:
    mf_safetensors_free(st);
    mf_free(alloc, buf);
    return err;
}
