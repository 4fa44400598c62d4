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
/* Halving a block is tried down to MIN_SPLIT bytes, at most MAX_SPLIT_DEPTH times, and kept
 * when the halves save more than SPLIT_COST (a block header and a zstd frame header). */
#define MAX_SPLIT_DEPTH 3
#define MIN_SPLIT (16u * 1024u)
#define SPLIT_COST 48u

struct candidate {
    uint8_t kind;
    uint8_t word;
    uint8_t sparse; /* NUMERIC: list only the non-zero residual words */
    uint8_t raw;    /* NUMERIC: no old words (planes of the new values) */
    uint8_t flt;    /* NUMERIC raw: float planes (sign rotated, sorted by top byte) */
    int64_t delta;  /* old_off - new_off */
};

int mf_diff__worker_init(struct mf_block_worker *w, struct mf_ctx *ctx, size_t window)
{
    memset(w, 0, sizeof(*w));
    w->cctx = ZSTD_createCCtx();
    w->decoded = mf_ctx__alloc(ctx, window);
    w->sparse = mf_ctx__alloc(ctx, window);
    w->trial_cap = ZSTD_compressBound(window) + 5 * ZSTD_compressBound(0);
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
        if (c->flt) {
            /* Floats with no counterpart: exponent plane, mantissa bytes by exponent. */
            b->flags = MF_DELTA_NUM_RAW | MF_DELTA_NUM_FLOAT;
            mf_delta__float_split(w->decoded, &w->fl, in->new_img + job->start, job->len / c->word,
                                  c->word);
            return job->len;
        }
        if (c->raw) {
            /* New data with no counterpart in old: byte planes of the values themselves. */
            b->flags = MF_DELTA_NUM_RAW;
            mf_delta__planes_split(w->decoded, NULL, in->new_img + job->start, job->len / c->word,
                                   c->word, 0);
            return job->len;
        }
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

/* Float planes: a run of the top mantissa plane gets a frame of its own once it holds at
 * least this many bytes (runs of rare exponents are pooled until they do). */
#define FLOAT_MIN_FRAME 4096u
/* The parts of one block: the lower planes of float planes are cut at runs of top bytes. */
#define MAX_PARTS (4 + 256)

/* Float planes: the top mantissa plane (below the exponent) in runs of one exponent each,
 * pooled up to FLOAT_MIN_FRAME; the other planes whole. */
static size_t float_parts(size_t *parts, const struct mf_delta_block *b, const uint8_t *src,
                          size_t len)
{
    size_t nwords = len / b->word, n = 0, run = 0;
    uint32_t counts[256];

    mf_delta__float_counts(counts, src + (b->word - 1) * nwords, nwords);
    for (unsigned int k = 0; k + 2 < b->word; k++)
        parts[n++] = nwords;
    for (unsigned int t = 0; t < 256; t++) {
        run += counts[t];
        if (run >= FLOAT_MIN_FRAME) {
            parts[n++] = run;
            run = 0;
        }
    }
    if (run)
        parts[n++] = run;
    parts[n++] = nwords; /* the top plane */
    return n;
}

/*
 * Streams of different statistics (byte planes; sparse gaps and values; bsdiff control, diff
 * and extra) get a zstd frame each, so each gets its own entropy tables; the decoder
 * decompresses the concatenated frames in one call. Returns the part count.
 */
static size_t split_parts(size_t *parts, const struct mf_delta_block *b, const uint8_t *src,
                          size_t len)
{
    uint64_t count = 0;
    size_t n = 0;

    if (b->kind == MF_DELTA_NUMERIC && (b->flags & MF_DELTA_NUM_FLOAT))
        return float_parts(parts, b, src, len);
    if (b->kind == MF_DELTA_BSDIFF) {
        parts[0] = b->ctrl_len;
        parts[1] = b->diff_len;
        parts[2] = len - b->ctrl_len - b->diff_len;
        return 3;
    }
    if (b->kind != MF_DELTA_NUMERIC) {
        parts[0] = len;
        return 1;
    }
    if (b->flags & MF_DELTA_NUM_SPARSE) {
        (void)mf_delta__varint_get(&count, src, len);
        parts[n++] = len - (size_t)count * b->word;
        for (unsigned int k = 0; k < b->word; k++)
            parts[n++] = (size_t)count;
        return n;
    }
    for (unsigned int k = 0; k < b->word; k++)
        parts[n++] = len / b->word;
    return n;
}

static size_t compress(struct mf_block_worker *w, const uint8_t *src, size_t len, int level,
                       const struct mf_delta_block *b)
{
    size_t parts[MAX_PARTS], np = split_parts(parts, b, src, len), out = 0;

    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0);
    for (size_t i = 0; i < np; i++) {
        size_t r;

        if (parts[i] == 0)
            continue;
        r = ZSTD_compress2(w->cctx, w->trial + out, w->trial_cap - out, src, parts[i]);
        if (ZSTD_isError(r))
            return SIZE_MAX;
        out += r;
        src += parts[i];
    }
    return out;
}

