/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mini-batch Adam for mf_mlp (loss in mf_mlp.h). Each mini-batch is cut into one slice per
 * thread; a thread runs forward + backward per sample and accumulates into its own gradient
 * buffers, which are then summed in thread order, so results depend only on the seed and
 * the thread count, never on scheduling.
 */
#include "mf_mlp.h"

#include "distill_parallel.h"
#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mlp_internal.h"

#include <math.h>
#include <string.h>

#define MAX_OUT 64u

int mf_train_options_init(mf_train_options *o, unsigned int version)
{
    if (version != MF_TRAIN_OPTIONS_VERSION)
        return MF_E_INVALID;
    *o = (mf_train_options){
        .version = version,
        .epochs = 30,
        .batch = 64,
        .lr = 3e-3f,
        .lr_final = 3e-4f,
        .weight_decay = 0.0f,
        .temperature = 2.0f,
        .alpha = 0.5f,
        .seed = 1,
        .threads = 2,
    };
    return MF_OK;
}

struct worker {
    const mf_mlp *m;
    const mf_train_set *set;
    const mf_train_options *o;
    const size_t *idx; /* sample order of this epoch */
    size_t begin, end; /* slice of idx */
    float *act[MF_MLP_MAX_LAYERS + 1];
    float *delta[MF_MLP_MAX_LAYERS + 1];
    float *gw[MF_MLP_MAX_LAYERS];
    float *gb[MF_MLP_MAX_LAYERS];
    double loss;
};

static void softmax_t(float *p, const float *z, uint32_t k, float t)
{
    float mx = z[0], sum = 0.0f;

    for (uint32_t i = 1; i < k; i++)
        mx = z[i] > mx ? z[i] : mx;
    for (uint32_t i = 0; i < k; i++) {
        p[i] = expf((z[i] - mx) / t);
        sum += p[i];
    }
    for (uint32_t i = 0; i < k; i++)
        p[i] /= sum;
}

/* dz = dLoss/dlogits for one sample; returns the loss. */
static double loss_grad(float *dz, const float *z, uint32_t k, unsigned y, const float *q,
                        const mf_train_options *o)
{
    float p[MAX_OUT];
    const float t = o->temperature;
    const float ws = (q && y != MF_TRAIN_NO_LABEL) ? o->alpha : (q ? 1.0f : 0.0f);
    double loss = 0.0;

    memset(dz, 0, k * sizeof(float));
    if (q) {
        /* d/dz of T^2 * CE(q, softmax(z/T)) is T * (p_T - q). */
        softmax_t(p, z, k, t);
        for (uint32_t i = 0; i < k; i++) {
            dz[i] += ws * t * (p[i] - q[i]);
            if (q[i] > 0.0f)
                loss -= ws * t * t * q[i] * log(p[i] > 1e-30f ? p[i] : 1e-30f);
        }
    }
    if (y != MF_TRAIN_NO_LABEL) {
        softmax_t(p, z, k, 1.0f);
        for (uint32_t i = 0; i < k; i++)
            dz[i] += (1.0f - ws) * (p[i] - (i == y ? 1.0f : 0.0f));
        loss -= (1.0f - ws) * log(p[y] > 1e-30f ? p[y] : 1e-30f);
    }
    return loss;
}

static void backward(struct worker *w)
{
    const mf_mlp *m = w->m;

    for (uint32_t l = m->n_layers; l-- > 0;) {
        const uint32_t nin = m->sizes[l], nout = m->sizes[l + 1];
        const float *dz = w->delta[l + 1];
        const float *a = w->act[l];
        float *gw = w->gw[l];

        for (uint32_t j = 0; j < nout; j++)
            w->gb[l][j] += dz[j];
        for (uint32_t i = 0; i < nin; i++) {
            const float ai = a[i];
            float *g = gw + (size_t)i * nout;
            if (ai == 0.0f)
                continue;
            for (uint32_t j = 0; j < nout; j++)
                g[j] += ai * dz[j];
        }
        if (l == 0)
            break;
        /* Back through ReLU: only units that were active carry gradient. */
        for (uint32_t i = 0; i < nin; i++) {
            const float *wr = m->w[l] + (size_t)i * nout;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            uint32_t j = 0;
            if (a[i] <= 0.0f) {
                w->delta[l][i] = 0.0f;
                continue;
            }
            for (; j + 4 <= nout; j += 4) {
                s0 += wr[j] * dz[j];
                s1 += wr[j + 1] * dz[j + 1];
                s2 += wr[j + 2] * dz[j + 2];
                s3 += wr[j + 3] * dz[j + 3];
            }
            for (; j < nout; j++)
                s0 += wr[j] * dz[j];
            w->delta[l][i] = (s0 + s1) + (s2 + s3);
        }
    }
}

