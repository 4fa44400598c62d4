/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-device token buckets: each device id may spend `burst` requests at once and earns
 * `rate` per second back. The table has a fixed number of slots (no growth from the
 * network): a device id probes a few slots from its hash, and when all are taken by other
 * devices the one idle longest is evicted, which only ever forgives (a fresh, full bucket).
 */
#ifndef MF_SERVER_HTTP_RATELIMIT_H
#define MF_SERVER_HTTP_RATELIMIT_H

#include "mf_ctx.h"
#include "store/store.h"

struct mf_ratelimit;

/* `rate` <= 0 disables limiting (take always allows). Ownership: mf_ratelimit__free(). */
int mf_ratelimit__new(struct mf_ratelimit **out, struct mf_ctx *ctx, double rate, double burst);
void mf_ratelimit__free(struct mf_ratelimit *rl); /* NULL is a no-op */

/* Takes one token for `device_id` at monotonic time `now_s`: 1 allowed, 0 refused with
 * *retry_after_s (whole seconds, >= 1) until the next token. Thread-safe. */
int mf_ratelimit__take(unsigned *retry_after_s, struct mf_ratelimit *rl, const char *device_id,
                       double now_s);

#endif /* MF_SERVER_HTTP_RATELIMIT_H */
