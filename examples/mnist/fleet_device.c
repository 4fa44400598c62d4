/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One device of mf-example-fleet (fleet.h), written the way an app team embeds the SDK:
 *   - a libmf agent (mf/agent.h) keeps the model at the version the server assigns: it
 *     enrolls with the fleet token, verifies the trust chain, installs by delta when one is
 *     offered, and asks this app (health_fn) whether the new file works: a student file that
 *     does not load is refused, and the agent goes back to the previous version;
 *   - an offload handle (mf/offload.h) routes every inference: confident samples are
 *     answered locally, uncertain ones ask the teacher within the deadline, a random audit
 *     slice is queued for uplink; the agent carries its telemetry and installs the server's
 *     policy for the running version;
 *   - a runtime-report handle (mf/telemetry.h) records each inference's latency, the
 *     model's memory, health checks and teacher agreement; the agent sends its totals;
 *   - with --squeeze every device declares a device class and turns on libmf's runtime
 *     degradation (docs/agent.md, "Runtime degradation"): the agent keeps the version's
 *     fallback variant (published with fallback=1, a lighter student) beside the active slot,
 *     and its degrade controller reads the squeeze (memory pressure) from the port's squeeze
 *     callback at every step. A pass is a simulated minute on the port's clock, so the
 *     controller's hold window (60 s) is one pass. The app loads whatever
 *     mf_agent_model_path() answers: while degraded the fallback classifies, and the app
 *     counts what that cost in accuracy beside the active version on the same images.
 * The agent creates the offload handle (mf_agent_options.offload_options) and lends it out
 * (mf_agent_offload()): the device credential stays inside the SDK.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "fleet.h"

#include "mf/agent.h"
#include "mf/offload.h"
#include "mf/sys/platform_posix.h"
#include "mf/telemetry.h"
#include "mf_ctx.h"
#include "mf_student_model.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct fleet_device {
    const struct fleet_config *cfg;
    unsigned index;
    char id[32];
    char dir[512];
    mf_platform_posix posix;
    mf_platform_ops ops;
    mf_agent *agent;
    mf_offload *offload; /* borrowed from the agent (mf_agent_offload()) */
    mf_telemetry *tele;
    mf_student_model *student;           /* the loaded model, NULL before the first install */
    char version[MF_AGENT_NAME_MAX + 1]; /* its version, "" when none */
    size_t next, stride;                 /* this device's walk through cfg->order */
    mf_fleet_stats stats;
    /* What the current step installed, for the delivery counters. */
    char step_version[MF_AGENT_NAME_MAX + 1];
    int saw_delta, saw_model;
    uint64_t delta_got;
    mf_fleet_offload_tracker offloaded; /* offload counters already in the runtime report */
    /* The way down (with --squeeze): the fallback variant as loaded (NULL when none loads),
     * which one it is, the controller's tuning and its switch count at the last look. */
    mf_student_model *fallback;
    char fallback_variant[MF_AGENT_NAME_MAX + 1];
    uint64_t fallback_size;
    mf_degrade_config degrade;
    mf_agent_device_class cls;
    uint64_t switches_seen;
    uint64_t (*real_ms)(void *payload); /* the POSIX port's own clock */
    unsigned pass;                      /* passes of this run so far */
};

static void print_log(void *payload, int level, const char *module, const char *msg)
{
    const struct fleet_device *d = payload;

    if (level <= (d->cfg->verbose ? MF_LOG_INFO : MF_LOG_WARN))
        (void)fprintf(stderr, "mf-example-fleet: %s: %s: %s\n", d->id, module, msg);
}

/* Opens the student file of `version` at `path` for this fleet's dataset; MF_OK with *out,
 * or the load's error (printed unless `quiet`). */
static int open_student(mf_student_model **out, const struct fleet_device *d, const char *version,
                        const char *path, int quiet)
{
    const mf_dataset *ds = d->cfg->data;
    mf_student_model *m = NULL;
    struct mf_ctx ctx;
    int err;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fleet");
    err = mf_student_model_load(&m, &ctx, NULL, path);
    if (err == MF_OK && (m->net.n_in != ds->dim || m->net.n_out != MF_DATASET_CLASSES))
        err = mf_fail(&ctx, MF_E_INVALID,
                      "student %u-%u-%u does not take %u-pixel images of %u "
                      "classes",
                      m->net.n_in, m->net.n_hidden, m->net.n_out, ds->dim, MF_DATASET_CLASSES);
    if (err < 0) {
        if (!quiet)
            (void)fprintf(stderr, "mf-example-fleet: %s: %s %s refused: %s\n", d->id, d->cfg->model,
                          version, mf_ctx__errmsg(&ctx));
        mf_student_model_free(m);
        return err;
    }
    *out = m;
    return MF_OK;
}

