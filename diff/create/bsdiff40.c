/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Classic BSDIFF40 (bsdiff 4.3) interop. Layout: "BSDIFF40", three 8-byte sign-magnitude
 * integers (compressed control length, compressed diff length, new size), then three bzip2
 * streams: control triples (add, copy, seek), diff bytes, extra bytes. Writing reuses the
 * mf cover search, so mf and bsdiff patches share their matches. Reading streams the three
 * bzip2 streams like bspatch, with every control value checked against the new size (the
 * classic bspatch overflow bugs), and then, unlike bspatch, to their ends (bz_end). The format
 * carries no digest of the new image: callers that need to know it is the right one compare
 * it with a digest of their own (mfctl patch --expect-sha256).
 */
#include "create_internal.h"

#include <bzlib.h>
#include <string.h>

#define BSDIFF40_HEADER 32
#define OFF_MAX ((int64_t)1 << 62)

static void offtout(uint8_t *b, int64_t x)
{
    uint64_t y = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;

    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(y >> (8 * i));
    if (x < 0)
        b[7] |= 0x80;
}

static int64_t offtin(const uint8_t *b)
{
    uint64_t y = 0;

    for (int i = 0; i < 8; i++)
        y |= (uint64_t)(i == 7 ? b[i] & 0x7f : b[i]) << (8 * i);
    return (b[7] & 0x80) ? -(int64_t)y : (int64_t)y;
}

/* bzip2 of `src` appended at `dst`; returns the compressed size or 0 on failure. */
static size_t bz_compress(uint8_t *dst, size_t cap, const uint8_t *src, size_t len)
{
    unsigned int out = cap > UINT32_MAX ? UINT32_MAX : (unsigned int)cap;

    if (len > UINT32_MAX)
        return 0;
    if (BZ2_bzBuffToBuffCompress((char *)dst, &out, (char *)(uintptr_t)src, (unsigned int)len, 9, 0,
                                 0) != BZ_OK)
        return 0;
    return out;
}

int mf_diff__create_bsdiff40(uint8_t **patch_out, size_t *patch_len_out, struct mf_diff *d,
                             const uint8_t *old, size_t old_len, const uint8_t *new_img,
                             size_t new_len)
{
    struct mf_ctx *ctx = &d->ctx;
    struct mf_cover_list cv = {0};
    uint8_t *ctrl = NULL, *diff = NULL, *extra = NULL, *out = NULL;
    size_t nctrl = 0, ndiff = 0, nextra = 0, cap, pos, c1, c2, c3;
    int err = mf_diff__cover_search(&cv, ctx, old, old_len, new_img, new_len, d->opts.threads);

    if (err < 0)
        return err;
    ctrl = mf_ctx__alloc(ctx, cv.n * 24 + 1);
    diff = mf_ctx__alloc(ctx, new_len + 1);
    extra = mf_ctx__alloc(ctx, new_len + 1);
    cap = BSDIFF40_HEADER + cv.n * 25 + 2 * new_len + new_len / 50 + 3 * 1024;
    out = mf_ctx__alloc(ctx, cap);
    if (!ctrl || !diff || !extra || !out) {
        err = mf_fail(ctx, MF_E_NOMEM, "bsdiff40 buffers for %zu new bytes", new_len);
        goto fail;
    }
    for (size_t i = 0; i < cv.n; i++) {
        const struct mf_cover *c = &cv.v[i];
        int64_t next = i + 1 < cv.n ? (int64_t)cv.v[i + 1].old_pos : (int64_t)(c->old_pos + c->add);

        offtout(ctrl + nctrl, (int64_t)c->add);
        offtout(ctrl + nctrl + 8, (int64_t)c->copy);
        offtout(ctrl + nctrl + 16, next - (int64_t)(c->old_pos + c->add));
        nctrl += 24;
        for (uint64_t k = 0; k < c->add; k++)
            diff[ndiff++] = (uint8_t)(new_img[c->new_pos + k] - old[c->old_pos + k]);
        memcpy(extra + nextra, new_img + c->new_pos + c->add, c->copy);
        nextra += c->copy;
    }
    memcpy(out, "BSDIFF40", 8);
    pos = BSDIFF40_HEADER;
    c1 = bz_compress(out + pos, cap - pos, ctrl, nctrl);
    c2 = c1 ? bz_compress(out + pos + c1, cap - pos - c1, diff, ndiff) : 0;
    c3 = c2 ? bz_compress(out + pos + c1 + c2, cap - pos - c1 - c2, extra, nextra) : 0;
    if (!c3) {
        err = mf_fail(ctx, MF_E_GENERIC, "bzip2 compression failed (%zu new bytes)", new_len);
        goto fail;
    }
    offtout(out + 8, (int64_t)c1);
    offtout(out + 16, (int64_t)c2);
    offtout(out + 24, (int64_t)new_len);
    *patch_out = out;
    *patch_len_out = pos + c1 + c2 + c3;
    out = NULL;
fail:
    mf_ctx__free(ctx, ctrl);
    mf_ctx__free(ctx, diff);
    mf_ctx__free(ctx, extra);
    mf_ctx__free(ctx, out);
    mf_diff__cover_list_free(ctx, &cv);
    return err;
}

