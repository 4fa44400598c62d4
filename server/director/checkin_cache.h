/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What check-ins read of the store that changes rarely, kept per node: trust documents,
 * versions and releases, variants, deltas, the newest rollout of each model and whether it has
 * pins. Everything kept is tagged with the store generation (store.h, checkin_touch) it was read
 * under, and a check-in only uses what carries the generation it read itself from the store,
 * in the same round trip as its last_seen write. Every change to those tables raises the
 * generation in its own transaction (triggers of migrations 6 and 8), whichever node made it,
 * so a check-in on any node sees a change committed before the check-in read the generation:
 * the cache saves reads, never freshness (docs/architecture.md, "Check-in path").
 *
 * A view with a NULL cache reads the store directly (tests, tools).
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_CACHE_H
#define MF_SERVER_DIRECTOR_CHECKIN_CACHE_H

#include "store/store.h"

/* Beyond either bound everything is dropped and refilled (envelopes reach 1 MiB each). */
#define MF_CCACHE_MAX_ENTRIES 4096
#define MF_CCACHE_MAX_BYTES (64u * 1024u * 1024u)

struct mf_ccache;

/* One request's way to the cache: the generation it read and the store behind it. */
struct mf_ccache_view {
    struct mf_ccache *c; /* NULL: no caching */
    struct mf_store *s;
    struct mf_ctx *ctx;
    uint64_t generation;
};

/* Ownership: release with mf_ccache__free (NULL is a no-op). */
int mf_ccache__new(struct mf_ccache **out, struct mf_ctx *ctx);
void mf_ccache__free(struct mf_ccache *c);

/* The store ops of the same names (store.h), through the cache. Envelopes come as copies
 * into `out` (initialised here; the caller frees them). */
int mf_ccache__trust_latest(uint64_t *version_out, struct mf_dynbuf *out,
                            const struct mf_ccache_view *v, int kind);
int mf_ccache__trust_roots_after(const struct mf_ccache_view *v, uint64_t after, size_t max,
                                 mf_store_envelope_fn fn, void *payload);
int mf_ccache__version_get(struct mf_store_version *out, const struct mf_ccache_view *v,
                           const char *model, const char *version);
int mf_ccache__promoted_latest(struct mf_store_version *out, const struct mf_ccache_view *v,
                               const char *model);
int mf_ccache__release_get(struct mf_dynbuf *out, const struct mf_ccache_view *v, const char *model,
                           const char *version);
/* The released variants of `model` `version` (variants_list, at most MF_STORE_VARIANTS_MAX:
 * more is MF_E_STATE), into `out`; *n_out 0 when it has none. */
int mf_ccache__variants(struct mf_store_variant out[MF_STORE_VARIANTS_MAX], size_t *n_out,
                        const struct mf_ccache_view *v, const char *model, const char *version);
/* release_get's envelope as a JSON string literal (quoted, escaped), appended to `out`
 * (which the caller initialised: a check-in answer being written). */
int mf_ccache__release_json(struct mf_dynbuf *out, const struct mf_ccache_view *v,
                            const char *model, const char *version);
/* The same for the release of variant `variant` of the version (variant_release_get). */
int mf_ccache__variant_release_json(struct mf_dynbuf *out, const struct mf_ccache_view *v,
                                    const char *model, const char *version, const char *variant);
int mf_ccache__delta_find(struct mf_store_delta *out, const struct mf_ccache_view *v,
                          const char *from_sha256, const char *to_sha256);
/* The newest rollout of `model` (rollouts_list's first row); MF_E_NOTFOUND when none. */
int mf_ccache__rollout_newest(struct mf_store_rollout *out, const struct mf_ccache_view *v,
                              const char *model);

/* Whether `model` has a pin of any scope (device, group, channel, fleet rollback) at the
 * view's generation, into *pinned_out (0 or 1). */
int mf_ccache__pinned(int *pinned_out, const struct mf_ccache_view *v, const char *model);
/* Whether any group has a setting (group_settings, migration 9) at the view's generation, into
 * *any_out (0 or 1): when none has, a check-in skips reading its device's. */
int mf_ccache__group_settings_any(int *any_out, const struct mf_ccache_view *v);
/* checkin_begin's hint (store.h) before a check-in: the cache's generation and, of the n
 * `models`, those mf_ccache__pinned found unpinned at it. Nothing known: no bit set. */
void mf_ccache__pin_hint(struct mf_store_pin_hint *out, struct mf_ccache *c,
                         const char *const *models, size_t n);

/* Hits and misses so far (tests and metrics). */
void mf_ccache__stats(uint64_t *hits_out, uint64_t *misses_out, struct mf_ccache *c);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_CACHE_H */
