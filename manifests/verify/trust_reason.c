/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why a trust call failed: the reason names (mf_trust_reason_name) and mf_trust__fail, which
 * records a failure's reason and message on the trust state. Every trust file reports
 * through it, so it sits in none of them: the signature check (trust_crypto.c) reports
 * without calling back into the lifecycle that calls it (trust.c).
 */
#include "trust_internal.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const reason_names[] = {
    [MF_TRUST_R_NONE] = "none",
    [MF_TRUST_R_MALFORMED] = "malformed",
    [MF_TRUST_R_TOO_LARGE] = "too large",
    [MF_TRUST_R_WRONG_TYPE] = "wrong payload type",
    [MF_TRUST_R_NO_SIGNATURE] = "no signature",
    [MF_TRUST_R_UNKNOWN_KEY] = "unknown or revoked key",
    [MF_TRUST_R_BAD_SIGNATURE] = "bad signature",
    [MF_TRUST_R_THRESHOLD] = "below threshold",
    [MF_TRUST_R_EXPIRED] = "expired",
    [MF_TRUST_R_ROLLBACK] = "rollback",
    [MF_TRUST_R_BELOW_FLOOR] = "below security floor",
    [MF_TRUST_R_WRONG_NONCE] = "wrong nonce",
    [MF_TRUST_R_REPLAY] = "replayed sequence",
    [MF_TRUST_R_WRONG_DEVICE] = "wrong device",
    [MF_TRUST_R_MISMATCH] = "release mismatch",
    [MF_TRUST_R_NO_KEYS] = "no trusted root or keys",
    [MF_TRUST_R_WALK_LIMIT] = "root walk limit",
    [MF_TRUST_R_STATE_CORRUPT] = "corrupt state",
    [MF_TRUST_R_RESOURCE] = "resource failure",
};

const char *mf_trust_reason_name(mf_trust_reason reason)
{
    if (reason < 0 || (size_t)reason >= sizeof(reason_names) / sizeof(reason_names[0]))
        return "unknown";
    return reason_names[reason];
}

int mf_trust__fail(struct mf_trust *t, mf_trust_reason reason, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(t->ctx.errmsg, sizeof(t->ctx.errmsg), fmt, ap);
    va_end(ap);
    t->reason = reason;
    return code;
}
