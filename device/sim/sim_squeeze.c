/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-sim's squeeze events (--squeeze, sim.h): which devices a squeeze hits (a device range,
 * a class, everyone; optionally only while they run one version) and what it does at each
 * simulated minute since the version's activation: throttling that multiplies latency (the
 * device hot), memory pressure and low battery, the signals libmf's degrade controller reads. Pure
 * (no clock, no device), so test_sim checks it case by case.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "N" or "N.D": a factor in hundredths, 1.00..100.00. */
static int factor(unsigned *pct, const char *s, const char *end)
{
    char *stop = NULL;
    unsigned long whole = strtoul(s, &stop, 10), frac = 0, scale = 10;

    if (stop == s || s[0] < '0' || s[0] > '9')
        return -1;
    if (stop < end && *stop == '.') {
        const char *p = stop + 1;

        if (p == end)
            return -1;
        for (; p < end && scale; p++, scale /= 10) {
            if (*p < '0' || *p > '9')
                return -1;
            frac += (unsigned long)(*p - '0') * scale;
        }
        stop = (char *)p;
    }
    if (stop != end || whole > 100 || whole * 100 + frac < 100 || whole * 100 + frac > 10000)
        return -1;
    *pct = (unsigned)(whole * 100 + frac);
    return 0;
}

/* Decimal digits from s to end, at most `max`. */
static int upto(unsigned *out, const char *s, const char *end, unsigned long max)
{
    char *stop = NULL;
    unsigned long v;

    if (s == end || s[0] < '0' || s[0] > '9')
        return -1;
    v = strtoul(s, &stop, 10);
    if (stop != end || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* At most 100000 (minutes, percentages, microseconds). */
static int small(unsigned *out, const char *s, const char *end)
{
    return upto(out, s, end, 100000);
}

/* "A-B" with A < B between s and end. */
static int span(unsigned *a, unsigned *b, const char *s, const char *end)
{
    const char *dash = memchr(s, '-', (size_t)(end - s));

    return dash && small(a, s, dash) == 0 && small(b, dash + 1, end) == 0 && *a < *b ? 0 : -1;
}

/* Who: "all", "@TAG" or "FROM-TO". */
static int who(struct sim_squeeze *q, const char *s, const char *end)
{
    size_t n = (size_t)(end - s);

    if (n == 3 && strncmp(s, "all", 3) == 0) {
        q->to = SIM_MAX_DEVICES;
        return 0;
    }
    if (n > 1 && s[0] == '@') {
        if (n - 1 > MF_AGENT_NAME_MAX ||
            strspn(s + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") <
                n - 1)
            return -1;
        (void)snprintf(q->tag, sizeof(q->tag), "%.*s", (int)(n - 1), s + 1);
        return 0;
    }
    return span(&q->from, &q->to, s, end);
}

/* One "key=value" of a squeeze spec between p and end into `q`; NULL, or why it is refused. */
static const char *squeeze_key(struct sim_squeeze *q, const char *p, const char *end)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *v = eq ? eq + 1 : NULL;
    size_t k = eq ? (size_t)(eq - p) : 0;

#define KEY(name) (k == sizeof(name) - 1 && strncmp(p, name, k) == 0)
    if (!eq)
        return "each item is KEY=VALUE";
    if (KEY("after"))
        return small(&q->throttle_after_min, v, end) < 0 ? "after: not minutes 0..100000" : NULL;
    if (KEY("factor"))
        return factor(&q->factor_pct, v, end) < 0 ? "factor: not 1..100 (e.g. 2.5)" : NULL;
    if (KEY("mem"))
        return span(&q->mem_from_min, &q->mem_to_min, v, end) < 0 ? "mem: not minutes A-B, A < B"
                                                                  : NULL;
    if (KEY("battery"))
        return span(&q->battery_from_min, &q->battery_to_min, v, end) < 0
                   ? "battery: not minutes A-B, A < B"
                   : NULL;
    if (KEY("deadline"))
        return small(&q->deadline_us, v, end) < 0 || !q->deadline_us
                   ? "deadline: not microseconds 1..100000"
                   : NULL;
    if (KEY("hold"))
        return upto(&q->hold_ms, v, end, 86400000) < 0 || !q->hold_ms
                   ? "hold: not simulated milliseconds 1..86400000"
                   : NULL;
    if (KEY("fallback"))
        return small(&q->fallback_pct, v, end) < 0 || q->fallback_pct < 1 || q->fallback_pct > 100
                   ? "fallback: not a percentage 1..100"
                   : NULL;
    if (KEY("version")) {
        if (end - v < 1 || end - v > MF_AGENT_NAME_MAX)
            return "version: not a name of 1..64 characters";
        (void)snprintf(q->version, sizeof(q->version), "%.*s", (int)(end - v), v);
        return NULL;
    }
#undef KEY
    return "unknown key (after, factor, mem, battery, deadline, hold, fallback, version)";
}

int sim__parse_squeeze(struct sim_squeeze *q, const char *spec, const char **why)
{
    const char *colon = strchr(spec, ':');
    const char *p;

    memset(q, 0, sizeof(*q));
    q->fallback_pct = 50;
    *why = "WHO is all, @CLASS or FROM-TO with FROM < TO, then ':'";
    if (!colon || who(q, spec, colon) < 0)
        return -1;
    for (p = colon + 1; *p;) {
        const char *end = strchr(p, ',');

        if (!end)
            end = p + strlen(p);
        *why = squeeze_key(q, p, end);
        if (*why)
            return -1;
        p = *end ? end + 1 : end;
    }
    /* A squeeze must do something: a signal, a deadline, or a hold window of its own. */
    *why = "squeezes nothing (give factor, mem, battery, deadline or hold)";
    if (q->factor_pct || q->mem_to_min || q->battery_to_min || q->deadline_us || q->hold_ms) {
        *why = NULL;
        return 0;
    }
    return -1;
}

const struct sim_squeeze *sim__squeeze_of(const struct sim_config *cfg, unsigned index,
                                          const char *tag, const char *version)
{
    for (size_t i = 0; i < cfg->n_squeeze; i++) {
        const struct sim_squeeze *q = &cfg->squeeze[i];
        int hits = q->tag[0] ? tag && strcmp(q->tag, tag) == 0 : index >= q->from && index < q->to;

        if (hits && (!version || !q->version[0] || strcmp(q->version, version) == 0))
            return q;
    }
    return NULL;
}

void sim__squeeze_at(struct sim_squeeze_now *out, const struct sim_squeeze *q, uint64_t minute)
{
    memset(out, 0, sizeof(*out));
    out->factor_pct = 100;
    out->battery_pct = -1; /* on mains */
    if (!q)
        return;
    if (q->factor_pct && minute >= q->throttle_after_min) {
        out->factor_pct = q->factor_pct;
        out->thermal = 2; /* throttled: the platform reports it hot */
    }
    out->memory_pressure = q->mem_to_min && minute >= q->mem_from_min && minute < q->mem_to_min;
    if (q->battery_to_min && minute >= q->battery_from_min && minute < q->battery_to_min)
        out->battery_pct = SIM_BATTERY_LOW_PCT;
}
