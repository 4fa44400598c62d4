/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-block encoding choice. Every applicable candidate is built and compressed with a fast
 * zstd level; the smallest is compressed again at the final level. Candidates:
 *   COPY    - the block equals old at a candidate alignment (identical tensors and files);
 *   NUMERIC - words of 4, 2 and 1 bytes at each candidate alignment;
 *   BSDIFF  - the global bsdiff covers clipped to the block;
 *   ZSTD    - the new bytes alone (STORED when even that does not shrink them).
 * Candidate alignments (old - new offset): the container hint, the two alignments that the
 * bsdiff covers use most inside the block, the same offset, and the end-aligned offset.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "block_encode.h"
#include "delta_format.h"
#include "delta_planes.h"

#include <string.h>
#include <zstd.h>

#define TRIAL_LEVEL 3
#define MAX_ALIGN 6

struct candidate {
    uint8_t kind;
    uint8_t word;
    uint8_t sparse; /* NUMERIC: list only the non-zero residual words */
    int64_t delta;  /* old_off - new_off */
};

int mf_diff__worker_init(struct mf_block_worker *w, struct mf_ctx *ctx, size_t window)
{
    memset(w, 0, sizeof(*w));
    w->cctx = ZSTD_createCCtx();
    w->decoded = mf_ctx__alloc(ctx, window);
    w->sparse = mf_ctx__alloc(ctx, window);
    w->trial_cap = ZSTD_compressBound(window);
    w->trial = mf_ctx__alloc(ctx, w->trial_cap);
    if (!w->cctx || !w->decoded || !w->sparse || !w->trial) {
        mf_diff__worker_free(w, ctx);
        return mf_fail(ctx, MF_E_NOMEM, "encoder scratch for a %zu-byte window", window);
    }
    return MF_OK;
}

void mf_diff__worker_free(struct mf_block_worker *w, struct mf_ctx *ctx)
{
    ZSTD_freeCCtx(w->cctx);
    mf_ctx__free(ctx, w->decoded);
    mf_ctx__free(ctx, w->sparse);
    mf_ctx__free(ctx, w->trial);
    memset(w, 0, sizeof(*w));
}

/* First cover that reaches past `pos`. */
static size_t cover_find(const struct mf_cover_list *l, uint64_t pos)
{
    size_t lo = 0, hi = l->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct mf_cover *c = &l->v[mid];

        if (c->new_pos + c->add + c->copy <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void add_delta(int64_t *v, size_t *n, int64_t d)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == d)
            return;
    if (*n < MAX_ALIGN)
        v[(*n)++] = d;
}

static size_t align_candidates(int64_t *v, const struct mf_block_job *job,
                               const struct mf_block_inputs *in)
{
    uint64_t end = job->start + job->len;
    uint64_t best_len[2] = {0, 0};
    int64_t best_d[2] = {0, 0};
    size_t n = 0;

    if (job->hint)
        add_delta(v, &n, (int64_t)job->hint->old_pos - (int64_t)job->hint->new_pos);
    for (size_t i = cover_find(in->covers, job->start);
         i < in->covers->n && in->covers->v[i].new_pos < end; i++) {
        const struct mf_cover *c = &in->covers->v[i];
        int64_t d = (int64_t)c->old_pos - (int64_t)c->new_pos;

        if (c->add > best_len[0] && d != best_d[0]) {
            best_len[1] = best_len[0];
            best_d[1] = best_d[0];
            best_len[0] = c->add;
            best_d[0] = d;
        } else if (c->add > best_len[1] && d != best_d[0]) {
            best_len[1] = c->add;
            best_d[1] = d;
        }
    }
    for (int k = 0; k < 2; k++)
        if (best_len[k])
            add_delta(v, &n, best_d[k]);
    add_delta(v, &n, 0);
    add_delta(v, &n, (int64_t)in->old_len - (int64_t)in->new_len);
    return n;
}

static int old_range_ok(const struct mf_block_job *job, const struct mf_block_inputs *in,
                        int64_t delta)
{
    int64_t off = (int64_t)job->start + delta;

    return off >= 0 && (uint64_t)off + job->len <= in->old_len;
}

/*
 * BSDIFF candidate: clips the covers to the block and writes ctrl | diff | extra into
 * `buf`. Returns 0 when the control stream does not fit the window.
 */
