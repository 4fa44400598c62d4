/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dataset container, the IDX and digits-CSV parsers, and seeded splits. IDX (LeCun's MNIST
 * format): a 4-byte magic 00 00 <type> <ndims>, ndims big-endian uint32 sizes, then raw
 * bytes. Only unsigned-byte data (type 0x08) is accepted: images have 3 dims, labels 1.
 */
#include "mf_dataset.h"

#include "mf_ctx.h"

#include <stdio.h>
#include <string.h>

#define IDX_TYPE_UBYTE 0x08
#define DIGITS_SIDE 8u
#define DIGITS_MAX_VALUE 16u
#define DIGITS_MAX_BYTES (64u << 20)

static int dataset_new(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc, size_t n,
                       uint32_t rows, uint32_t cols)
{
    const mf_allocator *a = alloc ? alloc : mf_allocator_default();
    mf_dataset *ds = mf_calloc(a, 1, sizeof(*ds));
    size_t dim = (size_t)rows * cols;

    *out = NULL;
    if (!ds)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for a dataset");
    ds->alloc = *a;
    ds->n = n;
    ds->rows = rows;
    ds->cols = cols;
    ds->dim = (uint32_t)dim;
    ds->max_value = 255;
    if (n > 0) {
        ds->x = mf_alloc(a, n * dim);
        ds->y = mf_alloc(a, n);
        if (!ds->x || !ds->y) {
            mf_dataset_free(ds);
            return mf_fail(ctx, MF_E_NOMEM, "out of memory for %zu items of %zu bytes", n, dim);
        }
    }
    *out = ds;
    return MF_OK;
}

