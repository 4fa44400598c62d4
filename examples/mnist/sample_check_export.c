/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the directory `mfctl samples export` writes (docs/offload.md, "Sample export"):
 * row i of samples.jsonl, inputs.npy (or the flat inputs + input_offsets.npy), student.npy
 * and teacher.npy is one sample. Only what the tally needs is taken: kind and model_version
 * from the JSONL, the input bytes, both output rows.
 */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "mf_sample_check.h"

#include "mf_ctx.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An export is bounded by the server's page size times the pages asked for; 1 GiB per
 * file is far above what this example produces and keeps a bad file from eating memory. */
#define EXPORT_FILE_MAX (1u << 30)

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* The first `needle` in h[0..hlen), or NULL (memmem is not in C11 or POSIX). */
static const char *find(const char *h, size_t hlen, const char *needle)
{
    const size_t n = strlen(needle);

    for (size_t i = 0; n <= hlen && i <= hlen - n; i++) {
        if (memcmp(h + i, needle, n) == 0)
            return h + i;
    }
    return NULL;
}

/* Parses "(a, b)", "(a,)" or "()" after `p`; MF_OK or MF_E_INVALID. */
static int parse_shape(mf_npy *out, const char *p, const char *end)
{
    out->rank = 0;
    out->shape[0] = out->shape[1] = 1;
    while (p < end && *p == ' ')
        p++;
    while (p < end && *p != ')') {
        char *stop;
        unsigned long long v;

        if (*p < '0' || *p > '9' || out->rank == MF_NPY_MAX_RANK)
            return MF_E_INVALID;
        v = strtoull(p, &stop, 10);
        if (stop >= end)
            return MF_E_INVALID;
        out->shape[out->rank++] = v;
        p = stop;
        while (p < end && (*p == ',' || *p == ' '))
            p++;
    }
    return p < end && out->rank > 0 ? MF_OK : MF_E_INVALID;
}