struct bz_reader {
    bz_stream s;
    int open;
    int ended;
};

static int bz_open(struct bz_reader *r, const uint8_t *src, size_t len)
{
    memset(r, 0, sizeof(*r));
    if (len > UINT32_MAX || BZ2_bzDecompressInit(&r->s, 0, 0) != BZ_OK)
        return MF_E_INVALID;
    r->open = 1;
    r->s.next_in = (char *)(uintptr_t)src;
    r->s.avail_in = (unsigned int)len;
    return MF_OK;
}

/* Reads exactly `n` bytes; MF_E_INVALID on a corrupt or short stream. */
static int bz_read(struct bz_reader *r, uint8_t *dst, size_t n)
{
    while (n) {
        unsigned int chunk = n > (1u << 30) ? (1u << 30) : (unsigned int)n;
        int rc;

        if (r->ended)
            return MF_E_INVALID;
        r->s.next_out = (char *)dst;
        r->s.avail_out = chunk;
        rc = BZ2_bzDecompress(&r->s);
        if (rc != BZ_OK && rc != BZ_STREAM_END)
            return MF_E_INVALID;
        if (rc == BZ_STREAM_END)
            r->ended = 1;
        if (rc == BZ_OK && r->s.avail_out == chunk && r->s.avail_in == 0)
            return MF_E_INVALID; /* no progress: input exhausted */
        dst += chunk - r->s.avail_out;
        n -= chunk - r->s.avail_out;
    }
    return MF_OK;
}

/* After the last byte was read: the stream must end there. bzip2 checks a block's CRC only
 * once the block is drained and the stream's combined CRC at its end marker; bspatch stops
 * as soon as it has its bytes and so checks neither. Reading each stream to its end turns a
 * flipped bit in any stream into an error instead of another image. */
static int bz_end(struct bz_reader *r)
{
    uint8_t spare;
    int rc;

    if (r->ended)
        return MF_OK;
    r->s.next_out = (char *)&spare;
    r->s.avail_out = 1;
    rc = BZ2_bzDecompress(&r->s);
    return rc == BZ_STREAM_END && r->s.avail_out == 1 ? MF_OK : MF_E_INVALID;
}

static void bz_close(struct bz_reader *r)
{
    if (r->open)
        BZ2_bzDecompressEnd(&r->s);
    r->open = 0;
}

static int bspatch_run(uint8_t *nw, int64_t nsize, struct mf_ctx *ctx, const uint8_t *old,
                       size_t old_len, struct bz_reader *cr, struct bz_reader *dr,
                       struct bz_reader *er)
{
    int64_t newpos = 0, oldpos = 0;

