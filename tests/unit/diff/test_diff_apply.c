/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming apply (diff/apply): chunking invariance, bounded heap, fault injection of every
 * allocation and every old-image read, malformed / truncated / bit-flipped patches, window
 * limits, checkpoint/restore at every block boundary.
 */
#include "diff_fixture.h"

#include <stdlib.h>

#define SMALL_WINDOW 8192u

struct fixture {
    uint8_t *old, *nw, *patch, *out;
    size_t old_len, new_len, patch_len;
};

/* Room for an old and a new image of these sizes, and for the output (16 bytes spare). */
static void fixture_alloc(struct fixture *f, size_t old_len, size_t new_len)
{
    f->old_len = old_len;
    f->new_len = new_len;
    f->old = malloc(old_len);
    f->nw = malloc(new_len);
    f->out = malloc(new_len + 16);
    assert_non_null(f->old);
    assert_non_null(f->nw);
    assert_non_null(f->out);
}

/* Fine-tuned float weights with an inserted header and an appended tail, so a patch mixes
 * numeric, bsdiff, copy and zstd blocks; small window so there are many blocks. */
static struct fixture make_fixture(size_t nfloats, size_t window)
{
    struct fixture f;

    fixture_alloc(&f, nfloats * 4, nfloats * 4 + 1000 + 333);
    dt_weights(f.old, nfloats, 7);
    dt_random(f.nw, 1000, 8);
    dt_finetune(f.nw + 1000, f.old, nfloats / 2, 1e-3f, 9);
    memcpy(f.nw + 1000 + nfloats / 2 * 4, f.old + nfloats / 2 * 4, f.old_len - nfloats / 2 * 4);
    dt_random(f.nw + 1000 + f.old_len, 333, 10);
    f.patch_len =
        dt_make_patch(&f.patch, f.old, f.old_len, f.nw, f.new_len, window, MF_DIFF_FORMAT_MF);
    return f;
}

static void fixture_free(struct fixture *f)
{
    free(f->old);
    free(f->nw);
    free(f->out);
    mf_free(NULL, f->patch);
}

static mf_patch_options opts_for(struct dt_source *src, const struct fixture *f, size_t window)
{
    mf_patch_options o;

    assert_int_equal(mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION), MF_OK);
    o.max_window = window;
    o.source_read = dt_source_read;
    o.source_payload = src;
    src->data = f->old;
    src->len = f->old_len;
    src->calls = 0;
    src->fail_at = -1;
    return o;
}

static int apply_once(const struct fixture *f, size_t in_chunk, size_t out_chunk, size_t *got)
{
    struct dt_source src;
    mf_patch_options o = opts_for(&src, f, MF_PATCH_DEFAULT_WINDOW);
    mf_patch *p = NULL;
    int r;

    assert_int_equal(mf_patch_new(&p, &o, NULL), MF_OK);
    r = dt_apply(f->out, f->new_len + 16, got, p, f->patch, f->patch_len, in_chunk, out_chunk);
    mf_patch_free(p);
    return r;
}

/* The fixture's patch applied in `in_chunk` / `out_chunk` pieces into a scrubbed output must
 * give exactly the new image. */
static void assert_rebuilds(struct fixture *f, size_t in_chunk, size_t out_chunk)
{
    size_t got = 0;

    memset(f->out, 0xAA, f->new_len);
    assert_int_equal(apply_once(f, in_chunk, out_chunk, &got), MF_OK);
    assert_int_equal(got, f->new_len);
    assert_memory_equal(f->out, f->nw, f->new_len);
}

/* One applier over a fixture: its old-image source, options, handle and output count. */
struct run {
    struct dt_source src;
    mf_patch_options o;
    mf_patch *p;
    size_t got;
};

/* Readies `r` to apply f's patch with `window`; no applier exists yet. */
static void run_init(struct run *r, const struct fixture *f, size_t window)
{
    r->o = opts_for(&r->src, f, window);
    r->p = NULL;
    r->got = 0;
}

