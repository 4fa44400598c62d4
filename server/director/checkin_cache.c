/* SPDX-License-Identifier: Apache-2.0 */
/* The per-node check-in cache, valid for one store generation (see checkin_cache.h). */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include "director/checkin_cache.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define CCACHE_BUCKETS 1024
#define CCACHE_KEY_MAX 256
/* A value: at most 16 roots or one release, each an envelope with its length prefix. */
#define CCACHE_VALUE_MAX (17u * (MF_STORE_ENVELOPE_MAX + 16u))

struct entry {
    struct entry *next;
    uint32_t hash;
    int err; /* MF_OK, or MF_E_NOTFOUND with the message as the value */
    size_t key_len, len;
    unsigned char bytes[]; /* the key, then the value */
};

/* Readers (hits, the most of a check-in's lookups) share the lock; keeping a value and
 * dropping everything at a new generation take it alone. */
struct mf_ccache {
    pthread_rwlock_t lock;
    uint64_t generation; /* of every entry */
    struct entry *buckets[CCACHE_BUCKETS];
    size_t n, bytes;
    atomic_ullong hits, misses;
};

/* Reads one value from the store into `val` (MF_OK or MF_E_NOTFOUND are kept). */
typedef int (*fill_fn)(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg);

/* Writers first: with glibc's default (readers first) a steady stream of check-ins could
 * keep a miss's value out of the cache indefinitely. No reader takes the lock twice, which
 * is what makes writer preference safe. */
static int init_lock(pthread_rwlock_t *lock)
{
    pthread_rwlockattr_t attr;
    int rc;

    if (pthread_rwlockattr_init(&attr) != 0)
        return -1;
#ifdef __GLIBC__
    (void)pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    rc = pthread_rwlock_init(lock, &attr);
    (void)pthread_rwlockattr_destroy(&attr);
    return rc;
}

int mf_ccache__new(struct mf_ccache **out, struct mf_ctx *ctx)
{
    struct mf_ccache *c = mf_calloc(NULL, 1, sizeof(*c));

    *out = NULL;
    if (!c)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory creating the check-in cache");
    if (init_lock(&c->lock) != 0) {
        mf_free(NULL, c);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the check-in cache lock");
    }
    *out = c;
    return MF_OK;
}

static void drop_all(struct mf_ccache *c)
{
    for (size_t i = 0; i < CCACHE_BUCKETS; i++) {
        while (c->buckets[i]) {
            struct entry *e = c->buckets[i];

            c->buckets[i] = e->next;
            mf_free(NULL, e);
        }
    }
    c->n = 0;
    c->bytes = 0;
}

void mf_ccache__free(struct mf_ccache *c)
{
    if (!c)
        return;
    drop_all(c);
    (void)pthread_rwlock_destroy(&c->lock);
    mf_free(NULL, c);
}

void mf_ccache__stats(uint64_t *hits_out, uint64_t *misses_out, struct mf_ccache *c)
{
    *hits_out = atomic_load(&c->hits);
    *misses_out = atomic_load(&c->misses);
}

