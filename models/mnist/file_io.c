/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-file read through zlib's gzread, which passes non-gzip files through unchanged, so
 * one path serves .gz datasets and plain model files; and an atomic whole-file write.
 */
#include "mf_dataset.h"

#include "mf_ctx.h"
#include "mf_dynbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define READ_CHUNK 65536

int mf_file_read_all(uint8_t **out, size_t *len_out, struct mf_ctx *ctx, const mf_allocator *alloc,
                     const char *path, size_t max)
{
    struct mf_dynbuf b;
    uint8_t chunk[4096];
    gzFile f;
    int err = MF_OK;

    *out = NULL;
    *len_out = 0;
    f = gzopen(path, "rb");
    if (!f)
        return mf_fail(ctx, MF_E_IO, "cannot open %s: %s", path, strerror(errno));
    (void)gzbuffer(f, READ_CHUNK);
    /* +1: the dynbuf counts its NUL terminator against the cap. */
    mf_dynbuf__init(&b, alloc, max + 1);
    for (;;) {
        int n = gzread(f, chunk, sizeof(chunk));
        if (n < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            err = mf_fail(ctx, MF_E_IO, "cannot read %s: %s", path, msg);
            break;
        }
        if (n == 0)
            break;
        err = mf_dynbuf__append(&b, chunk, (size_t)n);
        if (err == MF_E_LIMIT) {
            err = mf_fail(ctx, MF_E_LIMIT, "%s is larger than %zu bytes", path, max);
            break;
        }
        if (err < 0) {
            err = mf_fail(ctx, err, "out of memory reading %s", path);
            break;
        }
    }
    (void)gzclose(f);
    if (err < 0) {
        mf_dynbuf__free(&b);
        return err;
    }
    if (b.len == 0) {
        mf_dynbuf__free(&b);
        return mf_fail(ctx, MF_E_IO, "%s is empty", path);
    }
    *out = mf_dynbuf__take(&b, len_out);
    return MF_OK;
}

int mf_file_write_atomic(struct mf_ctx *ctx, const char *path, const void *data, size_t len)
{
    char tmp[4096];
    const uint8_t *p = data;
    int fd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return mf_fail(ctx, MF_E_IO, "path too long: %s", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", tmp, strerror(errno));
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            (void)close(fd);
            (void)unlink(tmp);
            return mf_fail(ctx, MF_E_IO, "cannot write %s: %s", tmp, strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        (void)unlink(tmp);
        return mf_fail(ctx, MF_E_IO, "cannot flush %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        (void)unlink(tmp);
        return mf_fail(ctx, MF_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return MF_OK;
}