/* A new applier from r->o fed `plen` bytes of `patch` in 4 KiB chunks into `dst` (`cap`
 * bytes): the code. The applier stays in r->p for the caller to inspect and free. */
static int run_apply(struct run *r, uint8_t *dst, size_t cap, const uint8_t *patch, size_t plen)
{
    assert_int_equal(mf_patch_new(&r->p, &r->o, NULL), MF_OK);
    return dt_apply(dst, cap, &r->got, r->p, patch, plen, 4096, 4096);
}

static void test_diff_apply__chunking_invariant(void **state)
{
    static const size_t chunks[] = {1, 7, 4096, (size_t)-1};
    struct fixture f = make_fixture(6000, SMALL_WINDOW);

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 4; j++)
            assert_rebuilds(&f, chunks[i], chunks[j]);
    }
    fixture_free(&f);
}

static void test_diff_apply__static_workspace_never_allocates(void **state)
{
    struct fixture f = make_fixture(3000, SMALL_WINDOW);
    struct dt_source src;
    mf_patch_options o = opts_for(&src, &f, SMALL_WINDOW);
    size_t ws_size = mf_patch_workspace_size(&o), got = 0;
    void *ws = test_malloc(ws_size);
    mf_patch *p = NULL;

    (void)state;
    assert_int_equal(mf_patch_init_static(&p, ws, ws_size - 1, &o), MF_E_LIMIT);
    assert_null(p);
    assert_int_equal(mf_patch_init_static(&p, ws, ws_size, &o), MF_OK);
    assert_int_equal(dt_apply(f.out, f.new_len, &got, p, f.patch, f.patch_len, 4096, 4096), MF_OK);
    assert_memory_equal(f.out, f.nw, f.new_len);
    test_free(ws);
    fixture_free(&f);
}

static void test_diff_apply__peak_heap_bounded(void **state)
{
    /* 8 MB of weights with the default window: heap is one workspace of 0.78 MiB (zstd
     * 1.5's DCtx and block buffer, one window, the stage), bound at 7/8 MiB so the agent's
     * delta install stays under 1 MiB (test_agent_delivery__delta_heap_is_bounded). */
    struct fixture f = make_fixture(2u << 20, MF_PATCH_DEFAULT_WINDOW);
    struct dt_source src;
    mf_patch_options o = opts_for(&src, &f, MF_PATCH_DEFAULT_WINDOW);
    struct mf_kit_alloc ca;
    mf_allocator a = mf_kit_alloc_init(&ca, -1, MF_KIT_ALLOC_FAIL_FROM);
    mf_patch *p = NULL;
    size_t got = 0;

    (void)state;
    assert_int_equal(mf_patch_new(&p, &o, &a), MF_OK);
    assert_int_equal(dt_apply(f.out, f.new_len, &got, p, f.patch, f.patch_len, 65536, 65536),
                     MF_OK);
    assert_memory_equal(f.out, f.nw, f.new_len);
    mf_patch_free(p);
    assert_int_equal(ca.live, 0);
    assert_int_equal(ca.calls, 1);
    assert_true(ca.peak <= (size_t)7 << 17);
    assert_int_equal(ca.peak, mf_patch_workspace_size(&o));
    fixture_free(&f);
}

static void test_diff_apply__failing_allocator(void **state)
{
    struct dt_source src;
    struct fixture f = make_fixture(100, SMALL_WINDOW);
    mf_patch_options o = opts_for(&src, &f, SMALL_WINDOW);
    struct mf_kit_alloc ca;
    mf_allocator a = mf_kit_alloc_init(&ca, 0, MF_KIT_ALLOC_FAIL_FROM);
    mf_patch *p = (mf_patch *)&ca;

    (void)state;
    assert_int_equal(mf_patch_new(&p, &o, &a), MF_E_NOMEM);
    assert_null(p);
    assert_int_equal(ca.live, 0);
    fixture_free(&f);
}

