/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mf_diff handle and the mf-format writer: plans blocks (cut at container tensor/file
 * boundaries where known, else every 3/4 window), encodes them on `threads` workers that
 * pull block indices from a shared counter, and writes header + blocks in order.
 * Memory: the cover search peak (5 x old) or the encoded blocks (about the patch size) plus
 * 3 windows per worker; the inputs are borrowed.
 */
#include "block_encode.h"
#include "delta_format.h"

#include <mbedtls/sha256.h>
#include <pthread.h>
#include <string.h>

#define MIN_HINT_BLOCK 4096u

int mf_diff_options_init(mf_diff_options *opts, unsigned int version)
{
    if (version != MF_DIFF_OPTIONS_VERSION)
        return MF_E_INVALID;
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    opts->format = MF_DIFF_FORMAT_MF;
    opts->level = 19;
    opts->threads = 2;
    opts->max_window = MF_PATCH_DEFAULT_WINDOW;
    opts->max_new_size = (uint64_t)4 << 30;
    return MF_OK;
}

int mf_diff_new(mf_diff **out, const mf_diff_options *opts, const mf_allocator *alloc)
{
    mf_diff_options def;
    mf_diff *d;

    *out = NULL;
    if (!opts) {
        if (mf_diff_options_init(&def, MF_DIFF_OPTIONS_VERSION) < 0)
            return MF_E_INVALID;
        opts = &def;
    }
    if (opts->version != MF_DIFF_OPTIONS_VERSION || opts->max_window < MF_PATCH_MIN_WINDOW ||
        opts->max_window > MF_DELTA_MAX_BLOCK_OUT || opts->threads == 0 || opts->threads > 64 ||
        (opts->format != MF_DIFF_FORMAT_MF && opts->format != MF_DIFF_FORMAT_BSDIFF40))
        return MF_E_INVALID;
    d = mf_alloc(alloc, sizeof(*d));
    if (!d)
        return MF_E_NOMEM;
    mf_ctx__init(&d->ctx, alloc, NULL, NULL, "diff");
    d->opts = *opts;
    *out = d;
    return MF_OK;
}

void mf_diff_free(mf_diff *d)
{
    mf_allocator a;

    if (!d)
        return;
    a = d->ctx.alloc;
    mf_free(&a, d);
}

const char *mf_diff_errmsg(const mf_diff *d)
{
    return mf_ctx__errmsg(&d->ctx);
}

int mf_diff_create(uint8_t **patch_out, size_t *patch_len_out, mf_diff *d, const uint8_t *old,
                   size_t old_len, const uint8_t *new_img, size_t new_len)
{
    *patch_out = NULL;
    *patch_len_out = 0;
    mf_ctx__clear(&d->ctx);
    if (d->opts.format == MF_DIFF_FORMAT_BSDIFF40)
        return mf_diff__create_bsdiff40(patch_out, patch_len_out, d, old, old_len, new_img,
                                        new_len);
    return mf_diff__create_mf(patch_out, patch_len_out, d, old, old_len, new_img, new_len);
}

struct job_list {
    struct mf_block_job *v;
    size_t n, cap;
};

static int job_push(struct job_list *l, struct mf_ctx *ctx, uint64_t start, uint64_t len,
                    const struct mf_align_hint *hint, size_t max_block)
{
    /* Split evenly so a segment never ends in a sliver; keep word alignment (4). */
    uint64_t parts = (len + max_block - 1) / max_block;
    uint64_t step = ((len + parts - 1) / parts + 3) & ~(uint64_t)3;

    for (uint64_t off = 0; off < len; off += step) {
        struct mf_block_job j;

        memset(&j, 0, sizeof(j));
        j.start = start + off;
        j.len = (uint32_t)(len - off < step ? len - off : step);
        j.hint = hint;
        l->v = mf_diff__list_push(ctx, l->v, &l->n, &l->cap, sizeof(j), 256, "block list", &j);
        if (!l->v)
            return MF_E_NOMEM;
    }
    return MF_OK;
}

/* Blocks follow the hints (large ones only); the gaps between them are cut uniformly. */
static int plan_blocks(struct job_list *jobs, struct mf_ctx *ctx, const struct mf_hint_list *h,
                       size_t new_len, size_t max_block)
{
    uint64_t pos = 0;
    int err = MF_OK;

    for (size_t i = 0; i < h->n && err == MF_OK; i++) {
        const struct mf_align_hint *x = &h->v[i];

        if (x->len < MIN_HINT_BLOCK || x->new_pos < pos)
            continue;
        if (x->new_pos > pos)
            err = job_push(jobs, ctx, pos, x->new_pos - pos, NULL, max_block);
        if (err == MF_OK)
            err = job_push(jobs, ctx, x->new_pos, x->len, x, max_block);
        pos = x->new_pos + x->len;
    }
    if (err == MF_OK && pos < new_len)
        err = job_push(jobs, ctx, pos, new_len - pos, NULL, max_block);
    return err;
}

struct pool {
    pthread_mutex_t mu;
    size_t next;
    int err;
    struct mf_diff *d;
    struct job_list *jobs;
    const struct mf_block_inputs *in;
};

