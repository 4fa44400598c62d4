/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encoder (diff/create): round trips through both formats on synthetic pairs, the numeric
 * transform on fine-tuned weights, safetensors alignment by name, BSDIFF40 interop with
 * Debian's bsdiff/bspatch when installed, malformed BSDIFF40 and describe input, and fault
 * injection of every encoder allocation.
 */
#define _POSIX_C_SOURCE 200809L
#include "diff_fixture.h"

#include <bzlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint8_t *apply_mf(const uint8_t *old, size_t old_len, const uint8_t *patch, size_t patch_len,
                         size_t new_len)
{
    struct dt_source src = {old, old_len, 0, -1};
    mf_patch_options o;
    mf_patch *p = NULL;
    uint8_t *out = malloc(new_len + 1);
    size_t got = 0;

    assert_non_null(out);
    assert_int_equal(mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION), MF_OK);
    o.source_read = dt_source_read;
    o.source_payload = &src;
    o.source_size = old_len;
    assert_int_equal(mf_patch_new(&p, &o, NULL), MF_OK);
    assert_int_equal(dt_apply(out, new_len + 1, &got, p, patch, patch_len, 4096, 4096), MF_OK);
    assert_int_equal(got, new_len);
    mf_patch_free(p);
    return out;
}

static uint8_t *apply_bsdiff40(const uint8_t *old, size_t old_len, const uint8_t *patch,
                               size_t patch_len, size_t *new_len)
{
    mf_diff *d = NULL;
    uint8_t *out = NULL;

    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_bsdiff40_apply(&out, new_len, d, old, old_len, patch, patch_len),
                     MF_OK);
    mf_diff_free(d);
    return out;
}

struct pair {
    const char *name;
    size_t old_len, new_len;
    void (*make)(uint8_t *old, size_t ol, uint8_t *nw, size_t nl);
};

static void mk_random(uint8_t *o, size_t ol, uint8_t *n, size_t nl)
{
    dt_random(o, ol, 1);
    dt_random(n, nl, 2);
}

static void mk_identical(uint8_t *o, size_t ol, uint8_t *n, size_t nl)
{
    (void)nl;
    dt_random(o, ol, 3);
    memcpy(n, o, ol);
}

static void mk_finetune(uint8_t *o, size_t ol, uint8_t *n, size_t nl)
{
    (void)nl;
    dt_weights(o, ol / 4, 4);
    dt_finetune(n, o, ol / 4, 1e-3f, 5);
}

static void mk_int8_sparse(uint8_t *o, size_t ol, uint8_t *n, size_t nl)
{
    uint64_t s = 6;

    (void)nl;
    dt_random(o, ol, 7);
    memcpy(n, o, ol);
    for (size_t i = 0; i < ol / 100; i++)
        n[dt_rand(&s) % ol] += 1;
}

static void mk_shifted(uint8_t *o, size_t ol, uint8_t *n, size_t nl)
{
    dt_random(o, ol, 8);
    dt_random(n, 777, 9);
    memcpy(n + 777, o, nl - 777 < ol ? nl - 777 : ol);
}

static const struct pair pairs[] = {
    {"random", 50000, 40001, mk_random},
    {"identical", 70001, 70001, mk_identical},
    {"finetune", 400000, 400000, mk_finetune},
    {"int8", 300000, 300000, mk_int8_sparse},
    {"shifted", 90000, 90777, mk_shifted},
    {"empty-old", 0, 5000, mk_random},
    {"empty-new", 5000, 0, mk_random},
    {"both-empty", 0, 0, mk_random},
    {"one-byte", 1, 1, mk_random},
    {"odd", 13, 7, mk_random},
    /* Above 2 MiB the cover scan runs in one slice per thread. */
    {"shifted-large", 2600000, 2600777, mk_shifted},
};