static void test_diff_apply__failing_source_read_every_call(void **state)
{
    struct fixture f = make_fixture(30000, SMALL_WINDOW);
    long n = 0;

    (void)state;
    for (;; n++) {
        struct run a;
        int r;

        run_init(&a, &f, SMALL_WINDOW);
        a.src.fail_at = n;
        r = run_apply(&a, f.out, f.new_len, f.patch, f.patch_len);
        if (r == MF_OK) {
            assert_memory_equal(f.out, f.nw, f.new_len);
            mf_patch_free(a.p);
            break;
        }
        assert_int_equal(r, MF_E_IO);
        assert_non_null(strstr(mf_patch_errmsg(a.p), "old image"));
        /* A failed applier stays failed. */
        assert_int_equal(dt_apply(f.out, f.new_len, &a.got, a.p, f.patch, 0, 1, 1), MF_E_STATE);
        mf_patch_free(a.p);
    }
    assert_true(n > 3); /* the fixture really reads the old image several times */
    fixture_free(&f);
}

/* Feeds f's patch cut at every byte of its first 200, then every `step`: never completes. */
static void truncations_never_complete(struct fixture *f, size_t step)
{
    for (size_t cut = 0; cut < f->patch_len; cut += (cut < 200 ? 1 : step)) {
        struct run a;

        run_init(&a, f, SMALL_WINDOW);
        assert_int_equal(run_apply(&a, f->out, f->new_len, f->patch, cut), MF_AGAIN);
        assert_true(a.got < f->new_len);
        mf_patch_free(a.p);
    }
}

static void test_diff_apply__truncated_never_completes(void **state)
{
    struct fixture f = make_fixture(2000, SMALL_WINDOW);

    (void)state;
    truncations_never_complete(&f, 97);
    fixture_free(&f);
}

/* Flips one bit at many offsets of f's patch: each apply fails cleanly or is exactly right. */
static void flip_bits(struct fixture *f, size_t window)
{
    uint8_t *bad = malloc(f->patch_len);
    int rejected = 0;

    assert_non_null(bad);
    for (size_t i = 0; i < f->patch_len; i += (i < 300 ? 1 : 13)) {
        struct run a;
        int r;

        memcpy(bad, f->patch, f->patch_len);
        bad[i] ^= (uint8_t)(1u << (i % 8));
        run_init(&a, f, window);
        r = run_apply(&a, f->out, f->new_len + 16, bad, f->patch_len);
        if (r == MF_OK) {
            assert_int_equal(a.got, f->new_len); /* accepted only if it is the right image */
            assert_memory_equal(f->out, f->nw, f->new_len);
        } else {
            assert_true(r == MF_AGAIN || r == MF_E_INVALID || r == MF_E_SIGNATURE ||
                        r == MF_E_LIMIT);
            if (r < 0)
                assert_true(strlen(mf_patch_errmsg(a.p)) > 0);
            rejected++;
        }
        mf_patch_free(a.p);
    }
    assert_true(rejected > 0);
    free(bad);
}

static void test_diff_apply__bit_flips_never_accepted_wrong(void **state)
{
    struct fixture f = make_fixture(2000, SMALL_WINDOW);

    (void)state;
    flip_bits(&f, SMALL_WINDOW);
    fixture_free(&f);
}

/* mf_diff_describe callback: the largest output of a sparse NUMERIC block (0: none). */
static int largest_sparse(void *payload, const mf_diff_block_info *b)
{
    uint32_t *largest = payload;

    if (b->sparse && b->new_len > *largest)
        *largest = b->new_len;
    return 0;
}

/* Random int8 weights, `len` bytes, with 1 % of the bytes re-quantised by one step: the
 * encoder codes the residuals as NUMERIC blocks in sparse form. */
