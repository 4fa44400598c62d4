/* SPDX-License-Identifier: Apache-2.0 */
/* Rollout waves are a later issue; until then no wave covers any device (rollout_wave.h). */
#include "director/rollout_wave.h"

int mf_rollout__wave(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *device_id, const char *model)
{
    (void)out;
    (void)s;
    (void)ctx;
    (void)device_id;
    (void)model;
    return MF_E_NOTFOUND; /* no message: "no wave" is the normal answer, not a failure */
}
