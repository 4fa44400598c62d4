/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl samples (server/mfctl/cmd_samples*.c): the .npy v1.0 header against bytes numpy
 * 1.24 writes, the streaming writer, argument errors, and `samples export | delete` against
 * a fake server on 127.0.0.1 (ephemeral port, one thread) that serves canned pages: paging
 * by cursor, inputs of different lengths (flat inputs.npy + input_offsets.npy), NaN teacher
 * rows for unlabelled samples, and inputs that do not match their digest or are not base64
 * (a clear error, no files left); the ustar header against the bytes Python's tarfile
 * writes, and a WebDataset export (--format webdataset) read back member by member.
 */
#include "mf_test.h"
#include "cmd_samples.h"
#include "mfctl_fixture.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include "kit_fs.h"
#include "kit_http.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* np.save(f, np.zeros((3, 10), '<f4')) and np.zeros((7,), '<i8'): the first 128 bytes. */
static const char numpy_f4_3x10[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': "
                                    "False, 'shape': (3, 10), }";
static const char numpy_i8_7[] = "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': "
                                 "False, 'shape': (7,), }";

/* `numpy_head` holds NUL bytes (version, length): its length `n` comes from sizeof. */
static void expect_header(const char *numpy_head, size_t n, const char *descr, int ndim, uint64_t a,
                          uint64_t b)
{
    char want[MFCTL_NPY_HEADER_LEN], got[MFCTL_NPY_HEADER_LEN];
    uint64_t shape[2] = {a, b};

    memset(want, ' ', sizeof(want));
    memcpy(want, numpy_head, n);
    want[sizeof(want) - 1] = '\n';
    mfctl__npy_header(got, descr, ndim, shape);
    assert_memory_equal(got, want, sizeof(want));
}

static void test_mfctl_samples__npy_header_is_numpys(void **state)
{
    char h[MFCTL_NPY_HEADER_LEN];
    uint64_t big[2] = {UINT64_MAX, UINT64_MAX};

    (void)state;
    expect_header(numpy_f4_3x10, sizeof(numpy_f4_3x10) - 1, "<f4", 2, 3, 10);
    expect_header(numpy_i8_7, sizeof(numpy_i8_7) - 1, "<i8", 1, 7, 0);
    /* The largest shape still fits; the total is a multiple of 64 and the length field
     * (little-endian) says so. */
    mfctl__npy_header(h, "|u1", 2, big);
    assert_int_equal(MFCTL_NPY_HEADER_LEN % 64, 0);
    assert_int_equal((uint8_t)h[8] | ((uint8_t)h[9] << 8), MFCTL_NPY_HEADER_LEN - 10);
    assert_non_null(strstr(h + 10, "(18446744073709551615, 18446744073709551615), }"));
    assert_int_equal(h[MFCTL_NPY_HEADER_LEN - 1], '\n');
}

/* tarfile.TarInfo("0123.json", size 5, mtime 1764500001, mode 0o644, uid/gid 0, no
 * owner names).tobuf(format=USTAR_FORMAT) (Python 3.11): its non-NUL runs and offsets. */
static void test_mfctl_samples__tar_header_is_pythons(void **state)
{
    static const struct {
        size_t at;
        const char *text;
    } runs[] = {
        {0, "0123.json"},     {100, "0000644"},     {108, "0000000"}, {116, "0000000"},
        {124, "00000000005"}, {136, "15113021041"}, {148, "007243"},  {155, " 0"},
        {257, "ustar"},       {263, "00"},
    };
    uint8_t want[MFCTL_TAR_BLOCK], got[MFCTL_TAR_BLOCK];

    (void)state;
    memset(want, 0, sizeof(want));
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
        memcpy(want + runs[i].at, runs[i].text, strlen(runs[i].text));
    mfctl__tar_header(got, "0123.json", 5, 1764500001);
    assert_memory_equal(got, want, sizeof(want));
}

static char g_dir[64];

/* At most `cap` bytes of the scratch dir's `name` into `out`; the file must exist. */
static void slurp(uint8_t *out, size_t cap, size_t *len, const char *name)
{
    uint8_t *all = mf_kit_fs_slurp(g_dir, name, len);

    if (!all)
        fail_msg("%s/%s missing", g_dir, name);
    if (*len > cap)
        *len = cap;
    memcpy(out, all, *len);
    test_free(all);
}

static int exists(const char *name)
{
    return mf_kit_fs_exists(g_dir, name);
}

static void test_mfctl_samples__npy_writer(void **state)
{
    struct mfctl_npy n;
    struct mf_ctx ctx;
    char path[128], hdr[MFCTL_NPY_HEADER_LEN];
    uint8_t buf[512];
    uint64_t shape[2] = {2, 2};
    size_t len;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    (void)snprintf(path, sizeof(path), "%s/a.npy", g_dir);
    assert_int_equal(mfctl__npy_open(&n, &ctx, path, "<f4"), MF_OK);
    assert_true(exists("a.npy.part") && !exists("a.npy"));
    assert_int_equal(mfctl__npy_put_f32(&n, &ctx, 1.0f), MF_OK);
    assert_int_equal(mfctl__npy_put_f32(&n, &ctx, -2.5f), MF_OK);
    assert_int_equal(mfctl__npy_put_f32(&n, &ctx, NAN), MF_OK);
    assert_int_equal(mfctl__npy_put_f32(&n, &ctx, 0.0f), MF_OK);
    assert_int_equal(mfctl__npy_finish(&n, &ctx, 2, shape), MF_OK);
    assert_true(exists("a.npy") && !exists("a.npy.part"));
    slurp(buf, sizeof(buf), &len, "a.npy");
    assert_int_equal(len, MFCTL_NPY_HEADER_LEN + 16);
    mfctl__npy_header(hdr, "<f4", 2, shape);
    assert_memory_equal(buf, hdr, sizeof(hdr));
    /* IEEE-754 binary32, little-endian: 1.0 = 0x3f800000, -2.5 = 0xc0200000. */
    assert_memory_equal(buf + 128, "\x00\x00\x80\x3f\x00\x00\x20\xc0", 8);
    assert_true(buf[128 + 11] == 0x7f && (buf[128 + 10] & 0x80)); /* a NaN */
    /* Abort: the part file goes, nothing appears. */
    (void)snprintf(path, sizeof(path), "%s/b.npy", g_dir);
    assert_int_equal(mfctl__npy_open(&n, &ctx, path, "|u1"), MF_OK);
    mfctl__npy_abort(&n);
    assert_true(!exists("b.npy") && !exists("b.npy.part"));
    /* An unwritable place: a clear error naming it. */
    assert_int_equal(mfctl__npy_open(&n, &ctx, "/nonexistent-dir/x.npy", "|u1"), MF_E_IO);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "/nonexistent-dir/x.npy.part"));
}

