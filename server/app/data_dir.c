/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mf-server init`: lays out the data directory and seeds the first credentials. Safe to
 * re-run: existing directories, migrations and tokens are left alone, and an existing
 * token is never rotated (docs/protocol.md, Credentials).
 */
#include "app/server.h"

#include "common/file_atomic.h"
#include "common/token.h"
#include "director/director.h"
#include "blob/blob_store.h"
#include "mf/ct.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DATA_PATH_MAX 4096

static int path_join(struct mf_ctx *ctx, char *out, const char *dir, const char *name)
{
    int n = snprintf(out, DATA_PATH_MAX, "%s/%s", dir, name);

    if (n < 0 || n >= DATA_PATH_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "path too long: '%s/%s'", dir, name);
    return MF_OK;
}

/* Creates one token of `kind` unless the store has one: file first, then the hash, so a
 * crash in between leaves no hash whose token nobody has (the next init makes a new one). */
static int seed_token(int *changed, struct mf_ctx *ctx, struct mf_store *s, const char *dir,
                      enum mf_token_kind kind, const char *file)
{
    char path[DATA_PATH_MAX], tok[MF_TOKEN_LEN + 2];
    uint8_t hash[MF_SHA256_LEN];
    int count = 0, err;

    err = s->ops->auth->token_count(&count, s, ctx, (int)kind);
    if (err < 0 || count > 0)
        return err;
    err = path_join(ctx, path, dir, file);
    if (err == MF_OK)
        err = mf_token__generate(tok, ctx, kind);
    if (err < 0)
        return err;
    mf_token__hash(hash, tok, MF_TOKEN_LEN);
    tok[MF_TOKEN_LEN] = '\n';
    tok[MF_TOKEN_LEN + 1] = '\0';
    err = mf_file__write_atomic(ctx, path, tok, 0600);
    mf_secure_zero(tok, sizeof(tok));
    if (err == MF_OK)
        err = s->ops->auth->token_insert(s, ctx, (int)kind, hash, (int64_t)time(NULL));
    if (err == MF_OK)
        *changed = 1;
    return err;
}

static int make_dir(int *changed, struct mf_ctx *ctx, const char *path)
{
    if (mkdir(path, 0750) == 0) {
        *changed = 1;
        return MF_OK;
    }
    if (errno == EEXIST)
        return MF_OK;
    return mf_fail(ctx, MF_E_IO, "cannot create directory '%s': %s", path, strerror(errno));
}

int mf_server__init_data_dir(int *changed_out, struct mf_ctx *ctx, const char *data_dir,
                             const char *store_url)
{
    char blobs[DATA_PATH_MAX], tmp[DATA_PATH_MAX], db[DATA_PATH_MAX];
    struct mf_store *s = NULL;
    int applied = 0, err;

    *changed_out = 0;
    err = make_dir(changed_out, ctx, data_dir);
    if (err == MF_OK)
        err = path_join(ctx, blobs, data_dir, "blobs");
    if (err == MF_OK)
        err = make_dir(changed_out, ctx, blobs);
    if (err == MF_OK)
        err = path_join(ctx, tmp, blobs, "tmp");
    if (err == MF_OK)
        err = make_dir(changed_out, ctx, tmp);
    /* The embedded default lives in the data dir; a URL (PostgreSQL) is initialised in place,
     * so a cluster's first node seeds the shared store and writes the token files. */
    if (err == MF_OK && (!store_url || !store_url[0]))
        err = path_join(ctx, db, data_dir, "store.db");
    if (err == MF_OK)
        err = mf_store__open(&s, ctx, store_url && store_url[0] ? store_url : db, 1);
    if (err == MF_OK)
        err = s->ops->migrate(&applied, s, ctx);
    if (err == MF_OK && applied > 0)
        *changed_out = 1;
    if (err == MF_OK)
        err = seed_token(changed_out, ctx, s, data_dir, MF_TOKEN_ADMIN, "admin.token");
    if (err == MF_OK)
        err = seed_token(changed_out, ctx, s, data_dir, MF_TOKEN_ENROLL, "enroll.token");
    if (err == MF_OK)
        err = mf_director__init_key(changed_out, ctx, data_dir, NULL);
    mf_store__close(s);
    return err;
}