static void test_diff_create__roundtrip_both_formats(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        const struct pair *pr = &pairs[i];
        uint8_t *old = malloc(pr->old_len + 1), *nw = malloc(pr->new_len + 1), *patch, *out;
        size_t plen, got = 0;

        assert_non_null(old);
        assert_non_null(nw);
        pr->make(old, pr->old_len, nw, pr->new_len);
        plen = dt_make_patch(&patch, old, pr->old_len, nw, pr->new_len, MF_PATCH_DEFAULT_WINDOW,
                             MF_DIFF_FORMAT_MF);
        out = apply_mf(old, pr->old_len, patch, plen, pr->new_len);
        assert_memory_equal(out, nw, pr->new_len);
        if (strcmp(pr->name, "identical") == 0)
            assert_true(plen < 200); /* header + one COPY block */
        free(out);
        mf_free(NULL, patch);
        plen = dt_make_patch(&patch, old, pr->old_len, nw, pr->new_len, MF_PATCH_DEFAULT_WINDOW,
                             MF_DIFF_FORMAT_BSDIFF40);
        out = apply_bsdiff40(old, pr->old_len, patch, plen, &got);
        assert_int_equal(got, pr->new_len);
        if (got)
            assert_memory_equal(out, nw, got);
        mf_free(NULL, out);
        mf_free(NULL, patch);
        free(old);
        free(nw);
    }
}

static int count_kind(void *payload, const mf_diff_block_info *b)
{
    size_t *counts = payload;

    if (strcmp(b->kind, "numeric") == 0)
        counts[0]++;
    else if (strcmp(b->kind, "copy") == 0)
        counts[1]++;
    counts[2]++;
    return 0;
}

static size_t zstd_only_size(const uint8_t *nw, size_t n)
{
    uint8_t *patch;
    size_t len = dt_make_patch(&patch, NULL, 0, nw, n, MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_MF);

    mf_free(NULL, patch);
    return len;
}

static void test_diff_create__numeric_transform_wins_on_finetune(void **state)
{
    size_t n = 1 << 20, counts[3] = {0, 0, 0}, plen;
    uint8_t *old = malloc(n), *nw = malloc(n), *patch;
    mf_diff_header_info h;
    mf_diff *d = NULL;

    (void)state;
    mk_finetune(old, n, nw, n);
    plen = dt_make_patch(&patch, old, n, nw, n, MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_MF);
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, patch, plen, count_kind, counts), MF_OK);
    assert_int_equal(h.new_size, n);
    assert_int_equal(counts[0], counts[2]); /* every block chose the numeric transform */
    /* ...and it pays: well under what zstd alone gets from the new weights. */
    assert_true(plen * 10 < zstd_only_size(nw, n) * 8);
    mf_diff_free(d);
    mf_free(NULL, patch);
    free(old);
    free(nw);
}

static int count_raw(void *payload, const mf_diff_block_info *b)
{
    *(size_t *)payload += (size_t)b->raw;
    return 0;
}

static void test_diff_create__raw_planes_for_new_fp16_values(void **state)
{
    /* A re-export whose values share nothing with old: byte planes of the fp16 words still
     * beat zstd on the interleaved bytes (sign/exponent bytes are far from random). */
    const size_t nwords = 300000;
    uint8_t *old = malloc(4000), *nw = malloc(2 * nwords), *patch;
    size_t raw = 0, plen;
    uint64_t s = 31;
    mf_diff_header_info h;
    mf_diff *d = NULL;

    (void)state;
    dt_random(old, 4000, 30);
    for (size_t i = 0; i < nwords; i++) {
        /* |x| in [2^-8, 2^-4): exponent 7..10, random mantissa and sign */
        uint16_t v = (uint16_t)((dt_rand(&s) >> 63) << 15 | (7 + dt_rand(&s) % 4) << 10 |
                                (dt_rand(&s) & 0x3ff));

        nw[2 * i] = (uint8_t)v;
        nw[2 * i + 1] = (uint8_t)(v >> 8);
    }
    plen = dt_make_patch(&patch, old, 4000, nw, 2 * nwords, MF_PATCH_DEFAULT_WINDOW,
                         MF_DIFF_FORMAT_MF);
    free(apply_mf(old, 4000, patch, plen, 2 * nwords));
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, patch, plen, count_raw, &raw), MF_OK);
    assert_true(raw > 0);
    /* 13 bits of entropy per 16: planes reach ~84 % of the bytes, zstd on the interleaved
     * words ~91 % (measured with zstd -19 on the same distribution). */
    assert_true(plen < 2 * nwords * 87 / 100);
    mf_diff_free(d);
    mf_free(NULL, patch);
    free(old);
    free(nw);
}

