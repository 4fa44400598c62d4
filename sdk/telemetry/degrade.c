/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The way down (mf/degrade.h): triggers, the hold window, the events for the report, and the
 * state saved as header | state | SHA-256 of both through the platform port (the totals'
 * crash-safe write, telemetry_store.c).
 */
#include "mf/degrade.h"

#include "mf/ct.h"
#include "mf_sha256.h"
#include "mf_telemetry_int.h"

#include <string.h>

#define DEGRADE_MAGIC 0x4d464447u /* "MFDG" */
#define DEGRADE_FORMAT 1u
#define DEGRADE_NAME_MAX 63
#define BATTERY_BAND 5 /* points above the low mark before battery lets go */

struct degrade_header {
    uint32_t magic, format, size, pad;
};

/* What survives a restart. */
struct degrade_saved {
    int32_t degraded, manual, reason, pad;
    uint64_t switches;
};

struct mf_degrade {
    mf_degrade_config cfg;
    struct degrade_saved st;
    mf_degrade_status status;
    mf_degrade_signals last;
    int started;             /* 0 until the first call of this run */
    int holding;             /* 1: no automatic switch before last_switch_ms + hold_ms */
    uint64_t last_switch_ms; /* of the last switch, or of the first call after a restart */
    uint32_t misses;         /* latencies above the deadline in a row */
    mf_degrade_event ev[MF_DEGRADE_EVENTS];
    size_t ev_first, ev_n;
    mf_platform_ops platform;
    mf_allocator alloc;
    char name[DEGRADE_NAME_MAX + 1];
    char tmp_name[DEGRADE_NAME_MAX + 5];
};

static void header(struct degrade_header *h)
{
    h->magic = DEGRADE_MAGIC;
    h->format = DEGRADE_FORMAT;
    h->size = (uint32_t)sizeof(struct degrade_saved);
    h->pad = 0;
}

static void digest(uint8_t out[MF_SHA256_DIGEST_LEN], const struct degrade_header *h,
                   const struct degrade_saved *st)
{
    struct mf_sha256 c;

    mf_sha256__init(&c);
    mf_sha256__update(&c, h, sizeof(*h));
    mf_sha256__update(&c, st, sizeof(*st));
    mf_sha256__final(&c, out);
}

static int save(const mf_degrade *d)
{
    struct degrade_header h;
    uint8_t sum[MF_SHA256_DIGEST_LEN];
    const void *parts[] = {&h, &d->st, sum};
    const size_t lens[] = {sizeof(h), sizeof(d->st), sizeof(sum)};

    header(&h);
    digest(sum, &h, &d->st);
    return mf_telemetry__write_object(&d->platform, d->tmp_name, d->name, parts, lens, 3);
}

static int load(mf_degrade *d)
{
    const mf_platform_ops *p = &d->platform;
    struct degrade_header h, want;
    uint8_t sum[MF_SHA256_DIGEST_LEN], calc[MF_SHA256_DIGEST_LEN];
    mf_platform_file *f = NULL;
    int err = p->open(p->payload, &f, d->name, MF_PLATFORM_OPEN_READ);

    if (err == MF_E_NOTFOUND)
        return MF_OK; /* never switched */
    if (err < 0)
        return err;
    header(&want);
    err = mf_telemetry__read_exact(p, f, 0, &h, sizeof(h));
    if (err == MF_OK && memcmp(&h, &want, sizeof(h)) != 0)
        err = MF_E_INVALID;
    if (err == MF_OK)
        err = mf_telemetry__read_exact(p, f, sizeof(h), &d->st, sizeof(d->st));
    if (err == MF_OK)
        err = mf_telemetry__read_exact(p, f, sizeof(h) + sizeof(d->st), sum, sizeof(sum));
    p->close(p->payload, f);
    if (err == MF_OK) {
        digest(calc, &h, &d->st);
        if (!mf_ct_memeq(calc, sum, sizeof(sum)))
            err = MF_E_INVALID;
    }
    if (err == MF_OK && (d->st.degraded & ~1) != 0)
        err = MF_E_INVALID;
    return err;
}

static void publish(mf_degrade *d)
{
    d->status.degraded = d->st.degraded;
    d->status.manual = d->st.manual;
    d->status.reason = d->st.reason;
    d->status.switches = d->st.switches;
}

int mf_degrade_new(mf_degrade **out, const mf_degrade_config *config,
                   const mf_platform_ops *platform, const char *name)
{
    mf_allocator a = *mf_allocator_default();
    size_t n = name ? strlen(name) : 0;
    mf_degrade *d;
    int err;

    if (!out)
        return MF_E_INVALID;
    *out = NULL;
    if (!platform || n == 0 || n > DEGRADE_NAME_MAX)
        return MF_E_INVALID;
    d = mf_alloc(&a, sizeof(*d));
    if (!d)
        return MF_E_NOMEM;
    memset(d, 0, sizeof(*d));
    d->alloc = a;
    d->platform = *platform;
    if (config)
        d->cfg = *config;
    if (!d->cfg.hold_ms)
        d->cfg.hold_ms = 60000;
    if (!d->cfg.deadline_misses)
        d->cfg.deadline_misses = 5;
    if (!d->cfg.battery_low_pct)
        d->cfg.battery_low_pct = 15;
    if (!d->cfg.thermal_hot)
        d->cfg.thermal_hot = 2;
    d->last.memory_pressure = d->last.thermal = d->last.battery_pct = -1;
    memcpy(d->name, name, n + 1);
    memcpy(d->tmp_name, name, n);
    memcpy(d->tmp_name + n, ".tmp", 5);
    err = load(d);
    if (err < 0) {
        mf_free(&a, d);
        return err;
    }
    publish(d);
    *out = d;
    return MF_OK;
}

