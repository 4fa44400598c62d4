/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ground truth for exported samples (examples/mnist/mf_sample_check.h): the label index
 * over a dataset's images (every image found, probe chains that wrap, near misses, equal
 * images with different labels, all of digits when installed, allocation failures), the
 * tally per kind and version, the .npy reader (valid arrays and each rejected header), and
 * reading a whole export directory written here the way mfctl writes it.
 */
#include "mf_test.h"

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_sample_check.h"
#include "kit_alloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct mf_ctx ctx;

/* A dataset in caller memory: n images of `dim` bytes. */
static mf_dataset make_set(uint8_t *x, uint8_t *y, size_t n, uint32_t dim)
{
    mf_dataset ds;

    memset(&ds, 0, sizeof(ds));
    ds.n = n;
    ds.rows = 1;
    ds.cols = dim;
    ds.dim = dim;
    ds.max_value = 255;
    ds.x = x;
    ds.y = y;
    return ds;
}

static void test_example_sample_check__index_finds_every_image(void **state)
{
    /* 300 two-byte images in 1024 slots: the hash alone puts many in one chain. */
    enum { N = 300 };
    uint8_t x[N * 2], y[N], label = 0xff, probe[2];
    mf_dataset ds = make_set(x, y, N, 2);
    mf_label_index *ix = NULL;

    (void)state;
    for (size_t i = 0; i < N; i++) {
        x[2 * i] = (uint8_t)(i & 0xff);
        x[2 * i + 1] = (uint8_t)(i >> 8);
        y[i] = (uint8_t)(i * 7 % 10);
    }
    assert_int_equal(mf_label_index_new(&ix, &ctx, &ds), MF_OK);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(mf_label_index_find(&label, ix, x + 2 * i, 2), MF_OK);
        assert_int_equal(label, y[i]);
    }
    probe[0] = 0x2c; /* 300 = 0x12c: the first absent image */
    probe[1] = 0x01;
    assert_int_equal(mf_label_index_find(&label, ix, probe, 2), MF_E_NOTFOUND);
    assert_int_equal(mf_label_index_find(&label, ix, x, 1), MF_E_NOTFOUND); /* wrong length */
    mf_label_index_free(ix);
    mf_label_index_free(NULL);
}

static void test_example_sample_check__equal_images(void **state)
{
    /* Images 0 and 2 are equal with the same label; 1 and 3 equal with different labels. */
    uint8_t x[4 * 3] = {1, 2, 3, 9, 9, 9, 1, 2, 3, 9, 9, 9}, y[4] = {5, 6, 5, 7}, label = 0;
    const uint8_t other[3] = {1, 2, 4};
    mf_dataset ds = make_set(x, y, 4, 3);
    mf_label_index *ix = NULL;

    (void)state;
    assert_int_equal(mf_label_index_new(&ix, &ctx, &ds), MF_OK);
    assert_int_equal(mf_label_index_find(&label, ix, x, 3), MF_OK);
    assert_int_equal(label, 5);
    assert_int_equal(mf_label_index_find(&label, ix, x + 3, 3), MF_E_INVALID);
    assert_int_equal(mf_label_index_find(&label, ix, other, 3), MF_E_NOTFOUND);
    mf_label_index_free(ix);
}

static void test_example_sample_check__every_digit_finds_its_label(void **state)
{
    mf_dataset *ds = NULL;
    mf_label_index *ix = NULL;
    size_t found = 0, ambiguous = 0;
    uint8_t label;

    (void)state;
    if (access(MF_DIGITS_CSV, R_OK) != 0)
        MF_SKIP("python3-sklearn not installed");
    assert_int_equal(mf_dataset_load_digits(&ds, &ctx, NULL, NULL), MF_OK);
    assert_int_equal(mf_label_index_new(&ix, &ctx, ds), MF_OK);
    for (size_t i = 0; i < ds->n; i++) {
        const int err = mf_label_index_find(&label, ix, ds->x + i * ds->dim, ds->dim);

        if (err == MF_OK) {
            assert_int_equal(label, ds->y[i]);
            found++;
        } else {
            assert_int_equal(err, MF_E_INVALID);
            ambiguous++;
        }
    }
    assert_int_equal(found + ambiguous, ds->n);
    assert_true(found >= ds->n - 10); /* a few exact duplicates at most */
    mf_label_index_free(ix);
    mf_dataset_free(ds);
}