static size_t build_bsdiff(uint8_t *buf, size_t cap, struct mf_delta_block *b,
                           const struct mf_block_job *job, const struct mf_block_inputs *in)
{
    uint64_t bs = job->start, be = job->start + job->len;
    size_t i0 = cover_find(in->covers, bs), ctrl = 0, diff = 0, extra = 0;
    uint64_t cur = 0;
    int first = 1;
    /* Pass 1 writes control entries; diff and extra are sized by the block itself. */
    for (size_t i = i0; i < in->covers->n && in->covers->v[i].new_pos < be; i++) {
        const struct mf_cover *c = &in->covers->v[i];
        uint64_t as = c->new_pos > bs ? c->new_pos : bs;
        uint64_t ae = c->new_pos + c->add < be ? c->new_pos + c->add : be;
        uint64_t cs = c->new_pos + c->add > bs ? c->new_pos + c->add : bs;
        uint64_t ce = c->new_pos + c->add + c->copy < be ? c->new_pos + c->add + c->copy : be;
        uint64_t alen = ae > as ? ae - as : 0, clen = ce > cs ? ce - cs : 0;
        uint64_t aold = c->old_pos + (as - c->new_pos);
        const struct mf_cover *nx = NULL;
        uint64_t target;

        if (!alen && !clen)
            continue;
        if (first) {
            cur = alen ? aold : 0;
            b->old_off = cur;
            first = 0;
        }
        if (ctrl + 30 > cap - job->len)
            return 0;
        ctrl += mf_delta__varint_put(buf + ctrl, alen);
        ctrl += mf_delta__varint_put(buf + ctrl, clen);
        if (alen)
            cur = aold + alen;
        /* Seek to where the next piece inside the block reads old. */
        if (i + 1 < in->covers->n && in->covers->v[i + 1].new_pos < be)
            nx = &in->covers->v[i + 1];
        target = (nx && nx->add) ? nx->old_pos : cur;
        ctrl += mf_delta__varint_put(buf + ctrl, mf_delta__zigzag((int64_t)target - (int64_t)cur));
        cur = target;
    }
    /* Pass 2: diff then extra bytes, in block order. */
    for (size_t i = i0; i < in->covers->n && in->covers->v[i].new_pos < be; i++) {
        const struct mf_cover *c = &in->covers->v[i];
        uint64_t as = c->new_pos > bs ? c->new_pos : bs;
        uint64_t ae = c->new_pos + c->add < be ? c->new_pos + c->add : be;

        for (uint64_t p = as; p < ae; p++)
            buf[ctrl + diff++] = (uint8_t)(in->new_img[p] - in->old[c->old_pos + (p - c->new_pos)]);
    }
    for (size_t i = i0; i < in->covers->n && in->covers->v[i].new_pos < be; i++) {
        const struct mf_cover *c = &in->covers->v[i];
        uint64_t cs = c->new_pos + c->add > bs ? c->new_pos + c->add : bs;
        uint64_t ce = c->new_pos + c->add + c->copy < be ? c->new_pos + c->add + c->copy : be;

        if (ce > cs) {
            memcpy(buf + ctrl + diff + extra, in->new_img + cs, ce - cs);
            extra += ce - cs;
        }
    }
    b->ctrl_len = (uint32_t)ctrl;
    b->diff_len = (uint32_t)diff;
    return ctrl + diff + extra;
}

/* Builds candidate `c` into w->decoded (or points at new); fills the block header fields. */
static size_t build(const uint8_t **src, struct mf_delta_block *b, const struct candidate *c,
                    struct mf_block_worker *w, const struct mf_block_job *job,
                    const struct mf_block_inputs *in)
{
    memset(b, 0, sizeof(*b));
    b->kind = c->kind;
    b->new_len = job->len;
    *src = w->decoded;
    switch ((enum mf_delta_kind)c->kind) {
    case MF_DELTA_NUMERIC:
        b->word = c->word;
        b->flags = MF_DELTA_NUM_ZIGZAG;
        b->old_off = (uint64_t)((int64_t)job->start + c->delta);
        mf_delta__planes_split(w->decoded, in->old + b->old_off, in->new_img + job->start,
                               job->len / c->word, c->word, MF_DELTA_NUM_ZIGZAG);
        if (c->sparse) {
            /* Only when at most a quarter of the words changed: else dense always wins. */
            size_t n = mf_delta__sparse_encode(w->sparse, job->len / 4 + 16, w->decoded,
                                               job->len / c->word, c->word);

            b->flags |= MF_DELTA_NUM_SPARSE;
            *src = w->sparse;
            return n;
        }
        return job->len;
    case MF_DELTA_BSDIFF:
        return build_bsdiff(w->decoded, in->window, b, job, in);
    case MF_DELTA_ZSTD:
    case MF_DELTA_STORED:
    case MF_DELTA_COPY:
    case MF_DELTA_KIND_COUNT:
        break;
    }
    *src = in->new_img + job->start;
    return job->len;
}

