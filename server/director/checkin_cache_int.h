/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the check-in cache: the lookup every cached store read goes through, for
 * checkin_cache.c (the cache, pins and settings) and checkin_cache_reads.c (the registry's
 * and rollouts' reads), which are one module split in two files by size.
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_CACHE_INT_H
#define MF_SERVER_DIRECTOR_CHECKIN_CACHE_INT_H

#include "director/checkin_cache.h"

#define MF_CCACHE_KEY_MAX 256

/* Reads one value from the store into `val` (MF_OK or MF_E_NOTFOUND are kept). */
typedef int (*mf_ccache_fill_fn)(struct mf_dynbuf *val, const struct mf_ccache_view *v,
                                 const void *arg);

/* The value of `key` at the view's generation appended to `out`: from the cache, or from
 * `fill`, and then kept. A view of an older generation than the cache's reads the store and
 * keeps nothing. */
int mf_ccache__cached_append(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                             mf_ccache_fill_fn fill, const void *arg);

/* mf_ccache__cached_append() into `out`, initialised here. */
int mf_ccache__cached(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *key,
                      mf_ccache_fill_fn fill, const void *arg);

/* mf_ccache__cached() for a fixed-size struct value of `size` bytes. */
int mf_ccache__cached_struct(void *out, size_t size, const struct mf_ccache_view *v,
                             const char *key, mf_ccache_fill_fn fill, const void *arg);

/* Appends `size` bytes at `p` to a value being filled. MF_OK or MF_E_NOMEM. */
int mf_ccache__append_struct(struct mf_dynbuf *val, struct mf_ctx *ctx, const void *p, size_t size);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_CACHE_INT_H */
