/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Teacher cache: training the 784-512-256-10 teacher takes minutes, so it is trained once
 * and stored as safetensors. The file carries a key (architecture, recipe and a hash of
 * the training data); a file with another key is retrained over, never silently reused.
 */
#include "mf_distill.h"

#include "mf_ctx.h"
#include "mf_dataset.h"

#include <stdio.h>
#include <string.h>

#define KEY_NAME "mf_cache_key"

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

static void cache_key(char *key, size_t size, const mf_dataset *train, const uint32_t *sizes,
                      uint32_t n_sizes, const mf_train_options *o)
{
    uint64_t h = fnv1a(0xCBF29CE484222325ull, train->x, train->n * train->dim);
    int off;

    h = fnv1a(h, train->y, train->n);
    off = snprintf(key, size, "v1;n=%zu;data=%016llx;arch=", train->n, (unsigned long long)h);
    for (uint32_t l = 0; l < n_sizes && off > 0 && (size_t)off < size; l++)
        off += snprintf(key + off, size - (size_t)off, "%s%u", l ? "-" : "", sizes[l]);
    if (off > 0 && (size_t)off < size)
        (void)snprintf(key + off, size - (size_t)off,
                       ";ep=%u;bs=%u;lr=%g;lrf=%g;wd=%g;seed=%llu;thr=%u", o->epochs, o->batch,
                       (double)o->lr, (double)o->lr_final, (double)o->weight_decay,
                       (unsigned long long)o->seed, o->threads);
}

int mf_teacher_load_or_train(mf_mlp **out, int *trained_out, struct mf_ctx *ctx,
                             const mf_dataset *train, const uint32_t *sizes, uint32_t n_sizes,
                             const mf_train_options *o, const char *cache_path)
{
    char key[256];
    const char *meta[2];
    mf_train_set set = {.n = train->n, .x = train->x, .y = train->y};
    mf_mlp *m = NULL;
    int err;

    *out = NULL;
    if (trained_out)
        *trained_out = 0;
    if (n_sizes < 2 || sizes[0] != train->dim)
        return mf_fail(ctx, MF_E_INVALID, "teacher input %u does not match data dim %u",
                       n_sizes ? sizes[0] : 0, train->dim);
    cache_key(key, sizeof(key), train, sizes, n_sizes, o);
    if (cache_path) {
        err = mf_mlp_load(&m, ctx, NULL, cache_path, KEY_NAME, key);
        if (err == MF_OK) {
            *out = m;
            return MF_OK;
        }
        MF_LOG_INFO(ctx, "teacher cache %s not usable (%s): training", cache_path,
                    mf_ctx__errmsg(ctx));
    }
    err = mf_mlp_new(&m, ctx, NULL, sizes, n_sizes, 1.0f / (float)train->max_value, o->seed);
    if (err == MF_OK)
        err = mf_mlp_train(m, ctx, &set, o, NULL);
    if (err == MF_OK && cache_path) {
        meta[0] = KEY_NAME;
        meta[1] = key;
        err = mf_mlp_save(m, ctx, cache_path, meta, 1);
    }
    if (err < 0) {
        mf_mlp_free(m);
        return err;
    }
    if (trained_out)
        *trained_out = 1;
    *out = m;
    return MF_OK;
}
