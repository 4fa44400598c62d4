/* SPDX-License-Identifier: Apache-2.0 */
/* Store backend selection by URL scheme, from an explicit static table (STYLE rule 5). */
#include "store/store.h"

#include <string.h>

static const struct mf_store_ops *const store_backends[] = {
    &mf_store__sqlite_ops,
    &mf_store__pg_ops,
    &mf_store__postgres_ops,
};

int mf_store__open(struct mf_store **out, struct mf_ctx *ctx, const char *url, int create)
{
    const char *colon = strchr(url, ':');
    const char *slash = strchr(url, '/');

    *out = NULL;
    /* A plain filesystem path (no scheme before the first '/') is a SQLite file. */
    if (!colon || (slash && slash < colon))
        return mf_store__sqlite_ops.open(out, ctx, url, create);
    for (size_t i = 0; i < sizeof(store_backends) / sizeof(store_backends[0]); i++) {
        const struct mf_store_ops *ops = store_backends[i];
        size_t n = strlen(ops->scheme);

        if ((size_t)(colon - url) == n && strncmp(url, ops->scheme, n) == 0)
            return ops->open(out, ctx, colon + 1, create);
    }
    return mf_fail(ctx, MF_E_INVALID, "unknown store URL scheme in '%.*s'", (int)(colon - url),
                   url);
}

void mf_store__close(struct mf_store *s)
{
    if (s)
        s->ops->close(s);
}

int mf_store__epoch_floor(uint64_t *floor_out, struct mf_ctx *ctx, int64_t epoch)
{
    *floor_out = 0;
    if (epoch < 1 || epoch >= MF_STORE_EPOCH_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "store epoch %lld is outside 1..%lld", (long long)epoch,
                       (long long)MF_STORE_EPOCH_MAX - 1);
    *floor_out = (uint64_t)(epoch - 1) << MF_STORE_EPOCH_SHIFT;
    return MF_OK;
}
