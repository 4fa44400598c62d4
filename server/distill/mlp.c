/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Float MLP: allocation, seeded initialisation and the forward pass. Weights are stored
 * [in][out] so that a layer is a sum of axpy's over contiguous output rows (the compiler
 * vectorises them), skipping zero inputs: half the pixels and most ReLU outputs are zero.
 */
#include "mf_mlp.h"

#include "distill_parallel.h"
#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mlp_internal.h"

#include <math.h>
#include <string.h>

int mf_mlp_new(mf_mlp **out, struct mf_ctx *ctx, const mf_allocator *alloc, const uint32_t *sizes,
               uint32_t n_sizes, float in_scale, uint64_t seed)
{
    const mf_allocator *a = alloc ? alloc : mf_allocator_default();
    uint64_t rng = seed;
    mf_mlp *m;

    *out = NULL;
    if (n_sizes < 2 || n_sizes > MF_MLP_MAX_LAYERS + 1)
        return mf_fail(ctx, MF_E_INVALID, "MLP needs 2..%u layer sizes, got %u",
                       MF_MLP_MAX_LAYERS + 1, n_sizes);
    for (uint32_t l = 0; l < n_sizes; l++)
        if (sizes[l] == 0 || sizes[l] > MF_MLP_MAX_WIDTH)
            return mf_fail(ctx, MF_E_INVALID, "MLP layer %u has width %u", l, sizes[l]);
    if (!(in_scale > 0.0f) || !isfinite(in_scale))
        return mf_fail(ctx, MF_E_INVALID, "MLP input scale must be > 0");
    m = mf_calloc(a, 1, sizeof(*m));
    if (!m)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for an MLP");
    m->alloc = *a;
    m->n_layers = n_sizes - 1;
    m->in_scale = in_scale;
    memcpy(m->sizes, sizes, n_sizes * sizeof(*sizes));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        size_t nw = (size_t)sizes[l] * sizes[l + 1];
        /* He-uniform: keeps the activation variance through ReLU layers. */
        const double lim = sqrt(6.0 / sizes[l]);
        m->w[l] = mf_alloc(a, nw * sizeof(float));
        m->b[l] = mf_calloc(a, sizes[l + 1], sizeof(float));
        if (!m->w[l] || !m->b[l]) {
            mf_mlp_free(m);
            return mf_fail(ctx, MF_E_NOMEM, "out of memory for MLP layer %u", l);
        }
        for (size_t i = 0; i < nw; i++)
            m->w[l][i] = (float)((2.0 * mf_rng_uniform(&rng) - 1.0) * lim);
    }
    *out = m;
    return MF_OK;
}

void mf_mlp_free(mf_mlp *m)
{
    mf_allocator a;

    if (!m)
        return;
    a = m->alloc;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        mf_free(&a, m->w[l]);
        mf_free(&a, m->b[l]);
    }
    mf_free(&a, m);
}

size_t mf_mlp__act_floats(const mf_mlp *m)
{
    size_t n = 0;

    for (uint32_t l = 0; l <= m->n_layers; l++)
        n += m->sizes[l];
    return n;
}

void mf_mlp__forward(const mf_mlp *m, const uint8_t *x, float *const *act)
{
    for (uint32_t i = 0; i < m->sizes[0]; i++)
        act[0][i] = (float)x[i] * m->in_scale;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const uint32_t nin = m->sizes[l], nout = m->sizes[l + 1];
        const float *in = act[l];
        float *o = act[l + 1];

        memcpy(o, m->b[l], nout * sizeof(float));
        for (uint32_t i = 0; i < nin; i++) {
            const float a = in[i];
            const float *w = m->w[l] + (size_t)i * nout;
            if (a == 0.0f)
                continue;
            for (uint32_t j = 0; j < nout; j++)
                o[j] += a * w[j];
        }
        if (l + 1 < m->n_layers)
            for (uint32_t j = 0; j < nout; j++)
                o[j] = o[j] > 0.0f ? o[j] : 0.0f;
    }
}

struct logits_job {
    const mf_mlp *m;
    const uint8_t *x;
    float *logits;
    float *scratch;
    size_t begin, end;
};

static void logits_block(void *p)
{
    struct logits_job *j = p;
    const mf_mlp *m = j->m;
    float *act[MF_MLP_MAX_LAYERS + 1];
    const uint32_t nout = m->sizes[m->n_layers];
    size_t off = 0;

    for (uint32_t l = 0; l <= m->n_layers; l++) {
        act[l] = j->scratch + off;
        off += m->sizes[l];
    }
    for (size_t s = j->begin; s < j->end; s++) {
        mf_mlp__forward(m, j->x + s * m->sizes[0], act);
        memcpy(j->logits + s * nout, act[m->n_layers], nout * sizeof(float));
    }
}

int mf_mlp_logits(float *logits_out, struct mf_ctx *ctx, const mf_mlp *m, const uint8_t *x,
                  size_t n, uint32_t threads)
{
    struct logits_job jobs[MF_MLP_MAX_THREADS];
    const size_t per = mf_mlp__act_floats(m);
    float *scratch;

    if (threads < 1)
        threads = 1;
    if (threads > MF_MLP_MAX_THREADS)
        threads = MF_MLP_MAX_THREADS;
    scratch = mf_calloc(&m->alloc, per * threads, sizeof(float));
    if (!scratch)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for MLP scratch");
    for (uint32_t t = 0; t < threads; t++)
        jobs[t] = (struct logits_job){
            m, x, logits_out, scratch + per * t, n * t / threads, n * (t + 1) / threads};
    mf_distill__parallel(logits_block, jobs, sizeof(jobs[0]), threads);
    mf_free(&m->alloc, scratch);
    return MF_OK;
}
