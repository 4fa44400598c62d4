/* SPDX-License-Identifier: Apache-2.0 */
/* Copies the data directory's first tokens into another store (see pg_seed.h). */
#include "pg_seed.h"

#include "common/token.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int seed_one(struct mf_ctx *ctx, struct mf_store *s, const char *data_dir, const char *file,
                    enum mf_token_kind kind)
{
    char path[512], tok[MF_TOKEN_LEN + 2] = "";
    uint8_t hash[MF_SHA256_LEN];
    int count = 0, err;
    FILE *f;

    err = s->ops->auth->token_count(&count, s, ctx, (int)kind);
    if (err < 0 || count > 0)
        return err;
    (void)snprintf(path, sizeof(path), "%s/%s", data_dir, file);
    f = fopen(path, "r");
    if (!f)
        return mf_fail(ctx, MF_E_NOTFOUND, "cannot read %s", path);
    if (!fgets(tok, sizeof(tok), f) || mf_token__kind(tok, MF_TOKEN_LEN) != (int)kind)
        err = mf_fail(ctx, MF_E_INVALID, "no token in %s", path);
    (void)fclose(f);
    if (err < 0)
        return err;
    mf_token__hash(hash, tok, MF_TOKEN_LEN);
    return s->ops->auth->token_insert(s, ctx, (int)kind, hash, (int64_t)time(NULL));
}

int mf_pgtest__seed(struct mf_ctx *ctx, const char *url, const char *data_dir)
{
    struct mf_store *s = NULL;
    int applied = 0;
    int err = mf_store__open(&s, ctx, url, 0);

    if (err == MF_OK)
        err = s->ops->migrate(&applied, s, ctx);
    if (err == MF_OK)
        err = seed_one(ctx, s, data_dir, "admin.token", MF_TOKEN_ADMIN);
    if (err == MF_OK)
        err = seed_one(ctx, s, data_dir, "enroll.token", MF_TOKEN_ENROLL);
    mf_store__close(s);
    return err;
}