/* Loads the student file of `version`; the running one stays if it is broken or does not
 * fit the dataset. MF_OK or the load's error. */
static int load_student(struct fleet_device *d, const char *version, const char *path)
{
    mf_student_model *m = NULL;
    int err = open_student(&m, d, version, path, 0);

    if (err < 0)
        return err;
    mf_student_model_free(d->student);
    d->student = m;
    (void)snprintf(d->version, sizeof(d->version), "%s", version);
    return MF_OK;
}

/* The fallback follows what the agent keeps beside the active slot: loaded when another one
 * is installed (a file that does not load leaves none). */
static void refresh_fallback(struct fleet_device *d)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    mf_student_model *m = NULL;
    char path[700];

    if (!d->cfg->squeeze_to || mf_agent_status(&st, d->agent, d->cfg->model) != MF_OK ||
        (strcmp(st.fallback_variant, d->fallback_variant) == 0 &&
         st.fallback_size == d->fallback_size))
        return;
    mf_student_model_free(d->fallback);
    d->fallback = NULL;
    (void)snprintf(d->fallback_variant, sizeof(d->fallback_variant), "%s", st.fallback_variant);
    d->fallback_size = st.fallback_size;
    (void)snprintf(path, sizeof(path), "%s/models/%s/fallback", d->dir, d->cfg->model);
    if (st.fallback_installed && open_student(&m, d, st.fallback_variant, path, 0) == MF_OK)
        d->fallback = m;
}

/* The port's clock with --squeeze: the real one, a simulated minute further at every pass. */
static uint64_t pass_clock(void *payload)
{
    const struct fleet_device *d =
        (const void *)((const char *)payload - offsetof(struct fleet_device, posix));

    return d->real_ms(payload) + (uint64_t)d->pass * 60000u;
}

/* The port's squeeze callback: memory pressure on devices [from, to) in passes [p0, p1). */
static int squeeze(void *payload, mf_degrade_signals *out)
{
    const struct fleet_device *d = payload;
    const struct fleet_config *c = d->cfg;

    out->memory_pressure = d->index >= c->squeeze_from && d->index < c->squeeze_to &&
                           d->pass >= c->squeeze_p0 && d->pass < c->squeeze_p1;
    out->thermal = -1;
    out->battery_pct = -1;
    return MF_OK;
}

/* The model's memory as the app holds it: weights, biases and the handle. */
static uint64_t student_bytes(const mf_student *s)
{
    return (uint64_t)s->n_hidden * s->n_in + (uint64_t)s->n_out * s->n_hidden +
           sizeof(float) * ((uint64_t)s->n_hidden + s->n_out) + sizeof(mf_student_model);
}

/* health_fn (mf/agent.h): a new version is active at `path`; load it, answer. */
static int on_new_model(void *payload, const char *model, const char *version, const char *path)
{
    struct fleet_device *d = payload;
    mf_fleet_counts *c;
    int ok = load_student(d, version, path) == MF_OK;

    if (!d->step_version[0])
        (void)snprintf(d->step_version, sizeof(d->step_version), "%s", version);
    c = mf_fleet_stats_version(&d->stats, version);
    if (!ok && c)
        c->rejected++;
    if (mf_telemetry_record_health(d->tele, model, version, ok) < 0 ||
        (ok &&
         mf_telemetry_record_memory(d->tele, model, version, student_bytes(&d->student->net)) < 0))
        (void)fprintf(stderr, "mf-example-fleet: %s: runtime report full\n", d->id);
    return ok ? MF_AGENT_HEALTHY : MF_AGENT_UNHEALTHY;
}

/* progress_fn: which kinds of blob the step fetched, and how far the delta got. */
static void on_progress(void *payload, const char *model, const char *kind, uint64_t done,
                        uint64_t total)
{
    struct fleet_device *d = payload;

    (void)model;
    (void)total;
    if (strcmp(kind, "delta") == 0) {
        d->saw_delta = 1;
        d->delta_got = done;
    } else if (strcmp(kind, "model") == 0) {
        d->saw_model = 1;
    }
}

