/* SPDX-License-Identifier: Apache-2.0 */
/* Store backend selection by URL scheme, from an explicit static table (STYLE rule 5), the
 * names of the admin token roles, and the trust state built from the stored documents. */
#include "store/store.h"

#include "mf/trust.h"

#include <string.h>

static const struct mf_store_ops *const store_backends[] = {
    &mf_store__sqlite_ops,
    &mf_store__pg_ops,
    &mf_store__postgres_ops,
};

static const struct {
    const char *name;
    int role;
} store_roles[] = {{"ops", MF_ROLE_OPS}, {"data", MF_ROLE_DATA}, {"admin", MF_ROLE_ADMIN}};

const char *mf_store__role_name(int role)
{
    for (size_t i = 0; i < sizeof(store_roles) / sizeof(store_roles[0]); i++) {
        if (store_roles[i].role == role)
            return store_roles[i].name;
    }
    return "unknown";
}

int mf_store__role_of(const char *name)
{
    for (size_t i = 0; name && i < sizeof(store_roles) / sizeof(store_roles[0]); i++) {
        if (strcmp(name, store_roles[i].name) == 0)
            return store_roles[i].role;
    }
    return 0;
}

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

int mf_store__checkin_begin(uint64_t *generation_out, uint64_t *first_out,
                            struct mf_store_directives *dirs_out, struct mf_store *s,
                            struct mf_ctx *ctx, const char *device_id,
                            const uint8_t cred_hash[MF_SHA256_LEN], unsigned n_seq,
                            const char *const *models, size_t n_models, int64_t now,
                            const struct mf_store_pin_hint *hint)
{
    struct mf_store_checkin c = {
        .ctx = ctx,
        .device_id = device_id,
        .cred_hash = cred_hash,
        .n_seq = n_seq,
        .models = models,
        .n_models = n_models,
        .now = now,
        .hint = hint,
        .dirs = dirs_out,
    };
    int err = s->ops->checkin->checkin_begin(s, &c, 1);

    *generation_out = c.generation;
    *first_out = c.first;
    return err;
}

int mf_store__trust_load(mf_trust **out, struct mf_store *s, struct mf_ctx *ctx, int need_keys)
{
    struct mf_dynbuf root, keys;
    uint64_t rv = 0, kv = 0;
    mf_trust *t = NULL;
    int err;

    *out = NULL;
    mf_dynbuf__init(&keys, &ctx->alloc, 1);
    err = s->ops->registry->trust_latest(&rv, &root, s, ctx, MF_STORE_TRUST_ROOT);
    if (err == MF_OK && need_keys)
        err = s->ops->registry->trust_latest(&kv, &keys, s, ctx, MF_STORE_TRUST_KEYS);
    if (err == MF_OK && mf_trust_new(&t, NULL, NULL) < 0)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory loading the trust state");
    /* The stored documents were verified on the way in; time does not matter here (a
     * stored root may have expired since), the document being judged is checked with it. */
    if (err == MF_OK && mf_trust_bootstrap(t, root.data, root.len, MF_TRUST_TIME_UNKNOWN) < 0)
        err = mf_fail(ctx, MF_E_STATE, "stored root v%llu no longer verifies: %s",
                      (unsigned long long)rv, mf_trust_errmsg(t));
    if (err == MF_OK && need_keys &&
        mf_trust_update_keys(t, keys.data, keys.len, MF_TRUST_TIME_UNKNOWN) < 0)
        err = mf_fail(ctx, MF_E_STATE, "stored keys v%llu no longer verify: %s",
                      (unsigned long long)kv, mf_trust_errmsg(t));
    mf_dynbuf__free(&root);
    mf_dynbuf__free(&keys);
    if (err < 0) {
        mf_trust_free(t);
        return err;
    }
    *out = t;
    return MF_OK;
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
