/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's and rollouts' reads of a check-in through the per-node cache (see
 * checkin_cache.h): trust documents, versions, releases, variants, deltas and the newest
 * rollout, each a key and a fill of the store op (checkin_cache_int.h).
 */
#include "director/checkin_cache.h"
#include "director/checkin_cache_int.h"

#include <stdio.h>
#include <string.h>

struct ccache_names {
    const char *a, *b, *c; /* c: a variant, when the value is one's */
};

static int fill_trust(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct mf_dynbuf env;
    uint64_t version = 0;
    int err = v->s->ops->registry->trust_latest(&version, &env, v->s, v->ctx, *(const int *)arg);

    if (err == MF_OK)
        err = mf_ccache__append_struct(val, v->ctx, &version, sizeof(version));
    if (err == MF_OK)
        err = mf_ccache__append_struct(val, v->ctx, env.data, env.len);
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__trust_latest(uint64_t *version_out, struct mf_dynbuf *out,
                            const struct mf_ccache_view *v, int kind)
{
    struct mf_dynbuf buf;
    char key[MF_CCACHE_KEY_MAX];
    int err;

    *version_out = 0;
    (void)snprintf(key, sizeof(key), "trust\x1f%d", kind);
    mf_dynbuf__init(out, &v->ctx->alloc, MF_STORE_ENVELOPE_MAX + 1);
    err = mf_ccache__cached(&buf, v, key, fill_trust, &kind);
    if (err == MF_OK && buf.len < sizeof(*version_out))
        err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: short trust document");
    if (err == MF_OK) {
        memcpy(version_out, buf.data, sizeof(*version_out));
        err = mf_ccache__append_struct(out, v->ctx, buf.data + sizeof(*version_out),
                                       buf.len - sizeof(*version_out));
    }
    mf_dynbuf__free(&buf);
    return err;
}

/* Roots as (version, length, bytes) records. */
static int add_root_record(void *payload, uint64_t version, const void *env, size_t len)
{
    struct mf_dynbuf *val = payload;
    uint64_t n = len;

    if (mf_dynbuf__append(val, &version, sizeof(version)) < 0 ||
        mf_dynbuf__append(val, &n, sizeof(n)) < 0 || mf_dynbuf__append(val, env, len) < 0)
        return MF_E_NOMEM;
    return MF_OK;
}

struct roots_arg {
    uint64_t after;
    size_t max;
};

static int fill_roots(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct roots_arg *a = arg;
    int err = v->s->ops->registry->trust_roots_after(v->s, v->ctx, a->after, a->max,
                                                     add_root_record, val);

    if (err == MF_E_NOMEM)
        err = mf_fail(v->ctx, err, "out of memory keeping root documents");
    return err;
}

int mf_ccache__trust_roots_after(const struct mf_ccache_view *v, uint64_t after, size_t max,
                                 mf_store_envelope_fn fn, void *payload)
{
    struct roots_arg a = {after, max};
    char key[MF_CCACHE_KEY_MAX];
    struct mf_dynbuf buf;
    size_t off = 0;
    int err;

    (void)snprintf(key, sizeof(key), "roots\x1f%llu\x1f%zu", (unsigned long long)after, max);
    err = mf_ccache__cached(&buf, v, key, fill_roots, &a);
    while (err == MF_OK && off < buf.len) {
        uint64_t version, n;

        if (buf.len - off < 2 * sizeof(uint64_t)) {
            err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: short root record");
            break;
        }
        memcpy(&version, buf.data + off, sizeof(version));
        memcpy(&n, buf.data + off + sizeof(version), sizeof(n));
        off += 2 * sizeof(uint64_t);
        if (n > buf.len - off) {
            err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: short root record");
            break;
        }
        err = fn(payload, version, buf.data + off, (size_t)n);
        off += (size_t)n;
    }
    mf_dynbuf__free(&buf);
    return err;
}

static int fill_version(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct ccache_names *n = arg;
    struct mf_store_version out;
    int err = v->s->ops->registry->version_get(&out, v->s, v->ctx, n->a, n->b);

    return err == MF_OK ? mf_ccache__append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__version_get(struct mf_store_version *out, const struct mf_ccache_view *v,
                           const char *model, const char *version)
{
    struct ccache_names n = {model, version, NULL};
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "version\x1f%s\x1f%s", model, version);
    return mf_ccache__cached_struct(out, sizeof(*out), v, key, fill_version, &n);
}

static int fill_latest(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct mf_store_version out;
    int err = v->s->ops->registry->promoted_latest(&out, v->s, v->ctx, arg);

    return err == MF_OK ? mf_ccache__append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__promoted_latest(struct mf_store_version *out, const struct mf_ccache_view *v,
                               const char *model)
{
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "promoted\x1f%s", model);
    return mf_ccache__cached_struct(out, sizeof(*out), v, key, fill_latest, model);
}

static int fill_release(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct ccache_names *n = arg;
    struct mf_dynbuf env;
    int err = v->s->ops->registry->release_get(&env, v->s, v->ctx, n->a, n->b);

    if (err == MF_OK)
        err = mf_ccache__append_struct(val, v->ctx, env.data, env.len);
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__release_get(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *model,
                           const char *version)
{
    struct ccache_names n = {model, version, NULL};
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "release\x1f%s\x1f%s", model, version);
    return mf_ccache__cached(out, v, key, fill_release, &n);
}

/* The release envelope as the JSON string literal a check-in answer carries it in (quoted
 * and escaped): escaping kilobytes of envelope once per release instead of per answer. */
static int fill_release_json(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct ccache_names *n = arg;
    struct mf_dynbuf env;
    int err = mf_ccache__release_get(&env, v, n->a, n->b);

    if (err == MF_OK && mf_dynbuf__append_json_str(val, (const char *)env.data, env.len) < 0)
        err = mf_fail(v->ctx, MF_E_NOMEM, "out of memory quoting a release envelope");
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__release_json(struct mf_dynbuf *out, const struct mf_ccache_view *v,
                            const char *model, const char *version)
{
    struct ccache_names n = {model, version, NULL};
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "release-json\x1f%s\x1f%s", model, version);
    return mf_ccache__cached_append(out, v, key, fill_release_json, &n);
}

static int add_variant(void *payload, const struct mf_store_variant *x)
{
    struct mf_dynbuf *val = payload;

    if (val->len >= MF_STORE_VARIANTS_MAX * sizeof(*x))
        return MF_E_STATE;
    return mf_dynbuf__append(val, x, sizeof(*x)) < 0 ? MF_E_NOMEM : MF_OK;
}

static int fill_variants(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct ccache_names *n = arg;
    int err = v->s->ops->variants->variants_list(v->s, v->ctx, n->a, n->b, 1, add_variant, val);

    if (err == MF_E_STATE)
        err = mf_fail(v->ctx, MF_E_STATE, "%s/%s has more than %d released variants", n->a, n->b,
                      MF_STORE_VARIANTS_MAX);
    else if (err == MF_E_NOMEM)
        err = mf_fail(v->ctx, MF_E_NOMEM, "out of memory keeping variants");
    return err;
}

int mf_ccache__variants(struct mf_store_variant out[MF_STORE_VARIANTS_MAX], size_t *n_out,
                        const struct mf_ccache_view *v, const char *model, const char *version)
{
    struct ccache_names n = {model, version, NULL};
    char key[MF_CCACHE_KEY_MAX];
    struct mf_dynbuf buf;
    int err;

    *n_out = 0;
    (void)snprintf(key, sizeof(key), "variants\x1f%s\x1f%s", model, version);
    err = mf_ccache__cached(&buf, v, key, fill_variants, &n);
    if (err == MF_OK &&
        (buf.len % sizeof(*out) != 0 || buf.len > MF_STORE_VARIANTS_MAX * sizeof(*out)))
        err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: %zu bytes of variants", buf.len);
    if (err == MF_OK && buf.len) {
        memcpy(out, buf.data, buf.len);
        *n_out = buf.len / sizeof(*out);
    }
    mf_dynbuf__free(&buf);
    return err;
}

static int fill_variant_release_json(struct mf_dynbuf *val, const struct mf_ccache_view *v,
                                     const void *arg)
{
    const struct ccache_names *n = arg;
    struct mf_dynbuf env;
    int err = v->s->ops->variants->variant_release_get(&env, v->s, v->ctx, n->a, n->b, n->c);

    if (err == MF_OK && mf_dynbuf__append_json_str(val, (const char *)env.data, env.len) < 0)
        err = mf_fail(v->ctx, MF_E_NOMEM, "out of memory quoting a release envelope");
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__variant_release_json(struct mf_dynbuf *out, const struct mf_ccache_view *v,
                                    const char *model, const char *version, const char *variant)
{
    struct ccache_names n = {model, version, variant};
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "variant-json\x1f%s\x1f%s\x1f%s", model, version, variant);
    return mf_ccache__cached_append(out, v, key, fill_variant_release_json, &n);
}

static int fill_delta(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct ccache_names *n = arg;
    struct mf_store_delta out;
    int err = v->s->ops->registry->delta_find(&out, v->s, v->ctx, n->a, n->b);

    return err == MF_OK ? mf_ccache__append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__delta_find(struct mf_store_delta *out, const struct mf_ccache_view *v,
                          const char *from_sha256, const char *to_sha256)
{
    struct ccache_names n = {from_sha256, to_sha256, NULL};
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "delta\x1f%s\x1f%s", from_sha256, to_sha256);
    return mf_ccache__cached_struct(out, sizeof(*out), v, key, fill_delta, &n);
}

static int newest(void *payload, const struct mf_store_rollout *r)
{
    struct mf_store_rollout *out = payload;

    if (out->id == 0)
        *out = *r;
    return MF_OK;
}

static int fill_rollout(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct mf_store_rollout *r = mf_calloc(NULL, 1, sizeof(*r));
    int err = r ? v->s->ops->rollout->rollouts_list(v->s, v->ctx, arg, newest, r)
                : mf_fail(v->ctx, MF_E_NOMEM, "out of memory reading rollouts");

    if (err == MF_OK && r->id == 0)
        err = mf_fail(v->ctx, MF_E_NOTFOUND, "no rollout of model '%s'", (const char *)arg);
    if (err == MF_OK)
        err = mf_ccache__append_struct(val, v->ctx, r, sizeof(*r));
    mf_free(NULL, r);
    return err;
}

int mf_ccache__rollout_newest(struct mf_store_rollout *out, const struct mf_ccache_view *v,
                              const char *model)
{
    char key[MF_CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "rollout\x1f%s", model);
    return mf_ccache__cached_struct(out, sizeof(*out), v, key, fill_rollout, model);
}