/* Writes a safetensors file with tensors `names` (n floats each) in the given order. */
static size_t write_safetensors(uint8_t *buf, const char *const *names, const uint8_t *const *data,
                                size_t count, size_t nfloats)
{
    char hdr[1024];
    size_t hl = 0, off = 0;

    hl += (size_t)snprintf(hdr + hl, sizeof(hdr) - hl, "{");
    for (size_t i = 0; i < count; i++) {
        hl += (size_t)snprintf(hdr + hl, sizeof(hdr) - hl,
                               "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu],"
                               "\"data_offsets\":[%zu,%zu]}",
                               i ? "," : "", names[i], nfloats, off, off + 4 * nfloats);
        off += 4 * nfloats;
    }
    hl += (size_t)snprintf(hdr + hl, sizeof(hdr) - hl, "}");
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    for (size_t i = 0; i < count; i++)
        memcpy(buf + 8 + hl + i * 4 * nfloats, data[i], 4 * nfloats);
    return 8 + hl + count * 4 * nfloats;
}

struct find_old {
    uint64_t want_old;
    int found;
};

static int find_numeric_at(void *payload, const mf_diff_block_info *b)
{
    struct find_old *f = payload;

    if (strcmp(b->kind, "numeric") == 0 && b->word == 4 && b->old_offset == f->want_old)
        f->found = 1;
    return 0;
}

static void test_diff_create__safetensors_aligns_by_name(void **state)
{
    enum { NF = 40000 };
    static const char *const old_names[] = {"a.weight", "b.weight"};
    static const char *const new_names[] = {"inserted", "b.weight", "a.weight"};
    uint8_t *a = malloc(4 * NF), *b = malloc(4 * NF), *a2 = malloc(4 * NF), *b2 = malloc(4 * NF);
    uint8_t *ins = malloc(4 * NF), *old = malloc(16 * NF), *nw = malloc(16 * NF), *patch, *out;
    const uint8_t *od[] = {a, b}, *nd[] = {ins, b2, a2};
    size_t ol, nl, plen;
    struct find_old fo = {0, 0};
    mf_diff_header_info h;
    mf_diff *d = NULL;

    (void)state;
    dt_weights(a, NF, 11);
    dt_weights(b, NF, 12);
    dt_weights(ins, NF, 13);
    dt_finetune(a2, a, NF, 1e-3f, 14);
    dt_finetune(b2, b, NF, 1e-3f, 15);
    ol = write_safetensors(old, old_names, od, 2, NF);
    nl = write_safetensors(nw, new_names, nd, 3, NF);
    plen = dt_make_patch(&patch, old, ol, nw, nl, MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_MF);
    out = apply_mf(old, ol, patch, plen, nl);
    assert_memory_equal(out, nw, nl);
    /* a.weight moved behind two tensors and every value changed: no exact match exists, so
     * only the name lookup can align it with its old offset. */
    fo.want_old = ol - 8 * NF;
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, patch, plen, find_numeric_at, &fo), MF_OK);
    assert_true(fo.found);
    mf_diff_free(d);
    free(out);
    mf_free(NULL, patch);
    free(a);
    free(b);
    free(a2);
    free(b2);
    free(ins);
    free(old);
    free(nw);
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;

    if (f)
        ok = fclose(f) == 0 && ok;
    return ok ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long sz;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    sz = ftell(f);
    assert_true(sz >= 0);
    rewind(f);
    p = malloc((size_t)sz + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)sz, f), (size_t)sz);
    (void)fclose(f);
    *n = (size_t)sz;
    return p;
}

static void test_diff_create__bsdiff40_interop_with_bsdiff43(void **state)
{
    const size_t n = 200000;
    uint8_t *old = malloc(n), *nw = malloc(n), *patch, *out;
    char dir[] = "/tmp/mf_diff_test_XXXXXX", po[64], pn[64], pp[64], pr[64], cmd[512];
    size_t plen, got;

    (void)state;
    if (access("/usr/bin/bsdiff", X_OK) != 0 || access("/usr/bin/bspatch", X_OK) != 0) {
        free(old);
        free(nw);
        MF_SKIP("Debian package bsdiff not installed");
    }
    assert_non_null(mkdtemp(dir));
    (void)snprintf(po, sizeof(po), "%s/old", dir);
    (void)snprintf(pn, sizeof(pn), "%s/new", dir);
    (void)snprintf(pp, sizeof(pp), "%s/patch", dir);
    (void)snprintf(pr, sizeof(pr), "%s/result", dir);
    mk_int8_sparse(old, n, nw, n);
    assert_int_equal(write_file(po, old, n), 0);
    assert_int_equal(write_file(pn, nw, n), 0);
    /* Ours -> bspatch. */
    plen = dt_make_patch(&patch, old, n, nw, n, MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_BSDIFF40);
    assert_int_equal(write_file(pp, patch, plen), 0);
    mf_free(NULL, patch);
    (void)snprintf(cmd, sizeof(cmd), "/usr/bin/bspatch %s %s %s", po, pr, pp);
    assert_int_equal(system(cmd), 0);
    out = read_file(pr, &got);
    assert_int_equal(got, n);
    assert_memory_equal(out, nw, n);
    free(out);
    /* bsdiff -> ours. */
    (void)snprintf(cmd, sizeof(cmd), "/usr/bin/bsdiff %s %s %s", po, pn, pp);
    assert_int_equal(system(cmd), 0);
    patch = read_file(pp, &plen);
    out = apply_bsdiff40(old, n, patch, plen, &got);
    assert_int_equal(got, n);
    assert_memory_equal(out, nw, n);
    mf_free(NULL, out);
    free(patch);
    mf_kit_fs_rmtree(dir);
    free(old);
    free(nw);
}

