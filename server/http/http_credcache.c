/* SPDX-License-Identifier: Apache-2.0 */
/* The node's device credential cache (see http_credcache.h). */
#include "http/http_credcache.h"

#include "mf/ct.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct slot {
    uint8_t hash[MF_SHA256_LEN];
    char device_id[MF_STORE_NAME_SIZE]; /* "": empty */
};

struct mf_credcache {
    pthread_mutex_t lock;
    struct slot slots[MF_CREDCACHE_SLOTS];
};

int mf_httpd__credcache_new(struct mf_credcache **out, struct mf_ctx *ctx)
{
    struct mf_credcache *c = mf_calloc(NULL, 1, sizeof(*c));

    *out = NULL;
    if (!c)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory creating the credential cache");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        mf_free(NULL, c);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the credential cache mutex");
    }
    *out = c;
    return MF_OK;
}

void mf_httpd__credcache_free(struct mf_credcache *c)
{
    if (!c)
        return;
    mf_secure_zero(c->slots, sizeof(c->slots));
    (void)pthread_mutex_destroy(&c->lock);
    mf_free(NULL, c);
}

/* The hash is a SHA-256 of a random token: its first bytes are already uniform. */
static struct slot *slot_of(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN])
{
    uint32_t i = (uint32_t)hash[0] | (uint32_t)hash[1] << 8 | (uint32_t)hash[2] << 16;

    return &c->slots[i % MF_CREDCACHE_SLOTS];
}

int mf_httpd__credcache_get(char device_id_out[MF_STORE_NAME_SIZE], struct mf_credcache *c,
                            const uint8_t hash[MF_SHA256_LEN])
{
    struct slot *s;
    int hit;

    device_id_out[0] = '\0';
    if (!c)
        return 0;
    (void)pthread_mutex_lock(&c->lock);
    s = slot_of(c, hash);
    hit = s->device_id[0] && mf_ct_memeq(s->hash, hash, MF_SHA256_LEN);
    if (hit)
        memcpy(device_id_out, s->device_id, MF_STORE_NAME_SIZE);
    (void)pthread_mutex_unlock(&c->lock);
    return hit;
}

void mf_httpd__credcache_put(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN],
                             const char *device_id)
{
    struct slot *s;

    if (!c)
        return;
    (void)pthread_mutex_lock(&c->lock);
    s = slot_of(c, hash);
    memcpy(s->hash, hash, MF_SHA256_LEN);
    (void)snprintf(s->device_id, sizeof(s->device_id), "%s", device_id);
    (void)pthread_mutex_unlock(&c->lock);
}

void mf_httpd__credcache_drop(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN])
{
    struct slot *s;

    if (!c)
        return;
    (void)pthread_mutex_lock(&c->lock);
    s = slot_of(c, hash);
    if (mf_ct_memeq(s->hash, hash, MF_SHA256_LEN))
        mf_secure_zero(s, sizeof(*s));
    (void)pthread_mutex_unlock(&c->lock);
}