/* ---- running mfctl ---- */

/* Runs mfctl; `*err_text` is its stderr, valid until the next run. */
static int run(char **err_text, int argc, const char *const *argv)
{
    static struct mfctl_run r;

    mfctl_run_free(&r);
    mfctl_run(&r, argc, argv);
    *err_text = r.err;
    return r.rc;
}

static void test_mfctl_samples__usage_errors(void **state)
{
    static const char *const bad[][6] = {
        {"samples", "export", "out", NULL},                   /* no --model */
        {"samples", "export", "--model", "digits", NULL},     /* no OUTDIR */
        {"samples", "export", "--model", "a b", "out", NULL}, /* not a name */
        {"samples", "export", "--kind", "easy", "out", NULL}, /* kind */
        {"samples", "export", "--since", "-5", "out", NULL},  /* time */
        {"samples", "export", "--min-teacher-confidence", "1.5", "out", NULL},
        {"samples", "export", "--format", "parquet", "out", NULL}, /* format */
        {"samples", "export", "--model", NULL},                    /* missing value */
        {"samples", "delete", NULL},                               /* no --device */
        {"samples", "delete", "--device", "a/b", NULL},            /* not an id */
        {"samples", "frobnicate", NULL},
    };
    const char *argv[8];
    char *err;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int argc = 0;

        argv[argc++] = "mfctl";
        for (int k = 0; bad[i][k]; k++)
            argv[argc++] = bad[i][k];
        argv[argc] = NULL;
        if (run(&err, argc, argv) != 2)
            fail_msg("case %zu: not a usage error", i);
        assert_non_null(strstr(err, "usage: mfctl"));
    }
}