/* Appends one block (header + payload) to the job's output. */
static int emit(struct mf_block_job *job, struct mf_ctx *ctx, struct mf_delta_block *b,
                const uint8_t *payload)
{
    size_t add = MF_DELTA_BLOCK_HEADER_SIZE + b->payload_len;
    uint8_t *out = mf_ctx__alloc(ctx, job->out_len + add);
    uint32_t used = b->payload_len > b->decoded_len ? b->payload_len : b->decoded_len;

    if (!out)
        return mf_fail(ctx, MF_E_NOMEM, "block of %zu bytes", add);
    if (job->out_len)
        memcpy(out, job->out, job->out_len);
    mf_ctx__free(ctx, job->out);
    job->out = out;
    mf_delta__block_write(out + job->out_len, b);
    if (b->payload_len)
        memcpy(out + job->out_len + MF_DELTA_BLOCK_HEADER_SIZE, payload, b->payload_len);
    job->out_len += add;
    job->nblocks++;
    if (b->kind == MF_DELTA_NUMERIC && used < b->new_len)
        used = b->new_len; /* sparse residuals expand to new_len in the decoder */
    if (used > job->window_used)
        job->window_used = used;
    return MF_OK;
}

/* The best encoding of range `r` by trial compression (size 0 for COPY). */
struct choice {
    struct candidate c;
    size_t size;
    int copy;
};

static void choose(struct choice *out, struct mf_block_worker *w, const struct mf_block_job *r,
                   const struct mf_block_inputs *in)
{
    struct candidate cands[8 + 6 * MAX_ALIGN];
    int64_t deltas[MAX_ALIGN];
    size_t nd = align_candidates(deltas, r, in), nc = 0;
    struct mf_delta_block b;
    const uint8_t *src;

    memset(out, 0, sizeof(*out));
    out->c.kind = MF_DELTA_ZSTD;
    out->size = SIZE_MAX;
    for (size_t i = 0; i < nd; i++) {
        if (old_range_ok(r, in, deltas[i]) &&
            memcmp(in->old + r->start + deltas[i], in->new_img + r->start, r->len) == 0) {
            out->copy = 1;
            out->c.delta = deltas[i];
            out->size = 0;
            return;
        }
    }
    cands[nc++] = (struct candidate){MF_DELTA_ZSTD, 0, 0, 0, 0, 0};
    for (uint8_t word = 4; word >= 2; word /= 2) {
        if (r->len % word)
            continue;
        cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, word, 0, 1, 0, 0};
        cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, word, 0, 1, 1, 0};
    }
    if (in->old_len)
        cands[nc++] = (struct candidate){MF_DELTA_BSDIFF, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < nd; i++) {
        static const uint8_t words[3] = {4, 2, 1};

        if (!old_range_ok(r, in, deltas[i]))
            continue;
        for (int k = 0; k < 3; k++) {
            if (r->len % words[k] != 0 ||
                (r->hint && r->hint->word && i == 0 && words[k] != r->hint->word))
                continue;
            cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, words[k], 0, 0, 0, deltas[i]};
            cands[nc++] = (struct candidate){MF_DELTA_NUMERIC, words[k], 1, 0, 0, deltas[i]};
        }
    }
    for (size_t i = 0; i < nc; i++) {
        size_t dlen = build(&src, &b, &cands[i], w, r, in), sz;

        if (!dlen)
            continue;
        sz = compress(w, src, dlen, TRIAL_LEVEL, &b);
        if (sz < out->size) {
            out->size = sz;
            out->c = cands[i];
        }
    }
}