/* One index build with allocation `n` failing: NULL and a message, or the index. */
static void index_with_failure(struct mf_kit_alloc *k, long n, void *payload)
{
    const mf_dataset *ds = payload;
    struct mf_ctx fctx;
    mf_label_index *ix = (mf_label_index *)k; /* must be reset to NULL on failure */

    (void)n;
    mf_ctx__init(&fctx, &k->a, NULL, NULL, "test");
    if (mf_label_index_new(&ix, &fctx, ds) == MF_OK) {
        mf_label_index_free(ix);
        return;
    }
    assert_null(ix);
    assert_non_null(strstr(mf_ctx__errmsg(&fctx), "no memory"));
}

static void test_example_sample_check__index_allocation_failures(void **state)
{
    uint8_t x[6] = {1, 2, 3, 4, 5, 6}, y[2] = {1, 2};
    mf_dataset ds = make_set(x, y, 2, 3);
    struct mf_kit_alloc ta;

    (void)state;
    (void)mf_kit_alloc_init(&ta, -1, MF_KIT_ALLOC_FAIL_ONE);
    /* the handle and its two arrays */
    assert_int_equal(mf_kit_alloc_each_failure(&ta, 100, index_with_failure, &ds), 3);
}

static void test_example_sample_check__tally(void **state)
{
    static mf_sample_tally t;
    const float nan = NAN;
    const float s_right[3] = {0.1f, 2.0f, 0.3f}, s_wrong[3] = {3.0f, 2.0f, 0.3f};
    const float t_right[3] = {0.1f, 0.8f, 0.1f}, t_wrong[3] = {0.2f, 0.1f, 0.7f};
    const float unlabelled[3] = {nan, nan, nan};
    struct mf_dynbuf b;
    cJSON *doc;
    const cJSON *g;

    (void)state;
    memset(&t, 0, sizeof(t));
    mf_sample_tally_add(&t, "hard", "v1", 1, t_right, s_wrong, 3);
    mf_sample_tally_add(&t, "hard", "v1", 1, t_wrong, s_right, 3);
    mf_sample_tally_add(&t, "hard", "v1", 1, unlabelled, s_right, 3);
    mf_sample_tally_add(&t, "hard", "v1", 1, NULL, s_right, 3);
    mf_sample_tally_add(&t, "hard", "v1", MF_SAMPLE_UNMATCHED, t_right, s_right, 3);
    mf_sample_tally_add(&t, "audit", "v1", 1, t_right, s_right, 3);
    mf_sample_tally_add(&t, "hard", "v2", MF_SAMPLE_AMBIGUOUS, t_right, s_right, 3);
    mf_sample_tally_add(&t, "hard\"", "v2", 1, t_right, s_right, 3); /* not a name: dropped */
    assert_int_equal(t.samples, 8);
    assert_int_equal(t.unmatched, 1);
    assert_int_equal(t.ambiguous, 1);
    assert_int_equal(t.dropped, 1);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.g[0].count, 5);
    assert_int_equal(t.g[0].matched, 4);
    assert_int_equal(t.g[0].labelled, 2);
    assert_int_equal(t.g[0].teacher_correct, 1);
    assert_int_equal(t.g[0].student_correct, 3);
    assert_int_equal(t.g[1].count, 1);
    assert_int_equal(t.g[2].matched, 0);
    assert_int_equal(mf_sample_argmax(s_wrong, 3), 0);
    assert_int_equal(mf_sample_argmax(t_wrong, 3), 2);
    mf_dynbuf__init(&b, NULL, 1 << 16);
    assert_int_equal(mf_sample_tally_json(&b, &t), MF_OK);
    doc = cJSON_Parse((const char *)b.data);
    assert_non_null(doc);
    g = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "groups"), 0);
    assert_string_equal(cJSON_GetObjectItem(g, "kind")->valuestring, "hard");
    assert_true(cJSON_GetObjectItem(g, "teacher_accuracy")->valuedouble == 0.5);
    assert_true(cJSON_GetObjectItem(g, "student_accuracy")->valuedouble == 0.75);
    /* No matched sample: the accuracies are null, not 0. */
    g = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "groups"), 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(g, "student_accuracy")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(g, "teacher_accuracy")));
    cJSON_Delete(doc);
    mf_dynbuf__free(&b);
}