static void test_diff_create__bsdiff40_malformed(void **state)
{
    const size_t n = 20000;
    uint8_t *old = malloc(n), *nw = malloc(n), *patch, *bad, *out = NULL;
    size_t plen, got = 0, failed = 0;
    mf_diff_options o;
    mf_diff *d = NULL;

    (void)state;
    mk_int8_sparse(old, n, nw, n);
    plen = dt_make_patch(&patch, old, n, nw, n, MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_BSDIFF40);
    bad = malloc(plen);
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    for (size_t cut = 0; cut < plen; cut += 7) {
        int r = mf_diff_bsdiff40_apply(&out, &got, d, old, n, patch, cut);

        /* Like bspatch, a cut inside the last stream's end marker still yields the image. */
        if (r == MF_OK) {
            assert_true(cut > plen - 16);
            assert_memory_equal(out, nw, n);
            mf_free(NULL, out);
            out = NULL;
            continue;
        }
        assert_int_equal(r, MF_E_INVALID);
        assert_null(out);
    }
    /* Every single-bit flip past the magic fails, or (an unused padding bit, a length still
     * pointing at the same streams) still yields exactly the new image. Before the streams
     * were read to their CRCs, flips applied without error into another image. */
    for (size_t i = 8; i < plen; i++) {
        for (int bit = 0; bit < 8; bit++) {
            int r;

            memcpy(bad, patch, plen);
            bad[i] ^= (uint8_t)(1u << bit);
            r = mf_diff_bsdiff40_apply(&out, &got, d, old, n, bad, plen);
            if (r == MF_OK) {
                assert_int_equal(got, n);
                if (memcmp(out, nw, n) != 0)
                    fail_msg("flip of bit %d of byte %zu of %zu: another image", bit, i, plen);
            } else {
                assert_true(r == MF_E_INVALID || r == MF_E_LIMIT || r == MF_E_NOMEM);
                assert_null(out);
                failed++;
            }
            mf_free(NULL, out);
            out = NULL;
        }
    }
    assert_true(failed > (plen - 8) * 8 * 9 / 10);
    mf_diff_free(d);
    /* A header asking for more than max_new_size is refused before allocating. */
    assert_int_equal(mf_diff_options_init(&o, MF_DIFF_OPTIONS_VERSION), MF_OK);
    o.max_new_size = n - 1;
    assert_int_equal(mf_diff_new(&d, &o, NULL), MF_OK);
    assert_int_equal(mf_diff_bsdiff40_apply(&out, &got, d, old, n, patch, plen), MF_E_LIMIT);
    assert_non_null(strstr(mf_diff_errmsg(d), "new size"));
    mf_diff_free(d);
    mf_free(NULL, patch);
    free(bad);
    free(old);
    free(nw);
}

/* bsdiff's sign-magnitude 8-byte integer. */
static void put_off(uint8_t *b, int64_t x)
{
    uint64_t y = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;

    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(y >> (8 * i));
    if (x < 0)
        b[7] |= 0x80;
}

static size_t bz(uint8_t *dst, size_t cap, const void *src, size_t n)
{
    unsigned int out = (unsigned int)cap;

    assert_int_equal(BZ2_bzBuffToBuffCompress((char *)dst, &out, (char *)(uintptr_t)src,
                                              (unsigned int)n, 9, 0, 0),
                     BZ_OK);
    return out;
}

