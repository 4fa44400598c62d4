/* SPDX-License-Identifier: Apache-2.0 */
/*
 * examples/mnist loaders: IDX (golden files in tests/data/distill, gzip and plain, and
 * malformed buffers built here), digits CSV (Debian's digits.csv.gz when installed, and
 * malformed text), and seeded permutations.
 */
#include "mf_test.h"
#include "kit_alloc.h"
#include "kit_fs.h"

#include "mf_ctx.h"
#include "mf_dataset.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct mf_ctx ctx;

static const char *data_path(char *buf, size_t size, const char *name)
{
    char rel[256];

    (void)snprintf(rel, sizeof(rel), "tests/data/distill/%s", name);
    return mf_kit_fs_source_path(buf, size, rel);
}

/* The three-image golden set from its gzip files; the images' path goes to `ip`. */
static mf_dataset *load_tiny(char *ip, size_t cap)
{
    char lp[1024];
    mf_dataset *ds = NULL;

    assert_int_equal(mf_dataset_load_idx(&ds, &ctx, NULL,
                                         data_path(ip, cap, "tiny-images-idx3-ubyte.gz"),
                                         data_path(lp, sizeof(lp), "tiny-labels-idx1-ubyte.gz")),
                     MF_OK);
    return ds;
}

/* An IDX header for `ndims` dims followed by nothing (callers append the payload). */
static size_t idx_header(uint8_t *b, uint8_t ndims, const uint32_t *dims)
{
    b[0] = 0;
    b[1] = 0;
    b[2] = 8;
    b[3] = ndims;
    for (uint8_t d = 0; d < ndims; d++) {
        b[4 + 4 * d] = (uint8_t)(dims[d] >> 24);
        b[5 + 4 * d] = (uint8_t)(dims[d] >> 16);
        b[6 + 4 * d] = (uint8_t)(dims[d] >> 8);
        b[7 + 4 * d] = (uint8_t)dims[d];
    }
    return 4 + 4u * ndims;
}

static void test_example_data__idx_golden_gz_and_plain(void **state)
{
    static const uint8_t want[] = {0,  1,  2,  3,   4,   5,   10,  20,  30,
                                   40, 50, 60, 255, 254, 253, 252, 251, 250};
    char ip[1024], lp2[1024];
    mf_dataset *ds, *ds2 = NULL;

    (void)state;
    ds = load_tiny(ip, sizeof(ip));
    assert_int_equal(ds->n, 3);
    assert_int_equal(ds->rows, 2);
    assert_int_equal(ds->cols, 3);
    assert_int_equal(ds->dim, 6);
    assert_int_equal(ds->max_value, 255);
    assert_memory_equal(ds->x, want, sizeof(want));
    assert_int_equal(ds->y[0], 7);
    assert_int_equal(ds->y[1], 0);
    assert_int_equal(ds->y[2], 9);
    /* An uncompressed label file goes through the same reader. */
    assert_int_equal(mf_dataset_load_idx(&ds2, &ctx, NULL, ip,
                                         data_path(lp2, sizeof(lp2), "tiny-labels-idx1-ubyte")),
                     MF_OK);
    assert_memory_equal(ds2->y, ds->y, 3);
    mf_dataset_free(ds);
    mf_dataset_free(ds2);
}

static void test_example_data__idx_missing_file_is_io(void **state)
{
    mf_dataset *ds = (mf_dataset *)1;

    (void)state;
    assert_int_equal(mf_dataset_load_idx(&ds, &ctx, NULL, "/nonexistent/a.gz", "/nonexistent/b"),
                     MF_E_IO);
    assert_null(ds);
    assert_non_null(strstr(ctx.errmsg, "/nonexistent/a.gz"));
}

struct idx_case {
    const char *what;
    int images_ndims;                 /* header dims written for the image file */
    uint32_t n, rows, cols, n_labels; /* declared sizes */
    long payload_delta;               /* bytes added (+) or cut (-) from the image payload */
    uint8_t magic_type;               /* 0x08 for ubyte */
    uint8_t bad_label;                /* nonzero: last label gets this value */
    int want;
    const char *msg;
};