/* A .npy file image the way numpy 1.x writes it: header padded to 128 bytes. */
static size_t npy(uint8_t *out, const char *descr, const char *shape, const void *data, size_t len)
{
    char h[128];
    int n = snprintf(h, sizeof(h), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
                     shape);

    memset(h + n, ' ', sizeof(h) - 10 - (size_t)n);
    h[117] = '\n';
    memcpy(out, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(out + 10, h, 118);
    if (len)
        memcpy(out + 128, data, len);
    return 128 + len;
}

static void test_example_sample_check__npy_reader(void **state)
{
    uint8_t buf[512];
    const uint8_t u[6] = {1, 2, 3, 4, 5, 6};
    const int64_t off[3] = {0, 2, 6};
    mf_npy a;
    char *p;
    size_t n;

    (void)state;
    memset(buf, 0, sizeof(buf)); /* the header's strstr below stops at a NUL */
    n = npy(buf, "|u1", "(2, 3)", u, 6);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_OK);
    assert_string_equal(a.descr, "|u1");
    assert_int_equal(a.rank, 2);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 3);
    assert_ptr_equal(a.data, buf + 128);
    n = npy(buf, "<i8", "(3,)", off, sizeof(off));
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_OK);
    assert_int_equal(a.rank, 1);
    assert_int_equal(a.item, 8);
    n = npy(buf, "<f4", "(0, 0)", NULL, 0);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_OK);
    assert_int_equal(a.shape[0], 0);
    /* Rejected: one byte short or long, another dtype, Fortran order, a 3-d shape, bad
     * magic, a header past the end. */
    n = npy(buf, "|u1", "(2, 3)", u, 6);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n - 1), MF_E_INVALID);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n + 1), MF_E_INVALID);
    n = npy(buf, ">f4", "(1,)", u, 4);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "dtype"));
    n = npy(buf, "|u1", "(6,)", u, 6);
    p = strstr((char *)buf + 10, "False");
    assert_non_null(p);
    memcpy(p, "True ", 5);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_E_INVALID);
    n = npy(buf, "|u1", "(1, 2, 3)", u, 6);
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_E_INVALID);
    n = npy(buf, "|u1", "(6,)", u, 6);
    buf[1] = 'X';
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, n), MF_E_INVALID);
    n = npy(buf, "|u1", "(6,)", u, 6);
    buf[8] = 0xff;
    assert_int_equal(mf_npy_parse(&a, &ctx, buf, 100), MF_E_INVALID);
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[256];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_npy(const char *dir, const char *name, const char *descr, const char *shape,
                      const void *data, size_t len)
{
    uint8_t buf[1024];

    write_file(dir, name, buf, npy(buf, descr, shape, data, len));
}

static void remove_files(const char *dir)
{
    static const char *const names[] = {"samples.jsonl", "inputs.npy", "input_offsets.npy",
                                        "student.npy", "teacher.npy"};
    char path[256];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        (void)unlink(path);
    }
}

