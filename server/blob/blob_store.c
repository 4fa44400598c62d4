/* SPDX-License-Identifier: Apache-2.0 */
/* Blob files on the local filesystem (see blob_store.h). */
#define _XOPEN_SOURCE 700 /* mkstemp, fsync, dirfd */
#include "blob/blob_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLOB_TMP_PREFIX "upload-"

struct mf_blob_upload {
    mf_allocator alloc;
    int fd;
    int committed;
    uint64_t size;
    uint64_t max_bytes;
    EVP_MD_CTX *md;
    char sha_hex[MF_SHA256_HEX_LEN + 1];
    char root[MF_BLOB_PATH_MAX];
    char tmp_path[MF_BLOB_PATH_MAX];
};

static int make_dir(struct mf_ctx *ctx, const char *path)
{
    if (mkdir(path, 0750) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create directory '%s': %s", path, strerror(errno));
    return MF_OK;
}

static int fsync_dir(struct mf_ctx *ctx, const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return mf_fail(ctx, MF_E_IO, "cannot open directory '%s': %s", path, strerror(errno));
    rc = fsync(fd);
    (void)close(fd);
    if (rc != 0)
        return mf_fail(ctx, MF_E_IO, "fsync of directory '%s' failed: %s", path, strerror(errno));
    return MF_OK;
}

static int join(struct mf_ctx *ctx, char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s/%s", a, b);

    if (n < 0 || (size_t)n >= size)
        return mf_fail(ctx, MF_E_LIMIT, "path too long: '%s/%s'", a, b);
    return MF_OK;
}

int mf_blob__ensure_dirs(struct mf_ctx *ctx, const char *root)
{
    char tmp[MF_BLOB_PATH_MAX];
    int err = make_dir(ctx, root);

    if (err == MF_OK)
        err = join(ctx, tmp, sizeof(tmp), root, "tmp");
    if (err == MF_OK)
        err = make_dir(ctx, tmp);
    return err;
}

int mf_blob__sweep_tmp(int *removed_out, struct mf_ctx *ctx, const char *root)
{
    char dir[MF_BLOB_PATH_MAX], path[MF_BLOB_PATH_MAX];
    struct dirent *e;
    DIR *d;
    int err;

    *removed_out = 0;
    err = join(ctx, dir, sizeof(dir), root, "tmp");
    if (err < 0)
        return err;
    d = opendir(dir);
    if (!d)
        return mf_fail(ctx, MF_E_IO, "cannot read '%s': %s", dir, strerror(errno));
    for (e = readdir(d); e; e = readdir(d)) {
        if (strncmp(e->d_name, BLOB_TMP_PREFIX, sizeof(BLOB_TMP_PREFIX) - 1) != 0)
            continue;
        if (join(ctx, path, sizeof(path), dir, e->d_name) == MF_OK && unlink(path) == 0)
            (*removed_out)++;
    }
    (void)closedir(d);
    return MF_OK;
}

/* <root>/<first 2 hex>: spreads blobs over 256 directories. */
static int blob_paths(struct mf_ctx *ctx, char *dir, char *file, const char *root,
                      const char *sha_hex)
{
    char sub[3] = {sha_hex[0], sha_hex[1], '\0'};
    int err = join(ctx, dir, MF_BLOB_PATH_MAX, root, sub);

    if (err == MF_OK)
        err = join(ctx, file, MF_BLOB_PATH_MAX, dir, sha_hex);
    return err;
}

int mf_blob__open(int *fd_out, uint64_t *size_out, struct mf_ctx *ctx, const char *root,
                  const char *sha_hex)
{
    char dir[MF_BLOB_PATH_MAX], file[MF_BLOB_PATH_MAX];
    struct stat st;
    int fd, err;

    *fd_out = -1;
    err = blob_paths(ctx, dir, file, root, sha_hex);
    if (err < 0)
        return err;
    fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return mf_fail(ctx, MF_E_NOTFOUND, "no blob %s", sha_hex);
        return mf_fail(ctx, MF_E_IO, "cannot open blob %s: %s", sha_hex, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        (void)close(fd);
        return mf_fail(ctx, MF_E_IO, "blob %s is not a readable file", sha_hex);
    }
    *fd_out = fd;
    *size_out = (uint64_t)st.st_size;
    return MF_OK;
}

/* Reads exactly `size` bytes of `fd` into buf. */
static int read_exact(uint8_t *buf, uint64_t size, int fd, struct mf_ctx *ctx, const char *sha_hex)
{
    size_t got = 0;

    while (got < size) {
        ssize_t n = read(fd, buf + got, (size_t)size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return mf_fail(ctx, MF_E_IO, "reading blob %.12s: %s", sha_hex,
                           n == 0 ? "short file" : strerror(errno));
        got += (size_t)n;
    }
    return MF_OK;
}

int mf_blob__read(uint8_t *buf, size_t cap, size_t *len_out, struct mf_ctx *ctx, const char *root,
                  const char *sha_hex)
{
    uint64_t size = 0;
    int fd = -1;
    int err = mf_blob__open(&fd, &size, ctx, root, sha_hex);

    *len_out = 0;
    if (err < 0)
        return err;
    if (size > cap)
        err = mf_fail(ctx, MF_E_LIMIT, "blob %.12s has %llu bytes, more than %zu", sha_hex,
                      (unsigned long long)size, cap);
    if (err == MF_OK)
        err = read_exact(buf, size, fd, ctx, sha_hex);
    (void)close(fd);
    *len_out = err == MF_OK ? (size_t)size : 0;
    return err;
}

int mf_blob__read_alloc(uint8_t **out, size_t *len_out, struct mf_ctx *ctx, const char *root,
                        const char *sha_hex, uint64_t max)
{
    uint64_t size = 0;
    int fd = -1;
    int err = mf_blob__open(&fd, &size, ctx, root, sha_hex);

    *out = NULL;
    *len_out = 0;
    if (err < 0)
        return err;
    if (size > max || size > SIZE_MAX / 2)
        err = mf_fail(ctx, MF_E_LIMIT, "blob %.12s of %llu bytes is above the limit of %llu",
                      sha_hex, (unsigned long long)size, (unsigned long long)max);
    if (err == MF_OK && !(*out = mf_alloc(&ctx->alloc, size ? (size_t)size : 1)))
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory reading blob %.12s", sha_hex);
    if (err == MF_OK)
        err = read_exact(*out, size, fd, ctx, sha_hex);
    (void)close(fd);
    if (err < 0) {
        mf_free(&ctx->alloc, *out);
        *out = NULL;
    } else {
        *len_out = (size_t)size;
    }
    return err;
}

int mf_blob__put(char sha_out[MF_SHA256_HEX_LEN + 1], struct mf_ctx *ctx, const char *root,
                 const void *p, size_t len)
{
    struct mf_blob_upload *u = NULL;
    uint64_t size = 0;
    int err = mf_blob__upload_begin(&u, ctx, root, (uint64_t)len);

    if (err == MF_OK)
        err = mf_blob__upload_write(u, ctx, p, len);
    if (err == MF_OK)
        err = mf_blob__upload_finish(sha_out, &size, u, ctx);
    if (err == MF_OK)
        err = mf_blob__upload_commit(u, ctx);
    mf_blob__upload_free(u);
    return err;
}

int mf_blob__upload_begin(struct mf_blob_upload **out, struct mf_ctx *ctx, const char *root,
                          uint64_t max_bytes)
{
    struct mf_blob_upload *u;
    char dir[MF_BLOB_PATH_MAX];
    int err;

    *out = NULL;
    u = mf_calloc(&ctx->alloc, 1, sizeof(*u));
    if (!u)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory starting an upload");
    u->alloc = ctx->alloc;
    u->fd = -1;
    u->max_bytes = max_bytes;
    (void)snprintf(u->root, sizeof(u->root), "%s", root);
    err = join(ctx, dir, sizeof(dir), root, "tmp");
    if (err == MF_OK)
        err = join(ctx, u->tmp_path, sizeof(u->tmp_path), dir, BLOB_TMP_PREFIX "XXXXXX");
    if (err < 0)
        goto fail;
    u->md = EVP_MD_CTX_new();
    if (!u->md || EVP_DigestInit_ex(u->md, EVP_sha256(), NULL) != 1) {
        err = mf_fail(ctx, MF_E_NOMEM, "cannot start SHA-256");
        goto fail;
    }
    u->fd = mkstemp(u->tmp_path);
    if (u->fd < 0) {
        err = mf_fail(ctx, MF_E_IO, "cannot create '%s': %s", u->tmp_path, strerror(errno));
        u->tmp_path[0] = '\0';
        goto fail;
    }
    *out = u;
    return MF_OK;
fail:
    mf_blob__upload_free(u);
    return err;
}

int mf_blob__upload_write(struct mf_blob_upload *u, struct mf_ctx *ctx, const void *data,
                          size_t len)
{
    const uint8_t *p = data;

    if (len > u->max_bytes - u->size)
        return mf_fail(ctx, MF_E_LIMIT, "upload exceeds the limit of %llu bytes",
                       (unsigned long long)u->max_bytes);
    if (EVP_DigestUpdate(u->md, data, len) != 1)
        return mf_fail(ctx, MF_E_GENERIC, "SHA-256 update failed");
    while (len) {
        ssize_t n = write(u->fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return mf_fail(ctx, MF_E_IO, "writing '%s' failed: %s", u->tmp_path,
                           n < 0 ? strerror(errno) : "short write");
        p += n;
        len -= (size_t)n;
        u->size += (uint64_t)n;
    }
    return MF_OK;
}

int mf_blob__upload_finish(char sha_hex_out[MF_SHA256_HEX_LEN + 1], uint64_t *size_out,
                           struct mf_blob_upload *u, struct mf_ctx *ctx)
{
    uint8_t digest[MF_SHA256_LEN];
    unsigned int n = 0;

    if (EVP_DigestFinal_ex(u->md, digest, &n) != 1 || n != MF_SHA256_LEN)
        return mf_fail(ctx, MF_E_GENERIC, "SHA-256 final failed");
    if (fsync(u->fd) != 0)
        return mf_fail(ctx, MF_E_IO, "fsync of '%s' failed: %s", u->tmp_path, strerror(errno));
    mf_hex__encode(u->sha_hex, digest, sizeof(digest));
    memcpy(sha_hex_out, u->sha_hex, sizeof(u->sha_hex));
    *size_out = u->size;
    return MF_OK;
}

int mf_blob__upload_commit(struct mf_blob_upload *u, struct mf_ctx *ctx)
{
    char dir[MF_BLOB_PATH_MAX], file[MF_BLOB_PATH_MAX], tmpdir[MF_BLOB_PATH_MAX];
    int err;

    if (u->sha_hex[0] == '\0')
        return mf_fail(ctx, MF_E_STATE, "upload committed before it was finished");
    err = blob_paths(ctx, dir, file, u->root, u->sha_hex);
    if (err == MF_OK)
        err = make_dir(ctx, dir);
    if (err < 0)
        return err;
    /* The blob's modification time is when its bytes were last committed under its name,
     * even when a file of that name is there already (same name, same bytes: ours replaces
     * it atomically, and readers keep the inode they opened). A removal (mf_blob__remove_orphan)
     * and the sweep keep a blob committed after their cutoff, so a row about to name these
     * bytes never finds them gone. */
    if (futimens(u->fd, NULL) != 0)
        return mf_fail(ctx, MF_E_IO, "cannot set the time of '%s': %s", u->tmp_path,
                       strerror(errno));
    if (rename(u->tmp_path, file) != 0)
        return mf_fail(ctx, MF_E_IO, "cannot rename '%s' to '%s': %s", u->tmp_path, file,
                       strerror(errno));
    u->committed = 1;
    err = join(ctx, tmpdir, sizeof(tmpdir), u->root, "tmp");
    /* Both directories changed: the new entry and the vanished temp name. The blob
     * directory's own entry in <root> only matters the first time, but is cheap. */
    if (err == MF_OK)
        err = fsync_dir(ctx, dir);
    if (err == MF_OK)
        err = fsync_dir(ctx, tmpdir);
    if (err == MF_OK)
        err = fsync_dir(ctx, u->root);
    return err;
}

void mf_blob__upload_free(struct mf_blob_upload *u)
{
    mf_allocator alloc;

    if (!u)
        return;
    if (u->fd >= 0)
        (void)close(u->fd);
    if (!u->committed && u->tmp_path[0])
        (void)unlink(u->tmp_path);
    EVP_MD_CTX_free(u->md);
    alloc = u->alloc;
    mf_free(&alloc, u);
}

static int64_t mtime_ms(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

int64_t mf_blob__clock_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Puts a blob moved aside back under its name (a blob committed there meanwhile has the
 * same bytes: replacing it is harmless). */
static int restore(struct mf_ctx *ctx, const char *aside, const char *file)
{
    if (rename(aside, file) != 0)
        return mf_fail(ctx, MF_E_IO, "cannot restore blob '%s': %s", file, strerror(errno));
    return MF_OK;
}

int mf_blob__remove_orphan(int *removed_out, struct mf_ctx *ctx, const char *root,
                           const char *sha_hex, int64_t cutoff_ms, mf_blob_ref_fn ref_fn,
                           void *payload)
{
    char dir[MF_BLOB_PATH_MAX], file[MF_BLOB_PATH_MAX], aside[MF_BLOB_PATH_MAX];
    struct stat st;
    int referenced = 0, err;

    *removed_out = 0;
    err = blob_paths(ctx, dir, file, root, sha_hex);
    if (err == MF_OK)
        err = join(ctx, dir, sizeof(dir), root, "tmp");
    if (err == MF_OK)
        err = join(ctx, aside, sizeof(aside), dir, BLOB_TMP_PREFIX);
    if (err == MF_OK && strlen(aside) + MF_SHA256_HEX_LEN >= sizeof(aside))
        err = mf_fail(ctx, MF_E_LIMIT, "path too long: '%s%s'", aside, sha_hex);
    if (err < 0)
        return err;
    /* tmp/upload-<sha256>: never a name mkstemp makes (6 characters after the prefix). */
    memcpy(aside + strlen(aside), sha_hex, MF_SHA256_HEX_LEN + 1);
    /* Moved aside first: an upload of the same bytes that commits from here on makes a new
     * file under the name, which the checks below cannot miss. The temp prefix lets the
     * start-up sweep of tmp/ finish a removal a crash interrupted. */
    if (rename(file, aside) != 0) {
        if (errno == ENOENT)
            return MF_OK; /* removed already (another node, an earlier try) */
        return mf_fail(ctx, MF_E_IO, "cannot move blob '%s' aside: %s", file, strerror(errno));
    }
    if (stat(aside, &st) != 0) /* the other remover of a race took it: it decides */
        return MF_OK;
    /* Committed after the cutoff: a row may be about to name it. Or named since the caller
     * decided (a row committed after its transaction). Either way it stays. */
    if (mtime_ms(&st) >= cutoff_ms)
        return restore(ctx, aside, file);
    err = ref_fn(payload, &referenced, sha_hex);
    if (err < 0 || referenced) {
        int rerr = restore(ctx, aside, file);

        return err < 0 ? err : rerr;
    }
    if (unlink(aside) != 0 && errno != ENOENT)
        return mf_fail(ctx, MF_E_IO, "cannot remove blob '%s': %s", aside, strerror(errno));
    *removed_out = 1;
    return MF_OK;
}

static int is_hex_name(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len && s[i]; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    }
    return i == len && s[i] == '\0';
}

/* Visits the blobs of one <root>/<2 hex> directory. */
static int walk_dir(struct mf_ctx *ctx, const char *dir, const char *prefix, mf_blob_visit_fn fn,
                    void *payload)
{
    char path[MF_BLOB_PATH_MAX];
    struct dirent *e;
    struct stat st;
    int err = MF_OK;
    DIR *d = opendir(dir);

    if (!d)
        return mf_fail(ctx, MF_E_IO, "cannot read '%s': %s", dir, strerror(errno));
    for (e = readdir(d); err == MF_OK && e; e = readdir(d)) {
        /* Only names a commit makes: anything else in the tree is not ours to judge. */
        if (!is_hex_name(e->d_name, MF_SHA256_HEX_LEN) || strncmp(e->d_name, prefix, 2) != 0)
            continue;
        if (join(ctx, path, sizeof(path), dir, e->d_name) < 0 || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        err = fn(payload, e->d_name, mtime_ms(&st));
    }
    (void)closedir(d);
    return err;
}

int mf_blob__walk(struct mf_ctx *ctx, const char *root, mf_blob_visit_fn fn, void *payload)
{
    char dir[MF_BLOB_PATH_MAX];
    struct dirent *e;
    int err = MF_OK;
    DIR *d = opendir(root);

    if (!d)
        return mf_fail(ctx, MF_E_IO, "cannot read '%s': %s", root, strerror(errno));
    for (e = readdir(d); err == MF_OK && e; e = readdir(d)) {
        if (!is_hex_name(e->d_name, 2))
            continue;
        err = join(ctx, dir, sizeof(dir), root, e->d_name);
        if (err == MF_OK)
            err = walk_dir(ctx, dir, e->d_name, fn, payload);
    }
    (void)closedir(d);
    return err;
}