static void test_example_data__idx_rejects(void **state)
{
    static const struct idx_case cases[] = {
        {"ok", 3, 4, 3, 2, 4, 0, 8, 0, MF_OK, ""},
        {"truncated payload", 3, 4, 3, 2, 4, -1, 8, 0, MF_E_INVALID, "payload"},
        {"trailing bytes", 3, 4, 3, 2, 4, 1, 8, 0, MF_E_INVALID, "payload"},
        {"wrong type byte", 3, 4, 3, 2, 4, 0, 0x0D, 0, MF_E_INVALID, "magic"},
        {"labels magic on images", 1, 4, 3, 2, 4, 0, 8, 0, MF_E_INVALID, "magic"},
        {"count mismatch", 3, 4, 3, 2, 5, 0, 8, 0, MF_E_INVALID, "labels"},
        {"label out of range", 3, 4, 3, 2, 4, 0, 8, 10, MF_E_INVALID, "label 10"},
        {"zero rows", 3, 4, 0, 2, 4, 0, 8, 0, MF_E_LIMIT, "dimension"},
        {"oversized cols", 3, 4, 3, 100000, 4, 0, 8, 0, MF_E_LIMIT, "dimension"},
        {"oversized count", 3, 0x7fffffff, 3, 2, 0x7fffffff, 0, 8, 0, MF_E_LIMIT, "cap"},
    };
    static uint8_t img[4096], lab[4096];

    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct idx_case *k = &cases[c];
        const uint32_t idims[3] = {k->n, k->rows, k->cols};
        const uint32_t ldims[1] = {k->n_labels};
        size_t il = idx_header(img, (uint8_t)k->images_ndims, idims);
        size_t ll = idx_header(lab, 1, ldims);
        size_t payload = (size_t)k->n * k->rows * k->cols;
        int err;

        if (payload > 1024)
            payload = 16; /* rejected on its header; the payload does not matter */
        mf_dataset *ds = NULL;

        img[2] = k->magic_type;
        memset(img + il, 0x11, payload + 1);
        il += (size_t)((long)payload + k->payload_delta);
        if (k->n_labels < 64) {
            memset(lab + ll, 3, k->n_labels);
            if (k->bad_label)
                lab[ll + k->n_labels - 1] = k->bad_label;
            ll += k->n_labels;
        }
        ctx.errmsg[0] = 0;
        err = mf_dataset_parse_idx(&ds, &ctx, NULL, img, il, lab, ll);
        if (err != k->want || !strstr(ctx.errmsg, k->msg))
            fail_msg("case '%s': got %d (%s), want %d with '%s'", k->what, err, ctx.errmsg, k->want,
                     k->msg);
        if (k->want == MF_OK)
            assert_int_equal(ds->n, k->n);
        else
            assert_null(ds);
        mf_dataset_free(ds);
    }
    /* Shorter than any header. */
    assert_int_equal(mf_dataset_parse_idx(&(mf_dataset *){NULL}, &ctx, NULL, img, 5, lab, 8),
                     MF_E_INVALID);
    assert_non_null(strstr(ctx.errmsg, "truncated"));
}

static void test_example_data__digits_csv_parses_and_rejects(void **state)
{
    char good[1024], bad[1024];
    size_t off = 0;
    mf_dataset *ds = NULL;
    static const struct {
        const char *what, *tail; /* appended after 63 valid fields "1," */
        const char *msg;
    } cases[] = {
        {"pixel over 16", "17,3\n", "17 > 16"},    {"label over 9", "2,12\n", "label 12"},
        {"missing field", "2\n", "fields"},        {"extra field", "2,3,4\n", "junk"},
        {"not a number", "x,3\n", "not a number"}, {"negative", "-1,3\n", "not a number"},
        {"empty line", "2,3\n\n", "not a number"},
    };

    (void)state;
    /* Two rows, CRLF then LF without a final newline. */
    for (int r = 0; r < 2; r++) {
        for (int c = 0; c < 64; c++)
            off += (size_t)snprintf(good + off, sizeof(good) - off, "%d,", (c + r) % 17);
        off += (size_t)snprintf(good + off, sizeof(good) - off, r == 0 ? "4\r\n" : "5");
    }
    assert_int_equal(mf_dataset_parse_digits(&ds, &ctx, NULL, (const uint8_t *)good, off), MF_OK);
    assert_int_equal(ds->n, 2);
    assert_int_equal(ds->dim, 64);
    assert_int_equal(ds->max_value, 16);
    assert_int_equal(ds->x[63], 63 % 17);
    assert_int_equal(ds->x[64 + 16], 0);
    assert_int_equal(ds->y[0], 4);
    assert_int_equal(ds->y[1], 5);
    mf_dataset_free(ds);

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t n = 0;
        int err;
        for (int f = 0; f < 63; f++)
            n += (size_t)snprintf(bad + n, sizeof(bad) - n, "1,");
        n += (size_t)snprintf(bad + n, sizeof(bad) - n, "%s", cases[c].tail);
        ds = NULL;
        err = mf_dataset_parse_digits(&ds, &ctx, NULL, (const uint8_t *)bad, n);
        if (err != MF_E_INVALID || !strstr(ctx.errmsg, cases[c].msg))
            fail_msg("case '%s': got %d (%s)", cases[c].what, err, ctx.errmsg);
        assert_null(ds);
    }
    assert_int_equal(mf_dataset_parse_digits(&ds, &ctx, NULL, (const uint8_t *)"", 0),
                     MF_E_INVALID);
}

