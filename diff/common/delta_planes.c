/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-plane residual transform of NUMERIC blocks (see delta_planes.h). */
#include "delta_planes.h"
#include "delta_format.h"
#include "mf/error.h"

#include <string.h>

static uint64_t load_word(const uint8_t *p, unsigned int word)
{
    uint64_t v = 0;

    for (unsigned int k = 0; k < word; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

/* Sign-extends a `word`-byte residual so zigzag sees small negative steps as small. */
static int64_t sign_extend(uint64_t v, unsigned int word)
{
    unsigned int shift = 64 - 8 * word;

    return (int64_t)(v << shift) >> shift;
}

void mf_delta__planes_split(uint8_t *planes, const uint8_t *old_words, const uint8_t *new_words,
                            size_t nwords, unsigned int word, unsigned int flags)
{
    uint64_t mask = word == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * word)) - 1;

    for (size_t i = 0; i < nwords; i++) {
        uint64_t base = old_words ? load_word(old_words + i * word, word) : 0;
        uint64_t r = (load_word(new_words + i * word, word) - base) & mask;

        if (flags & MF_DELTA_NUM_ZIGZAG)
            r = mf_delta__zigzag(sign_extend(r, word)) & mask;
        for (unsigned int k = 0; k < word; k++)
            planes[k * nwords + i] = (uint8_t)(r >> (8 * k));
    }
}

/* The hot loop of apply for fp32 weights: kept branch-free on the word size. */
static void merge4_zigzag(uint8_t *buf, const uint8_t *p0, size_t nwords, size_t count)
{
    const uint8_t *p1 = p0 + nwords, *p2 = p1 + nwords, *p3 = p2 + nwords;

    for (size_t i = 0; i < count; i++) {
        uint32_t z =
            (uint32_t)p0[i] | (uint32_t)p1[i] << 8 | (uint32_t)p2[i] << 16 | (uint32_t)p3[i] << 24;
        uint32_t r = (z >> 1) ^ (0u - (z & 1u));
        uint32_t o = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                     (uint32_t)buf[4 * i + 2] << 16 | (uint32_t)buf[4 * i + 3] << 24;
        uint32_t n = o + r;

        buf[4 * i] = (uint8_t)n;
        buf[4 * i + 1] = (uint8_t)(n >> 8);
        buf[4 * i + 2] = (uint8_t)(n >> 16);
        buf[4 * i + 3] = (uint8_t)(n >> 24);
    }
}

/* The same for fp16/bf16 weights (two planes), zigzagged or not: with `zigzag` a constant at
 * each call the compiler makes two branch-free loops. The generic path below took two thirds
 * of the apply time of an fp16 model (bench/delta/README.md). */
static inline void merge2(uint8_t *buf, const uint8_t *p0, size_t nwords, size_t count, int zigzag)
{
    const uint8_t *p1 = p0 + nwords;

    for (size_t i = 0; i < count; i++) {
        uint32_t z = (uint32_t)p0[i] | (uint32_t)p1[i] << 8;
        uint32_t r = zigzag ? (z >> 1) ^ (0u - (z & 1u)) : z;
        uint32_t n = ((uint32_t)buf[2 * i] | (uint32_t)buf[2 * i + 1] << 8) + r;

        buf[2 * i] = (uint8_t)n;
        buf[2 * i + 1] = (uint8_t)(n >> 8);
    }
}

/* Adds residual `r` (as stored: zigzagged if the block says so) to the word at `dst`. */
static void add_residual(uint8_t *dst, uint64_t r, unsigned int word, unsigned int flags)
{
    uint64_t mask = ((uint64_t)1 << (8 * word)) - 1;
    uint64_t v;

    if (flags & MF_DELTA_NUM_ZIGZAG)
        r = (uint64_t)mf_delta__unzigzag(r);
    v = (load_word(dst, word) + r) & mask;
    for (unsigned int k = 0; k < word; k++)
        dst[k] = (uint8_t)(v >> (8 * k));
}

