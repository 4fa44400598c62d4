/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX ustar (POSIX.1-1988, as GNU tar and Python's tarfile read it) writer for `mfctl
 * samples export --format webdataset`: one archive whose members are grouped by sample
 * (`<id>.input.npy`, `<id>.json`), the layout the WebDataset convention reads (a sample is
 * the run of members sharing the name up to its first dot). Only what the export needs:
 * regular files, names shorter than 100 bytes (no prefix field), sizes below 8 GiB (11
 * octal digits). Streamed: one member is written at a time; the archive is "<name>.part"
 * until it ends, so an interrupted export leaves nothing that looks complete.
 */
#include "cmd_samples.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* `v` as `width - 1` octal digits, zero-padded, and a NUL: the ustar numeric fields. */
static void octal(uint8_t *field, size_t width, uint64_t v)
{
    (void)snprintf((char *)field, width, "%0*" PRIo64, (int)(width - 1), v);
}

void mfctl__tar_header(uint8_t out[MFCTL_TAR_BLOCK], const char *name, uint64_t size,
                       uint64_t mtime)
{
    unsigned sum = 0;

    memset(out, 0, MFCTL_TAR_BLOCK);
    (void)snprintf((char *)out, 100, "%s", name);
    octal(out + 100, 8, 0644); /* mode */
    octal(out + 108, 8, 0);    /* uid */
    octal(out + 116, 8, 0);    /* gid */
    octal(out + 124, 12, size);
    octal(out + 136, 12, mtime);
    out[156] = '0';                /* typeflag: regular file */
    memcpy(out + 257, "ustar", 6); /* magic with its NUL, then version "00" */
    memcpy(out + 263, "00", 2);
    /* The checksum is the byte sum of the header with its own field read as spaces, written
     * as six octal digits, a NUL and a space. */
    memset(out + 148, ' ', 8);
    for (size_t i = 0; i < MFCTL_TAR_BLOCK; i++)
        sum += out[i];
    (void)snprintf((char *)out + 148, 7, "%06o", sum);
    out[155] = ' ';
}

static int put(struct mfctl_tar *t, struct mf_ctx *ctx, const void *p, size_t len)
{
    if (len && fwrite(p, 1, len, t->f) != len)
        return mf_fail(ctx, MF_E_IO, "cannot write %s.part: %s", t->path, strerror(errno));
    return MF_OK;
}

int mfctl__tar_open(struct mfctl_tar *t, struct mf_ctx *ctx, const char *path)
{
    memset(t, 0, sizeof(*t));
    if ((size_t)snprintf(t->path, sizeof(t->path), "%s", path) >= sizeof(t->path))
        return mf_fail(ctx, MF_E_LIMIT, "output path too long: %s", path);
    t->f = mfctl__part_open(ctx, t->path);
    return t->f ? MF_OK : MF_E_IO;
}

int mfctl__tar_put(struct mfctl_tar *t, struct mf_ctx *ctx, const char *name, uint64_t mtime,
                   const void *a, size_t alen, const void *b, size_t blen)
{
    static const uint8_t zero[MFCTL_TAR_BLOCK];
    uint8_t hdr[MFCTL_TAR_BLOCK];
    size_t size = alen + blen;
    int err;

    if (strlen(name) >= 100)
        return mf_fail(ctx, MF_E_LIMIT, "tar member name longer than 99 bytes: %s", name);
    mfctl__tar_header(hdr, name, size, mtime);
    err = put(t, ctx, hdr, sizeof(hdr));
    if (err == MF_OK)
        err = put(t, ctx, a, alen);
    if (err == MF_OK)
        err = put(t, ctx, b, blen);
    if (err == MF_OK && size % MFCTL_TAR_BLOCK)
        err = put(t, ctx, zero, MFCTL_TAR_BLOCK - size % MFCTL_TAR_BLOCK);
    return err;
}

int mfctl__tar_finish(struct mfctl_tar *t, struct mf_ctx *ctx)
{
    static const uint8_t end[2 * MFCTL_TAR_BLOCK];
    FILE *f = t->f;
    int err = put(t, ctx, end, sizeof(end));

    t->f = NULL;
    if (err < 0) {
        mfctl__part_abort(f, t->path);
        return err;
    }
    return mfctl__part_commit(f, ctx, t->path);
}

void mfctl__tar_abort(struct mfctl_tar *t)
{
    mfctl__part_abort(t->f, t->path);
    t->f = NULL;
}