void mf_degrade_free(mf_degrade *d)
{
    if (d) {
        mf_allocator a = d->alloc;

        mf_free(&a, d);
    }
}

/* The first trigger that holds now, MF_DEGRADE_NONE when none does. Battery lets go only
 * above the low mark plus the band while degraded for it. */
static int trigger(const mf_degrade *d)
{
    const mf_degrade_signals *s = &d->last;
    int battery_mark = d->cfg.battery_low_pct +
                       (d->st.degraded && d->st.reason == MF_DEGRADE_BATTERY ? BATTERY_BAND : 0);

    if (s->memory_pressure == 1)
        return MF_DEGRADE_MEMORY;
    if (s->thermal >= d->cfg.thermal_hot)
        return MF_DEGRADE_THERMAL;
    if (s->battery_pct >= 0 && s->battery_pct <= battery_mark)
        return MF_DEGRADE_BATTERY;
    if (d->cfg.deadline_us && d->misses >= d->cfg.deadline_misses)
        return MF_DEGRADE_DEADLINE;
    return MF_DEGRADE_NONE;
}

static int do_switch(mf_degrade *d, int degraded, int reason, int manual, uint64_t now_ms)
{
    mf_degrade_event *e;

    d->st.degraded = degraded;
    d->st.manual = manual;
    d->st.reason = reason;
    d->st.switches++;
    d->started = 1;
    d->holding = 1;
    d->last_switch_ms = now_ms;
    d->misses = 0; /* the other variant's latencies count afresh */
    if (d->ev_n == MF_DEGRADE_EVENTS) {
        d->ev_first = (d->ev_first + 1) % MF_DEGRADE_EVENTS;
        d->ev_n--;
        d->status.dropped++;
    }
    e = &d->ev[(d->ev_first + d->ev_n++) % MF_DEGRADE_EVENTS];
    e->at_ms = now_ms;
    e->degraded = degraded;
    e->reason = reason;
    publish(d);
    {
        int err = save(d);

        return err < 0 ? err : 1;
    }
}

static int evaluate(mf_degrade *d, uint64_t now_ms)
{
    int why;

    if (!d->started) { /* restarted degraded: the window counts from the first call */
        d->started = 1;
        d->holding = d->st.degraded;
        d->last_switch_ms = now_ms;
    }
    if (d->st.manual)
        return 0; /* only a manual restore ends a manual degrade */
    why = trigger(d);
    if ((why != MF_DEGRADE_NONE) == (d->st.degraded != 0))
        return 0;
    if (d->holding && now_ms - d->last_switch_ms < d->cfg.hold_ms) {
        d->status.suppressed++;
        return 0;
    }
    return do_switch(d, why != MF_DEGRADE_NONE, why != MF_DEGRADE_NONE ? why : MF_DEGRADE_RECOVERED,
                     0, now_ms);
}

int mf_degrade_feed(mf_degrade *d, const mf_degrade_signals *s, uint64_t now_ms)
{
    if (!d || !s || s->memory_pressure < -1 || s->memory_pressure > 1 || s->thermal < -1 ||
        s->thermal > 3 || s->battery_pct < -1 || s->battery_pct > 100)
        return MF_E_INVALID;
    d->last = *s;
    return evaluate(d, now_ms);
}

int mf_degrade_latency(mf_degrade *d, uint32_t latency_us, uint64_t now_ms)
{
    if (!d)
        return MF_E_INVALID;
    if (d->cfg.deadline_us) {
        if (latency_us > d->cfg.deadline_us)
            d->misses += d->misses < UINT32_MAX;
        else
            d->misses = 0;
    }
    return evaluate(d, now_ms);
}

int mf_degrade_set(mf_degrade *d, int degraded, uint64_t now_ms)
{
    if (!d || (degraded != 0 && degraded != 1))
        return MF_E_INVALID;
    if (degraded == d->st.degraded && degraded == d->st.manual)
        return 0;
    if (!degraded && !d->st.degraded) {
        d->st.manual = 0;
        return 0;
    }
    return do_switch(d, degraded, degraded ? MF_DEGRADE_MANUAL : MF_DEGRADE_RECOVERED, degraded,
                     now_ms);
}

const mf_degrade_status *mf_degrade_status_get(const mf_degrade *d)
{
    return d ? &d->status : NULL;
}

size_t mf_degrade_events(mf_degrade *d, mf_degrade_event *out, size_t n)
{
    size_t k = 0;

    if (!d || !out)
        return 0;
    for (; k < n && d->ev_n; k++) {
        out[k] = d->ev[d->ev_first];
        d->ev_first = (d->ev_first + 1) % MF_DEGRADE_EVENTS;
        d->ev_n--;
    }
    return k;
}

const char *mf_degrade_reason_name(int reason)
{
    static const char *const names[] = {"none",    "manual",   "memory",   "thermal",
                                        "battery", "deadline", "recovered"};

    return reason >= 0 && reason <= MF_DEGRADE_RECOVERED ? names[reason] : "unknown";
}