/* A BSDIFF40 patch of control triples `ctrl` (n of them), diff bytes and extra bytes,
 * declaring new size `nsize`; `clen_delta` is added to the declared control length. */
static size_t craft_bsdiff40(uint8_t *out, size_t cap, const int64_t (*ctrl)[3], size_t n,
                             const uint8_t *diff, size_t ndiff, const uint8_t *extra, size_t nextra,
                             int64_t nsize, int64_t clen_delta)
{
    uint8_t c[10 * 24];
    size_t c1, c2, c3;

    assert_true(n <= 10);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            put_off(c + 24 * i + 8 * k, ctrl[i][k]);
    memcpy(out, "BSDIFF40", 8);
    c1 = bz(out + 32, cap - 32, c, 24 * n);
    c2 = bz(out + 32 + c1, cap - 32 - c1, diff, ndiff);
    c3 = bz(out + 32 + c1 + c2, cap - 32 - c1 - c2, extra, nextra);
    put_off(out + 8, (int64_t)c1 + clen_delta);
    put_off(out + 16, (int64_t)c2);
    put_off(out + 24, nsize);
    return 32 + c1 + c2 + c3;
}

/* Hand-made structural corruption: every case ends in MF_E_INVALID naming it, before any
 * byte outside old or new is touched (ASan runs this too); a negative seek inside the range
 * is classic bsdiff semantics (old bytes outside old count as 0) and applies. */
static void test_diff_create__bsdiff40_structural_corruption(void **state)
{
    static const uint8_t old[16] = "0123456789abcdef";
    static const uint8_t zeros[16];
    static const uint8_t extra[16] = "ABCDEFGHIJKLMNOP";
    static const struct {
        const char *what;
        int64_t ctrl[2][3];
        size_t n;
        int64_t nsize, clen_delta;
        const char *msg;
    } cases[] = {
        {"add past new", {{17, 0, 0}}, 1, 16, 0, "out of range"},
        {"negative add", {{-1, 0, 0}}, 1, 16, 0, "out of range"},
        {"copy past new", {{8, 9, 0}}, 1, 16, 0, "out of range"},
        {"negative copy", {{8, -8, 0}}, 1, 16, 0, "out of range"},
        {"seek below -2^62",
         {{8, 0, -((int64_t)1 << 62) - 1}, {8, 0, 0}},
         2,
         16,
         0,
         "out of range"},
        {"seek above 2^62", {{8, 0, ((int64_t)1 << 62) + 1}, {8, 0, 0}}, 2, 16, 0, "out of range"},
        {"seeks adding up past 2^62",
         {{4, 0, ((int64_t)1 << 62) - 4}, {4, 0, ((int64_t)1 << 62)}},
         2,
         16,
         0,
         "old position"},
        {"control stream ends early", {{8, 0, 0}}, 1, 16, 0, "control stream"},
        {"control length past the patch", {{16, 0, 0}}, 1, 16, 100000, "header lengths"},
        {"negative new size", {{16, 0, 0}}, 1, -16, 0, "header lengths"},
        {"control left over after the image", {{8, 0, 0}, {8, 0, 0}}, 2, 8, 0, "do not end"},
        {"diff and extra bytes left over", {{8, 8, 0}}, 1, 16, 0, "do not end"},
    };
    uint8_t patch[4096], *out = NULL;
    size_t got, plen;
    mf_diff *d = NULL;

    (void)state;
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        plen = craft_bsdiff40(patch, sizeof(patch), cases[i].ctrl, cases[i].n, zeros, 16, extra, 16,
                              cases[i].nsize, cases[i].clen_delta);
        if (mf_diff_bsdiff40_apply(&out, &got, d, old, sizeof(old), patch, plen) != MF_E_INVALID)
            fail_msg("%s: accepted", cases[i].what);
        assert_null(out);
        if (!strstr(mf_diff_errmsg(d), cases[i].msg))
            fail_msg("%s: '%s'", cases[i].what, mf_diff_errmsg(d));
    }
    /* A negative seek that stays in range: new[8..16) adds old[-4..4), i.e. 0,0,0,0,"0123". */
    {
        const int64_t ctrl[2][3] = {{8, 0, -12}, {8, 0, 0}};

        plen = craft_bsdiff40(patch, sizeof(patch), ctrl, 2, zeros, 16, extra, 0, 16, 0);
        assert_int_equal(mf_diff_bsdiff40_apply(&out, &got, d, old, sizeof(old), patch, plen),
                         MF_OK);
        assert_int_equal(got, 16);
        assert_memory_equal(out,
                            "01234567\0\0\0\0"
                            "0123",
                            16);
        mf_free(NULL, out);
        out = NULL;
    }
    mf_diff_free(d);
}

