/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policy defaults, the app's "stricter only" merge, token buckets and the routing decision.
 * Everything here is pure (no I/O, clock or allocation), so it is tested exhaustively with
 * simulated time and runs the same on a microcontroller.
 *
 * Rate caps are sliding windows counted in 61 sub-windows of 1/60 window each, so "at most
 * cap per window" holds for every interval, not just on average as with a token bucket
 * (which lets through up to twice its capacity across a refill), while a burst may still
 * use the whole cap at once. Integers only.
 */
#include "mf_offload_int.h"

#include <string.h>

#define MINUTE_MS 60000u
#define HOUR_MS 3600000u
#define DAY_MS 86400000u

int mf_offload_policy_init(mf_offload_policy *p, unsigned int version)
{
    if (version != MF_OFFLOAD_POLICY_VERSION)
        return MF_E_INVALID;
    memset(p, 0, sizeof(*p));
    p->version = version;
    p->enabled = 1;
    p->method = MF_OFFLOAD_MAX_SOFTMAX;
    p->mode = MF_OFFLOAD_MODE_SYNC;
    p->threshold = 1.0f;
    p->target_rate = 1.0f;
    p->temperature = 1.0f;
    p->per_minute = MF_OFFLOAD_UNLIMITED;
    p->per_hour = MF_OFFLOAD_UNLIMITED;
    p->per_day = MF_OFFLOAD_UNLIMITED;
    p->bytes_per_day = UINT64_MAX;
    p->audit_fraction = 1.0f;
    p->metered = MF_OFFLOAD_METERED_ALLOW;
    p->deadline_ms = 60000;
    return MF_OK;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static float min_f(float a, float b)
{
    return a < b ? a : b;
}

void mf_offload_policy_restrict(mf_offload_policy *out, const mf_offload_policy *server,
                                const mf_offload_policy *app)
{
    mf_offload_policy r = *server;

    r.enabled = server->enabled && app->enabled;
    /* A derived threshold (< 0) stays derived, but the app's ceiling still applies to it
     * through the target rate; an explicit one takes the lower value. */
    if (r.threshold >= 0.0f)
        r.threshold = min_f(server->threshold, app->threshold);
    r.target_rate = min_f(server->target_rate, app->target_rate);
    r.per_minute = min_u32(server->per_minute, app->per_minute);
    r.per_hour = min_u32(server->per_hour, app->per_hour);
    r.per_day = min_u32(server->per_day, app->per_day);
    r.bytes_per_day =
        server->bytes_per_day < app->bytes_per_day ? server->bytes_per_day : app->bytes_per_day;
    r.audit_fraction = min_f(server->audit_fraction, app->audit_fraction);
    r.metered = server->metered > app->metered ? server->metered : app->metered;
    r.mode = (server->mode == MF_OFFLOAD_MODE_ASYNC || app->mode == MF_OFFLOAD_MODE_ASYNC)
                 ? MF_OFFLOAD_MODE_ASYNC
                 : MF_OFFLOAD_MODE_SYNC;
    r.deadline_ms = min_u32(server->deadline_ms, app->deadline_ms);
    *out = r;
}

static void bucket_init(mf_offload_bucket *b, uint64_t cap, uint32_t window_ms, int unlimited,
                        uint64_t now_ms)
{
    memset(b, 0, sizeof(*b));
    b->unlimited = unlimited;
    b->cap = cap;
    b->grain_ms = window_ms / (MF_OFFLOAD_CAP_SLOTS - 1);
    b->cur = now_ms / b->grain_ms;
}

void mf_offload_budget_init(mf_offload_budget *b, const mf_offload_policy *p, uint64_t now_ms)
{
    uint64_t bytes = p->bytes_per_day;

    if (bytes != UINT64_MAX && bytes > MF_OFFLOAD_MAX_BYTES_PER_DAY)
        bytes = MF_OFFLOAD_MAX_BYTES_PER_DAY;
    bucket_init(&b->minute, p->per_minute, MINUTE_MS, p->per_minute == MF_OFFLOAD_UNLIMITED,
                now_ms);
    bucket_init(&b->hour, p->per_hour, HOUR_MS, p->per_hour == MF_OFFLOAD_UNLIMITED, now_ms);
    bucket_init(&b->day, p->per_day, DAY_MS, p->per_day == MF_OFFLOAD_UNLIMITED, now_ms);
    bucket_init(&b->bytes, bytes, DAY_MS, bytes == UINT64_MAX, now_ms);
}

/* Moves the ring to the sub-window of `now_ms`, forgetting sub-windows that slid out. A
 * clock that goes backwards (it should not) is treated as "still the newest sub-window". */
static void bucket_advance(mf_offload_bucket *b, uint64_t now_ms)
{
    uint64_t idx = now_ms / b->grain_ms;

    if (idx <= b->cur)
        return;
    if (idx - b->cur >= MF_OFFLOAD_CAP_SLOTS) {
        memset(b->slot, 0, sizeof(b->slot));
        b->used = 0;
    } else {
        for (uint64_t i = b->cur + 1; i <= idx; i++) {
            uint64_t *s = &b->slot[i % MF_OFFLOAD_CAP_SLOTS];

            b->used -= *s;
            *s = 0;
        }
    }
    b->cur = idx;
}

/*
 * Any interval of one window (60 sub-windows) touches at most 61 sub-windows, and the ring
 * holds exactly the last 61, so admitting only while used + units <= cap bounds every
 * window-long interval by cap.
 */
static int bucket_has(mf_offload_bucket *b, uint64_t units, uint64_t now_ms)
{
    if (b->unlimited)
        return 1;
    bucket_advance(b, now_ms);
    return units <= b->cap && b->used <= b->cap - units;
}

static void bucket_take(mf_offload_bucket *b, uint64_t units)
{
    if (b->unlimited)
        return;
    b->slot[b->cur % MF_OFFLOAD_CAP_SLOTS] += units;
    b->used += units;
}

/* Takes one sample and `bytes` from every cap, or nothing; returns the refusing reason. */
static int budget_take(mf_offload_budget *b, size_t bytes, uint64_t now_ms)
{
    if (!bucket_has(&b->minute, 1, now_ms) || !bucket_has(&b->hour, 1, now_ms) ||
        !bucket_has(&b->day, 1, now_ms))
        return MF_OFFLOAD_REASON_RATE_CAP;
    if (!bucket_has(&b->bytes, bytes, now_ms))
        return MF_OFFLOAD_REASON_BYTE_BUDGET;
    bucket_take(&b->minute, 1);
    bucket_take(&b->hour, 1);
    bucket_take(&b->day, 1);
    bucket_take(&b->bytes, bytes);
    return 0;
}

static int audit_drawn(float fraction, uint32_t random_u32)
{
    if (!(fraction > 0.0f))
        return 0;
    if (fraction >= 1.0f)
        return 1;
    return (double)random_u32 < (double)fraction * 4294967296.0;
}

static void set(mf_offload_decision *out, int route, int reason)
{
    out->route = route;
    out->reason = reason;
}

/* Route and reason before metered/offline/budget checks; returns 1 when the sample stays. */
static int classify(mf_offload_decision *out, const mf_offload_policy *p, float score,
                    float threshold, uint32_t random_u32)
{
    if (!p) {
        set(out, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_NO_POLICY);
    } else if (!p->enabled) {
        set(out, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_EDGE_ONLY);
    } else if (threshold >= 0.0f && score < threshold) {
        set(out, p->mode == MF_OFFLOAD_MODE_SYNC ? MF_OFFLOAD_ROUTE_SYNC : MF_OFFLOAD_ROUTE_QUEUE,
            MF_OFFLOAD_REASON_UNCERTAIN);
    } else if (audit_drawn(p->audit_fraction, random_u32)) {
        set(out, MF_OFFLOAD_ROUTE_AUDIT, MF_OFFLOAD_REASON_AUDIT);
    } else {
        set(out, MF_OFFLOAD_ROUTE_LOCAL,
            threshold < 0.0f ? MF_OFFLOAD_REASON_NO_THRESHOLD : MF_OFFLOAD_REASON_CONFIDENT);
    }
    return out->route == MF_OFFLOAD_ROUTE_LOCAL;
}

void mf_offload_decide(mf_offload_decision *out, const mf_offload_policy *p, mf_offload_budget *b,
                       float score, float threshold, size_t bytes, uint64_t now_ms,
                       uint32_t random_u32, mf_offload_link link)
{
    int refused;

    if (classify(out, p, score, threshold, random_u32))
        return;
    if (link == MF_OFFLOAD_LINK_METERED && p->metered == MF_OFFLOAD_METERED_DENY) {
        set(out, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_METERED);
        return;
    }
    /* A sync ask that cannot happen now becomes a queued hard sample. */
    if (out->route == MF_OFFLOAD_ROUTE_SYNC && link == MF_OFFLOAD_LINK_METERED &&
        p->metered == MF_OFFLOAD_METERED_DEFER)
        set(out, MF_OFFLOAD_ROUTE_QUEUE, MF_OFFLOAD_REASON_METERED);
    if (out->route == MF_OFFLOAD_ROUTE_SYNC && link == MF_OFFLOAD_LINK_OFFLINE)
        set(out, MF_OFFLOAD_ROUTE_QUEUE, MF_OFFLOAD_REASON_OFFLINE);
    refused = budget_take(b, bytes, now_ms);
    if (refused)
        set(out, MF_OFFLOAD_ROUTE_LOCAL, refused);
}

const char *mf_offload_reason_name(mf_offload_reason reason)
{
    static const char *const names[] = {
        [MF_OFFLOAD_REASON_CONFIDENT] = "confident",
        [MF_OFFLOAD_REASON_UNCERTAIN] = "uncertain",
        [MF_OFFLOAD_REASON_AUDIT] = "audit",
        [MF_OFFLOAD_REASON_NO_POLICY] = "no_policy",
        [MF_OFFLOAD_REASON_EDGE_ONLY] = "edge_only",
        [MF_OFFLOAD_REASON_POLICY_STALE] = "policy_stale",
        [MF_OFFLOAD_REASON_NO_THRESHOLD] = "no_threshold",
        [MF_OFFLOAD_REASON_RATE_CAP] = "rate_cap",
        [MF_OFFLOAD_REASON_BYTE_BUDGET] = "byte_budget",
        [MF_OFFLOAD_REASON_METERED] = "metered",
        [MF_OFFLOAD_REASON_OFFLINE] = "offline",
        [MF_OFFLOAD_REASON_TIMEOUT] = "timeout",
        [MF_OFFLOAD_REASON_SERVER_ERROR] = "server_error",
        [MF_OFFLOAD_REASON_TEACHER] = "teacher",
    };

    if (reason < 0 || (size_t)reason >= sizeof(names) / sizeof(names[0]))
        return "?";
    return names[reason];
}