static struct fixture make_sparse_fixture(size_t len, size_t window, uint32_t *largest)
{
    struct fixture f;
    mf_diff_header_info h;
    mf_diff *d = NULL;
    uint64_t s = 21;

    fixture_alloc(&f, len, len);
    dt_random(f.old, f.old_len, 20);
    memcpy(f.nw, f.old, f.old_len);
    for (size_t i = 0; i < len / 100; i++)
        f.nw[dt_rand(&s) % f.new_len] += 1;
    f.patch_len =
        dt_make_patch(&f.patch, f.old, f.old_len, f.nw, f.new_len, window, MF_DIFF_FORMAT_MF);
    *largest = 0;
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, f.patch, f.patch_len, largest_sparse, largest), MF_OK);
    mf_diff_free(d);
    return f;
}

static void test_diff_apply__sparse_residuals_bit_flips(void **state)
{
    uint32_t largest;
    struct fixture f = make_sparse_fixture(30000, SMALL_WINDOW, &largest);

    (void)state;
    assert_true(largest > 0);
    assert_rebuilds(&f, 4096, 4096);
    flip_bits(&f, SMALL_WINDOW);
    fixture_free(&f);
}

static void test_diff_apply__sparse_block_larger_than_the_stage(void **state)
{
    /* The sparse residuals are merged while the block is emitted, one stage (64 KiB) at a
     * time: a block of several stages must resume the merge where the last stage ended. */
    static const size_t chunks[] = {7, 65536, (size_t)-1};
    uint32_t largest;
    struct fixture f = make_sparse_fixture(1u << 20, MF_PATCH_DEFAULT_WINDOW, &largest);

    (void)state;
    assert_true(largest > 2 * mf_patch_out_size());
    for (size_t i = 0; i < 3; i++)
        assert_rebuilds(&f, chunks[i], chunks[2 - i]);
    fixture_free(&f);
}

static void test_diff_apply__window_limit(void **state)
{
    struct fixture f = make_fixture(60000, MF_PATCH_DEFAULT_WINDOW);
    struct run a;

    (void)state;
    run_init(&a, &f, MF_PATCH_MIN_WINDOW);
    assert_int_equal(run_apply(&a, f.out, f.new_len, f.patch, f.patch_len), MF_E_LIMIT);
    assert_non_null(strstr(mf_patch_errmsg(a.p), "window"));
    assert_int_equal(a.got, 0);
    mf_patch_free(a.p);
    a.o.max_window = MF_PATCH_MIN_WINDOW - 1;
    assert_int_equal(mf_patch_workspace_size(&a.o), 0);
    assert_int_equal(mf_patch_new(&a.p, &a.o, NULL), MF_E_INVALID);
    fixture_free(&f);
}

static void test_diff_apply__wrong_old_image(void **state)
{
    struct fixture f = make_fixture(6000, SMALL_WINDOW);
    struct run a;

    (void)state;
    /* Same size, one weight changed: only the final sha256 can tell. */
    f.old[f.old_len - 4] ^= 0x40;
    run_init(&a, &f, SMALL_WINDOW);
    assert_int_equal(run_apply(&a, f.out, f.new_len, f.patch, f.patch_len), MF_E_SIGNATURE);
    mf_patch_free(a.p);
    /* Different size: refused before any output when the caller states the size. */
    a.o.source_size = f.old_len + 1;
    assert_int_equal(run_apply(&a, f.out, f.new_len, f.patch, f.patch_len), MF_E_INVALID);
    assert_int_equal(a.got, 0);
    mf_patch_free(a.p);
    fixture_free(&f);
}

