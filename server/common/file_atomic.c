/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Atomic file writes (file_atomic.h) for the files mf-server keeps in its data directory
 * (tokens, the director key, the port file). Apart from the data directory's layout
 * (app/data_dir.c), so the director (director/director.c) writes its key without calling
 * back into the code that calls it.
 */
#define _XOPEN_SOURCE 700 /* mkstemp, fsync */
#include "common/file_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_PATH_MAX 4096

int mf_file__write_atomic(struct mf_ctx *ctx, const char *path, const char *text, unsigned mode)
{
    char tmp[FILE_PATH_MAX], dir[FILE_PATH_MAX];
    size_t len = strlen(text), off = 0;
    char *slash;
    int fd, n;

    n = snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return mf_fail(ctx, MF_E_LIMIT, "path too long: '%s'", path);
    fd = mkstemp(tmp); /* created 0600 */
    if (fd < 0)
        return mf_fail(ctx, MF_E_IO, "cannot create '%s': %s", tmp, strerror(errno));
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (off != len || fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0) {
        int e = errno;

        (void)close(fd);
        (void)unlink(tmp);
        return mf_fail(ctx, MF_E_IO, "cannot write '%s': %s", tmp, strerror(e));
    }
    (void)close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;

        (void)unlink(tmp);
        return mf_fail(ctx, MF_E_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
    }
    (void)snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        (void)snprintf(dir, sizeof(dir), ".");
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        (void)close(fd);
    }
    return MF_OK;
}