struct worker_arg {
    struct pool *pool;
    struct mf_ctx ctx; /* own message buffer: workers never share one */
};

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct pool *pl = wa->pool;
    struct mf_block_worker w;
    int err = mf_diff__worker_init(&w, &wa->ctx, pl->in->window);

    while (err == MF_OK) {
        size_t i;

        pthread_mutex_lock(&pl->mu);
        i = pl->err < 0 ? pl->jobs->n : pl->next++;
        pthread_mutex_unlock(&pl->mu);
        if (i >= pl->jobs->n)
            break;
        err = mf_diff__block_encode(&pl->jobs->v[i], &w, &wa->ctx, pl->in);
    }
    mf_diff__worker_free(&w, &wa->ctx);
    pthread_mutex_lock(&pl->mu);
    if (err < 0 && pl->err == MF_OK) {
        pl->err = err;
        (void)mf_fail(&pl->d->ctx, err, "%s", mf_ctx__errmsg(&wa->ctx));
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

static int run_pool(struct mf_diff *d, struct job_list *jobs, const struct mf_block_inputs *in)
{
    struct pool pl = {.next = 0, .err = MF_OK, .d = d, .jobs = jobs, .in = in};
    struct worker_arg args[64];
    pthread_t tids[64];
    unsigned int nt = d->opts.threads, started = 0;

    if (pthread_mutex_init(&pl.mu, NULL) != 0)
        return mf_fail(&d->ctx, MF_E_GENERIC, "mutex init failed");
    if (nt > jobs->n)
        nt = jobs->n ? (unsigned int)jobs->n : 1;
    for (unsigned int t = 0; t < nt; t++) {
        args[t].pool = &pl;
        args[t].ctx = d->ctx;
    }
    for (unsigned int t = 1; t < nt; t++) {
        if (pthread_create(&tids[t], NULL, worker_main, &args[t]) != 0)
            break;
        started = t;
    }
    worker_main(&args[0]); /* the caller's thread works too */
    for (unsigned int t = 1; t <= started; t++)
        pthread_join(tids[t], NULL);
    pthread_mutex_destroy(&pl.mu);
    return pl.err;
}

static int sha256(uint8_t out[32], struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    if (mbedtls_sha256_ret(p, n, out, 0) != 0)
        return mf_fail(ctx, MF_E_GENERIC, "sha256 failed");
    return MF_OK;
}

static int assemble(uint8_t **patch_out, size_t *patch_len_out, struct mf_ctx *ctx,
                    const struct job_list *jobs, struct mf_delta_header *h)
{
    size_t total = MF_DELTA_HEADER_SIZE, pos;
    uint8_t *p;

    h->window = MF_PATCH_MIN_WINDOW;
    for (size_t i = 0; i < jobs->n; i++) {
        total += jobs->v[i].out_len;
        if (jobs->v[i].window_used > h->window)
            h->window = jobs->v[i].window_used;
    }
    p = mf_ctx__alloc(ctx, total);
    if (!p)
        return mf_fail(ctx, MF_E_NOMEM, "patch of %zu bytes", total);
    mf_delta__header_write(p, h);
    pos = MF_DELTA_HEADER_SIZE;
    for (size_t i = 0; i < jobs->n; i++) {
        memcpy(p + pos, jobs->v[i].out, jobs->v[i].out_len);
        pos += jobs->v[i].out_len;
    }
    *patch_out = p;
    *patch_len_out = total;
    return MF_OK;
}

int mf_diff__create_mf(uint8_t **patch_out, size_t *patch_len_out, struct mf_diff *d,
                       const uint8_t *old, size_t old_len, const uint8_t *new_img, size_t new_len)
{
    struct mf_ctx *ctx = &d->ctx;
    struct mf_cover_list covers = {0};
    struct mf_hint_list hints = {0};
    struct job_list jobs = {0};
    struct mf_delta_header h = {.version = MF_DELTA_VERSION};
    size_t max_block = d->opts.max_window / 4 * 3;
    struct mf_block_inputs in = {
        old, old_len, new_img, new_len, &covers, d->opts.max_window, d->opts.level};
    int err;

    h.old_size = old_len;
    h.new_size = new_len;
    err = sha256(h.old_sha256, ctx, old, old_len);
    if (err == MF_OK)
        err = sha256(h.new_sha256, ctx, new_img, new_len);
    if (err == MF_OK)
        err = mf_diff__container_hints(&hints, ctx, old, old_len, new_img, new_len);
    if (err == MF_OK)
        err = mf_diff__cover_search(&covers, ctx, old, old_len, new_img, new_len, d->opts.threads);
    if (err == MF_OK)
        err = plan_blocks(&jobs, ctx, &hints, new_len, max_block & ~(size_t)3);
    if (err == MF_OK && jobs.n > UINT32_MAX)
        err = mf_fail(ctx, MF_E_LIMIT, "%zu blocks exceed the format", jobs.n);
    if (err == MF_OK)
        err = run_pool(d, &jobs, &in);
    if (err == MF_OK) {
        uint64_t count = 0;

        for (size_t i = 0; i < jobs.n; i++)
            count += jobs.v[i].nblocks;
        if (count > UINT32_MAX)
            err = mf_fail(ctx, MF_E_LIMIT, "%llu blocks exceed the format",
                          (unsigned long long)count);
        h.block_count = (uint32_t)count;
    }
    if (err == MF_OK)
        err = assemble(patch_out, patch_len_out, ctx, &jobs, &h);
    for (size_t i = 0; i < jobs.n; i++)
        mf_ctx__free(ctx, jobs.v[i].out);
    mf_ctx__free(ctx, jobs.v);
    mf_diff__cover_list_free(ctx, &covers);
    mf_diff__hint_list_free(ctx, &hints);
    return err;
}