void mf_delta__planes_merge(uint8_t *buf, const uint8_t *planes, size_t nwords, size_t first,
                            size_t count, unsigned int word, unsigned int flags)
{
    if (word == 4 && (flags & MF_DELTA_NUM_ZIGZAG)) {
        merge4_zigzag(buf, planes + first, nwords, count);
        return;
    }
    if (word == 2) {
        if (flags & MF_DELTA_NUM_ZIGZAG)
            merge2(buf, planes + first, nwords, count, 1);
        else
            merge2(buf, planes + first, nwords, count, 0);
        return;
    }
    for (size_t i = 0; i < count; i++) {
        uint64_t r = 0;

        for (unsigned int k = 0; k < word; k++)
            r |= (uint64_t)planes[k * nwords + first + i] << (8 * k);
        add_residual(buf + i * word, r, word, flags);
    }
}

static uint32_t rotl(uint32_t v, unsigned int word)
{
    unsigned int bits = 8 * word;
    uint32_t mask = bits == 32 ? UINT32_MAX : ((uint32_t)1 << bits) - 1;

    return ((v << 1) | (v >> (bits - 1))) & mask;
}

static uint32_t rotr(uint32_t u, unsigned int word)
{
    unsigned int bits = 8 * word;

    return (u >> 1) | ((u & 1u) << (bits - 1));
}

void mf_delta__float_counts(uint32_t counts[256], const uint8_t *top, size_t nwords)
{
    memset(counts, 0, 256 * sizeof(counts[0]));
    for (size_t i = 0; i < nwords; i++)
        counts[top[i]]++;
}

/* Start of each top byte value's run in the lower planes. */
static void float_starts(struct mf_delta_float *c, const uint8_t *top, size_t nwords)
{
    uint32_t at = 0;

    mf_delta__float_counts(c->pos, top, nwords);
    for (unsigned int t = 0; t < 256; t++) {
        uint32_t n = c->pos[t];

        c->pos[t] = at;
        at += n;
    }
}

void mf_delta__float_split(uint8_t *planes, struct mf_delta_float *c, const uint8_t *new_words,
                           size_t nwords, unsigned int word)
{
    uint8_t *top = planes + (size_t)(word - 1) * nwords;

    for (size_t i = 0; i < nwords; i++)
        top[i] = (uint8_t)(rotl((uint32_t)load_word(new_words + i * word, word), word) >>
                           (8 * (word - 1)));
    float_starts(c, top, nwords);
    for (size_t i = 0; i < nwords; i++) {
        uint32_t u = rotl((uint32_t)load_word(new_words + i * word, word), word);
        uint32_t j = c->pos[top[i]]++;

        for (unsigned int k = 0; k + 1 < word; k++)
            planes[k * nwords + j] = (uint8_t)(u >> (8 * k));
    }
}

void mf_delta__float_begin(struct mf_delta_float *c, const uint8_t *planes, size_t nwords,
                           unsigned int word)
{
    float_starts(c, planes + (size_t)(word - 1) * nwords, nwords);
}

void mf_delta__float_merge(uint8_t *buf, struct mf_delta_float *c, const uint8_t *planes,
                           size_t nwords, size_t first, size_t count, unsigned int word)
{
    const uint8_t *p0 = planes, *p1 = planes + nwords, *p2 = planes + 2 * nwords;
    const uint8_t *top = planes + (size_t)(word - 1) * nwords + first;

    if (word == 4) { /* the hot loop for fp32 */
        for (size_t i = 0; i < count; i++) {
            uint32_t j = c->pos[top[i]]++;
            uint32_t u = (uint32_t)p0[j] | (uint32_t)p1[j] << 8 | (uint32_t)p2[j] << 16 |
                         (uint32_t)top[i] << 24;
            uint32_t v = (u >> 1) | (u << 31);

            buf[4 * i] = (uint8_t)v;
            buf[4 * i + 1] = (uint8_t)(v >> 8);
            buf[4 * i + 2] = (uint8_t)(v >> 16);
            buf[4 * i + 3] = (uint8_t)(v >> 24);
        }
        return;
    }
    for (size_t i = 0; i < count; i++) { /* word 2: fp16, bf16 */
        uint32_t j = c->pos[top[i]]++;
        uint32_t v = rotr((uint32_t)p0[j] | (uint32_t)top[i] << 8, word);

        buf[2 * i] = (uint8_t)v;
        buf[2 * i + 1] = (uint8_t)(v >> 8);
    }
}

/*
 * Gaps are one byte below 255, else 255 and a varint of the rest: unlike a plain varint,
 * the common short gaps then map one-to-one onto byte values zstd's Huffman stage models.
 */