static void train_block(void *p)
{
    struct worker *w = p;
    const mf_mlp *m = w->m;
    const uint32_t k = m->sizes[m->n_layers];

    w->loss = 0.0;
    for (size_t s = w->begin; s < w->end; s++) {
        const size_t i = w->idx[s];
        const unsigned y = w->set->y ? w->set->y[i] : MF_TRAIN_NO_LABEL;
        const float *q = NULL;
        if (w->set->soft && (!w->set->has_soft || w->set->has_soft[i]))
            q = w->set->soft + i * k;
        mf_mlp__forward(m, w->set->x + i * m->sizes[0], w->act);
        w->loss += loss_grad(w->delta[m->n_layers], w->act[m->n_layers], k, y, q, w->o);
        backward(w);
    }
}

struct adam {
    float *mw[MF_MLP_MAX_LAYERS], *vw[MF_MLP_MAX_LAYERS];
    float *mb[MF_MLP_MAX_LAYERS], *vb[MF_MLP_MAX_LAYERS];
    uint64_t step;
};

static void adam_update(float *p, float *mom, float *vel, const float *g, size_t n, float scale,
                        float lr, float wd, float c1, float c2)
{
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;

    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] * scale + wd * p[i];
        mom[i] = b1 * mom[i] + (1.0f - b1) * gi;
        vel[i] = b2 * vel[i] + (1.0f - b2) * gi * gi;
        p[i] -= lr * (mom[i] / c1) / (sqrtf(vel[i] / c2) + eps);
    }
}

static int check_set(struct mf_ctx *ctx, const mf_mlp *m, const mf_train_set *set,
                     const mf_train_options *o)
{
    const uint32_t k = m->sizes[m->n_layers];

    if (o->version != MF_TRAIN_OPTIONS_VERSION || o->epochs == 0 || o->batch == 0 ||
        o->threads == 0 || o->threads > MF_MLP_MAX_THREADS || !(o->temperature > 0.0f) ||
        !(o->alpha >= 0.0f && o->alpha <= 1.0f) || !(o->lr > 0.0f))
        return mf_fail(ctx, MF_E_INVALID, "invalid training options");
    if (k > MAX_OUT)
        return mf_fail(ctx, MF_E_INVALID, "MLP has %u outputs, the trainer supports %u", k,
                       MAX_OUT);
    if (set->n == 0)
        return mf_fail(ctx, MF_E_INVALID, "empty training set");
    for (size_t i = 0; i < set->n; i++) {
        const int hard = set->y && set->y[i] != MF_TRAIN_NO_LABEL;
        const int soft = set->soft && (!set->has_soft || set->has_soft[i]);
        if (set->y && set->y[i] != MF_TRAIN_NO_LABEL && set->y[i] >= k)
            return mf_fail(ctx, MF_E_INVALID, "sample %zu has label %u of %u classes", i, set->y[i],
                           k);
        if (!hard && !soft)
            return mf_fail(ctx, MF_E_INVALID, "sample %zu has neither a label nor soft target", i);
    }
    return MF_OK;
}

/* One allocation for every per-thread buffer and the Adam moments. */
static float *carve(float **slot, float **cursor, size_t n)
{
    *slot = *cursor;
    *cursor += n;
    return *slot;
}