/* ---- a fake server serving canned answers, one per connection ---- */

/* `s` answers its requests with the JSON bodies `answers` (NULL-terminated), in order. */
static void serve_pages(struct mf_kit_http *s, const char *const *answers)
{
    mf_kit_http_start(s, NULL, NULL);
    for (int i = 0; answers[i]; i++) {
        struct mf_kit_http_reply r = {.status = 200, .body = answers[i]};

        mf_kit_http_script(s, &r);
    }
}

/* One sample of the export route; `b64` decodes to `raw` (n bytes), teacher NULL: none. */
static void sample(char *out, size_t cap, int seq, const char *b64, const char *raw, size_t n,
                   const char *teacher, const char *sha_override)
{
    uint8_t d[MF_SHA256_DIGEST_LEN];
    char hex[MF_SHA256_HEX_LEN + 1];

    mf_sha256__digest(d, raw, n);
    mf_hex__encode(hex, d, sizeof(d));
    (void)snprintf(out, cap,
                   "{\"seq\":%d,\"id\":\"%032d\",\"device_id\":\"cam-%d\",\"model\":\"digits\","
                   "\"model_version\":\"v3\",\"kind\":\"hard\",\"method\":\"max_softmax\","
                   "\"score\":0.5,\"created_at\":1764500000,\"received_at\":1764500001,"
                   "\"output_kind\":\"logits\",\"output\":[1,%d,-1],\"input_sha256\":\"%s\","
                   "\"input\":\"%s\",\"teacher_version\":%s,\"teacher_output\":%s,"
                   "\"teacher_confidence\":%s%s}",
                   seq, seq, seq, seq, sha_override ? sha_override : hex, b64,
                   teacher ? "\"t-1\"" : "null", teacher ? teacher : "null",
                   teacher ? "0.9" : "null", teacher ? ",\"labelled_at\":1764500002" : "");
}

/* The admin token file of these runs, in the scratch dir; `tok` gets its path. */
static void write_token(char *tok, size_t cap)
{
    (void)snprintf(tok, cap, "%s/token", g_dir);
    mf_kit_fs_write(tok, "mfa_test\n", 9);
}

/* The value of the ustar octal field at `p` (`width` bytes). */
static uint64_t tar_octal(const uint8_t *p, size_t width)
{
    uint64_t v = 0;

    for (size_t i = 0; i < width && p[i] >= '0' && p[i] <= '7'; i++)
        v = v * 8 + (uint64_t)(p[i] - '0');
    return v;
}

/* Reads member `name` at *at of the archive `tar` (len bytes): its header checked (magic,
 * checksum, regular file, mtime), its data returned, *at moved past its padding. */