static void test_example_sample_check__export_directory(void **state)
{
    /* A dataset of three 2-byte images; an export of four samples: three of them are
     * dataset images, one is not; the last one is not labelled. */
    static mf_sample_tally t;
    uint8_t x[6] = {10, 11, 20, 21, 30, 31}, y[3] = {0, 1, 2};
    const uint8_t inputs[8] = {20, 21, 10, 11, 99, 99, 30, 31};
    const float student[4 * 3] = {0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0};
    const float teacher[4 * 3] = {0, 1, 0, 0, 0, 1, 1, 0, 0, NAN, NAN, NAN};
    const int64_t offsets[5] = {0, 2, 4, 6, 8};
    static const char jsonl[] = "{\"kind\": \"hard\", \"model_version\": \"v1\"}\n"
                                "{\"kind\": \"hard\", \"model_version\": \"v1\"}\n"
                                "{\"kind\": \"audit\", \"model_version\": \"v1\"}\n"
                                "{\"kind\": \"hard\", \"model_version\": \"v2\"}\n";
    mf_dataset ds = make_set(x, y, 3, 2);
    char dir[] = "/tmp/mf_sample_check_XXXXXX";
    mf_label_index *ix = NULL;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(mf_label_index_new(&ix, &ctx, &ds), MF_OK);
    write_file(dir, "samples.jsonl", jsonl, strlen(jsonl));
    write_npy(dir, "inputs.npy", "|u1", "(4, 2)", inputs, sizeof(inputs));
    write_npy(dir, "student.npy", "<f4", "(4, 3)", student, sizeof(student));
    write_npy(dir, "teacher.npy", "<f4", "(4, 3)", teacher, sizeof(teacher));
    memset(&t, 0, sizeof(t));
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_OK);
    assert_int_equal(t.samples, 4);
    assert_int_equal(t.unmatched, 1);
    assert_int_equal(t.n, 3);
    /* hard v1: image 1 (student 1 right, teacher 1 right), image 0 (student 0 right,
     * teacher 2 wrong). */
    assert_string_equal(t.g[0].kind, "hard");
    assert_int_equal(t.g[0].matched, 2);
    assert_int_equal(t.g[0].labelled, 2);
    assert_int_equal(t.g[0].teacher_correct, 1);
    assert_int_equal(t.g[0].student_correct, 2);
    assert_int_equal(t.g[1].count, 1); /* audit v1: not a dataset image */
    assert_int_equal(t.g[1].matched, 0);
    assert_int_equal(t.g[2].matched, 1); /* hard v2: image 2, right, unlabelled */
    assert_int_equal(t.g[2].labelled, 0);
    assert_int_equal(t.g[2].student_correct, 0);

    /* The same inputs as a flat array with offsets. */
    write_npy(dir, "inputs.npy", "|u1", "(8,)", inputs, sizeof(inputs));
    write_npy(dir, "input_offsets.npy", "<i8", "(5,)", offsets, sizeof(offsets));
    memset(&t, 0, sizeof(t));
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_OK);
    assert_int_equal(t.unmatched, 1);
    assert_int_equal(t.g[0].teacher_correct, 1);

    /* Files that disagree. */
    write_npy(dir, "input_offsets.npy", "<i8", "(4,)", offsets, 4 * 8);
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_E_INVALID);
    remove_files(dir);
    write_file(dir, "samples.jsonl", jsonl, strlen(jsonl));
    write_npy(dir, "inputs.npy", "|u1", "(4, 2)", inputs, sizeof(inputs));
    write_npy(dir, "student.npy", "<f4", "(4, 3)", student, sizeof(student));
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_E_IO); /* no teacher.npy */
    write_npy(dir, "teacher.npy", "<f4", "(3, 3)", teacher, 9 * 4);
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_E_INVALID);
    write_npy(dir, "teacher.npy", "<f4", "(4, 3)", teacher, sizeof(teacher));
    /* Two lines for four rows. */
    write_file(dir, "samples.jsonl", jsonl,
               (size_t)(strchr(strchr(jsonl, '\n') + 1, '\n') + 1 - jsonl));
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_E_INVALID);
    write_file(dir, "samples.jsonl", "{\"kind\": 1}\n", 12);
    assert_int_equal(mf_sample_check_export(&t, &ctx, ix, dir), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "line 1"));
    remove_files(dir);
    assert_int_equal(rmdir(dir), 0);
    mf_label_index_free(ix);
}

int main(void)
{
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    return MF_TEST_RUN("example_sample_check", NULL, NULL,
                       cmocka_unit_test(test_example_sample_check__index_finds_every_image),
                       cmocka_unit_test(test_example_sample_check__equal_images),
                       cmocka_unit_test(test_example_sample_check__every_digit_finds_its_label),
                       cmocka_unit_test(test_example_sample_check__index_allocation_failures),
                       cmocka_unit_test(test_example_sample_check__tally),
                       cmocka_unit_test(test_example_sample_check__npy_reader),
                       cmocka_unit_test(test_example_sample_check__export_directory));
}
