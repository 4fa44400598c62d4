/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 (FIPS 180-4; see mf_sha256.h). The streaming part buffers at most one block and
 * hands every run of whole blocks straight from the caller's buffer to the block function,
 * so a large update costs no copy. Two block functions:
 *   - portable C, on every CPU (and the reference the tests hold the other against);
 *   - x86 SHA-NI (sha256rnds2/msg1/msg2, with SSSE3 and SSE4.1), compiled with a target
 *     attribute so the rest of the build keeps its baseline ISA, and used only when CPUID
 *     says the CPU has those instructions (read by libgcc at start-up, so picking costs a
 *     load). About 8x the portable speed on the benchmark machine (bench/agent/README.md).
 * A context records the block function it was started with, so one process can run both
 * (the tests compare them on the same input).
 */
#include "mf_sha256.h"
#include "mf/ct.h"

#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MF_SHA256_X86 1
#include <immintrin.h>
#else
#define MF_SHA256_X86 0
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32u - n));
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One round with the working variables renamed instead of moved (as mbedTLS does): eight
 * rounds bring them back to their places, so a pass of the loop below is eight rounds. */
#define ROUND(a, b, c, d, e, f, g, h, k, w)                                                        \
    do {                                                                                           \
        uint32_t t1_ = (h) + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +                               \
                       (((e) & (f)) ^ (~(e) & (g))) + (k) + (w);                                   \
        (d) += t1_;                                                                                \
        (h) = t1_ + (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + (((a) & (b)) ^ ((c) & ((a) ^ (b))));   \
    } while (0)

static uint32_t schedule(uint32_t w[16], unsigned i)
{
    uint32_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];

    w[i & 15] += (ror(w15, 7) ^ ror(w15, 18) ^ (w15 >> 3)) + w[(i - 7) & 15] +
                 (ror(w2, 17) ^ ror(w2, 19) ^ (w2 >> 10));
    return w[i & 15];
}

void mf_sha256__blocks_portable(uint32_t state[8], const uint8_t *data, size_t nblocks)
{
    uint32_t w[16]; /* the message schedule as a ring of 16 words */

    for (; nblocks > 0; nblocks--, data += MF_SHA256_BLOCK_LEN) {
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];

        for (unsigned i = 0; i < 16; i++)
            w[i] = get_be32(data + 4 * i);
        for (unsigned i = 0; i < 64; i += 8) {
            ROUND(a, b, c, d, e, f, g, h, K[i], i < 16 ? w[i] : schedule(w, i));
            ROUND(h, a, b, c, d, e, f, g, K[i + 1], i < 16 ? w[i + 1] : schedule(w, i + 1));
            ROUND(g, h, a, b, c, d, e, f, K[i + 2], i < 16 ? w[i + 2] : schedule(w, i + 2));
            ROUND(f, g, h, a, b, c, d, e, K[i + 3], i < 16 ? w[i + 3] : schedule(w, i + 3));
            ROUND(e, f, g, h, a, b, c, d, K[i + 4], i < 16 ? w[i + 4] : schedule(w, i + 4));
            ROUND(d, e, f, g, h, a, b, c, K[i + 5], i < 16 ? w[i + 5] : schedule(w, i + 5));
            ROUND(c, d, e, f, g, h, a, b, K[i + 6], i < 16 ? w[i + 6] : schedule(w, i + 6));
            ROUND(b, c, d, e, f, g, h, a, K[i + 7], i < 16 ? w[i + 7] : schedule(w, i + 7));
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

#if MF_SHA256_X86
/*
 * Four rounds per step: sha256rnds2 does two, on the state kept as ABEF/CDGH lanes; the
 * schedule of the next four words is msg1 (sigma0 part), + W[t-7..t-4], msg2 (sigma1 part).
 */
__attribute__((target("sha,ssse3,sse4.1"))) static void
blocks_shani(uint32_t state[8], const uint8_t *data, size_t nblocks)
{
    const __m128i bswap =
        _mm_set_epi64x((long long)0x0c0d0e0f08090a0bULL, (long long)0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&state[0]),
                                    0xB1); /* CDAB */
    __m128i st1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&state[4]),
                                    0x1B);      /* EFGH */
    __m128i st0 = _mm_alignr_epi8(tmp, st1, 8); /* ABEF */

    st1 = _mm_blend_epi16(st1, tmp, 0xF0); /* CDGH */
    for (; nblocks > 0; nblocks--, data += MF_SHA256_BLOCK_LEN) {
        const __m128i abef = st0, cdgh = st1;
        __m128i w[4];

        for (unsigned i = 0; i < 16; i++) {
            __m128i m;

            if (i < 4)
                w[i] = _mm_shuffle_epi8(
                    _mm_loadu_si128((const __m128i *)(const void *)(data + 16 * i)), bswap);
            else
                w[i & 3] = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]),
                                  _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4)),
                    w[(i + 3) & 3]);
            m = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)(const void *)&K[4 * i]));
            st1 = _mm_sha256rnds2_epu32(st1, st0, m);
            st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(m, 0x0E));
        }
        st0 = _mm_add_epi32(st0, abef);
        st1 = _mm_add_epi32(st1, cdgh);
    }
    tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
    st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
    st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
    st1 = _mm_alignr_epi8(st1, tmp, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)(void *)&state[0], st0);
    _mm_storeu_si128((__m128i *)(void *)&state[4], st1);
}
#endif