/* Opens the agent; it creates the offload handle from these options (it adds the model,
 * the server, the port and the device credential itself) and lends it to the app. */
static int open_agent(struct fleet_device *d)
{
    mf_offload_policy limits;
    mf_offload_options oo;
    const mf_offload_options *const per_model[1] = {&oo};
    mf_agent_options o;
    char errbuf[MF_AGENT_ERRBUF_SIZE];
    int err = mf_agent_options_init(&o, MF_AGENT_OPTIONS_VERSION);

    if (err == MF_OK)
        err = mf_offload_options_init(&oo, MF_OFFLOAD_OPTIONS_VERSION);
    if (err == MF_OK && d->cfg->deadline_ms) {
        /* The app's ceiling: every other field as loose as possible, the deadline tighter. */
        err = mf_offload_policy_init(&limits, MF_OFFLOAD_POLICY_VERSION);
        limits.deadline_ms = d->cfg->deadline_ms;
        oo.app_limits = &limits;
    }
    if (err < 0)
        return err;
    oo.log_fn = print_log;
    oo.log_payload = d;
    o.server_url = d->cfg->server_url;
    o.device_id = d->id;
    o.enrollment_token = d->cfg->enroll_token;
    o.state_dir = d->dir;
    o.models = &d->cfg->model;
    o.n_models = 1;
    o.platform = &d->ops;
    o.trust_root = d->cfg->trust_root;
    o.trust_root_len = d->cfg->trust_root_len;
    o.log_fn = print_log;
    o.log_payload = d;
    o.health_fn = on_new_model;
    o.health_payload = d;
    o.progress_fn = on_progress;
    o.progress_payload = d;
    o.offload_options = per_model; /* read by mf_agent_new() only */
    o.telemetry = d->tele;
    o.errbuf = errbuf;
    o.errbuf_size = sizeof(errbuf);
    if (d->cfg->squeeze_to) { /* the way down: a class whose storage holds the fallback too */
        d->cls = (mf_agent_device_class){.tag = "fleet", .ram_mb = 512, .storage_mb = 64};
        o.device_class = &d->cls;
        o.degrade = &d->degrade; /* the controller's defaults: a 60 s hold */
        o.squeeze_fn = squeeze;
        o.squeeze_payload = d;
    }
    err = mf_agent_new(&d->agent, &o);
    if (err < 0) {
        (void)fprintf(stderr, "mf-example-fleet: %s: %s\n", d->id, errbuf);
        return err;
    }
    return mf_agent_offload(&d->offload, d->agent, d->cfg->model);
}

/* What an earlier run installed: the agent only calls health_fn for new versions. */
static void load_installed(struct fleet_device *d)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    char path[700];

    if (mf_agent_status(&st, d->agent, d->cfg->model) != MF_OK || !st.installed)
        return;
    (void)snprintf(path, sizeof(path), "%s/models/%s/slot-%c", d->dir, d->cfg->model, st.slot);
    (void)load_student(d, st.version, path);
}

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        const size_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

/* Each device streams the slice in its own order without a permutation of its own (1,000
 * devices on 60,000 images would hold 480 MB of them): it starts at a random position of
 * the shared permutation and walks it with a random stride coprime to its length, which
 * visits every image once per lap. */
static void walk_init(struct fleet_device *d, size_t n, uint64_t seed)
{
    d->next = (size_t)(mf_rng_next(&seed) % n);
    d->stride = 1;
    while (n > 2) {
        d->stride = 1 + (size_t)(mf_rng_next(&seed) % (n - 1));
        if (gcd(d->stride, n) == 1)
            break;
    }
}

static size_t walk_next(struct fleet_device *d, size_t n)
{
    const size_t i = d->cfg->order[d->next];

    d->next = (size_t)(((uint64_t)d->next + d->stride) % n);
    return i;
}

struct fleet_device *fleet_device_new(const struct fleet_config *cfg, unsigned index)
{
    struct fleet_device *d = mf_calloc(NULL, 1, sizeof(*d));
    size_t n = cfg->end - cfg->first;
    int err;

