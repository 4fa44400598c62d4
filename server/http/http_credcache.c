/* SPDX-License-Identifier: Apache-2.0 */
/* The node's device credential cache (see http_credcache.h). */
#include "http/http_credcache.h"

#include "mf/ct.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct slot {
    uint8_t hash[MF_SHA256_LEN];
    char device_id[MF_STORE_NAME_SIZE]; /* "": empty */
    int64_t verified_s;                 /* CLOCK_MONOTONIC seconds of the put */
};

/* A set of MF_CREDCACHE_WAYS slots: a hash lives in one set, in any of its slots. Two
 * credentials whose hashes share a set therefore both stay (a direct-mapped cache made
 * such a pair evict each other on every request: a store round trip each, in the MHD
 * worker). A full set gives up its slots in turn. */
struct set {
    struct slot way[MF_CREDCACHE_WAYS];
    unsigned next_victim;
};

struct mf_credcache {
    pthread_mutex_t lock;
    size_t n_sets;
    struct set sets[];
};

int mf_httpd__credcache_new(struct mf_credcache **out, struct mf_ctx *ctx, size_t slots)
{
    size_t n_sets =
        ((slots ? slots : MF_CREDCACHE_SLOTS) + MF_CREDCACHE_WAYS - 1) / MF_CREDCACHE_WAYS;
    struct mf_credcache *c;

    *out = NULL;
    if (slots > MF_CREDCACHE_SLOTS_MAX)
        return mf_fail(ctx, MF_E_INVALID, "a credential cache of %zu entries (at most %u)", slots,
                       MF_CREDCACHE_SLOTS_MAX);
    c = mf_calloc(NULL, 1, sizeof(*c) + n_sets * sizeof(c->sets[0]));
    if (!c)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory creating the credential cache");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        mf_free(NULL, c);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the credential cache mutex");
    }
    c->n_sets = n_sets;
    *out = c;
    return MF_OK;
}

void mf_httpd__credcache_free(struct mf_credcache *c)
{
    if (!c)
        return;
    mf_secure_zero(c->sets, c->n_sets * sizeof(c->sets[0]));
    (void)pthread_mutex_destroy(&c->lock);
    mf_free(NULL, c);
}

/* The hash is a SHA-256 of a random token: its first bytes are already uniform. */
static struct set *set_of(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN])
{
    uint32_t i = (uint32_t)hash[0] | (uint32_t)hash[1] << 8 | (uint32_t)hash[2] << 16 |
                 (uint32_t)hash[3] << 24;

    return &c->sets[i % c->n_sets];
}

/* Under the lock: the slot holding `hash`, or NULL. */
static struct slot *find(struct set *set, const uint8_t hash[MF_SHA256_LEN])
{
    for (size_t w = 0; w < MF_CREDCACHE_WAYS; w++) {
        struct slot *s = &set->way[w];

        if (s->device_id[0] && mf_ct_memeq(s->hash, hash, MF_SHA256_LEN))
            return s;
    }
    return NULL;
}

static int64_t now_s(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

int mf_httpd__credcache_get(char device_id_out[MF_STORE_NAME_SIZE], struct mf_credcache *c,
                            const uint8_t hash[MF_SHA256_LEN], int64_t max_age_s)
{
    int64_t now = max_age_s == MF_CREDCACHE_ANY_AGE ? 0 : now_s();
    struct slot *s;

    device_id_out[0] = '\0';
    if (!c)
        return 0;
    (void)pthread_mutex_lock(&c->lock);
    s = find(set_of(c, hash), hash);
    if (s && max_age_s != MF_CREDCACHE_ANY_AGE && now - s->verified_s > max_age_s)
        s = NULL;
    if (s)
        memcpy(device_id_out, s->device_id, MF_STORE_NAME_SIZE);
    (void)pthread_mutex_unlock(&c->lock);
    return s != NULL;
}

void mf_httpd__credcache_put(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN],
                             const char *device_id)
{
    struct set *set;
    struct slot *s;

    if (!c)
        return;
    (void)pthread_mutex_lock(&c->lock);
    set = set_of(c, hash);
    s = find(set, hash);
    for (size_t w = 0; !s && w < MF_CREDCACHE_WAYS; w++) {
        if (!set->way[w].device_id[0])
            s = &set->way[w];
    }
    if (!s)
        s = &set->way[set->next_victim++ % MF_CREDCACHE_WAYS];
    memcpy(s->hash, hash, MF_SHA256_LEN);
    (void)snprintf(s->device_id, sizeof(s->device_id), "%s", device_id);
    s->verified_s = now_s();
    (void)pthread_mutex_unlock(&c->lock);
}

void mf_httpd__credcache_drop(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN])
{
    struct slot *s;

    if (!c)
        return;
    (void)pthread_mutex_lock(&c->lock);
    s = find(set_of(c, hash), hash);
    if (s)
        mf_secure_zero(s, sizeof(*s));
    (void)pthread_mutex_unlock(&c->lock);
}
