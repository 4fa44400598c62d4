/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the offload policy parser (sdk/offload/offload_policy.c), fed from the
 * check-in answer. Whatever the input, a failure leaves a message and an accepted policy is
 * within the documented ranges.
 */
#include "mf_offload_int.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_ctx ctx;
    mf_offload_policy p;
    int err;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    err = mf_offload__policy_parse(&ctx, &p, (const char *)data, size);
    if (err < 0 && !ctx.errmsg[0])
        __builtin_trap();
    if (err == MF_OK && (p.threshold > 1.0f || !(p.temperature > 0.0f) || p.audit_fraction < 0.0f ||
                         p.audit_fraction > 1.0f || p.deadline_ms == 0 || p.deadline_ms > 60000 ||
                         p.method > MF_OFFLOAD_ENTROPY || p.metered > MF_OFFLOAD_METERED_DENY ||
                         (p.enabled && p.threshold < 0.0f && !(p.target_rate > 0.0f))))
        __builtin_trap();
    return 0;
}