/* Applies from `ck` into f->out and returns the code. */
static int resume_from(struct fixture *f, const mf_patch_checkpoint *ck)
{
    struct run a;
    int r;

    run_init(&a, f, SMALL_WINDOW);
    assert_int_equal(mf_patch_new(&a.p, &a.o, NULL), MF_OK);
    r = mf_patch_restore(a.p, ck);
    if (r == MF_OK) {
        assert_int_equal(mf_patch_new_offset(a.p), ck->new_offset);
        r = dt_apply(f->out + ck->new_offset, f->new_len - ck->new_offset, &a.got, a.p,
                     f->patch + ck->patch_offset, f->patch_len - ck->patch_offset, 1000, 777);
        assert_int_equal(a.got, r == MF_OK ? f->new_len - ck->new_offset : a.got);
    }
    mf_patch_free(a.p);
    return r;
}

static void test_diff_apply__checkpoint_every_block(void **state)
{
    struct fixture f = make_fixture(6000, SMALL_WINDOW);
    struct dt_source src;
    mf_patch_options o = opts_for(&src, &f, SMALL_WINDOW);
    mf_patch *p = NULL;
    uint64_t last = UINT64_MAX;
    size_t ipos = 0, opos = 0;
    int r = MF_AGAIN, resumed = 0;
    mf_patch_checkpoint ck;

    (void)state;
    assert_int_equal(mf_patch_new(&p, &o, NULL), MF_OK);
    assert_int_equal(mf_patch_checkpoint_get(&ck, p), MF_E_STATE);
    while (r == MF_AGAIN) {
        mf_inbuf in = {f.patch + ipos, f.patch_len - ipos < 512 ? f.patch_len - ipos : 512, 0};
        mf_outbuf out = {f.out + opos, 1024, 0};

        r = mf_patch_apply(p, &out, &in);
        ipos += in.pos;
        opos += out.pos;
        if (r == MF_AGAIN && mf_patch_checkpoint_get(&ck, p) == MF_OK && ck.patch_offset != last) {
            last = ck.patch_offset;
            /* Simulated power cut: scribble over everything after the checkpoint. */
            memset(f.out + ck.new_offset, 0x5A, f.new_len - ck.new_offset);
            assert_int_equal(resume_from(&f, &ck), MF_OK);
            assert_memory_equal(f.out, f.nw, f.new_len);
            resumed++;
            /* A torn checkpoint is refused. */
            ck.state[17] ^= 1;
            assert_int_equal(resume_from(&f, &ck), MF_E_INVALID);
            ck.state[17] ^= 1;
            ck.new_offset++;
            assert_int_equal(resume_from(&f, &ck), MF_E_INVALID);
        }
    }
    assert_int_equal(r, MF_OK);
    assert_memory_equal(f.out, f.nw, f.new_len);
    assert_true(resumed >= 5); /* one per block boundary */
    mf_patch_free(p);
    fixture_free(&f);
}

/* Compressed full blobs: patches from the empty image (docs/formats/delta.md, "float planes"). */
enum full_kind { FULL_FP32, FULL_BF16, FULL_FP16, FULL_RANDOM, FULL_INT8, FULL_KINDS };

/* fp16 bits of a float in the normal range of dt_weights (|x| < 0.1, no rounding needed). */
static uint16_t to_fp16(float v)
{
    uint32_t b;
    int e;

    memcpy(&b, &v, 4);
    e = (int)((b >> 23) & 0xff) - 127 + 15;
    if (e <= 0)
        return (uint16_t)((b >> 16) & 0x8000u); /* below fp16's normal range: signed zero */
    return (uint16_t)(((b >> 16) & 0x8000u) | (uint32_t)e << 10 | ((b >> 13) & 0x3ffu));
}

/* A new image of `n` elements of `kind` (an "old" of 0 bytes), and its patch from nothing. */
static struct fixture make_full_fixture(enum full_kind kind, size_t n, size_t window)
{
    static const size_t elem[FULL_KINDS] = {4, 2, 2, 1, 1};
    struct fixture f;
    uint8_t *w = malloc(4 * n);

