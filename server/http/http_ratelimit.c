/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-size table of per-device token buckets (see http_ratelimit.h). */
#include "http/http_ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define RL_SLOTS 8192 /* ~0.7 MiB: the devices active within a few seconds of each other */
#define RL_PROBES 8

struct rl_slot {
    char id[MF_STORE_NAME_SIZE]; /* "" when free */
    double tokens;
    double last; /* monotonic seconds of the last refill */
};

struct mf_ratelimit {
    mf_allocator alloc;
    pthread_mutex_t lock;
    double rate, burst;
    struct rl_slot slot[RL_SLOTS];
};

int mf_ratelimit__new(struct mf_ratelimit **out, struct mf_ctx *ctx, double rate, double burst)
{
    struct mf_ratelimit *rl = mf_calloc(&ctx->alloc, 1, sizeof(*rl));

    *out = NULL;
    if (!rl)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for the rate limiter");
    if (pthread_mutex_init(&rl->lock, NULL) != 0) {
        mf_free(&ctx->alloc, rl);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the rate limiter mutex");
    }
    rl->alloc = ctx->alloc;
    rl->rate = rate;
    rl->burst = burst < 1 ? 1 : burst;
    *out = rl;
    return MF_OK;
}

void mf_ratelimit__free(struct mf_ratelimit *rl)
{
    mf_allocator alloc;

    if (!rl)
        return;
    (void)pthread_mutex_destroy(&rl->lock);
    alloc = rl->alloc;
    mf_free(&alloc, rl);
}

/* FNV-1a: spreads short ids well enough for a probe sequence, and is not secret. */
static uint32_t id_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (uint8_t)*s++) * 16777619u;
    return h;
}

static struct rl_slot *find_slot(struct mf_ratelimit *rl, const char *id, double now)
{
    uint32_t h = id_hash(id);
    struct rl_slot *oldest = NULL;
    double oldest_last = 0;

    for (uint32_t i = 0; i < RL_PROBES; i++) {
        struct rl_slot *s = &rl->slot[(h + i) % RL_SLOTS];
        double last = s->id[0] ? s->last : -HUGE_VAL; /* a free slot beats any used one */

        if (strcmp(s->id, id) == 0)
            return s;
        if (!oldest || last < oldest_last) {
            oldest = s;
            oldest_last = last;
        }
    }
    (void)snprintf(oldest->id, sizeof(oldest->id), "%s", id);
    oldest->tokens = rl->burst;
    oldest->last = now;
    return oldest;
}

int mf_ratelimit__take(unsigned *retry_after_s, struct mf_ratelimit *rl, const char *device_id,
                       double now_s)
{
    struct rl_slot *s;
    int ok;

    *retry_after_s = 0;
    if (rl->rate <= 0)
        return 1;
    (void)pthread_mutex_lock(&rl->lock);
    s = find_slot(rl, device_id, now_s);
    if (now_s > s->last) {
        s->tokens = fmin(rl->burst, s->tokens + (now_s - s->last) * rl->rate);
        s->last = now_s;
    }
    ok = s->tokens >= 1.0;
    if (ok)
        s->tokens -= 1.0;
    else
        *retry_after_s = (unsigned)ceil((1.0 - s->tokens) / rl->rate);
    (void)pthread_mutex_unlock(&rl->lock);
    if (!ok && *retry_after_s == 0)
        *retry_after_s = 1;
    return ok;
}
