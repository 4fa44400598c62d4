/* SPDX-License-Identifier: Apache-2.0 */
/* The director key on disk (see director.h); signing is director_sign.c. */
#define _XOPEN_SOURCE 700 /* open flags, fsync */
#include "director/director_int.h"

#include "common/file_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIRECTOR_PEM_MAX (16u * 1024u)
#define DIRECTOR_PATH_MAX 4096

/* Reads a PEM file of at most DIRECTOR_PEM_MAX bytes into `buf` (NUL-terminated). */
static int read_pem(char *buf, size_t *len, struct mf_ctx *ctx, const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f)
        return mf_fail(ctx, errno == ENOENT ? MF_E_NOTFOUND : MF_E_IO, "cannot open '%s': %s", path,
                       strerror(errno));
    n = fread(buf, 1, DIRECTOR_PEM_MAX, f);
    (void)fclose(f);
    if (n == DIRECTOR_PEM_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "'%s' is larger than %u bytes", path, DIRECTOR_PEM_MAX - 1);
    buf[n] = '\0';
    *len = n;
    return MF_OK;
}

static int key_path(char *out, struct mf_ctx *ctx, const char *dir, const char *leaf)
{
    int n = snprintf(out, DIRECTOR_PATH_MAX, "%s/%s", dir, leaf);

    if (n < 0 || n >= DIRECTOR_PATH_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "path too long: '%s/%s'", dir, leaf);
    return MF_OK;
}

/* Writes the private key (0600) and its public half (0644) from `pem`. */
static int write_key(struct mf_ctx *ctx, mf_manifest_signer *s, const char *dir, const char *pem,
                     size_t len, char *keyid)
{
    char path[DIRECTOR_PATH_MAX];
    char *pub = NULL;
    size_t pub_len = 0;
    int err = mf_manifest_signer_public_key(&pub, &pub_len, keyid, s, pem, len);

    if (err < 0)
        return mf_fail(ctx, err, "director key: %s", mf_manifest_signer_errmsg(s));
    err = key_path(path, ctx, dir, MF_DIRECTOR_PUB_FILE);
    if (err == MF_OK)
        err = mf_file__write_atomic(ctx, path, pub, 0644);
    mf_free(NULL, pub);
    if (err == MF_OK)
        err = key_path(path, ctx, dir, MF_DIRECTOR_KEY_FILE);
    if (err == MF_OK)
        err = mf_file__write_atomic(ctx, path, pem, 0600);
    return err;
}

int mf_director__init_key(int *changed, struct mf_ctx *ctx, const char *data_dir,
                          const char *import_pem_path)
{
    char path[DIRECTOR_PATH_MAX], keyid[65];
    mf_manifest_signer *s = NULL;
    char *pem = NULL;
    size_t len = 0;
    struct stat st;
    int err;

    err = key_path(path, ctx, data_dir, MF_DIRECTOR_KEY_FILE);
    if (err < 0)
        return err;
    if (stat(path, &st) == 0) {
        if (import_pem_path)
            return mf_fail(ctx, MF_E_STATE, "'%s' exists; a director key is never replaced", path);
        return MF_OK;
    }
    err = mf_manifest_signer_new(&s, NULL);
    if (err < 0)
        return mf_fail(ctx, err, "out of memory creating the director key");
    if (import_pem_path) {
        pem = mf_alloc(NULL, DIRECTOR_PEM_MAX);
        err = pem ? read_pem(pem, &len, ctx, import_pem_path)
                  : mf_fail(ctx, MF_E_NOMEM, "out of memory reading the director key");
        if (err == MF_OK && mf_manifest_signer_add_key(NULL, s, pem, len) < 0)
            err = mf_fail(ctx, MF_E_INVALID, "'%s': %s", import_pem_path,
                          mf_manifest_signer_errmsg(s));
    } else if (mf_manifest_signer_generate_key(&pem, &len, keyid, s) < 0) {
        err = mf_fail(ctx, MF_E_GENERIC, "cannot generate the director key: %s",
                      mf_manifest_signer_errmsg(s));
    }
    if (err == MF_OK)
        err = write_key(ctx, s, data_dir, pem, len, keyid);
    if (err == MF_OK)
        *changed = 1;
    mf_manifest_secret_free(NULL, pem, import_pem_path ? DIRECTOR_PEM_MAX : len);
    mf_manifest_signer_free(s);
    return err;
}

int mf_director__open(struct mf_director **out, struct mf_ctx *ctx, const char *data_dir)
{
    char path[DIRECTOR_PATH_MAX];
    struct mf_director *d;
    char *pem = NULL;
    size_t len = 0;
    int err;

    *out = NULL;
    err = key_path(path, ctx, data_dir, MF_DIRECTOR_KEY_FILE);
    if (err < 0)
        return err;
    d = mf_calloc(NULL, 1, sizeof(*d));
    pem = mf_alloc(NULL, DIRECTOR_PEM_MAX);
    if (!d || !pem) {
        mf_free(NULL, d);
        mf_free(NULL, pem);
        return mf_fail(ctx, MF_E_NOMEM, "out of memory loading the director key");
    }
    err = mf_director__sign_init(d, ctx);
    if (err == MF_OK)
        err = read_pem(pem, &len, ctx, path);
    if (err == MF_E_NOTFOUND)
        err = mf_fail(ctx, err, "no director key '%s': run mf-server init first", path);
    if (err == MF_OK && mf_manifest_signer_new(&d->signer, NULL) < 0)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory loading the director key");
    if (err == MF_OK && mf_manifest_signer_add_key(d->keyid, d->signer, pem, len) < 0)
        err = mf_fail(ctx, MF_E_INVALID, "'%s': %s", path, mf_manifest_signer_errmsg(d->signer));
    mf_manifest_secret_free(NULL, pem, DIRECTOR_PEM_MAX);
    if (err < 0) {
        mf_director__close(d);
        return err;
    }
    *out = d;
    return MF_OK;
}

void mf_director__close(struct mf_director *d)
{
    if (!d)
        return;
    mf_manifest_signer_free(d->signer);
    mf_director__sign_fini(d);
    mf_free(NULL, d);
}

const char *mf_director__keyid(const struct mf_director *d)
{
    return d->keyid;
}