static const uint8_t *tar_member(const uint8_t *tar, size_t len, size_t *at, const char *name,
                                 size_t *size)
{
    const uint8_t *h = tar + *at;
    unsigned sum = 0;

    assert_true(*at + MFCTL_TAR_BLOCK <= len);
    assert_string_equal((const char *)h, name);
    assert_memory_equal(h + 257,
                        "ustar\0"
                        "00",
                        8);
    assert_int_equal(h[156], '0');
    assert_int_equal(tar_octal(h + 136, 12), 1764500001); /* received_at */
    for (size_t i = 0; i < MFCTL_TAR_BLOCK; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    assert_int_equal(tar_octal(h + 148, 8), sum);
    *size = (size_t)tar_octal(h + 124, 12);
    *at += MFCTL_TAR_BLOCK + (*size + MFCTL_TAR_BLOCK - 1) / MFCTL_TAR_BLOCK * MFCTL_TAR_BLOCK;
    assert_true(*at <= len);
    return h + MFCTL_TAR_BLOCK;
}

static int export_against(struct mf_kit_http *f, char **err)
{
    char url[64], tok[128], out[96];
    const char *argv[] = {"mfctl",  "--server", url,      "--token-file", tok,    "samples",
                          "export", "--model",  "digits", "--kind",       "hard", "--since",
                          "100",    out,        NULL};

    (void)snprintf(url, sizeof(url), "%s", f->url);
    write_token(tok, sizeof(tok));
    (void)snprintf(out, sizeof(out), "%s/export", g_dir);
    return run(err, 14, argv);
}

static void test_mfctl_samples__export_pages_ragged_unlabelled(void **state)
{
    char s1[1024], s2[1024], s3[1024], p1[4096], p2[2048], *err;
    struct mf_kit_http f;
    uint8_t buf[4096];
    int64_t offs[4];
    float t[9];
    size_t len;

    (void)state;
    sample(s1, sizeof(s1), 3, "AAEC", "\x00\x01\x02", 3, "[0.1,0.8,0.1]", NULL);
    sample(s2, sizeof(s2), 7, "aGVsbG8=", "hello", 5, NULL, NULL);
    sample(s3, sizeof(s3), 9, "/+8=", "\xff\xef", 2, "[0.2,0.2,0.6]", NULL);
    (void)snprintf(p1, sizeof(p1), "{\"samples\":[%s,%s],\"next\":7}", s1, s2);
    (void)snprintf(p2, sizeof(p2), "{\"samples\":[%s],\"next\":0}", s3);
    serve_pages(&f, (const char *const[]){p1, p2, NULL});
    if (export_against(&f, &err) != 0)
        fail_msg("export failed: %s", err);
    assert_int_equal(mf_kit_http_requests(&f), 2);
    assert_non_null(strstr(mf_kit_http_request(&f, 0)->line,
                           "GET /v1/admin/samples?model=digits&limit=500&after=0"
                           "&kind=hard&since=100 "));
    assert_non_null(strstr(mf_kit_http_request(&f, 1)->line, "&after=7&"));
    mf_kit_http_stop(&f);
    (void)snprintf(g_dir + strlen(g_dir), sizeof(g_dir) - strlen(g_dir), "/export");
    /* Lengths 3, 5, 2: flat inputs [10] and offsets [4]. */
    slurp(buf, sizeof(buf), &len, "inputs.npy");
    assert_int_equal(len, 128 + 10);
    assert_non_null(strstr((char *)buf + 10, "'descr': '|u1', 'fortran_order': False, "
                                             "'shape': (10,), }"));
    assert_memory_equal(buf + 128, "\x00\x01\x02hello\xff\xef", 10);
    slurp(buf, sizeof(buf), &len, "input_offsets.npy");
    assert_int_equal(len, 128 + 32);
    assert_non_null(strstr((char *)buf + 10, "'descr': '<i8'"));
    memcpy(offs, buf + 128, sizeof(offs)); /* little-endian host */
    assert_true(offs[0] == 0 && offs[1] == 3 && offs[2] == 8 && offs[3] == 10);
    slurp(buf, sizeof(buf), &len, "teacher.npy");
    assert_int_equal(len, 128 + 36);
    assert_non_null(strstr((char *)buf + 10, "'shape': (3, 3), }"));
    memcpy(t, buf + 128, sizeof(t));
    assert_true(fabsf(t[1] - 0.8f) < 1e-7f && isnan(t[3]) && isnan(t[5]) &&
                fabsf(t[8] - 0.6f) < 1e-7f);
    slurp(buf, sizeof(buf), &len, "student.npy");
    memcpy(t, buf + 128, sizeof(t));
    assert_true(t[1] == 3.0f && t[4] == 7.0f && t[7] == 9.0f);
    slurp(buf, sizeof(buf) - 1, &len, "samples.jsonl");
    buf[len] = '\0';
    assert_non_null(strstr((char *)buf, "{\"row\":0,\"device\":\"cam-3\",\"id\":"));
    assert_non_null(strstr((char *)buf, "\"row\":1,\"device\":\"cam-7\""));
    assert_non_null(strstr((char *)buf, "\"teacher_output\":null"));
    /* the teacher's hard label beside its probabilities; null while unlabelled */
    assert_non_null(strstr((char *)buf, "\"teacher_output\":[0.1,0.8,0.1],\"teacher_label\":1,"));
    assert_non_null(strstr((char *)buf, "\"teacher_output\":null,\"teacher_label\":null,"));
    assert_non_null(strstr((char *)buf, "\"teacher_output\":[0.2,0.2,0.6],\"teacher_label\":2,"));
    assert_non_null(strstr((char *)buf, "\"student_output\":[1,9,-1]"));
    assert_non_null(strstr((char *)buf, "\"input_len\":2}\n"));
    g_dir[strlen(g_dir) - strlen("/export")] = '\0';
}

static void test_mfctl_samples__export_webdataset(void **state)
{
    char url[64], tok[128], out[96], s1[1024], s2[1024], page[4096], hdr[MFCTL_NPY_HEADER_LEN];
    const char *argv[] = {"mfctl",      "--server", url,       "--token-file", tok,
                          "samples",    "export",   "--model", "digits",       "--format",
                          "webdataset", out,        NULL};
    uint64_t shape[1] = {3};
    static uint8_t tar[16384];
    const uint8_t *data;
    struct mf_kit_http f;
    size_t len, at = 0, size;
    char *err;

    (void)state;
    sample(s1, sizeof(s1), 3, "AAEC", "\x00\x01\x02", 3, "[0.1,0.8,0.1]", NULL);
    sample(s2, sizeof(s2), 7, "aGVsbG8=", "hello", 5, NULL, NULL);
    /* The server's threshold for the sample's version: the first has one, the second none. */
    (void)snprintf(strrchr(s1, '}'), 32, ",\"threshold\":0.62}");
    (void)snprintf(page, sizeof(page), "{\"samples\":[%s,%s],\"next\":0}", s1, s2);
    serve_pages(&f, (const char *const[]){page, NULL});
    (void)snprintf(url, sizeof(url), "%s", f.url);
    write_token(tok, sizeof(tok));
    (void)snprintf(out, sizeof(out), "%s/wds", g_dir);
    if (run(&err, 12, argv) != 0)
        fail_msg("export failed: %s", err);
    mf_kit_http_stop(&f);
    assert_false(exists("wds/samples.jsonl") || exists("wds/inputs.npy") ||
                 exists("wds/samples.tar.part"));
    slurp(tar, sizeof(tar), &len, "wds/samples.tar");
    assert_int_equal(len % MFCTL_TAR_BLOCK, 0);
    /* Sample 3: its input as a uint8 .npy of shape (3,), then its JSON object. */
    data = tar_member(tar, len, &at, "00000000000000000000000000000003.input.npy", &size);
    assert_int_equal(size, MFCTL_NPY_HEADER_LEN + 3);
    mfctl__npy_header(hdr, "|u1", 1, shape);
    assert_memory_equal(data, hdr, sizeof(hdr));
    assert_memory_equal(data + MFCTL_NPY_HEADER_LEN, "\x00\x01\x02", 3);
    assert_true(data[size] == 0 && data[511] == 0); /* padding */
    data = tar_member(tar, len, &at, "00000000000000000000000000000003.json", &size);
    assert_true(size < 1024 && data[size - 1] == '\n');
    assert_non_null(strstr((const char *)data, "{\"row\":0,\"device\":\"cam-3\""));
    assert_non_null(strstr((const char *)data, "\"threshold\":0.62,"));
    assert_non_null(strstr((const char *)data, "\"teacher_label\":1,"));
    /* Sample 7: 5 input bytes, unlabelled, no threshold. */
    data = tar_member(tar, len, &at, "00000000000000000000000000000007.input.npy", &size);
    assert_int_equal(size, MFCTL_NPY_HEADER_LEN + 5);
    assert_memory_equal(data + MFCTL_NPY_HEADER_LEN, "hello", 5);
    assert_non_null(strstr((const char *)data + 10, "'shape': (5,), }"));
    data = tar_member(tar, len, &at, "00000000000000000000000000000007.json", &size);
    assert_non_null(strstr((const char *)data, "\"threshold\":null,"));
    assert_non_null(strstr((const char *)data, "\"teacher_label\":null,"));
    /* The end: two zero blocks, nothing after. */
    assert_int_equal(len, at + 2 * MFCTL_TAR_BLOCK);
    for (size_t i = at; i < len; i++)
        assert_int_equal(tar[i], 0);
}

static void test_mfctl_samples__webdataset_refuses_odd_ids(void **state)
{
    char url[64], tok[128], out[96], s1[1024], page[2048], *err;
    const char *argv[] = {"mfctl",      "--server", url,       "--token-file", tok,
                          "samples",    "export",   "--model", "digits",       "--format",
                          "webdataset", out,        NULL};
    struct mf_kit_http f;
    char *id;

    (void)state;
    sample(s1, sizeof(s1), 3, "AAEC", "\x00\x01\x02", 3, NULL, NULL);
    id = strstr(s1, "\"id\":\"") + 6; /* "../x" would name a path outside the archive */
    memcpy(id, "../", 3);
    (void)snprintf(page, sizeof(page), "{\"samples\":[%s],\"next\":0}", s1);
    serve_pages(&f, (const char *const[]){page, NULL});
    (void)snprintf(url, sizeof(url), "%s", f.url);
    write_token(tok, sizeof(tok));
    (void)snprintf(out, sizeof(out), "%s/wds", g_dir);
    assert_int_equal(run(&err, 12, argv), 1);
    mf_kit_http_stop(&f);
    assert_non_null(strstr(err, "is not lower-case hex: it cannot key a tar member"));
    assert_false(exists("wds/samples.tar") || exists("wds/samples.tar.part"));
}

static void test_mfctl_samples__bad_input_leaves_nothing(void **state)
{
    char s1[1024], s2[1024], p1[2048], p2[2048], *err;
    struct mf_kit_http f;

    (void)state;
    sample(s1, sizeof(s1), 3, "AAEC", "\x00\x01\x02", 3, NULL,
           "0000000000000000000000000000000000000000000000000000000000000000");
    (void)snprintf(p1, sizeof(p1), "{\"samples\":[%s],\"next\":0}", s1);
    sample(s2, sizeof(s2), 4, "A*EC", "\x00\x01\x02", 3, NULL, NULL);
    (void)snprintf(p2, sizeof(p2), "{\"samples\":[%s],\"next\":0}", s2);
    serve_pages(&f, (const char *const[]){p1, p2, NULL});
    assert_int_equal(export_against(&f, &err), 1);
    assert_non_null(strstr(err, "does not match input_sha256"));
    assert_int_equal(export_against(&f, &err), 1);
    assert_non_null(strstr(err, "sample 00000000000000000000000000000004: input is not base64"));
    mf_kit_http_stop(&f);
    assert_false(exists("export/samples.jsonl") || exists("export/samples.jsonl.part") ||
                 exists("export/inputs.npy") || exists("export/inputs.npy.part") ||
                 exists("export/teacher.npy.part"));
}

static void test_mfctl_samples__delete(void **state)
{
    char url[64], tok[128], *err;
    const char *argv[] = {"mfctl",   "--server", url,        "--token-file", tok,
                          "samples", "delete",   "--device", "cam-1",        NULL};
    struct mf_kit_http f;

    (void)state;
    serve_pages(&f, (const char *const[]){"{\"deleted\":4}", "{\"nothing\":1}", NULL});
    (void)snprintf(url, sizeof(url), "%s", f.url);
    write_token(tok, sizeof(tok));
    assert_int_equal(run(&err, 9, argv), 0);
    assert_non_null(
        strstr(mf_kit_http_request(&f, 0)->line, "DELETE /v1/admin/devices/cam-1/samples "));
    assert_int_equal(run(&err, 9, argv), 1); /* an answer without the count */
    assert_non_null(strstr(err, "no \"deleted\" count"));
    mf_kit_http_stop(&f);
}

static int setup(void **state)
{
    (void)state;
    mf_kit_fs_mkdtemp(g_dir, sizeof(g_dir), "mf-mfctl-smp");
    (void)unsetenv("MF_SERVER");
    (void)unsetenv("MF_TOKEN_FILE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_kit_fs_rmtree(g_dir);
    return 0;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mfctl_samples__npy_header_is_numpys),
        T(test_mfctl_samples__npy_writer),
        T(test_mfctl_samples__usage_errors),
        T(test_mfctl_samples__export_pages_ragged_unlabelled),
        T(test_mfctl_samples__bad_input_leaves_nothing),
        cmocka_unit_test(test_mfctl_samples__tar_header_is_pythons),
        T(test_mfctl_samples__export_webdataset),
        T(test_mfctl_samples__webdataset_refuses_odd_ids),
        T(test_mfctl_samples__delete),
    };
#undef T
    return cmocka_run_group_tests_name("mfctl_samples", tests, NULL, NULL);
}