static void test_example_data__digits_installed_file(void **state)
{
    mf_dataset *ds = NULL;
    size_t count[MF_DATASET_CLASSES] = {0};

    (void)state;
    if (access(MF_DIGITS_CSV, R_OK) != 0)
        MF_SKIP("python3-sklearn not installed");
    assert_int_equal(mf_dataset_load_digits(&ds, &ctx, NULL, NULL), MF_OK);
    assert_int_equal(ds->n, 1797);
    assert_int_equal(ds->rows, 8);
    assert_int_equal(ds->cols, 8);
    for (size_t i = 0; i < ds->n * ds->dim; i++)
        assert_true(ds->x[i] <= 16);
    for (size_t i = 0; i < ds->n; i++)
        count[ds->y[i]]++;
    /* The set is close to balanced: every digit has 174..183 samples. */
    for (size_t k = 0; k < MF_DATASET_CLASSES; k++)
        assert_true(count[k] >= 170 && count[k] <= 185);
    mf_dataset_free(ds);
}

static void test_example_data__permutation_seeded(void **state)
{
    size_t a[500], b[500], c[500];
    unsigned seen[500] = {0};
    size_t moved = 0;

    (void)state;
    mf_dataset_permutation(a, 500, 42);
    mf_dataset_permutation(b, 500, 42);
    mf_dataset_permutation(c, 500, 43);
    assert_memory_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, c, sizeof(a));
    for (size_t i = 0; i < 500; i++) {
        assert_true(a[i] < 500);
        seen[a[i]]++;
        moved += a[i] != i;
    }
    for (size_t i = 0; i < 500; i++)
        assert_int_equal(seen[i], 1);
    assert_true(moved > 450);
}

static void test_example_data__select_copies(void **state)
{
    char ip[1024];
    const size_t idx[2] = {2, 0};
    mf_dataset *ds, *sub = NULL;

    (void)state;
    ds = load_tiny(ip, sizeof(ip));
    assert_int_equal(mf_dataset_select(&sub, &ctx, ds, idx, 2), MF_OK);
    assert_int_equal(sub->n, 2);
    assert_memory_equal(sub->x, ds->x + 12, 6);
    assert_memory_equal(sub->x + 6, ds->x, 6);
    assert_int_equal(sub->y[0], 9);
    assert_int_equal(sub->y[1], 7);
    mf_dataset_free(sub);
    mf_dataset_free(ds);
}

/* Loading fails cleanly (MF_E_NOMEM, no leak) whichever allocation fails. */
struct load_run {
    char ip[1024], lp[1024];
};

/* One load with allocation `n` failing: a clean MF_E_NOMEM, or the whole set. */
static void load_with_failure(struct mf_kit_alloc *k, long n, void *payload)
{
    const struct load_run *run = payload;
    mf_dataset *ds = NULL;
    int err = mf_dataset_load_idx(&ds, &ctx, &k->a, run->ip, run->lp);

    (void)n;
    if (err != MF_OK) {
        assert_int_equal(err, MF_E_NOMEM);
        assert_null(ds);
        return;
    }
    assert_int_equal(ds->n, 3);
    mf_dataset_free(ds);
}

static void test_example_data__load_survives_every_failed_allocation(void **state)
{
    struct load_run run;
    struct mf_kit_alloc f;

    (void)state;
    (void)data_path(run.ip, sizeof(run.ip), "tiny-images-idx3-ubyte.gz");
    (void)data_path(run.lp, sizeof(run.lp), "tiny-labels-idx1-ubyte.gz");
    (void)mf_kit_alloc_init(&f, -1, MF_KIT_ALLOC_FAIL_ONE);
    assert_true(mf_kit_alloc_each_failure(&f, 1000, load_with_failure, &run) >= 4);
}

int main(void)
{
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    return MF_TEST_RUN("example_data", NULL, NULL,
                       cmocka_unit_test(test_example_data__idx_golden_gz_and_plain),
                       cmocka_unit_test(test_example_data__idx_missing_file_is_io),
                       cmocka_unit_test(test_example_data__idx_rejects),
                       cmocka_unit_test(test_example_data__digits_csv_parses_and_rejects),
                       cmocka_unit_test(test_example_data__digits_installed_file),
                       cmocka_unit_test(test_example_data__permutation_seeded),
                       cmocka_unit_test(test_example_data__select_copies),
                       cmocka_unit_test(test_example_data__load_survives_every_failed_allocation));
}
