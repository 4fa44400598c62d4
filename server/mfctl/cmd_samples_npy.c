/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NumPy .npy version 1.0 writer for `mfctl samples export`: a fixed 128-byte header (magic
 * "\x93NUMPY", version 1.0, little-endian header length, the dictionary NumPy itself writes,
 * space padding, '\n') followed by the raw C-order data. The number of samples is known only
 * after the last page, so the header is reserved when the file is opened and written in
 * place at the end; for the shapes NumPy pads to 128 bytes as well, the header is
 * byte-for-byte what numpy.save writes. Data goes to "<name>.part", renamed at the end, so
 * an interrupted export never leaves a file that looks complete.
 */
#include "cmd_samples.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void mfctl__npy_header(char out[MFCTL_NPY_HEADER_LEN], const char *descr, int ndim,
                       const uint64_t *shape)
{
    char dict[MFCTL_NPY_HEADER_LEN];
    size_t hlen = MFCTL_NPY_HEADER_LEN - 10, n;

    assert(ndim == 1 || ndim == 2);
    /* Python's repr of a shape tuple: "(7,)" for one dimension, "(3, 10)" for two. */
    if (ndim == 1)
        n = (size_t)snprintf(dict, sizeof(dict),
                             "{'descr': '%s', 'fortran_order': False, "
                             "'shape': (%" PRIu64 ",), }",
                             descr, shape[0]);
    else
        n = (size_t)snprintf(dict, sizeof(dict),
                             "{'descr': '%s', 'fortran_order': False, "
                             "'shape': (%" PRIu64 ", %" PRIu64 "), }",
                             descr, shape[0], shape[1]);
    /* The longest dictionary (two 20-digit dimensions) is 92 bytes: it always fits. */
    assert(n < hlen);
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(hlen & 0xff);
    out[9] = (char)(hlen >> 8);
    memset(out + 10, ' ', hlen);
    memcpy(out + 10, dict, n);
    out[MFCTL_NPY_HEADER_LEN - 1] = '\n';
}

FILE *mfctl__part_open(struct mf_ctx *ctx, const char *path)
{
    char part[MFCTL_PATH_MAX + 8];
    FILE *f;

    if ((size_t)snprintf(part, sizeof(part), "%s.part", path) >= sizeof(part)) {
        (void)mf_fail(ctx, MF_E_LIMIT, "output path too long: %s", path);
        return NULL;
    }
    f = fopen(part, "wb");
    if (!f)
        (void)mf_fail(ctx, MF_E_IO, "cannot create %s: %s", part, strerror(errno));
    return f;
}

int mfctl__part_commit(FILE *f, struct mf_ctx *ctx, const char *path)
{
    char part[MFCTL_PATH_MAX + 8];
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;

    ok = (fclose(f) == 0) && ok;
    (void)snprintf(part, sizeof(part), "%s.part", path);
    if (!ok || rename(part, path) != 0) {
        int e = errno;

        (void)remove(part);
        return mf_fail(ctx, MF_E_IO, "cannot complete %s: %s", path, strerror(e));
    }
    return MF_OK;
}

void mfctl__part_abort(FILE *f, const char *path)
{
    char part[MFCTL_PATH_MAX + 8];

    if (!f)
        return;
    (void)fclose(f);
    (void)snprintf(part, sizeof(part), "%s.part", path);
    (void)remove(part);
}

int mfctl__npy_open(struct mfctl_npy *n, struct mf_ctx *ctx, const char *path, const char *descr)
{
    char zero[MFCTL_NPY_HEADER_LEN];

    memset(n, 0, sizeof(*n));
    n->descr = descr;
    if ((size_t)snprintf(n->path, sizeof(n->path), "%s", path) >= sizeof(n->path))
        return mf_fail(ctx, MF_E_LIMIT, "output path too long: %s", path);
    n->f = mfctl__part_open(ctx, n->path);
    if (!n->f)
        return MF_E_IO;
    memset(zero, ' ', sizeof(zero)); /* placeholder, overwritten by mfctl__npy_finish() */
    return mfctl__npy_write(n, ctx, zero, sizeof(zero));
}

int mfctl__npy_write(struct mfctl_npy *n, struct mf_ctx *ctx, const void *p, size_t len)
{
    if (len && fwrite(p, 1, len, n->f) != len)
        return mf_fail(ctx, MF_E_IO, "cannot write %s.part: %s", n->path, strerror(errno));
    return MF_OK;
}

int mfctl__npy_put_f32(struct mfctl_npy *n, struct mf_ctx *ctx, float v)
{
    uint32_t u;
    uint8_t b[4];

    memcpy(&u, &v, sizeof(u));
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(u >> (8 * i));
    return mfctl__npy_write(n, ctx, b, sizeof(b));
}

int mfctl__npy_put_i64(struct mfctl_npy *n, struct mf_ctx *ctx, int64_t v)
{
    uint64_t u = (uint64_t)v;
    uint8_t b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(u >> (8 * i));
    return mfctl__npy_write(n, ctx, b, sizeof(b));
}

int mfctl__npy_finish(struct mfctl_npy *n, struct mf_ctx *ctx, int ndim, const uint64_t *shape)
{
    char hdr[MFCTL_NPY_HEADER_LEN];
    FILE *f = n->f;

    mfctl__npy_header(hdr, n->descr, ndim, shape);
    n->f = NULL;
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof(hdr), f) != sizeof(hdr)) {
        int e = errno;

        mfctl__part_abort(f, n->path);
        return mf_fail(ctx, MF_E_IO, "cannot complete %s: %s", n->path, strerror(e));
    }
    return mfctl__part_commit(f, ctx, n->path);
}

void mfctl__npy_abort(struct mfctl_npy *n)
{
    mfctl__part_abort(n->f, n->path);
    n->f = NULL;
}