    if (!d)
        return NULL;
    d->cfg = cfg;
    (void)snprintf(d->id, sizeof(d->id), "fleet-%05u", index);
    (void)snprintf(d->dir, sizeof(d->dir), "%s/%s", cfg->state_root, d->id);
    walk_init(d, n, cfg->seed ^ (0x9e3779b97f4a7c15ull * (index + 1)));
    d->index = index;
    err = mf_platform_posix_init(&d->ops, &d->posix, d->dir);
    if (err == MF_OK && cfg->squeeze_to) {
        d->real_ms = d->ops.monotonic_ms;
        d->ops.monotonic_ms = pass_clock;
    }
    if (err == MF_OK)
        err = mf_telemetry_new(&d->tele, NULL, &d->ops, "telemetry.state");
    if (err == MF_OK && mf_telemetry_load(d->tele) < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s: saved runtime report ignored\n", d->id);
    if (err == MF_OK)
        err = open_agent(d);
    if (err == MF_OK && mf_agent_degrade_status(d->agent))
        d->switches_seen = mf_agent_degrade_status(d->agent)->switches;
    if (err < 0) {
        (void)fprintf(stderr, "mf-example-fleet: device %s: %s\n", d->id, mf_strerror(err));
        fleet_device_free(d);
        return NULL;
    }
    load_installed(d);
    return d;
}

void fleet_device_free(struct fleet_device *d)
{
    if (!d)
        return;
    mf_agent_free(d->agent); /* frees the offload handle it lent, before the handles it borrows */
    mf_telemetry_free(d->tele);
    mf_student_model_free(d->student);
    mf_student_model_free(d->fallback);
    if (d->ops.version)
        mf_platform_posix_close(&d->posix);
    mf_free(NULL, d);
}

/* Splits the blob bytes of one step into delta and full and books them, with the install
 * counts, on the version the step installed. */
static void count_delivery(struct fleet_device *d, const mf_agent_counters *before,
                           const mf_agent_counters *after)
{
    const uint64_t bytes = after->blob_bytes - before->blob_bytes;
    uint64_t delta = 0;
    mf_fleet_counts *c;

    if (d->saw_delta)
        delta = !d->saw_model || d->delta_got > bytes ? bytes : d->delta_got;
    d->stats.bytes_delta += delta;
    d->stats.bytes_full += bytes - delta;
    if (!d->step_version[0])
        return;
    c = mf_fleet_stats_version(&d->stats, d->step_version);
    if (!c) {
        d->stats.dropped++;
        return;
    }
    c->installs_delta += after->delta_installs - before->delta_installs;
    c->installs_full += after->full_installs - before->full_installs;
    c->bytes_delta += delta;
    c->bytes_full += bytes - delta;
}

/* The offload counters go into the runtime report before the check-in that sends both,
 * each exactly once (mf_fleet_offload_unreported()). */
static void offload_to_report(struct fleet_device *d)
{
    const mf_offload_telemetry *cur = mf_offload_telemetry_get(d->offload);
    mf_offload_telemetry add;

    if (mf_fleet_offload_unreported(&add, &d->offloaded, cur) &&
        strcmp(cur->model_version, "none") != 0 &&
        mf_telemetry_add_offload(d->tele, d->cfg->model, cur->model_version, &add) < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s: runtime report full\n", d->id);
}

/* One agent step, with the delivery counters and the offload counters around it. */
static int step(struct fleet_device *d)
{
    mf_agent_counters before = MF_AGENT_COUNTERS_INIT, after = MF_AGENT_COUNTERS_INIT;
    int err;

    if (d->offload)
        offload_to_report(d);
    d->step_version[0] = '\0';
    d->saw_delta = d->saw_model = 0;
    d->delta_got = 0;
    err = mf_agent_stats(&before, d->agent);
    if (err < 0)
        return err;
    err = mf_agent_step(d->agent);
    /* The step's own result is the one that counts; the counters are this header's version,
     * which the library it links always knows. */
    if (mf_agent_stats(&after, d->agent) == MF_OK)
        count_delivery(d, &before, &after);
    if (err < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s: step: %s\n", d->id, mf_agent_errmsg(d->agent));
    if (d->offload)
        mf_fleet_offload_checked_in(&d->offloaded, mf_offload_telemetry_get(d->offload));
    return err;
}

/* The check-in part of a pass. A step that installed a version is followed by a second one
 * at once: it brings the offload policy fitted to the version now running (a policy for
 * another version offloads nothing). Enrolling needs no second step: the agent hands its
 * offload handle the new credential before the check-in that brings the policy. */
static void sync_with_server(struct fleet_device *d)
{
    (void)step(d);
    if (d->step_version[0] != '\0')
        (void)step(d);
}

static uint64_t now_ns(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Classifies one image and routes it (with the fallback when `degraded`, counting what the
 * active version would have answered); MF_OK or the offload's error. */
static int classify_one(struct fleet_device *d, mf_fleet_counts *c, size_t idx, int degraded)
{
    const mf_dataset *ds = d->cfg->data;
    const uint8_t *x = ds->x + idx * ds->dim;
    const mf_student *net = degraded ? &d->fallback->net : &d->student->net;
    float logits[MF_STUDENT_MAX_OUT];
    mf_offload_sample s = {x, ds->dim, logits, net->n_out, MF_OFFLOAD_LOGITS};
    mf_offload_answer a;
    const uint64_t t0 = now_ns();
    const uint32_t label = mf_student_predict(net, x, logits);
    const uint64_t us = (now_ns() - t0 + 999) / 1000;
    int err = mf_offload_ask(&a, NULL, d->offload, &s);

    if (err < 0)
        return err;
    mf_fleet_stats_answer(c, ds->y[idx], label, &a);
    if (degraded) {
        c->degraded++;
        c->degraded_fallback_ok += label == ds->y[idx];
        c->degraded_main_ok += mf_student_predict(&d->student->net, x, NULL) == ds->y[idx];
    }
    err = mf_telemetry_record_latency(d->tele, d->cfg->model, d->version, us);
    if (err == MF_OK && a.by_teacher)
        err = mf_telemetry_record_teacher(d->tele, d->cfg->model, d->version,
                                          (uint32_t)a.label == label);
    return err;
}

/* After this pass's steps (each reads the squeeze first): the controller's switch, counted on
 * the active version, and whether the agent answers the fallback variant now. 1 when this
 * pass runs on it. */
static int degrade_pass(struct fleet_device *d, mf_fleet_counts *c)
{
    const mf_degrade_status *st = mf_agent_degrade_status(d->agent);
    char path[700];
    int fallback = 0;

    if (!st)
        return 0;
    if (st->switches != d->switches_seen) { /* at most one a pass: the hold window is 60 s */
        d->switches_seen = st->switches;
        c->degrades += st->degraded != 0;
        c->restores += st->degraded == 0;
    }
    if (mf_agent_model_path(path, sizeof(path), &fallback, d->agent, d->cfg->model) != MF_OK ||
        !fallback || !d->fallback)
        return 0;
    for (size_t i = 0; i < d->stats.n; i++) { /* which variant the degraded images ran on */
        if (&d->stats.v[i].c == c)
            (void)snprintf(d->stats.v[i].fallback, sizeof(d->stats.v[i].fallback), "%s",
                           d->fallback_variant);
    }
    return 1;
}

void fleet_device_pass(struct fleet_device *d)
{
    const size_t n = d->cfg->end - d->cfg->first;
    mf_fleet_counts *c;
    int err = MF_OK, degraded;

    sync_with_server(d);
    refresh_fallback(d);
    if (!d->student || !d->offload) {
        d->stats.skipped += d->cfg->per_pass; /* nothing installed yet */
        d->pass++;
        return;
    }
    c = mf_fleet_stats_version(&d->stats, d->version);
    if (!c) {
        d->stats.dropped += d->cfg->per_pass;
        d->pass++;
        return;
    }
    degraded = degrade_pass(d, c);
    for (unsigned k = 0; k < d->cfg->per_pass && err == MF_OK; k++)
        err = classify_one(d, c, d->cfg->first + walk_next(d, n), degraded);
    d->pass++;
    if (err < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s: inference: %s (%s)\n", d->id, mf_strerror(err),
                      mf_offload_errmsg(d->offload));
    err = mf_offload_drain(d->offload, 16);
    if (err < 0 && d->cfg->verbose)
        (void)fprintf(stderr, "mf-example-fleet: %s: uplink: %s\n", d->id,
                      mf_offload_errmsg(d->offload));
    if (mf_telemetry_save(d->tele) < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s: cannot save the runtime report\n", d->id);
}

const mf_fleet_stats *fleet_device_stats(const struct fleet_device *d)
{
    return &d->stats;
}

const char *fleet_device_version(const struct fleet_device *d)
{
    return d->version;
}