static size_t gap_put(uint8_t *out, uint64_t gap)
{
    if (gap < 255) {
        out[0] = (uint8_t)gap;
        return 1;
    }
    out[0] = 255;
    return 1 + mf_delta__varint_put(out + 1, gap - 255);
}

static size_t gap_get(uint64_t *gap, const uint8_t *in, size_t len)
{
    size_t n;

    if (len == 0)
        return 0;
    if (in[0] < 255) {
        *gap = in[0];
        return 1;
    }
    n = mf_delta__varint_get(gap, in + 1, len - 1);
    if (!n || *gap > UINT64_MAX - 255)
        return 0;
    *gap += 255;
    return n + 1;
}

static int word_is_zero(const uint8_t *planes, size_t nwords, size_t i, unsigned int word)
{
    for (unsigned int k = 0; k < word; k++)
        if (planes[k * nwords + i])
            return 0;
    return 1;
}

size_t mf_delta__sparse_encode(uint8_t *out, size_t cap, const uint8_t *planes, size_t nwords,
                               unsigned int word)
{
    size_t count = 0, pos, vpos;
    size_t last = 0;

    for (size_t i = 0; i < nwords; i++)
        count += !word_is_zero(planes, nwords, i, word);
    /* Worst case of the header and gaps: 10 bytes each; values: count * word. */
    if (count == 0 || 10 + count * (10 + word) > cap)
        return 0;
    pos = mf_delta__varint_put(out, count);
    vpos = 0;
    for (size_t i = 0; i < nwords; i++) {
        if (word_is_zero(planes, nwords, i, word))
            continue;
        pos += gap_put(out + pos, i - last);
        last = i + 1;
    }
    for (unsigned int k = 0; k < word; k++) {
        for (size_t i = 0; i < nwords; i++)
            if (!word_is_zero(planes, nwords, i, word))
                out[pos + k * count + vpos++] = planes[k * nwords + i];
        vpos = 0;
    }
    return pos + count * word;
}

/* Reads the gap before listed word `c->listed` and moves `c->next` to that word. */
static int sparse_advance(struct mf_delta_sparse *c, const uint8_t *in, size_t nwords)
{
    uint64_t gap;
    size_t n = gap_get(&gap, in + c->gap_pos, c->vals_pos - c->gap_pos);

    if (!n || gap >= nwords - c->next)
        return MF_E_INVALID;
    c->gap_pos += n;
    c->next += (size_t)gap; /* < nwords - next: fits */
    return MF_OK;
}

int mf_delta__sparse_begin(struct mf_delta_sparse *c, size_t nwords, unsigned int word,
                           const uint8_t *in, size_t len)
{
    uint64_t count;
    size_t pos = mf_delta__varint_get(&count, in, len);
    struct mf_delta_sparse walk;

    if (!pos || count > nwords || count * word > len - pos)
        return MF_E_INVALID;
    memset(c, 0, sizeof(*c));
    c->count = (size_t)count;
    c->gap_pos = pos;
    c->vals_pos = len - c->count * word;
    /* Every gap is checked here, before the block emits a byte; the merge then trusts them. */
    walk = *c;
    for (size_t j = 0; j < walk.count; j++) {
        if (sparse_advance(&walk, in, nwords) < 0)
            return MF_E_INVALID;
        walk.next++;
    }
    if (walk.gap_pos != walk.vals_pos)
        return MF_E_INVALID;
    return c->count ? sparse_advance(c, in, nwords) : MF_OK;
}

void mf_delta__sparse_merge(uint8_t *buf, struct mf_delta_sparse *c, const uint8_t *in,
                            size_t nwords, size_t first, size_t count, unsigned int word,
                            unsigned int flags)
{
    const uint8_t *vals = in + c->vals_pos;

    while (c->listed < c->count && c->next < first + count) {
        uint64_t r = 0;

        for (unsigned int k = 0; k < word; k++)
            r |= (uint64_t)vals[k * c->count + c->listed] << (8 * k);
        add_residual(buf + (c->next - first) * word, r, word, flags);
        c->listed++;
        c->next++;
        if (c->listed < c->count)
            (void)sparse_advance(c, in, nwords); /* checked by mf_delta__sparse_begin */
    }
}
