/* SPDX-License-Identifier: Apache-2.0 */
/* The per-node check-in cache, valid for one store generation (see checkin_cache.h). */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include "director/checkin_cache.h"
#include "director/checkin_cache_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define CCACHE_BUCKETS 1024
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
int mf_ccache__cached_append(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                             mf_ccache_fill_fn fill, const void *arg)
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

int mf_ccache__cached(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                      mf_ccache_fill_fn fill, const void *arg)
{
    mf_dynbuf__init(out, &v->ctx->alloc, CCACHE_VALUE_MAX);
    return mf_ccache__cached_append(out, v, key, fill, arg);
}

/* mf_ccache__cached() for a fixed-size struct value. */
int mf_ccache__cached_struct(void *out, size_t size, const struct mf_ccache_view *v,
                             const char *key, mf_ccache_fill_fn fill, const void *arg)
{
    struct mf_dynbuf buf;
    int err = mf_ccache__cached(&buf, v, key, fill, arg);

    if (err == MF_OK && buf.len != size)
        err = mf_fail(v->ctx, MF_E_STATE, "check-in cache: value of %zu bytes for %zu", buf.len,
                      size);
    if (err == MF_OK)
        memcpy(out, buf.data, size);
    mf_dynbuf__free(&buf);
    return err;
}

int mf_ccache__append_struct(struct mf_dynbuf *val, struct mf_ctx *ctx, const void *p, size_t size)
{
    if (mf_dynbuf__append(val, p, size) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory keeping a store answer");
    return MF_OK;
}

/* ---- Pins and group settings through the cache (the registry and rollout reads are
 * checkin_cache_reads.c's) ---- */

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

    return err == MF_OK ? mf_ccache__append_struct(val, v->ctx, &w.pinned, sizeof(w.pinned)) : err;
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
    return err == MF_OK ? mf_ccache__append_struct(val, v->ctx, &any, sizeof(any)) : err;
}

int mf_ccache__group_settings_any(int *any_out, const struct mf_ccache_view *v)
{
    unsigned char any = 1;
    int err =
        mf_ccache__cached_struct(&any, sizeof(any), v, "group-settings", fill_settings_any, NULL);

    *any_out = any != 0;
    return err;
}

static void pinned_key(char key[MF_CCACHE_KEY_MAX], const char *model)
{
    (void)snprintf(key, MF_CCACHE_KEY_MAX, "pinned\x1f%s", model);
}

int mf_ccache__pinned(int *pinned_out, const struct mf_ccache_view *v, const char *model)
{
    char key[MF_CCACHE_KEY_MAX];
    unsigned char pinned = 1;
    int err;

    pinned_key(key, model);
    err = mf_ccache__cached_struct(&pinned, sizeof(pinned), v, key, fill_pinned, model);
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
        char key[MF_CCACHE_KEY_MAX];
        struct entry *e;

        pinned_key(key, models[i]);
        e = find(c, key_hash(key, strlen(key)), key, strlen(key));
        if (e && e->err == MF_OK && e->len == 1 && e->bytes[e->key_len] == 0)
            out->unpinned |= UINT64_C(1) << i;
    }
    (void)pthread_rwlock_unlock(&c->lock);
}
