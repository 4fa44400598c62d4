/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backoff between failed install attempts of one model, across steps: the n-th consecutive
 * failure waits a random time in [d/2, d] with d = min(retry_base_ms * 2^(n-1),
 * retry_max_ms) ("equal jitter"), so a fleet that lost its server does not come back in
 * lockstep, and a flaky link is retried soon at first and rarely later. The check-in still
 * runs every step (assignments may change); only the download waits. The poll interval
 * between check-ins is jittered the same way (mf_agent__poll_pick).
 */
#include "mf_agent_int.h"

static uint64_t now_ms(const struct mf_agent *a)
{
    return a->plat.monotonic_ms ? a->plat.monotonic_ms(a->plat.payload) : 0;
}

int mf_agent__retry_waiting(struct mf_agent *a, const struct agent_model *m)
{
    return m->failures > 0 && a->retry_base_ms > 0 && now_ms(a) < m->retry_at_ms;
}

void mf_agent__retry_failed(struct mf_agent *a, struct agent_model *m)
{
    uint64_t d = (uint64_t)a->retry_base_ms;
    uint32_t r = 0;

    if (m->failures < 64)
        m->failures++;
    if (a->retry_base_ms <= 0)
        return;
    for (unsigned int i = 1; i < m->failures && d < (uint64_t)a->retry_max_ms; i++)
        d *= 2;
    if (d > (uint64_t)a->retry_max_ms)
        d = (uint64_t)a->retry_max_ms;
    if (a->plat.random(a->plat.payload, &r, sizeof(r)) < 0)
        r = 0; /* no randomness: the longest wait, still bounded */
    m->retry_at_ms = now_ms(a) + d / 2 + (r % (d / 2 + 1));
    MF_LOG_INFO(&a->ctx, "model %s: next attempt in %llu ms (failure %u)", m->name,
                (unsigned long long)(m->retry_at_ms - now_ms(a)), m->failures);
}

void mf_agent__retry_ok(struct agent_model *m)
{
    m->failures = 0;
    m->retry_at_ms = 0;
}

long long mf_agent__retry_next_ms(const struct mf_agent *a)
{
    uint64_t now = now_ms(a);
    long long best = -1;

    for (size_t i = 0; i < a->n_models; i++) {
        const struct agent_model *m = &a->models[i];
        long long left;

        if (m->failures == 0 || a->retry_base_ms <= 0)
            continue;
        left = m->retry_at_ms > now ? (long long)(m->retry_at_ms - now) : 0;
        if (best < 0 || left < best)
            best = left;
    }
    return best;
}

long mf_agent__poll_pick(struct mf_agent *a, const struct mf_agent_settings *p)
{
    long base = p->interval_s;
    uint64_t span;
    uint32_t r = 0;
    long moved;

    if (!p->by_group && a->own_poll_interval_s > 0)
        base = a->own_poll_interval_s;
    if (base <= 0 || p->jitter_pct <= 0)
        return base;
    /* base * pct / 100 at most 7 days * 50 %: no overflow in 64 bits. */
    span = (uint64_t)base * (uint64_t)p->jitter_pct / 100u;
    if (span == 0)
        return base;
    if (a->plat.random(a->plat.payload, &r, sizeof(r)) < 0)
        return base; /* no randomness: the interval as set */
    moved = base - (long)span + (long)(r % (2u * span + 1u));
    return moved > 0 ? moved : 1;
}