int mf_npy_parse(mf_npy *out, struct mf_ctx *ctx, const uint8_t *buf, size_t len)
{
    static const char *const descrs[] = {"|u1", "<f4", "<i8"};
    static const size_t items[] = {1, 4, 8};
    size_t hlen, hstart;
    const char *h, *hend, *p;
    uint64_t count;

    memset(out, 0, sizeof(*out));
    if (len < 10 || memcmp(buf, npy_magic, sizeof(npy_magic)) != 0 || buf[6] < 1 || buf[6] > 3)
        return mf_fail(ctx, MF_E_INVALID, "not a .npy file of version 1-3");
    hstart = buf[6] == 1 ? 10 : 12;
    if (len < hstart)
        return mf_fail(ctx, MF_E_INVALID, ".npy header cut off");
    hlen = buf[8] | (size_t)buf[9] << 8;
    if (buf[6] > 1)
        hlen |= (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    if (hlen > len - hstart)
        return mf_fail(ctx, MF_E_INVALID, ".npy header of %zu bytes past the end", hlen);
    h = (const char *)buf + hstart;
    hend = h + hlen;
    p = h;
    for (size_t i = 0; i < sizeof(descrs) / sizeof(descrs[0]) && !out->item; i++) {
        char want[32];

        (void)snprintf(want, sizeof(want), "'descr': '%s'", descrs[i]);
        if (find(h, hlen, want)) {
            memcpy(out->descr, descrs[i], strlen(descrs[i]) + 1);
            out->item = items[i];
        }
    }
    if (!out->item)
        return mf_fail(ctx, MF_E_INVALID, ".npy dtype is not |u1, <f4 or <i8");
    if (!find(h, hlen, "'fortran_order': False"))
        return mf_fail(ctx, MF_E_INVALID, ".npy array is not in C order");
    p = find(h, hlen, "'shape': (");
    if (!p || parse_shape(out, p + 10, hend) < 0)
        return mf_fail(ctx, MF_E_INVALID, ".npy shape is not a tuple of 1 or 2 integers");
    count = out->shape[0] * out->shape[1];
    if ((out->shape[1] && count / out->shape[1] != out->shape[0]) ||
        count > (len - hstart - hlen) / out->item || count * out->item != len - hstart - hlen)
        return mf_fail(ctx, MF_E_INVALID, ".npy data is not %llu x %llu elements of %zu bytes",
                       (unsigned long long)out->shape[0], (unsigned long long)out->shape[1],
                       out->item);
    out->data = buf + hstart + hlen;
    return MF_OK;
}

/* One file of the export, read whole; *buf NULL and MF_OK when `optional` and absent. */
static int read_part(uint8_t **buf, size_t *len, struct mf_ctx *ctx, const char *dir,
                     const char *name, int optional)
{
    char path[1024];
    struct stat st;

    *buf = NULL;
    *len = 0;
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return mf_fail(ctx, MF_E_INVALID, "export path %s too long", dir);
    if (optional && stat(path, &st) != 0)
        return MF_OK;
    return mf_file_read_all(buf, len, ctx, NULL, path, EXPORT_FILE_MAX);
}

static int load_npy(mf_npy *out, uint8_t **buf, struct mf_ctx *ctx, const char *dir,
                    const char *name, const char *descr)
{
    size_t len;
    int err = read_part(buf, &len, ctx, dir, name, 0);

    if (err == MF_OK)
        err = mf_npy_parse(out, ctx, *buf, len);
    if (err == MF_OK && strcmp(out->descr, descr) != 0)
        err = mf_fail(ctx, MF_E_INVALID, "%s has dtype %s, expected %s", name, out->descr, descr);
    return err;
}

/* The arrays of one export, checked to agree with each other. */
struct export_arrays {
    mf_npy inputs, offsets, student, teacher;
    int flat; /* inputs are a flat concatenation with offsets */
    uint8_t *buf[4];
};

static int load_arrays(struct export_arrays *a, struct mf_ctx *ctx, const char *dir)
{
    size_t len;
    int err = read_part(&a->buf[1], &len, ctx, dir, "input_offsets.npy", 1);

    a->flat = a->buf[1] != NULL;
    if (err == MF_OK && a->flat)
        err = mf_npy_parse(&a->offsets, ctx, a->buf[1], len);
    if (err == MF_OK)
        err = load_npy(&a->inputs, &a->buf[0], ctx, dir, "inputs.npy", "|u1");
    if (err == MF_OK)
        err = load_npy(&a->student, &a->buf[2], ctx, dir, "student.npy", "<f4");
    if (err == MF_OK)
        err = load_npy(&a->teacher, &a->buf[3], ctx, dir, "teacher.npy", "<f4");
    if (err < 0)
        return err;
    if (a->student.shape[0] != a->teacher.shape[0] || a->student.shape[1] != a->teacher.shape[1])
        return mf_fail(ctx, MF_E_INVALID, "student.npy and teacher.npy differ in shape");
    if (a->flat ? (strcmp(a->offsets.descr, "<i8") != 0 ||
                   a->offsets.shape[0] != a->student.shape[0] + 1)
                : a->inputs.shape[0] != a->student.shape[0])
        return mf_fail(ctx, MF_E_INVALID, "inputs and outputs differ in row count");
    return MF_OK;
}

/* Input `row` of the export; MF_E_INVALID for offsets outside the flat inputs. The host is
 * little-endian like the files (x86-64, arm64); every value is copied, never cast in place. */
static int input_of(const uint8_t **x, size_t *len, const struct export_arrays *a, size_t row)
{
    int64_t lo, hi;

    if (!a->flat) {
        *len = (size_t)a->inputs.shape[1];
        *x = a->inputs.data + row * *len;
        return MF_OK;
    }
    memcpy(&lo, a->offsets.data + row * 8, 8);
    memcpy(&hi, a->offsets.data + (row + 1) * 8, 8);
    if (lo < 0 || hi < lo || (uint64_t)hi > a->inputs.shape[0])
        return MF_E_INVALID;
    *x = a->inputs.data + lo;
    *len = (size_t)(hi - lo);
    return MF_OK;
}

/* Tallies row `row` described by JSONL `line`. */
static int tally_row(mf_sample_tally *t, struct mf_ctx *ctx, const mf_label_index *ix,
                     const struct export_arrays *a, size_t row, const char *line, size_t len,
                     float *scratch)
{
    const size_t n = (size_t)a->student.shape[1];
    const cJSON *kind, *version;
    const uint8_t *x = NULL;
    size_t xlen = 0;
    uint8_t label = 0;
    cJSON *doc;
    int truth, err = mf_json__parse(&doc, ctx, line, len, len, MF_JSON_DEPTH_DEFAULT,
                                    "samples.jsonl line");

    if (err < 0)
        return err;
    kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    version = cJSON_GetObjectItemCaseSensitive(doc, "model_version");
    if (!cJSON_IsString(kind) || !cJSON_IsString(version)) {
        cJSON_Delete(doc);
        return mf_fail(ctx, MF_E_INVALID, "samples.jsonl line %zu has no kind or model_version",
                       row + 1);
    }
    if (input_of(&x, &xlen, a, row) < 0) {
        cJSON_Delete(doc);
        return mf_fail(ctx, MF_E_INVALID, "input_offsets.npy row %zu is out of range", row);
    }
    err = mf_label_index_find(&label, ix, x, xlen);
    truth = err == MF_OK ? label : err == MF_E_INVALID ? MF_SAMPLE_AMBIGUOUS : MF_SAMPLE_UNMATCHED;
    memcpy(scratch, a->student.data + row * n * 4, n * 4);
    memcpy(scratch + n, a->teacher.data + row * n * 4, n * 4);
    mf_sample_tally_add(t, kind->valuestring, version->valuestring, truth, scratch + n, scratch, n);
    cJSON_Delete(doc);
    return MF_OK;
}

int mf_sample_check_export(mf_sample_tally *t, struct mf_ctx *ctx, const mf_label_index *ix,
                           const char *dir)
{
    struct export_arrays a;
    uint8_t *jsonl = NULL;
    float *scratch = NULL;
    size_t jlen = 0, row = 0, pos = 0;
    int err;

    memset(&a, 0, sizeof(a));
    err = load_arrays(&a, ctx, dir);
    if (err == MF_OK)
        err = read_part(&jsonl, &jlen, ctx, dir, "samples.jsonl", 0);
    if (err == MF_OK) {
        scratch = mf_calloc(NULL, 2 * (size_t)a.student.shape[1] + 1, sizeof(float));
        if (!scratch)
            err = mf_fail(ctx, MF_E_NOMEM, "no memory for %llu classes",
                          (unsigned long long)a.student.shape[1]);
    }
    while (err == MF_OK && pos < jlen) {
        const char *line = (const char *)jsonl + pos;
        const char *nl = memchr(line, '\n', jlen - pos);
        const size_t len = nl ? (size_t)(nl - line) : jlen - pos;

        pos += len + 1;
        if (len == 0)
            continue;
        if (row >= a.student.shape[0])
            err = mf_fail(ctx, MF_E_INVALID, "samples.jsonl has more rows than the arrays");
        else
            err = tally_row(t, ctx, ix, &a, row++, line, len, scratch);
    }
    if (err == MF_OK && row != a.student.shape[0])
        err = mf_fail(ctx, MF_E_INVALID, "samples.jsonl has %zu rows, the arrays %llu", row,
                      (unsigned long long)a.student.shape[0]);
    mf_free(NULL, scratch);
    mf_free(NULL, jsonl);
    for (size_t i = 0; i < 4; i++)
        mf_free(NULL, a.buf[i]);
    return err;
}
