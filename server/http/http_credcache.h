/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device credentials a node has seen, by credential hash -> device id, so that a check-in
 * does not need a store round trip of its own to authenticate: the route's first store
 * statement (checkin_begin) matches the device row on both the id and the credential hash
 * and fails when the credential is no longer the device's (re-enrolled, revoked, removed),
 * in the same statement as its writes. A stale entry therefore never lets a request through;
 * it only costs the answer's 401 a cache entry (mf_httpd__credcache_drop). Blob downloads,
 * which reach no store, take an entry only while it is recent (MF_CREDCACHE_RECENT_S): a
 * revoked credential keeps downloading that long, and the range requests of a download cost
 * no store round trip each. Only hashes are kept, like the store keeps them.
 *
 * A node keeps a second cache of this kind keyed by blob digest (handlers/blobs.c): the blobs
 * a release named when the store was last asked, for MF_CREDCACHE_RECENT_S seconds.
 */
#ifndef MF_SERVER_HTTP_CREDCACHE_H
#define MF_SERVER_HTTP_CREDCACHE_H

#include "mf_ctx.h"
#include "mf_hex.h"
#include "store/store.h"

/* Credentials kept by default (about 112 bytes each), in sets of MF_CREDCACHE_WAYS, by hash;
 * mf-server serve --credential-cache N sizes it for the devices that check in to a node. */
#define MF_CREDCACHE_SLOTS 65536
#define MF_CREDCACHE_SLOTS_MAX (1u << 26)
#define MF_CREDCACHE_WAYS 4 /* a fifth hash in one set replaces one of the four */
/* Routes that trusts_recent_auth (http_req.h) take a credential from the cache when the
 * store verified it at most this many seconds ago. */
#define MF_CREDCACHE_RECENT_S 10
#define MF_CREDCACHE_ANY_AGE (-1) /* max_age_s of a route that verifies_credential itself */

struct mf_credcache;

/* A cache of `slots` credentials (rounded up to whole sets; 0: MF_CREDCACHE_SLOTS), at most
 * MF_CREDCACHE_SLOTS_MAX. */
int mf_httpd__credcache_new(struct mf_credcache **out, struct mf_ctx *ctx, size_t slots);
void mf_httpd__credcache_free(struct mf_credcache *c); /* NULL is a no-op */

/* 1 with the device id of `hash` when the cache holds it, put at most max_age_s seconds ago
 * (MF_CREDCACHE_ANY_AGE: however long ago), else 0. */
int mf_httpd__credcache_get(char device_id_out[MF_STORE_NAME_SIZE], struct mf_credcache *c,
                            const uint8_t hash[MF_SHA256_LEN], int64_t max_age_s);
/* After the store verified the credential: (re)starts its age. */
void mf_httpd__credcache_put(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN],
                             const char *device_id);
void mf_httpd__credcache_drop(struct mf_credcache *c, const uint8_t hash[MF_SHA256_LEN]);

#endif /* MF_SERVER_HTTP_CREDCACHE_H */