void mf_dataset_free(mf_dataset *ds)
{
    mf_allocator a;

    if (!ds)
        return;
    a = ds->alloc;
    mf_free(&a, ds->x);
    mf_free(&a, ds->y);
    mf_free(&a, ds);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Validates an IDX header of `ndims` dimensions; fills dims[] and the payload offset. */
static int idx_header(uint32_t *dims, size_t *payload_off, struct mf_ctx *ctx, const char *what,
                      const uint8_t *buf, size_t len, uint8_t ndims)
{
    size_t need = 4 + 4u * ndims;
    uint64_t total = 1;

    if (len < need)
        return mf_fail(ctx, MF_E_INVALID, "IDX %s truncated: %zu bytes, header needs %zu", what,
                       len, need);
    if (buf[0] != 0 || buf[1] != 0 || buf[2] != IDX_TYPE_UBYTE || buf[3] != ndims)
        return mf_fail(ctx, MF_E_INVALID, "IDX %s: bad magic %02x%02x%02x%02x (want 000008%02x)",
                       what, buf[0], buf[1], buf[2], buf[3], ndims);
    for (uint8_t d = 0; d < ndims; d++) {
        dims[d] = be32(buf + 4 + 4u * d);
        total *= dims[d];
    }
    if (dims[0] > MF_DATASET_MAX_ITEMS)
        return mf_fail(ctx, MF_E_LIMIT, "IDX %s: %u items exceed the cap of %u", what, dims[0],
                       MF_DATASET_MAX_ITEMS);
    for (uint8_t d = 1; d < ndims; d++)
        if (dims[d] == 0 || dims[d] > MF_DATASET_MAX_SIDE)
            return mf_fail(ctx, MF_E_LIMIT, "IDX %s: dimension %u is %u (allowed 1..%u)", what,
                           (unsigned)d, dims[d], MF_DATASET_MAX_SIDE);
    /* The caps above keep total < 2^20 * 2^16, so it cannot overflow. */
    if (len - need != total)
        return mf_fail(ctx, MF_E_INVALID, "IDX %s: %zu payload bytes, dimensions say %llu", what,
                       len - need, (unsigned long long)total);
    *payload_off = need;
    return MF_OK;
}

int mf_dataset_parse_idx(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                         const uint8_t *images, size_t images_len, const uint8_t *labels,
                         size_t labels_len)
{
    uint32_t idim[3], ldim[1];
    size_t ioff, loff;
    mf_dataset *ds;
    int err;

    *out = NULL;
    err = idx_header(idim, &ioff, ctx, "images", images, images_len, 3);
    if (err < 0)
        return err;
    err = idx_header(ldim, &loff, ctx, "labels", labels, labels_len, 1);
    if (err < 0)
        return err;
    if (idim[0] != ldim[0])
        return mf_fail(ctx, MF_E_INVALID, "IDX: %u images but %u labels", idim[0], ldim[0]);
    for (size_t i = 0; i < ldim[0]; i++)
        if (labels[loff + i] >= MF_DATASET_CLASSES)
            return mf_fail(ctx, MF_E_INVALID, "IDX labels: item %zu has label %u", i,
                           labels[loff + i]);
    err = dataset_new(&ds, ctx, alloc, idim[0], idim[1], idim[2]);
    if (err < 0)
        return err;
    if (ds->n > 0) {
        memcpy(ds->x, images + ioff, ds->n * ds->dim);
        memcpy(ds->y, labels + loff, ds->n);
    }
    *out = ds;
    return MF_OK;
}

int mf_dataset_load_idx(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                        const char *images_path, const char *labels_path)
{
    uint8_t *img = NULL, *lab = NULL;
    size_t img_len, lab_len;
    int err;

    *out = NULL;
    err = mf_file_read_all(&img, &img_len, ctx, alloc, images_path, MF_DATASET_MAX_FILE);
    if (err < 0)
        goto fail;
    err = mf_file_read_all(&lab, &lab_len, ctx, alloc, labels_path, MF_DATASET_MAX_FILE);
    if (err < 0)
        goto fail;
    err = mf_dataset_parse_idx(out, ctx, alloc, img, img_len, lab, lab_len);
fail:
    mf_free(alloc, img);
    mf_free(alloc, lab);
    return err;
}

int mf_dataset_load_fashion(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                            const char *dir, const char *split)
{
    char ipath[1024], lpath[1024];

    *out = NULL;
    if (!dir)
        dir = MF_FASHION_DIR;
    if (strcmp(split, "train") != 0 && strcmp(split, "t10k") != 0)
        return mf_fail(ctx, MF_E_INVALID, "unknown Fashion-MNIST split '%s'", split);
    if (snprintf(ipath, sizeof(ipath), "%s/%s-images-idx3-ubyte.gz", dir, split) >=
            (int)sizeof(ipath) ||
        snprintf(lpath, sizeof(lpath), "%s/%s-labels-idx1-ubyte.gz", dir, split) >=
            (int)sizeof(lpath))
        return mf_fail(ctx, MF_E_INVALID, "dataset directory path too long");
    return mf_dataset_load_idx(out, ctx, alloc, ipath, lpath);
}

/* Parses one unsigned decimal field ending at ',' / '\n' / "\r\n" / end of text. */
static int csv_field(unsigned *v, size_t *pos, const uint8_t *t, size_t len)
{
    unsigned acc = 0;
    size_t p = *pos, start = *pos;

    while (p < len && t[p] >= '0' && t[p] <= '9' && p - start < 3) {
        acc = acc * 10u + (unsigned)(t[p] - '0');
        p++;
    }
    if (p == start)
        return -1;
    *v = acc;
    *pos = p;
    return 0;
}

int mf_dataset_parse_digits(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                            const uint8_t *text, size_t len)
{
    const uint32_t dim = DIGITS_SIDE * DIGITS_SIDE;
    size_t rows = 0, pos = 0, line = 1;
    mf_dataset *ds;
    int err;

    *out = NULL;
    if (len > DIGITS_MAX_BYTES)
        return mf_fail(ctx, MF_E_LIMIT, "digits CSV of %zu bytes exceeds the cap", len);
    /* First pass counts lines so the set is allocated once. */
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n' || (i + 1 == len))
            rows++;
    if (rows == 0)
        return mf_fail(ctx, MF_E_INVALID, "digits CSV is empty");
    if (rows > MF_DATASET_MAX_ITEMS)
        return mf_fail(ctx, MF_E_LIMIT, "digits CSV has %zu lines", rows);
    err = dataset_new(&ds, ctx, alloc, rows, DIGITS_SIDE, DIGITS_SIDE);
    if (err < 0)
        return err;
    ds->max_value = DIGITS_MAX_VALUE;
    ds->n = 0;
    while (pos < len) {
        for (uint32_t c = 0; c <= dim; c++) {
            unsigned v;
            if (csv_field(&v, &pos, text, len) < 0) {
                err = mf_fail(ctx, MF_E_INVALID, "digits CSV line %zu field %u: not a number", line,
                              c + 1);
                goto fail;
            }
            if (c < dim && v > DIGITS_MAX_VALUE) {
                err = mf_fail(ctx, MF_E_INVALID, "digits CSV line %zu field %u: %u > %u", line,
                              c + 1, v, DIGITS_MAX_VALUE);
                goto fail;
            }
            if (c == dim && v >= MF_DATASET_CLASSES) {
                err = mf_fail(ctx, MF_E_INVALID, "digits CSV line %zu: label %u", line, v);
                goto fail;
            }
            if (c < dim)
                ds->x[ds->n * dim + c] = (uint8_t)v;
            else
                ds->y[ds->n] = (uint8_t)v;
            if (c < dim) {
                if (pos >= len || text[pos] != ',') {
                    err = mf_fail(ctx, MF_E_INVALID, "digits CSV line %zu: %u fields, want %u",
                                  line, c + 1, dim + 1);
                    goto fail;
                }
                pos++;
            }
        }
        if (pos < len && text[pos] == '\r')
            pos++;
        if (pos < len && text[pos] != '\n') {
            err = mf_fail(ctx, MF_E_INVALID, "digits CSV line %zu: junk after the label", line);
            goto fail;
        }
        pos++;
        ds->n++;
        line++;
    }
    *out = ds;
    return MF_OK;
fail:
    mf_dataset_free(ds);
    return err;
}

int mf_dataset_load_digits(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                           const char *path)
{
    uint8_t *text = NULL;
    size_t len;
    int err;

    *out = NULL;
    err = mf_file_read_all(&text, &len, ctx, alloc, path ? path : MF_DIGITS_CSV, DIGITS_MAX_BYTES);
    if (err < 0)
        return err;
    err = mf_dataset_parse_digits(out, ctx, alloc, text, len);
    mf_free(alloc, text);
    return err;
}

int mf_dataset_select(mf_dataset **out, struct mf_ctx *ctx, const mf_dataset *src,
                      const size_t *idx, size_t n)
{
    mf_dataset *ds;
    int err = dataset_new(&ds, ctx, &src->alloc, n, src->rows, src->cols);

    if (err < 0)
        return err;
    ds->max_value = src->max_value;
    for (size_t i = 0; i < n; i++) {
        memcpy(ds->x + i * ds->dim, src->x + idx[i] * src->dim, src->dim);
        ds->y[i] = src->y[idx[i]];
    }
    *out = ds;
    return MF_OK;
}

uint64_t mf_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double mf_rng_uniform(uint64_t *state)
{
    return (double)(mf_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

void mf_dataset_permutation(size_t *perm_out, size_t n, uint64_t seed)
{
    uint64_t st = seed;

    for (size_t i = 0; i < n; i++)
        perm_out[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(mf_rng_next(&st) % i);
        size_t t = perm_out[i - 1];
        perm_out[i - 1] = perm_out[j];
        perm_out[j] = t;
    }
}