static size_t compress(struct mf_block_worker *w, const uint8_t *src, size_t len, int level)
{
    size_t r;

    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0);
    r = ZSTD_compress2(w->cctx, w->trial, w->trial_cap, src, len);
    return ZSTD_isError(r) ? SIZE_MAX : r;
}

static int emit(struct mf_block_job *job, struct mf_ctx *ctx, struct mf_delta_block *b,
                const uint8_t *payload)
{
    job->out_len = MF_DELTA_BLOCK_HEADER_SIZE + b->payload_len;
    job->out = mf_ctx__alloc(ctx, job->out_len);
    if (!job->out)
        return mf_fail(ctx, MF_E_NOMEM, "block of %zu bytes", job->out_len);
    mf_delta__block_write(job->out, b);
    if (b->payload_len)
        memcpy(job->out + MF_DELTA_BLOCK_HEADER_SIZE, payload, b->payload_len);
    job->window_used = b->payload_len > b->decoded_len ? b->payload_len : b->decoded_len;
    if (b->kind == MF_DELTA_NUMERIC && job->window_used < b->new_len)
        job->window_used = b->new_len; /* sparse residuals expand to new_len in the decoder */
    return MF_OK;
}

int mf_diff__block_encode(struct mf_block_job *job, struct mf_block_worker *w, struct mf_ctx *ctx,
                          const struct mf_block_inputs *in)
{
    struct candidate cands[4 + 6 * MAX_ALIGN], best = {MF_DELTA_ZSTD, 0, 0, 0};
    int64_t deltas[MAX_ALIGN];
    size_t nd = align_candidates(deltas, job, in), nc = 0, best_size = SIZE_MAX;
    struct mf_delta_block b;
    const uint8_t *src;
    size_t dlen, final;

    for (size_t i = 0; i < nd; i++) {
        if (old_range_ok(job, in, deltas[i]) &&
            memcmp(in->old + job->start + deltas[i], in->new_img + job->start, job->len) == 0) {
            memset(&b, 0, sizeof(b));
            b.kind = MF_DELTA_COPY;
            b.new_len = job->len;
            b.old_off = (uint64_t)((int64_t)job->start + deltas[i]);
            return emit(job, ctx, &b, NULL);
        }
    }
    cands[nc++] = (struct candidate){MF_DELTA_ZSTD, 0, 0, 0};
    if (in->old_len)
        cands[nc++] = (struct candidate){MF_DELTA_BSDIFF, 0, 0, 0};
    for (size_t i = 0; i < nd; i++) {
        static const uint8_t words[3] = {4, 2, 1};

        if (!old_range_ok(job, in, deltas[i]))
            continue;
        for (int k = 0; k < 3; k++) {
            if (job->len % words[k] != 0 ||
                (job->hint && job->hint->word && i == 0 && words[k] != job->hint->word))
                continue;
            cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, words[k], 0, deltas[i]};
            cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, words[k], 1, deltas[i]};
        }
    }
    for (size_t i = 0; i < nc; i++) {
        size_t sz;

        dlen = build(&src, &b, &cands[i], w, job, in);
        if (!dlen)
            continue;
        sz = compress(w, src, dlen, TRIAL_LEVEL);
        if (sz < best_size) {
            best_size = sz;
            best = cands[i];
        }
    }
    dlen = build(&src, &b, &best, w, job, in);
    final = compress(w, src, dlen, in->level);
    if (final == SIZE_MAX)
        return mf_fail(ctx, MF_E_GENERIC, "zstd failed on block at %llu",
                       (unsigned long long)job->start);
    if (final >= job->len) {
        memset(&b, 0, sizeof(b));
        b.kind = MF_DELTA_STORED;
        b.new_len = b.payload_len = job->len;
        return emit(job, ctx, &b, in->new_img + job->start);
    }
    b.payload_len = (uint32_t) final;
    b.decoded_len = (uint32_t)dlen;
    return emit(job, ctx, &b, w->trial);
}