    assert_non_null(w);
    fixture_alloc(&f, 1, n * elem[kind]);
    f.old_len = 0;
    dt_weights(w, n, 40 + (uint64_t)kind);
    for (size_t i = 0; i < n; i++) {
        float v;
        uint16_t h;

        memcpy(&v, w + 4 * i, 4);
        switch (kind) {
        case FULL_FP32:
            memcpy(f.nw + 4 * i, w + 4 * i, 4);
            break;
        case FULL_BF16: /* the high half of the fp32 word */
            memcpy(f.nw + 2 * i, w + 4 * i + 2, 2);
            break;
        case FULL_FP16:
            h = to_fp16(v);
            f.nw[2 * i] = (uint8_t)h;
            f.nw[2 * i + 1] = (uint8_t)(h >> 8);
            break;
        case FULL_INT8:
            f.nw[i] = (uint8_t)(int8_t)(v * 1000.0f);
            break;
        case FULL_RANDOM:
        case FULL_KINDS:
            break;
        }
    }
    if (kind == FULL_RANDOM)
        dt_random(f.nw, f.new_len, 41);
    free(w);
    f.patch_len = dt_make_patch(&f.patch, f.old, 0, f.nw, f.new_len, window, MF_DIFF_FORMAT_MF);
    return f;
}

/* mf_diff_describe callback: counts float-plane blocks. */
static int count_float(void *payload, const mf_diff_block_info *b)
{
    size_t *n = payload;

    *n += b->float_planes != 0;
    return 0;
}

static void test_diff_apply__full_blob_roundtrip(void **state)
{
    /* Ceilings of patch / image per kind: floats well below zstd's ~0.92 on the same bytes. */
    static const unsigned pct[FULL_KINDS] = {88, 75, 87, 101, 90};
    static const char *const names[FULL_KINDS] = {"fp32", "bf16", "fp16", "random", "int8"};

    (void)state;
    for (int k = 0; k < FULL_KINDS; k++) {
        struct fixture f = make_full_fixture((enum full_kind)k, 300000, MF_PATCH_DEFAULT_WINDOW);
        struct dt_source src;
        mf_patch_options o = opts_for(&src, &f, MF_PATCH_DEFAULT_WINDOW);
        struct mf_kit_alloc ca;
        mf_allocator a = mf_kit_alloc_init(&ca, -1, MF_KIT_ALLOC_FAIL_FROM);
        mf_diff_header_info h;
        mf_diff *d = NULL;
        mf_patch *p = NULL;
        size_t got = 0, floats = 0;

        print_message("%s: %zu -> %zu bytes\n", names[k], f.new_len, f.patch_len);
        assert_int_equal(mf_patch_new(&p, &o, &a), MF_OK);
        assert_int_equal(dt_apply(f.out, f.new_len, &got, p, f.patch, f.patch_len, 4096, 65536),
                         MF_OK);
        assert_int_equal(got, f.new_len);
        assert_memory_equal(f.out, f.nw, f.new_len);
        assert_int_equal(src.calls, 0); /* nothing is read from the (empty) old image */
        mf_patch_free(p);
        /* The same single workspace as a delta: under 1 MiB, asserted through the hook. */
        assert_int_equal(ca.calls, 1);
        assert_true(ca.peak <= (size_t)7 << 17);
        assert_true(f.patch_len * 100 <= f.new_len * pct[k] + 200);
        assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
        assert_int_equal(mf_diff_describe(&h, d, f.patch, f.patch_len, count_float, &floats),
                         MF_OK);
        assert_int_equal(h.old_size, 0);
        if (k <= FULL_FP16)
            assert_true(floats > 0);
        mf_diff_free(d);
        fixture_free(&f);
    }
}

/* mf_diff_describe callback: counts dense NUMERIC blocks of 2-byte words. */
static int count_dense_w2(void *payload, const mf_diff_block_info *b)
{
    if (strcmp(b->kind, "numeric") == 0 && b->word == 2 && !b->sparse && !b->raw)
        (*(int *)payload)++;
    return 0;
}

