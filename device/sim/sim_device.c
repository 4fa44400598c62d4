/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One simulated device of mf-sim (sim.h): a real libmf agent through its public API, and
 * the runtime report of what its installed version does, recorded into the mf_telemetry
 * handed to the agent (mf_agent_options.telemetry): the agent counts installs and
 * rollbacks itself and sends the totals with its own check-in, as an app embedding libmf
 * would. Its port is the POSIX one with the simulated clock (--cycle-ms) in place of the real
 * one, so libmf's degrade controller, fed the squeezes' signals through the port's squeeze
 * callback, holds its switches for simulated time. Devices are independent, so distinct
 * devices may step on distinct threads.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sim.h"

#include "mf/sys/platform_posix.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct sim_device {
    const struct sim_config *cfg;
    unsigned index;
    char id[MF_AGENT_NAME_MAX + 1];
    char dir[512];
    mf_platform_ops platform;
    mf_platform_posix posix;
    mf_agent *agent;
    mf_telemetry *tele;
    char version[MF_AGENT_NAME_MAX + 1]; /* installed */
    uint32_t seed;
    uint64_t offload_carry;      /* asked x percent not yet counted as uncertain */
    const struct sim_class *cls; /* the class it declares, or NULL */
    /* The simulated clock (sim.h, --cycle-ms): the telemetry's port and the agent's read it,
     * so sustained windows count simulated minutes; squeezes and degrading run on it too. */
    uint64_t clock_ms;
    mf_platform_ops tele_ops;
    char active[MF_AGENT_NAME_MAX + 1]; /* the version that ran last, since active_ms */
    uint64_t active_ms;
    mf_degrade_config degrade; /* libmf's controller's tuning (with any squeeze) */
    unsigned fallback_pct;
    uint64_t switches_seen; /* the controller's switch count at the last look */
    struct sim_degrade_counts counts;
};

static uint64_t sim_clock(void *payload)
{
    return ((const struct sim_device *)payload)->clock_ms;
}

/* The agent's port: the POSIX one, whose payload is the device's `posix`, with this clock. */
static uint64_t agent_clock(void *payload)
{
    return sim_clock((char *)payload - offsetof(struct sim_device, posix));
}

/* The squeeze that hits the device now (none before it runs a version), and what it does
 * at this simulated minute. */
static const struct sim_squeeze *squeeze_now(struct sim_squeeze_now *now,
                                             const struct sim_device *d)
{
    const struct sim_squeeze *q =
        d->active[0] ? sim__squeeze_of(d->cfg, d->index, d->cls ? d->cls->tag : NULL, d->version)
                     : NULL;

    sim__squeeze_at(now, q, (d->clock_ms - d->active_ms) / 60000u);
    return q;
}

/* The port's squeeze callback (mf_agent_options.squeeze_fn): the signals at the clock. */
static int squeeze(void *payload, mf_degrade_signals *out)
{
    struct sim_squeeze_now now;

    (void)squeeze_now(&now, payload);
    out->memory_pressure = now.memory_pressure;
    out->thermal = now.thermal;
    out->battery_pct = now.battery_pct;
    return MF_OK;
}

/* After an agent call that may switch (at most one switch each): counts it. */
static void observe(struct sim_device *d)
{
    const mf_degrade_status *st = mf_agent_degrade_status(d->agent);

    if (!st || st->switches == d->switches_seen)
        return;
    d->switches_seen = st->switches;
    if (st->degraded) {
        d->counts.degrades++;
        d->counts.by_reason[(unsigned)st->reason % 8u]++;
    } else {
        d->counts.restores++;
    }
}

/* Takes the installed version from the agent. */
static void note_installed(struct sim_device *d)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    if (mf_agent_status(&st, d->agent, d->cfg->model) != MF_OK || !st.installed)
        return;
    (void)snprintf(d->version, sizeof(d->version), "%s", st.version);
}

struct sim_device *sim__device_new(const struct sim_config *cfg, unsigned index)
{
    struct sim_device *d = mf_calloc(NULL, 1, sizeof(*d));
    const struct sim_squeeze *q;
    mf_agent_options o;
    int err;

