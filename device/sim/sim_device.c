/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One simulated device of mf-sim (sim.h): a real libmf agent through its public API, and
 * the runtime report of what its installed version does. libmf does not send telemetry
 * yet, so the report goes out as a second, authenticated check-in carrying the same
 * "telemetry" object libmf will carry (docs/protocol.md), with the device credential the
 * agent stored when it enrolled.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sim.h"

#include "mf/sys/platform_posix.h"
#include "mf_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SIM_BODY_MAX (MF_TELEMETRY_JSON_MAX + 1024)

struct sim_device {
    const struct sim_config *cfg;
    unsigned index;
    char id[MF_AGENT_NAME_MAX + 1];
    char dir[512];
    mf_platform_ops platform;
    mf_platform_posix posix;
    mf_agent *agent;
    mf_telemetry *tele;
    struct mf_ctx ctx;
    struct mf_http http;
    char credential[256];
    char version[MF_AGENT_NAME_MAX + 1]; /* installed */
    char sha256[65];
    uint32_t seed;
    uint64_t offload_carry; /* asked x percent not yet counted as uncertain */
    uint64_t nonce;
};

/* One device runs at a time (the simulator is single-threaded): the report buffers are
 * shared, so 10,000 devices do not hold 10,000 x 40 KiB. */
static char sim_json[MF_TELEMETRY_JSON_MAX];
static char sim_body[SIM_BODY_MAX];

/* Takes the installed version from the agent; 1 when it changed. */
static int note_installed(struct sim_device *d)
{
    mf_agent_model_status st;

    if (mf_agent_status(&st, d->agent, d->cfg->model) != MF_OK || !st.installed ||
        strcmp(st.version, d->version) == 0)
        return 0;
    (void)snprintf(d->version, sizeof(d->version), "%s", st.version);
    (void)snprintf(d->sha256, sizeof(d->sha256), "%s", st.sha256);
    return 1;
}

struct sim_device *sim__device_new(const struct sim_config *cfg, unsigned index)
{
    struct mf_http_config hc = {
        .connect_timeout_ms = 5000, .request_timeout_ms = 30000, .max_body = 4u << 20};
    struct sim_device *d = mf_calloc(NULL, 1, sizeof(*d));
    mf_agent_options o;
    int err;

    if (!d)
        return NULL;
    d->cfg = cfg;
    d->index = index;
    d->seed = 2654435761u * (index + 1);
    (void)snprintf(d->id, sizeof(d->id), "%s-%05u", cfg->prefix, index);
    (void)snprintf(d->dir, sizeof(d->dir), "%s/%s", cfg->state_root, d->id);
    mf_ctx__init(&d->ctx, NULL, NULL, NULL, "sim");
    /* The port stores into an existing directory; the first run makes it. */
    if ((mkdir(cfg->state_root, 0700) != 0 && errno != EEXIST) ||
        (mkdir(d->dir, 0700) != 0 && errno != EEXIST)) {
        (void)fprintf(stderr, "mf-sim: cannot create %s\n", d->dir);
        sim__device_free(d);
        return NULL;
    }
    err = mf_platform_posix_init(&d->platform, &d->posix, d->dir);
    if (err == MF_OK)
        err = mf_telemetry_new(&d->tele, NULL, NULL, "telemetry");
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
        err = mf_agent_new(&d->agent, &o);
    }
    if (err == MF_OK)
        err = mf_http__init(&d->http, &d->ctx, &hc);
    if (err == MF_OK)
        note_installed(d); /* what an earlier run installed, even if it stays offline */
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
    if (d->http.curl)
        mf_http__cleanup(&d->http);
    mf_agent_free(d->agent);
    mf_telemetry_free(d->tele);
    if (d->platform.version)
        mf_platform_posix_close(&d->posix);
    mf_free(NULL, d);
}