mf_sha256_blocks_fn mf_sha256__blocks_best(const char **name)
{
#if MF_SHA256_X86
    if (__builtin_cpu_supports("sha") && __builtin_cpu_supports("ssse3") &&
        __builtin_cpu_supports("sse4.1")) {
        if (name)
            *name = "sha-ni";
        return blocks_shani;
    }
#endif
    if (name)
        *name = "portable";
    return mf_sha256__blocks_portable;
}

void mf_sha256__init_with(struct mf_sha256 *h, mf_sha256_blocks_fn blocks)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    memcpy(h->state, iv, sizeof(iv));
    h->len = 0;
    h->blocks = blocks;
}

void mf_sha256__init(struct mf_sha256 *h)
{
    mf_sha256__init_with(h, mf_sha256__blocks_best(NULL));
}

void mf_sha256__update(struct mf_sha256 *h, const void *p, size_t n)
{
    const uint8_t *in = p;
    size_t have = (size_t)(h->len % MF_SHA256_BLOCK_LEN);

    if (n == 0)
        return;
    h->len += n;
    if (have > 0) {
        size_t take = MF_SHA256_BLOCK_LEN - have < n ? MF_SHA256_BLOCK_LEN - have : n;

        memcpy(h->buf + have, in, take);
        in += take;
        n -= take;
        if (have + take < MF_SHA256_BLOCK_LEN)
            return;
        h->blocks(h->state, h->buf, 1);
    }
    if (n >= MF_SHA256_BLOCK_LEN) {
        h->blocks(h->state, in, n / MF_SHA256_BLOCK_LEN);
        in += n - n % MF_SHA256_BLOCK_LEN;
        n %= MF_SHA256_BLOCK_LEN;
    }
    if (n > 0)
        memcpy(h->buf, in, n);
}

void mf_sha256__final(struct mf_sha256 *h, uint8_t out[MF_SHA256_DIGEST_LEN])
{
    uint64_t bits = h->len * 8u;
    size_t have = (size_t)(h->len % MF_SHA256_BLOCK_LEN);

    h->buf[have++] = 0x80;
    if (have > MF_SHA256_BLOCK_LEN - 8) {
        memset(h->buf + have, 0, MF_SHA256_BLOCK_LEN - have);
        h->blocks(h->state, h->buf, 1);
        have = 0;
    }
    memset(h->buf + have, 0, MF_SHA256_BLOCK_LEN - 8 - have);
    put_be32(h->buf + 56, (uint32_t)(bits >> 32));
    put_be32(h->buf + 60, (uint32_t)bits);
    h->blocks(h->state, h->buf, 1);
    for (unsigned i = 0; i < 8; i++)
        put_be32(out + 4 * i, h->state[i]);
    mf_sha256__abort(h);
}

void mf_sha256__abort(struct mf_sha256 *h)
{
    /* The input may be a secret (tokens are hashed): leave none of it behind. */
    mf_secure_zero(h, sizeof(*h));
}

void mf_sha256__digest(uint8_t out[MF_SHA256_DIGEST_LEN], const void *p, size_t n)
{
    struct mf_sha256 h;

    mf_sha256__init(&h);
    mf_sha256__update(&h, p, n);
    mf_sha256__final(&h, out);
}