/* An fp16 retrain: every weight moved by up to 40 ULPs either way. The encoder codes it as
 * dense NUMERIC blocks of 2-byte words, which the apply merges on its two-plane path
 * (delta_planes.c merge2); the patch rebuilds the new image in any chunking. */
static void test_diff_apply__fp16_residuals_roundtrip(void **state)
{
    const size_t n = 96 * 1024;
    struct fixture f;
    mf_diff_header_info h;
    mf_diff *d = NULL;
    uint8_t *w = malloc(4 * n);
    uint64_t s = 31;
    int dense = 0;

    (void)state;
    assert_non_null(w);
    fixture_alloc(&f, 2 * n, 2 * n);
    dt_weights(w, n, 30);
    for (size_t i = 0; i < n; i++) {
        float v;
        uint16_t o, x;

        memcpy(&v, w + 4 * i, 4);
        o = to_fp16(v);
        x = (uint16_t)(o + (uint16_t)(dt_rand(&s) % 81) - 40);
        f.old[2 * i] = (uint8_t)o;
        f.old[2 * i + 1] = (uint8_t)(o >> 8);
        f.nw[2 * i] = (uint8_t)x;
        f.nw[2 * i + 1] = (uint8_t)(x >> 8);
    }
    free(w);
    f.patch_len = dt_make_patch(&f.patch, f.old, f.old_len, f.nw, f.new_len,
                                MF_PATCH_DEFAULT_WINDOW, MF_DIFF_FORMAT_MF);
    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_describe(&h, d, f.patch, f.patch_len, count_dense_w2, &dense), MF_OK);
    mf_diff_free(d);
    assert_true(dense > 0);
    assert_rebuilds(&f, 1 << 20, 1 << 20);
    assert_rebuilds(&f, 777, 1001);
    fixture_free(&f);
}

static void test_diff_apply__full_blob_truncated_and_flipped(void **state)
{
    (void)state;
    for (int k = FULL_FP32; k <= FULL_FP16; k++) {
        struct fixture f = make_full_fixture((enum full_kind)k, 3000, SMALL_WINDOW);

        truncations_never_complete(&f, 61);
        flip_bits(&f, SMALL_WINDOW);
        fixture_free(&f);
    }
}

static void test_diff_apply__options_version(void **state)
{
    mf_patch_options o;

    (void)state;
    assert_int_equal(mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION + 1), MF_E_INVALID);
    assert_int_equal(mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION), MF_OK);
    assert_int_equal(o.max_window, MF_PATCH_DEFAULT_WINDOW);
    mf_patch_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_apply__chunking_invariant),
        cmocka_unit_test(test_diff_apply__static_workspace_never_allocates),
        cmocka_unit_test(test_diff_apply__peak_heap_bounded),
        cmocka_unit_test(test_diff_apply__failing_allocator),
        cmocka_unit_test(test_diff_apply__failing_source_read_every_call),
        cmocka_unit_test(test_diff_apply__truncated_never_completes),
        cmocka_unit_test(test_diff_apply__bit_flips_never_accepted_wrong),
        cmocka_unit_test(test_diff_apply__sparse_residuals_bit_flips),
        cmocka_unit_test(test_diff_apply__sparse_block_larger_than_the_stage),
        cmocka_unit_test(test_diff_apply__window_limit),
        cmocka_unit_test(test_diff_apply__wrong_old_image),
        cmocka_unit_test(test_diff_apply__checkpoint_every_block),
        cmocka_unit_test(test_diff_apply__full_blob_roundtrip),
        cmocka_unit_test(test_diff_apply__full_blob_truncated_and_flipped),
        cmocka_unit_test(test_diff_apply__fp16_residuals_roundtrip),
        cmocka_unit_test(test_diff_apply__options_version),
    };
    return cmocka_run_group_tests_name("diff_apply", tests, NULL, NULL);
}