static const struct sim_behaviour *behaviour_of(const struct sim_config *cfg, const char *version)
{
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

/* What the installed version did since the last cycle, into the device's telemetry. */
static int simulate(struct sim_device *d)
{
    static const struct sim_behaviour plain = {"", 1000, 32u << 20, 0, 5};
    const struct sim_behaviour *b = behaviour_of(d->cfg, d->version);
    const char *m = d->cfg->model, *v = d->version;
    mf_offload_telemetry off;
    int err = MF_OK;

    if (!b)
        b = &plain;
    memset(&off, 0, sizeof(off));
    (void)snprintf(off.model_version, sizeof(off.model_version), "%s", v);
    for (unsigned i = 0; err == MF_OK && i < d->cfg->inferences; i++) {
        err = mf_telemetry_record_latency(d->tele, m, v,
                                          b->latency_us + next(&d->seed) % b->latency_us);
        off.asked++;
    }
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

static int load_credential(struct sim_device *d)
{
    char path[600];
    FILE *f;
    size_t n;

    if (d->credential[0])
        return MF_OK;
    (void)snprintf(path, sizeof(path), "%s/credential", d->dir);
    f = fopen(path, "rb");
    if (!f)
        return MF_E_NOTFOUND;
    n = fread(d->credential, 1, sizeof(d->credential) - 1, f);
    (void)fclose(f);
    d->credential[n] = '\0';
    d->credential[strcspn(d->credential, "\r\n")] = '\0';
    return d->credential[0] ? MF_OK : MF_E_NOTFOUND;
}

/* The report: a check-in of the device's model with its telemetry. */
static int send_report(struct sim_device *d, uint64_t *us_out)
{
    struct timespec t0, t1;
    struct mf_http_request req = {.method = "POST", .content_type = "application/json"};
    struct mf_http_response resp;
    char url[512];
    size_t len = 0;
    int err = load_credential(d), n;

    if (err == MF_OK)
        err = mf_telemetry_checkin_json(&len, sim_json, MF_TELEMETRY_JSON_MAX, d->tele,
                                        d->cfg->model);
    if (err < 0)
        return err;
    d->nonce++;
    n = snprintf(sim_body, SIM_BODY_MAX,
                 "{\"nonce\":\"%016llx%016llx\",\"models\":[{\"name\":\"%s\",\"version\":\"%s\","
                 "\"sha256\":\"%s\",\"telemetry\":%s}]}",
                 (unsigned long long)d->index, (unsigned long long)d->nonce, d->cfg->model,
                 d->version, d->sha256, sim_json);
    if (n < 0 || (size_t)n >= SIM_BODY_MAX)
        return MF_E_LIMIT;
    (void)snprintf(url, sizeof(url), "%s/v1/checkin", d->cfg->server_url);
    req.url = url;
    req.bearer = d->credential;
    req.body = sim_body;
    req.body_len = (size_t)n;
    mf_http__response_init(&resp, &d->http);
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    err = mf_http__perform(&d->http, &resp, &req);
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    *us_out = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000);
    if (err == MF_OK && resp.status != 200)
        err = mf_http__fail_status(&d->http, &resp, "telemetry check-in");
    mf_http__response_free(&resp);
    if (err == MF_OK)
        mf_telemetry_ack(d->tele);
    return err;
}

int sim__device_cycle(uint64_t *report_us, struct sim_device *d)
{
    int step = mf_agent_step(d->agent);
    int err = MF_OK;

    if (note_installed(d))
        err = mf_telemetry_record_install(d->tele, d->cfg->model, d->version, 1);
    if (err == MF_OK && d->version[0])
        err = simulate(d);
    if (err == MF_OK && d->version[0])
        err = send_report(d, report_us);
    if (err < 0)
        (void)fprintf(stderr, "mf-sim: %s: %s\n", d->id,
                      mf_ctx__errmsg(&d->ctx)[0] ? mf_ctx__errmsg(&d->ctx) : mf_strerror(err));
    return step < 0 || err < 0 ? -1 : 0;
}

const char *sim__device_version(const struct sim_device *d)
{
    return d->version;
}

const char *sim__device_id(const struct sim_device *d)
{
    return d->id;
}
