/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's hook for rollout waves: the release a wave currently offers one device for
 * one model. Which release a wave offers is the rollout's own rule (mf_rollout__offer in
 * rollout/rollout_ctl.h); this file only feeds it the model's newest rollout and turns its
 * answer into a version row, through the check-in's cache where there is one.
 */
#ifndef MF_SERVER_DIRECTOR_WAVE_H
#define MF_SERVER_DIRECTOR_WAVE_H

#include "director/checkin_cache.h"
#include "store/store.h"

/* MF_OK with the wave's release in *out, or MF_E_NOTFOUND: no wave covers the device. */
int mf_director__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *device_id, const char *model);
/* The same through a check-in's cache view (the newest rollout and versions come from it). */
int mf_director__wave_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                             const char *device_id, const char *model);
/* MF_OK with the previous release in *out when the newest rollout of `model` halted class
 * `device_class` on its own (docs/rollouts.md, "Per-class halts"), whatever its state;
 * MF_E_NOTFOUND otherwise (also for the class "": a device that declares none). */
int mf_director__class_rollback_cached(struct mf_store_version *out, const struct mf_ccache_view *v,
                                       const char *device_class, const char *model);

#endif /* MF_SERVER_DIRECTOR_WAVE_H */