    if (!d)
        return NULL;
    d->cfg = cfg;
    d->index = index;
    d->seed = 2654435761u * (index + 1);
    d->cls = sim__class_of(cfg, index);
    (void)sim__device_name(d->id, sizeof(d->id), cfg->prefix, index); /* checked: sim_args.c */
    (void)snprintf(d->dir, sizeof(d->dir), "%s/%s", cfg->state_root, d->id);
    /* The port stores into an existing directory; the first run makes it. */
    if ((mkdir(cfg->state_root, 0700) != 0 && errno != EEXIST) ||
        (mkdir(d->dir, 0700) != 0 && errno != EEXIST)) {
        (void)fprintf(stderr, "mf-sim: cannot create %s\n", d->dir);
        sim__device_free(d);
        return NULL;
    }
    d->fallback_pct = 50;
    d->tele_ops.version = MF_PLATFORM_OPS_VERSION; /* a clock only: the totals are not saved */
    d->tele_ops.monotonic_ms = sim_clock;
    d->tele_ops.payload = d;
    err = mf_platform_posix_init(&d->platform, &d->posix, d->dir);
    d->platform.monotonic_ms = agent_clock;
    if (err == MF_OK)
        err = mf_telemetry_new(&d->tele, NULL, &d->tele_ops, "telemetry");
    /* The controller's tuning: the first squeeze that may hit the device, else the defaults. */
    q = sim__squeeze_of(cfg, index, d->cls ? d->cls->tag : NULL, NULL);
    d->degrade.hold_ms = q ? q->hold_ms : 0;
    d->degrade.deadline_us = q ? q->deadline_us : 0;
    if (err == MF_OK)
        err = mf_agent_options_init(&o, MF_AGENT_OPTIONS_VERSION);
    if (err == MF_OK) {
        o.server_url = cfg->server_url;
        o.device_id = d->id;
        o.enrollment_token = cfg->enroll_token;
        o.state_dir = d->dir;
        o.models = &cfg->model;
        o.n_models = 1;
        o.platform = &d->platform;
        o.trust_root = cfg->trust_root;
        o.trust_root_len = cfg->trust_root_len;
        o.retry_base_ms = 0; /* the simulator paces devices itself */
        o.telemetry = d->tele;
        o.device_class = d->cls ? &d->cls->cls : NULL;
        if (cfg->n_squeeze) { /* every device degrades; the squeezed ones have a reason to */
            o.degrade = &d->degrade;
            o.squeeze_fn = squeeze;
            o.squeeze_payload = d;
        }
        err = mf_agent_new(&d->agent, &o);
    }
    if (err == MF_OK) {
        note_installed(d); /* what an earlier run installed, even if it stays offline */
        d->switches_seen =
            mf_agent_degrade_status(d->agent) ? mf_agent_degrade_status(d->agent)->switches : 0;
    }
    if (err < 0) {
        (void)fprintf(stderr, "mf-sim: device %s: %s\n", d->id, mf_strerror(err));
        sim__device_free(d);
        return NULL;
    }
    return d;
}

void sim__device_free(struct sim_device *d)
{
    if (!d)
        return;
    mf_agent_free(d->agent); /* before the telemetry handle it borrows */
    mf_telemetry_free(d->tele);
    if (d->platform.version)
        mf_platform_posix_close(&d->posix);
    mf_free(NULL, d);
}

/* "v2@TAG" on a device of class TAG, else "v2". */
static const struct sim_behaviour *behaviour_of(const struct sim_config *cfg,
                                                const struct sim_class *cls, const char *version)
{
    char mine[sizeof(cfg->behave[0].version)];

    (void)snprintf(mine, sizeof(mine), "%s@%s", version, cls ? cls->tag : "");
    for (size_t i = 0; cls && i < cfg->n_behave; i++) {
        if (strcmp(cfg->behave[i].version, mine) == 0)
            return &cfg->behave[i];
    }
    for (size_t i = 0; i < cfg->n_behave; i++) {
        if (strcmp(cfg->behave[i].version, version) == 0)
            return &cfg->behave[i];
    }
    return NULL;
}

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* One inference at d->clock_ms: the agent reads the squeeze signals (the controller may
 * switch), the app loads what mf_agent_model_path answers, and the latency goes to the
 * deadline trigger. Its latency in microseconds, `base` as the squeeze and the variant make it.
 */
static uint64_t infer(struct sim_device *d, uint64_t base, struct sim_squeeze_now *now)
{
    const struct sim_squeeze *q = squeeze_now(now, d);
    uint64_t us = base * now->factor_pct / 100u;

    if (!d->cfg->n_squeeze)
        return us;
    if (mf_agent_squeeze(d->agent) < 0)
        (void)fprintf(stderr, "mf-sim: %s: %s\n", d->id, mf_agent_errmsg(d->agent));
    observe(d);
    if (q)
        d->fallback_pct = q->fallback_pct; /* kept once the squeeze no longer hits */
    if (sim__device_degraded(d)) {         /* the lighter fallback, on the same hot chip */
        us = us * d->fallback_pct / 100u;
        d->counts.degraded_inferences++;
    }
    if (q && q->deadline_us) {
        if (mf_agent_inference(d->agent, (uint32_t)(us < UINT32_MAX ? us : UINT32_MAX)) < 0)
            (void)fprintf(stderr, "mf-sim: %s: %s\n", d->id, mf_agent_errmsg(d->agent));
        observe(d);
    }
    return us;
}