static void test_diff_create__describe_rejects_garbage(void **state)
{
    uint8_t junk[300];
    mf_diff_header_info h;
    mf_diff *d = NULL;
    uint8_t *patch;
    size_t plen;
    uint8_t old[4000], nw[4000];

    (void)state;
    dt_random(junk, sizeof(junk), 99);
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, junk, sizeof(junk), NULL, NULL), MF_E_INVALID);
    assert_int_equal(mf_diff_describe(&h, d, junk, 10, NULL, NULL), MF_E_INVALID);
    mk_random(old, sizeof(old), nw, sizeof(nw));
    plen = dt_make_patch(&patch, old, sizeof(old), nw, sizeof(nw), MF_PATCH_DEFAULT_WINDOW,
                         MF_DIFF_FORMAT_MF);
    assert_int_equal(mf_diff_describe(&h, d, patch, plen, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, patch, plen - 1, NULL, NULL), MF_E_INVALID);
    assert_non_null(strstr(mf_diff_errmsg(d), "truncated"));
    mf_free(NULL, patch);
    mf_diff_free(d);
}

static void test_diff_create__failing_allocator_every_call(void **state)
{
    const size_t n = 60000;
    uint8_t *old = malloc(n), *nw = malloc(n);
    mf_diff_options o;
    long fails = 0;

    (void)state;
    mk_finetune(old, n, nw, n);
    assert_int_equal(mf_diff_options_init(&o, MF_DIFF_OPTIONS_VERSION), MF_OK);
    o.threads = 1;
    o.level = 1;
    o.max_window = 8192;
    for (int fmt = 0; fmt < 2; fmt++) {
        o.format = (mf_diff_format)fmt;
        for (long k = 0;; k++) {
            struct mf_kit_alloc ca;
            mf_allocator a = mf_kit_alloc_init(&ca, k, MF_KIT_ALLOC_FAIL_FROM);
            mf_diff *d = NULL;
            uint8_t *patch = NULL;
            size_t plen = 0;
            int r = mf_diff_new(&d, &o, &a);

            if (r == MF_OK) {
                r = mf_diff_create(&patch, &plen, d, old, n, nw, n);
                if (r < 0)
                    assert_true(strlen(mf_diff_errmsg(d)) > 0);
            }
            if (r == MF_OK) {
                mf_free(&a, patch);
                mf_diff_free(d);
                assert_int_equal(ca.live, 0);
                break;
            }
            assert_int_equal(r, MF_E_NOMEM);
            assert_null(patch);
            mf_diff_free(d);
            assert_int_equal(ca.live, 0); /* no leak on any failure path */
            fails++;
        }
    }
    assert_true(fails > 10);
    free(old);
    free(nw);
}

static void test_diff_create__options(void **state)
{
    mf_diff_options o;
    mf_diff *d = NULL;

    (void)state;
    assert_int_equal(mf_diff_options_init(&o, 99), MF_E_INVALID);
    assert_int_equal(mf_diff_options_init(&o, MF_DIFF_OPTIONS_VERSION), MF_OK);
    o.threads = 0;
    assert_int_equal(mf_diff_new(&d, &o, NULL), MF_E_INVALID);
    assert_null(d);
    o.threads = 1;
    o.max_window = 100;
    assert_int_equal(mf_diff_new(&d, &o, NULL), MF_E_INVALID);
    mf_diff_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_create__roundtrip_both_formats),
        cmocka_unit_test(test_diff_create__numeric_transform_wins_on_finetune),
        cmocka_unit_test(test_diff_create__raw_planes_for_new_fp16_values),
        cmocka_unit_test(test_diff_create__safetensors_aligns_by_name),
        cmocka_unit_test(test_diff_create__bsdiff40_interop_with_bsdiff43),
        cmocka_unit_test(test_diff_create__bsdiff40_malformed),
        cmocka_unit_test(test_diff_create__bsdiff40_structural_corruption),
        cmocka_unit_test(test_diff_create__describe_rejects_garbage),
        cmocka_unit_test(test_diff_create__failing_allocator_every_call),
        cmocka_unit_test(test_diff_create__options),
    };
    return cmocka_run_group_tests_name("diff_create", tests, NULL, NULL);
}