    while (newpos < nsize) {
        uint8_t buf[24];
        int64_t add, copy, seek;

        if (bz_read(cr, buf, sizeof(buf)) < 0)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff40 control stream corrupt at new %lld",
                           (long long)newpos);
        add = offtin(buf);
        copy = offtin(buf + 8);
        seek = offtin(buf + 16);
        if (add < 0 || copy < 0 || add > nsize - newpos || copy > nsize - newpos - add ||
            seek > OFF_MAX || seek < -OFF_MAX)
            return mf_fail(ctx, MF_E_INVALID,
                           "bsdiff40 control entry %lld/%lld/%lld out of "
                           "range at new %lld",
                           (long long)add, (long long)copy, (long long)seek, (long long)newpos);
        if (bz_read(dr, nw + newpos, (size_t)add) < 0)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff40 diff stream corrupt");
        for (int64_t i = 0; i < add; i++)
            if (oldpos + i >= 0 && (uint64_t)(oldpos + i) < old_len)
                nw[newpos + i] = (uint8_t)(nw[newpos + i] + old[oldpos + i]);
        newpos += add;
        oldpos += add;
        if (bz_read(er, nw + newpos, (size_t)copy) < 0)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff40 extra stream corrupt");
        newpos += copy;
        /* oldpos stays in [-2^62, 2^62] after each entry; checked before adding, since
         * oldpos (plus this entry's add) and seek may each reach 2^62: their sum 2^63. The
         * second test cannot overflow once the first has passed. */
        if ((seek > 0 ? oldpos > OFF_MAX - seek : oldpos < -OFF_MAX - seek) ||
            oldpos + seek > OFF_MAX)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff40 old position %lld + seek %lld out of range",
                           (long long)oldpos, (long long)seek);
        oldpos += seek;
    }
    if (bz_end(cr) < 0 || bz_end(dr) < 0 || bz_end(er) < 0)
        return mf_fail(ctx, MF_E_INVALID,
                       "bsdiff40 streams do not end after the %lld bytes of the new image "
                       "(corrupt: a bzip2 CRC or end marker)",
                       (long long)nsize);
    return MF_OK;
}

int mf_diff_bsdiff40_apply(uint8_t **new_out, size_t *new_len_out, mf_diff *d, const uint8_t *old,
                           size_t old_len, const uint8_t *patch, size_t patch_len)
{
    struct mf_ctx *ctx = &d->ctx;
    struct bz_reader cr, dr, er;
    int64_t clen, dlen, nsize;
    uint8_t *nw = NULL;
    int err;

    *new_out = NULL;
    *new_len_out = 0;
    mf_ctx__clear(ctx);
    if (patch_len < BSDIFF40_HEADER || memcmp(patch, "BSDIFF40", 8) != 0)
        return mf_fail(ctx, MF_E_INVALID, "not a BSDIFF40 patch");
    clen = offtin(patch + 8);
    dlen = offtin(patch + 16);
    nsize = offtin(patch + 24);
    if (clen < 0 || dlen < 0 || nsize < 0 || (uint64_t)clen > patch_len - BSDIFF40_HEADER ||
        (uint64_t)dlen > patch_len - BSDIFF40_HEADER - (uint64_t)clen)
        return mf_fail(ctx, MF_E_INVALID, "bsdiff40 header lengths %lld/%lld/%lld invalid",
                       (long long)clen, (long long)dlen, (long long)nsize);
    if ((uint64_t)nsize > d->opts.max_new_size || (uint64_t)nsize > SIZE_MAX - 1)
        return mf_fail(ctx, MF_E_LIMIT, "bsdiff40 new size %lld above the limit", (long long)nsize);
    nw = mf_ctx__alloc(ctx, (size_t)nsize + 1);
    if (!nw)
        return mf_fail(ctx, MF_E_NOMEM, "bsdiff40 new image of %lld bytes", (long long)nsize);
    memset(&cr, 0, sizeof(cr));
    memset(&dr, 0, sizeof(dr));
    memset(&er, 0, sizeof(er));
    const uint8_t *p = patch + BSDIFF40_HEADER;
    if (bz_open(&cr, p, (size_t)clen) < 0 || bz_open(&dr, p + clen, (size_t)dlen) < 0 ||
        bz_open(&er, p + clen + dlen, patch_len - BSDIFF40_HEADER - (size_t)(clen + dlen)) < 0)
        err = mf_fail(ctx, MF_E_INVALID, "bsdiff40 bzip2 streams unreadable");
    else
        err = bspatch_run(nw, nsize, ctx, old, old_len, &cr, &dr, &er);
    bz_close(&cr);
    bz_close(&dr);
    bz_close(&er);
    if (err < 0) {
        mf_ctx__free(ctx, nw);
        return err;
    }
    *new_out = nw;
    *new_len_out = (size_t)nsize;
    return MF_OK;
}
