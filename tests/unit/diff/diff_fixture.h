/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by test_diff_apply.c and test_diff_create.c: deterministic data generators,
 * an in-memory old image with a failing read callback, and a chunked apply loop. The
 * allocator is the kit's (kit_alloc.h), leak-checked through cmocka's test_malloc.
 */
#ifndef MF_DIFF_FIXTURE_H
#define MF_DIFF_FIXTURE_H

#include "mf_test.h"
#include "kit_alloc.h"
#include "kit_fs.h"
#include "mf/diff.h"
#include "mf/patch.h"

#include <math.h>
#include <string.h>

/* xorshift64*: reproducible data without libc rand(). */
static inline uint64_t dt_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static inline void dt_random(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(dt_rand(&seed) >> 56);
}

/* Gaussian-ish float32 weights (sum of uniforms), little-endian. */
static inline void dt_weights(uint8_t *p, size_t nfloats, uint64_t seed)
{
    for (size_t i = 0; i < nfloats; i++) {
        float v = 0;

        for (int k = 0; k < 4; k++)
            v += (float)(dt_rand(&seed) >> 40) / (float)(1u << 24) - 0.5f;
        v *= 0.05f;
        memcpy(p + 4 * i, &v, 4);
    }
}

/* Fine-tune: every weight w -> w * (1 + noise * u), u uniform in [-1, 1). */
static inline void dt_finetune(uint8_t *dst, const uint8_t *src, size_t nfloats, float noise,
                               uint64_t seed)
{
    for (size_t i = 0; i < nfloats; i++) {
        float v;
        float u = (float)(dt_rand(&seed) >> 40) / (float)(1u << 23) - 1.0f;

        memcpy(&v, src + 4 * i, 4);
        v *= 1.0f + noise * u;
        memcpy(dst + 4 * i, &v, 4);
    }
}

struct dt_source {
    const uint8_t *data;
    size_t len;
    long calls;
    long fail_at; /* -1: never */
};

static inline int dt_source_read(void *payload, uint64_t off, void *buf, size_t len)
{
    struct dt_source *s = payload;

    if (s->fail_at >= 0 && s->calls++ >= s->fail_at)
        return MF_E_IO;
    if (off > s->len)
        return 0;
    if (len > s->len - off)
        len = (size_t)(s->len - off);
    memcpy(buf, s->data + off, len);
    return (int)len;
}

/* Creates a patch (libc allocator: release with mf_free(NULL, p)); asserts success. */
static inline size_t dt_make_patch(uint8_t **out, const uint8_t *old, size_t old_len,
                                   const uint8_t *nw, size_t new_len, size_t window,
                                   mf_diff_format fmt)
{
    mf_diff_options o;
    mf_diff *d = NULL;
    size_t len = 0;

    assert_int_equal(mf_diff_options_init(&o, MF_DIFF_OPTIONS_VERSION), MF_OK);
    o.max_window = window;
    o.format = fmt;
    o.level = 3; /* keep the suite fast; level only changes sizes */
    assert_int_equal(mf_diff_new(&d, &o, NULL), MF_OK);
    assert_int_equal(mf_diff_create(out, &len, d, old, old_len, nw, new_len), MF_OK);
    mf_diff_free(d);
    return len;
}

/*
 * Applies `patch` feeding at most `in_chunk` bytes and offering at most `out_chunk` bytes
 * of room per call, with a zero-room, zero-input call between real ones (must make no
 * progress). Returns the final code; *out_len = bytes produced.
 */
static inline int dt_apply(uint8_t *dst, size_t cap, size_t *out_len, mf_patch *p,
                           const uint8_t *patch, size_t plen, size_t in_chunk, size_t out_chunk)
{
    size_t ipos = 0, opos = 0;
    int r = MF_AGAIN;

    while (r == MF_AGAIN) {
        size_t in_n = plen - ipos < in_chunk ? plen - ipos : in_chunk;
        size_t out_n = cap - opos < out_chunk ? cap - opos : out_chunk;
        mf_inbuf in0 = {patch + ipos, 0, 0};
        mf_outbuf out0 = {dst + opos, 0, 0};
        mf_inbuf in = {patch + ipos, in_n, 0};
        mf_outbuf out = {dst + opos, out_n, 0};

        r = mf_patch_apply(p, &out0, &in0);
        if (r != MF_AGAIN && r != MF_OK)
            break;
        if (r == MF_OK)
            break;
        r = mf_patch_apply(p, &out, &in);
        ipos += in.pos;
        opos += out.pos;
        if (r == MF_AGAIN && out.pos == 0 && in.pos == 0)
            break; /* starved: the patch ended early or `cap` is full */
    }
    *out_len = opos;
    return r;
}

#endif /* MF_DIFF_FIXTURE_H */