static uint32_t key_hash(const char *key, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

static struct entry *find(struct mf_ccache *c, uint32_t h, const char *key, size_t key_len)
{
    for (struct entry *e = c->buckets[h % CCACHE_BUCKETS]; e; e = e->next) {
        if (e->hash == h && e->key_len == key_len && memcmp(e->bytes, key, key_len) == 0)
            return e;
    }
    return NULL;
}

/* Copies an entry's answer out: its value, or its MF_E_NOTFOUND with the store's message. */
static int answer(struct mf_dynbuf *out, struct mf_ctx *ctx, int err, const void *val, size_t len)
{
    if (err == MF_E_NOTFOUND)
        return mf_fail(ctx, MF_E_NOTFOUND, "%.*s", (int)len, (const char *)val);
    if (mf_dynbuf__append(out, val, len) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory copying a cached value");
    return MF_OK;
}

/* Keeps (key -> err, val) if the cache is still at generation `gen`. */
static void keep(struct mf_ccache *c, uint64_t gen, uint32_t h, const char *key, size_t key_len,
                 int err, const void *val, size_t len)
{
    struct entry *e;

    (void)pthread_rwlock_wrlock(&c->lock);
    if (c->generation == gen && !find(c, h, key, key_len)) {
        if (c->n >= MF_CCACHE_MAX_ENTRIES || c->bytes + key_len + len > MF_CCACHE_MAX_BYTES)
            drop_all(c);
        e = mf_alloc(NULL, sizeof(*e) + key_len + len);
        if (e) {
            e->hash = h;
            e->err = err;
            e->key_len = key_len;
            e->len = len;
            memcpy(e->bytes, key, key_len);
            if (len)
                memcpy(e->bytes + key_len, val, len);
            e->next = c->buckets[h % CCACHE_BUCKETS];
            c->buckets[h % CCACHE_BUCKETS] = e;
            c->n++;
            c->bytes += key_len + len;
        }
    }
    (void)pthread_rwlock_unlock(&c->lock);
}

/*
 * The value of `key` at the view's generation appended to `out`: from the cache, or from
 * `fill`, and then kept. A view of an older generation than the cache's (a check-in
 * that read it just before a change) reads the store and keeps nothing.
 */
static int cached_append(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                         fill_fn fill, const void *arg)
{
    struct mf_ccache *c = v->c;
    size_t key_len = strlen(key);
    uint32_t h = key_hash(key, key_len);
    struct mf_dynbuf val;
    struct entry *e;
    int usable = 1, err;

    if (c) {
        (void)pthread_rwlock_rdlock(&c->lock);
        if (v->generation > c->generation) {
            (void)pthread_rwlock_unlock(&c->lock);
            (void)pthread_rwlock_wrlock(&c->lock);
            if (v->generation > c->generation) { /* not done by another meanwhile */
                drop_all(c);
                c->generation = v->generation;
            }
            (void)pthread_rwlock_unlock(&c->lock);
            (void)pthread_rwlock_rdlock(&c->lock);
        }
        usable = v->generation == c->generation;
        e = usable ? find(c, h, key, key_len) : NULL;
        if (e) {
            atomic_fetch_add(&c->hits, 1);
            err = answer(out, v->ctx, e->err, e->bytes + e->key_len, e->len);
            (void)pthread_rwlock_unlock(&c->lock);
            return err;
        }
        atomic_fetch_add(&c->misses, 1);
        (void)pthread_rwlock_unlock(&c->lock);
    }
    mf_dynbuf__init(&val, &v->ctx->alloc, CCACHE_VALUE_MAX);
    err = fill(&val, v, arg);
    if (err == MF_E_NOTFOUND) {
        const char *m = mf_ctx__errmsg(v->ctx);

        mf_dynbuf__reset(&val);
        if (mf_dynbuf__append(&val, m, strlen(m)) < 0)
            err = mf_fail(v->ctx, MF_E_NOMEM, "out of memory keeping a store answer");
    }
    if ((err == MF_OK || err == MF_E_NOTFOUND) && c && usable)
        keep(c, v->generation, h, key, key_len, err, val.data, val.len);
    if (err == MF_OK || err == MF_E_NOTFOUND)
        err = answer(out, v->ctx, err, val.data, val.len);
    mf_dynbuf__free(&val);
    return err;
}

static int cached(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                  fill_fn fill, const void *arg)
{
    mf_dynbuf__init(out, &v->ctx->alloc, CCACHE_VALUE_MAX);
    return cached_append(out, v, key, fill, arg);
}

/* cached() for a fixed-size struct value. */
static int cached_struct(void *out, size_t size, const struct mf_ccache_view *v, const char *key,
                         fill_fn fill, const void *arg)
{
    struct mf_dynbuf buf;
    int err = cached(&buf, v, key, fill, arg);

    if (err == MF_OK && buf.len != size)
        err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: value of %zu bytes for %zu", buf.len,
                      size);
    if (err == MF_OK)
        memcpy(out, buf.data, size);
    mf_dynbuf__free(&buf);
    return err;
}

static int append_struct(struct mf_dynbuf *val, struct mf_ctx *ctx, const void *p, size_t size)
{
    if (mf_dynbuf__append(val, p, size) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory keeping a store answer");
    return MF_OK;
}

/* ---- The store ops through the cache: each a key and a fill ---- */

struct names {
    const char *a, *b, *c; /* c: a variant, when the value is one's */
};

static int fill_trust(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct mf_dynbuf env;
    uint64_t version = 0;
    int err = v->s->ops->registry->trust_latest(&version, &env, v->s, v->ctx, *(const int *)arg);

    if (err == MF_OK)
        err = append_struct(val, v->ctx, &version, sizeof(version));
    if (err == MF_OK)
        err = append_struct(val, v->ctx, env.data, env.len);
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__trust_latest(uint64_t *version_out, struct mf_dynbuf *out,
                            const struct mf_ccache_view *v, int kind)
{
    struct mf_dynbuf buf;
    char key[CCACHE_KEY_MAX];
    int err;

    *version_out = 0;
    (void)snprintf(key, sizeof(key), "trust\x1f%d", kind);
    mf_dynbuf__init(out, &v->ctx->alloc, MF_STORE_ENVELOPE_MAX + 1);
    err = cached(&buf, v, key, fill_trust, &kind);
    if (err == MF_OK && buf.len < sizeof(*version_out))
        err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: short trust document");
    if (err == MF_OK) {
        memcpy(version_out, buf.data, sizeof(*version_out));
        err = append_struct(out, v->ctx, buf.data + sizeof(*version_out),
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
    char key[CCACHE_KEY_MAX];
    struct mf_dynbuf buf;
    size_t off = 0;
    int err;

    (void)snprintf(key, sizeof(key), "roots\x1f%llu\x1f%zu", (unsigned long long)after, max);
    err = cached(&buf, v, key, fill_roots, &a);
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
    const struct names *n = arg;
    struct mf_store_version out;
    int err = v->s->ops->registry->version_get(&out, v->s, v->ctx, n->a, n->b);

    return err == MF_OK ? append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__version_get(struct mf_store_version *out, const struct mf_ccache_view *v,
                           const char *model, const char *version)
{
    struct names n = {model, version, NULL};
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "version\x1f%s\x1f%s", model, version);
    return cached_struct(out, sizeof(*out), v, key, fill_version, &n);
}

static int fill_latest(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct mf_store_version out;
    int err = v->s->ops->registry->promoted_latest(&out, v->s, v->ctx, arg);

    return err == MF_OK ? append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__promoted_latest(struct mf_store_version *out, const struct mf_ccache_view *v,
                               const char *model)
{
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "promoted\x1f%s", model);
    return cached_struct(out, sizeof(*out), v, key, fill_latest, model);
}

static int fill_release(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct names *n = arg;
    struct mf_dynbuf env;
    int err = v->s->ops->registry->release_get(&env, v->s, v->ctx, n->a, n->b);

    if (err == MF_OK)
        err = append_struct(val, v->ctx, env.data, env.len);
    mf_dynbuf__free(&env);
    return err;
}

int mf_ccache__release_get(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *model,
                           const char *version)
{
    struct names n = {model, version, NULL};
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "release\x1f%s\x1f%s", model, version);
    return cached(out, v, key, fill_release, &n);
}

/* The release envelope as the JSON string literal a check-in answer carries it in (quoted
 * and escaped): escaping kilobytes of envelope once per release instead of per answer. */
static int fill_release_json(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct names *n = arg;
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
    struct names n = {model, version, NULL};
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "release-json\x1f%s\x1f%s", model, version);
    return cached_append(out, v, key, fill_release_json, &n);
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
    const struct names *n = arg;
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
    struct names n = {model, version, NULL};
    char key[CCACHE_KEY_MAX];
    struct mf_dynbuf buf;
    int err;

    *n_out = 0;
    (void)snprintf(key, sizeof(key), "variants\x1f%s\x1f%s", model, version);
    err = cached(&buf, v, key, fill_variants, &n);
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
    const struct names *n = arg;
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
    struct names n = {model, version, variant};
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "variant-json\x1f%s\x1f%s\x1f%s", model, version, variant);
    return cached_append(out, v, key, fill_variant_release_json, &n);
}

static int fill_delta(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    const struct names *n = arg;
    struct mf_store_delta out;
    int err = v->s->ops->registry->delta_find(&out, v->s, v->ctx, n->a, n->b);

    return err == MF_OK ? append_struct(val, v->ctx, &out, sizeof(out)) : err;
}

int mf_ccache__delta_find(struct mf_store_delta *out, const struct mf_ccache_view *v,
                          const char *from_sha256, const char *to_sha256)
{
    struct names n = {from_sha256, to_sha256, NULL};
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "delta\x1f%s\x1f%s", from_sha256, to_sha256);
    return cached_struct(out, sizeof(*out), v, key, fill_delta, &n);
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
        err = append_struct(val, v->ctx, r, sizeof(*r));
    mf_free(NULL, r);
    return err;
}

int mf_ccache__rollout_newest(struct mf_store_rollout *out, const struct mf_ccache_view *v,
                              const char *model)
{
    char key[CCACHE_KEY_MAX];

    (void)snprintf(key, sizeof(key), "rollout\x1f%s", model);
    return cached_struct(out, sizeof(*out), v, key, fill_rollout, model);
}

struct pin_walk {
    const char *model;
    unsigned char pinned;
};

static int find_pin(void *payload, const struct mf_store_pin *p)
{
    struct pin_walk *w = payload;

    if (strcmp(p->model, w->model) == 0)
        w->pinned = 1;
    return MF_OK;
}

static int fill_pinned(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    struct pin_walk w = {arg, 0};
    int err = v->s->ops->director->pins_list(v->s, v->ctx, find_pin, &w);

    return err == MF_OK ? append_struct(val, v->ctx, &w.pinned, sizeof(w.pinned)) : err;
}

static int any_settings(void *payload, const struct mf_store_group_settings *g)
{
    (void)g;
    *(unsigned char *)payload = 1;
    return MF_OK;
}

static int fill_settings_any(struct mf_dynbuf *val, const struct mf_ccache_view *v, const void *arg)
{
    unsigned char any = 0;
    int err = v->s->ops->director->group_settings_list(v->s, v->ctx, any_settings, &any);

    (void)arg;
    return err == MF_OK ? append_struct(val, v->ctx, &any, sizeof(any)) : err;
}

int mf_ccache__group_settings_any(int *any_out, const struct mf_ccache_view *v)
{
    unsigned char any = 1;
    int err = cached_struct(&any, sizeof(any), v, "group-settings", fill_settings_any, NULL);

    *any_out = any != 0;
    return err;
}

static void pinned_key(char key[CCACHE_KEY_MAX], const char *model)
{
    (void)snprintf(key, CCACHE_KEY_MAX, "pinned\x1f%s", model);
}

int mf_ccache__pinned(int *pinned_out, const struct mf_ccache_view *v, const char *model)
{
    char key[CCACHE_KEY_MAX];
    unsigned char pinned = 1;
    int err;

    pinned_key(key, model);
    err = cached_struct(&pinned, sizeof(pinned), v, key, fill_pinned, model);
    *pinned_out = pinned != 0;
    return err;
}

void mf_ccache__pin_hint(struct mf_store_pin_hint *out, struct mf_ccache *c,
                         const char *const *models, size_t n)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    (void)pthread_rwlock_rdlock(&c->lock);
    out->generation = c->generation;
    _Static_assert(MF_STORE_CHECKIN_MAX_MODELS <= 64, "one bit of the hint per model");
    for (size_t i = 0; i < n && i < MF_STORE_CHECKIN_MAX_MODELS; i++) {
        char key[CCACHE_KEY_MAX];
        struct entry *e;

        pinned_key(key, models[i]);
        e = find(c, key_hash(key, strlen(key)), key, strlen(key));
        if (e && e->err == MF_OK && e->len == 1 && e->bytes[e->key_len] == 0)
            out->unpinned |= UINT64_C(1) << i;
    }
    (void)pthread_rwlock_unlock(&c->lock);
}