int mf_mlp_train(mf_mlp *m, struct mf_ctx *ctx, const mf_train_set *set, const mf_train_options *o,
                 float *final_loss_out)
{
    struct worker w[MF_MLP_MAX_THREADS];
    struct adam ad = {0};
    const uint32_t nt = o->threads;
    size_t params = 0, per_thread, total;
    size_t *idx = NULL;
    float *pool = NULL, *cur;
    uint64_t rng = o->seed;
    double loss = 0.0;
    int err;

    err = check_set(ctx, m, set, o);
    if (err < 0)
        return err;
    for (uint32_t l = 0; l < m->n_layers; l++)
        params += (size_t)m->sizes[l] * m->sizes[l + 1] + m->sizes[l + 1];
    per_thread = 2 * mf_mlp__act_floats(m) + params;
    total = per_thread * nt + 2 * params;
    pool = mf_calloc(&m->alloc, total, sizeof(float));
    idx = mf_calloc(&m->alloc, set->n, sizeof(size_t));
    if (!pool || !idx) {
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory for training buffers");
        goto fail;
    }
    cur = pool;
    for (uint32_t t = 0; t < nt; t++) {
        w[t] = (struct worker){.m = m, .set = set, .o = o, .idx = idx};
        for (uint32_t l = 0; l <= m->n_layers; l++) {
            (void)carve(&w[t].act[l], &cur, m->sizes[l]);
            (void)carve(&w[t].delta[l], &cur, m->sizes[l]);
        }
        for (uint32_t l = 0; l < m->n_layers; l++) {
            (void)carve(&w[t].gw[l], &cur, (size_t)m->sizes[l] * m->sizes[l + 1]);
            (void)carve(&w[t].gb[l], &cur, m->sizes[l + 1]);
        }
    }
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const size_t nw = (size_t)m->sizes[l] * m->sizes[l + 1], nb = m->sizes[l + 1];
        (void)carve(&ad.mw[l], &cur, nw);
        (void)carve(&ad.vw[l], &cur, nw);
        (void)carve(&ad.mb[l], &cur, nb);
        (void)carve(&ad.vb[l], &cur, nb);
    }
    for (size_t i = 0; i < set->n; i++)
        idx[i] = i;

    for (uint32_t e = 0; e < o->epochs; e++) {
        const double frac = o->epochs > 1 ? (double)e / (o->epochs - 1) : 0.0;
        const float lr = (float)(o->lr_final + 0.5 * (o->lr - o->lr_final) *
                                                   (1.0 + cos(3.14159265358979 * frac)));
        /* Fresh shuffle each epoch from the seeded stream. */
        for (size_t i = set->n; i > 1; i--) {
            size_t j = (size_t)(mf_rng_next(&rng) % i), t = idx[i - 1];
            idx[i - 1] = idx[j];
            idx[j] = t;
        }
        loss = 0.0;
        for (size_t b0 = 0; b0 < set->n; b0 += o->batch) {
            const size_t b1 = b0 + o->batch < set->n ? b0 + o->batch : set->n;
            const float scale = 1.0f / (float)(b1 - b0);
            float c1, c2;
            for (uint32_t t = 0; t < nt; t++) {
                w[t].begin = b0 + (b1 - b0) * t / nt;
                w[t].end = b0 + (b1 - b0) * (t + 1) / nt;
                /* Gradients are contiguous per thread: one memset clears them all. */
                memset(w[t].gw[0], 0, params * sizeof(float));
            }
            mf_distill__parallel(train_block, w, sizeof(w[0]), nt);
            for (uint32_t t = 1; t < nt; t++)
                for (size_t i = 0; i < params; i++)
                    w[0].gw[0][i] += w[t].gw[0][i];
            for (uint32_t t = 0; t < nt; t++)
                loss += w[t].loss;
            ad.step++;
            c1 = 1.0f - powf(0.9f, (float)ad.step);
            c2 = 1.0f - powf(0.999f, (float)ad.step);
            for (uint32_t l = 0; l < m->n_layers; l++) {
                const size_t nw = (size_t)m->sizes[l] * m->sizes[l + 1];
                adam_update(m->w[l], ad.mw[l], ad.vw[l], w[0].gw[l], nw, scale, lr, o->weight_decay,
                            c1, c2);
                adam_update(m->b[l], ad.mb[l], ad.vb[l], w[0].gb[l], m->sizes[l + 1], scale, lr,
                            0.0f, c1, c2);
            }
        }
    }
    if (final_loss_out)
        *final_loss_out = (float)(loss / (double)set->n);
    err = MF_OK;
fail:
    mf_free(&m->alloc, pool);
    mf_free(&m->alloc, idx);
    return err;
}