/* What the installed version did in cycle `cycle`, into the device's telemetry: the
 * inferences spread over the cycle's simulated span, each under the squeeze of its minute. */
static int simulate(struct sim_device *d, unsigned cycle)
{
    static const struct sim_behaviour plain = {"", 1000, 32u << 20, 0, 5};
    const struct sim_behaviour *b = behaviour_of(d->cfg, d->cls, d->version);
    const char *m = d->cfg->model, *v = d->version;
    const uint64_t t0 = (uint64_t)cycle * d->cfg->cycle_ms;
    mf_offload_telemetry off;
    int err = MF_OK;

    if (!b)
        b = &plain;
    if (strcmp(d->active, v) != 0) { /* an activation: its first inference is now */
        (void)snprintf(d->active, sizeof(d->active), "%s", v);
        d->active_ms = t0;
    }
    memset(&off, 0, sizeof(off));
    (void)snprintf(off.model_version, sizeof(off.model_version), "%s", v);
    for (unsigned i = 0; err == MF_OK && i < d->cfg->inferences; i++) {
        struct sim_squeeze_now now;
        uint64_t us;

        d->clock_ms = t0 + (uint64_t)d->cfg->cycle_ms * i / d->cfg->inferences;
        us = infer(d, b->latency_us + next(&d->seed) % b->latency_us, &now);
        err = mf_telemetry_record_latency(d->tele, m, v, us ? us : 1);
        if (err == MF_OK && now.thermal)
            err = mf_telemetry_count(d->tele, m, v, MF_TELEMETRY_HOT);
        if (err == MF_OK && now.memory_pressure)
            err = mf_telemetry_count(d->tele, m, v, MF_TELEMETRY_MEM_PRESSURE);
        off.asked++;
    }
    d->clock_ms = t0 + d->cfg->cycle_ms;
    /* Exactly offload_pct % of the asked samples (the remainder carried to the next cycle):
     * a coin per sample would let a 12 % version look like 7 % on a small wave. */
    d->offload_carry += off.asked * b->offload_pct;
    off.uncertain = d->offload_carry / 100;
    d->offload_carry %= 100;
    if (err == MF_OK)
        err = mf_telemetry_record_memory(d->tele, m, v, b->memory);
    if (err == MF_OK)
        err = mf_telemetry_record_health(d->tele, m, v, !b->health_fail);
    if (err == MF_OK)
        err = mf_telemetry_add_offload(d->tele, m, v, &off);
    return err;
}

static uint64_t now_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int sim__device_cycle(uint64_t *checkin_us, struct sim_device *d, unsigned cycle)
{
    mf_agent_counters before = MF_AGENT_COUNTERS_INIT, after = MF_AGENT_COUNTERS_INIT;
    uint64_t t0;
    int err = d->version[0] ? simulate(d, cycle) : MF_OK;
    int step;

    d->clock_ms = ((uint64_t)cycle + 1) * d->cfg->cycle_ms; /* the step at the cycle's end */
    if (mf_agent_stats(&before, d->agent) < 0)
        return MF_E_INVALID;
    t0 = now_us();
    step = mf_agent_step(d->agent); /* the check-in carries what simulate() recorded */
    observe(d);                     /* the step reads the squeeze first */
    if (mf_agent_stats(&after, d->agent) < 0)
        return MF_E_INVALID;
    /* A step that downloaded nothing is one check-in: its round trip, plus verifying the
     * signed answer and saving the trust state, is what the benchmark reports. */
    if (step == MF_OK && after.blob_requests == before.blob_requests)
        *checkin_us = now_us() - t0;
    note_installed(d);
    if (err < 0)
        (void)fprintf(stderr, "mf-sim: %s: recording telemetry: %s\n", d->id, mf_strerror(err));
    if (step < 0)
        (void)fprintf(stderr, "mf-sim: %s: %s\n", d->id, mf_agent_errmsg(d->agent));
    return step < 0 || err < 0 ? -1 : 0;
}

int sim__device_degraded(const struct sim_device *d)
{
    char path[600];
    int fallback = 0;

    return mf_agent_model_path(path, sizeof(path), &fallback, d->agent, d->cfg->model) == MF_OK &&
           fallback;
}

const char *sim__device_version(const struct sim_device *d)
{
    return d->version;
}

const char *sim__device_id(const struct sim_device *d)
{
    return d->id;
}

const char *sim__device_class(const struct sim_device *d)
{
    return d->cls ? d->cls->tag : "";
}

void sim__device_degrade_counts(struct sim_degrade_counts *out, const struct sim_device *d)
{
    const mf_degrade_status *st = mf_agent_degrade_status(d->agent);

    *out = d->counts;
    out->degraded = st && st->degraded;
}
