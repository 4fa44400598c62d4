/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's hook for rollout waves (the rollout issue fills it in): the release a
 * wave currently offers one device for one model. Today there are no waves.
 */
#ifndef MF_SERVER_ROLLOUT_WAVE_H
#define MF_SERVER_ROLLOUT_WAVE_H

#include "director/checkin_cache.h"
#include "store/store.h"

/* MF_OK with the wave's release in *out, or MF_E_NOTFOUND: no wave covers the device. */
int mf_rollout__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *device_id, const char *model);
/* The same through a check-in's cache view (the newest rollout and versions come from it). */
int mf_rollout__wave_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                            const char *device_id, const char *model);

#endif /* MF_SERVER_ROLLOUT_WAVE_H */