/* Encodes range `r` with choice `ch` at the final level and appends the block. */
static int finalize(struct mf_block_job *job, struct mf_block_worker *w, struct mf_ctx *ctx,
                    const struct mf_block_job *r, const struct choice *ch,
                    const struct mf_block_inputs *in)
{
    struct mf_delta_block b;
    const uint8_t *src;
    size_t dlen, final;

    memset(&b, 0, sizeof(b));
    if (ch->copy) {
        b.kind = MF_DELTA_COPY;
        b.new_len = r->len;
        b.old_off = (uint64_t)((int64_t)r->start + ch->c.delta);
        return emit(job, ctx, &b, NULL);
    }
    dlen = build(&src, &b, &ch->c, w, r, in);
    final = dlen ? compress(w, src, dlen, in->level, &b) : SIZE_MAX;
    if (final == SIZE_MAX)
        return mf_fail(ctx, MF_E_GENERIC, "zstd failed on block at %llu",
                       (unsigned long long)r->start);
    if (final >= r->len) {
        memset(&b, 0, sizeof(b));
        b.kind = MF_DELTA_STORED;
        b.new_len = b.payload_len = r->len;
        return emit(job, ctx, &b, in->new_img + r->start);
    }
    b.payload_len = (uint32_t) final;
    b.decoded_len = (uint32_t)dlen;
    return emit(job, ctx, &b, w->trial);
}

/*
 * Splits a range in halves while that pays: each half gets its own alignment, so a block
 * that straddles tensors moved by different amounts is not forced onto one of them.
 */
static int encode_range(struct mf_block_job *job, struct mf_block_worker *w, struct mf_ctx *ctx,
                        const struct mf_block_job *r, const struct choice *ch, int depth,
                        const struct mf_block_inputs *in)
{
    struct mf_block_job a = *r, b = *r;
    struct choice ca, cb;
    uint32_t half = (r->len / 2) & ~(uint32_t)3;
    int err;

    if (ch->copy || depth >= MAX_SPLIT_DEPTH || r->len < 2 * MIN_SPLIT)
        return finalize(job, w, ctx, r, ch, in);
    a.len = half;
    b.start += half;
    b.len -= half;
    choose(&ca, w, &a, in);
    choose(&cb, w, &b, in);
    if (ca.size == SIZE_MAX || cb.size == SIZE_MAX || ca.size + cb.size + SPLIT_COST >= ch->size)
        return finalize(job, w, ctx, r, ch, in);
    err = encode_range(job, w, ctx, &a, &ca, depth + 1, in);
    return err < 0 ? err : encode_range(job, w, ctx, &b, &cb, depth + 1, in);
}

int mf_diff__block_encode(struct mf_block_job *job, struct mf_block_worker *w, struct mf_ctx *ctx,
                          const struct mf_block_inputs *in)
{
    struct choice ch;

    choose(&ch, w, job, in);
    if (ch.size == SIZE_MAX)
        return mf_fail(ctx, MF_E_GENERIC, "zstd failed on block at %llu",
                       (unsigned long long)job->start);
    return encode_range(job, w, ctx, job, &ch, 0, in);
}
