/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Public API of libmf (mf/agent.h) and the step loop: enroll when needed, check in (which
 * also updates the trust state), then verify every assignment and install and report each
 * verified release that differs from what runs. A failure of one model does not stop the
 * others; the step returns the first failure.
 */
#include "mf_agent_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Bytes of mf_agent_options that a caller of `version` owns (fields are only appended). */
static size_t options_size(unsigned int version)
{
    /* ends[v - 1]: the end of version v's fields (where version v + 1's begin). */
    static const size_t ends[] = {
        offsetof(mf_agent_options, health_fn),    offsetof(mf_agent_options, offloads),
        offsetof(mf_agent_options, errbuf),       offsetof(mf_agent_options, poll_interval_s),
        offsetof(mf_agent_options, device_class), offsetof(mf_agent_options, download_buffer),
        offsetof(mf_agent_options, degrade),
    };
    _Static_assert(sizeof(ends) / sizeof(ends[0]) == MF_AGENT_OPTIONS_VERSION - 1,
                   "an options version appended fields: name where they begin here");

    return version >= 1 && version < MF_AGENT_OPTIONS_VERSION ? ends[version - 1]
                                                              : sizeof(mf_agent_options);
}

int mf_agent_options_init(mf_agent_options *opts, unsigned int version)
{
    if (version < 1 || version > MF_AGENT_OPTIONS_VERSION)
        return MF_E_INVALID;
    memset(opts, 0, options_size(version));
    opts->version = version;
    opts->connect_timeout_ms = 10000;
    opts->request_timeout_ms = 30000;
    opts->stall_timeout_s = 60;
    opts->stall_bytes_per_s = 1;
    opts->max_json_body = MF_AGENT_DEFAULT_MAX_JSON;
    if (version >= 2) {
        opts->max_unconfirmed_starts = 3;
        opts->retry_base_ms = 2000;
        opts->retry_max_ms = 600000;
        opts->max_patch_window = MF_AGENT_DEFAULT_PATCH_WINDOW;
    }
    return MF_OK;
}

static int check_options(struct mf_ctx *ctx, const mf_agent_options *o)
{
    if (o->version < 1 || o->version > MF_AGENT_OPTIONS_VERSION)
        return mf_fail(ctx, MF_E_INVALID, "options version %u, expected 1..%d", o->version,
                       MF_AGENT_OPTIONS_VERSION);
    if (!o->server_url ||
        (strncmp(o->server_url, "http://", 7) != 0 && strncmp(o->server_url, "https://", 8) != 0))
        return mf_fail(ctx, MF_E_INVALID, "server_url \"%s\" is not http:// or https://",
                       o->server_url ? o->server_url : "(null)");
    if (!o->device_id || !mf_agent__name_ok(o->device_id))
        return mf_fail(ctx, MF_E_INVALID, "device_id \"%s\" is not [A-Za-z0-9._-]{1,64}",
                       o->device_id ? o->device_id : "(null)");
    if (!o->state_dir || !o->state_dir[0])
        return mf_fail(ctx, MF_E_INVALID, "state_dir is not set");
    if (!o->platform || o->platform->version < 1 || !o->platform->open)
        return mf_fail(ctx, MF_E_INVALID, "platform ops missing or of unknown version");
    if (!o->trust_root || o->trust_root_len == 0)
        return mf_fail(ctx, MF_E_INVALID,
                       "trust_root is not set: devices are provisioned with their first root");
    if (o->version >= 5 && (o->poll_interval_s < 0 || o->poll_interval_s > 7L * 24 * 3600))
        return mf_fail(ctx, MF_E_INVALID, "poll_interval_s %ld is not in 0..604800",
                       o->poll_interval_s);
    if (o->version >= 6 && o->device_class) {
        const mf_agent_device_class *c = o->device_class;

        if ((c->tag && !mf_agent__name_ok(c->tag)) ||
            (c->accelerator && !mf_agent__name_ok(c->accelerator)))
            return mf_fail(ctx, MF_E_INVALID,
                           "device class tag and accelerator must be [A-Za-z0-9._-]{1,64}");
        if (c->ram_mb > MF_AGENT_CLASS_MB_MAX || c->storage_mb > MF_AGENT_CLASS_MB_MAX)
            return mf_fail(ctx, MF_E_INVALID, "device class RAM and storage are at most 2^40 MiB");
    }
    if (o->version >= 7 && o->download_buffer > MF_AGENT_DOWNLOAD_BUFFER_MAX)
        return mf_fail(ctx, MF_E_INVALID, "download_buffer %zu is not in 0..%u", o->download_buffer,
                       MF_AGENT_DOWNLOAD_BUFFER_MAX);
    if (o->n_models < 1 || o->n_models > MF_AGENT_MAX_MODELS || !o->models)
        return mf_fail(ctx, MF_E_INVALID, "%zu models tracked, expected 1..%d", o->n_models,
                       MF_AGENT_MAX_MODELS);
    for (size_t i = 0; i < o->n_models; i++) {
        if (!mf_agent__name_ok(o->models[i]))
            return mf_fail(ctx, MF_E_INVALID, "model name \"%s\" is not [A-Za-z0-9._-]{1,64}",
                           o->models[i]);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(o->models[i], o->models[j]) == 0)
                return mf_fail(ctx, MF_E_INVALID, "model %s listed twice", o->models[i]);
        }
    }
    return MF_OK;
}

/* Copies the option strings; the server URL loses its trailing slashes. */
static int copy_strings(mf_agent *a, const mf_agent_options *o)
{
    size_t n;

    a->server_url = mf_strdup(&a->ctx.alloc, o->server_url);
    a->device_id = mf_strdup(&a->ctx.alloc, o->device_id);
    a->state_dir = mf_strdup(&a->ctx.alloc, o->state_dir);
    if (o->enrollment_token)
        a->enroll_token = mf_strdup(&a->ctx.alloc, o->enrollment_token);
    if (o->ca_file)
        a->ca_file = mf_strdup(&a->ctx.alloc, o->ca_file);
    if (!a->server_url || !a->device_id || !a->state_dir ||
        (o->enrollment_token && !a->enroll_token) || (o->ca_file && !a->ca_file))
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory for the agent options");
    n = strlen(a->server_url);
    while (n > 0 && a->server_url[n - 1] == '/')
        a->server_url[--n] = '\0';
    return MF_OK;
}

/* Picks up an interrupted download's verified progress from storage (status of a fresh
 * or control handle); a missing or unreadable record just means "none". */
static void load_progress(mf_agent *a, struct agent_model *m)
{
    static const char *const suffix[] = {".part", ".delta"};
    char slot = m->state.active.slot == 'a' ? 'b' : 'a';

    m->dl_done = m->dl_total = 0;
    m->dl_kind[0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        char leaf[24], name[MF_AGENT_STORE_NAME_MAX];
        struct mf_agent_progress pr;

        (void)snprintf(leaf, sizeof(leaf), "slot-%c%s", slot, suffix[i]);
        if (mf_agent__store_name(a, name, m->name, leaf) >= 0 &&
            mf_agent__progress_load(a, &pr, name) >= 0) {
            m->dl_done = pr.verified;
            m->dl_total = pr.size;
            (void)snprintf(m->dl_kind, sizeof(m->dl_kind), "%s", i ? "delta" : "model");
        }
    }
    mf_ctx__clear(&a->ctx);
    mf_agent__fallback_load(a, m);
}

int mf_agent_reload(mf_agent *a)
{
    mf_ctx__clear(&a->ctx);
    for (size_t i = 0; i < a->n_models; i++) {
        int err = mf_agent__state_load(a, &a->models[i]);

        if (err < 0)
            return err;
        load_progress(a, &a->models[i]);
    }
    return MF_OK;
}

static int setup_models(mf_agent *a, const mf_agent_options *o)
{
    a->n_models = o->n_models;
    a->models = mf_calloc(&a->ctx.alloc, o->n_models, sizeof(*a->models));
    a->model_names = mf_calloc(&a->ctx.alloc, o->n_models, sizeof(*a->model_names));
    a->assignments = mf_calloc(&a->ctx.alloc, o->n_models, sizeof(*a->assignments));
    if (!a->models || !a->model_names || !a->assignments)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory for %zu models", o->n_models);
    for (size_t i = 0; i < o->n_models; i++) {
        struct agent_model *m = &a->models[i];
        int err;

        memcpy(m->name, o->models[i], strlen(o->models[i]) + 1);
        a->model_names[i] = m->name;
        m->offload = o->version >= 3 && o->offloads ? o->offloads[i] : NULL;
        err = mf_agent__state_load(a, m);
        if (err < 0)
            return err;
        load_progress(a, m);
    }
    return MF_OK;
}

static int setup(mf_agent *a, const mf_agent_options *o)
{
    struct mf_http_config hc = {
        .connect_timeout_ms = o->connect_timeout_ms,
        .request_timeout_ms = o->request_timeout_ms,
        .low_speed_bytes = o->stall_bytes_per_s,
        .low_speed_time_s = o->stall_timeout_s,
        .max_body = o->max_json_body ? o->max_json_body : MF_AGENT_DEFAULT_MAX_JSON,
    };
    int err;

    /* A version-1 port table ends before `truncate`: copy only what the port owns. */
    memcpy(&a->plat, o->platform,
           o->platform->version >= 2 ? sizeof(a->plat) : offsetof(mf_platform_ops, truncate));
    a->ready_fn = o->ready_fn;
    a->telemetry = o->version >= 3 ? o->telemetry : NULL;
    a->ready_payload = o->ready_payload;
    a->max_unconfirmed_starts = 3;
    a->retry_base_ms = 2000;
    a->retry_max_ms = 600000;
    a->max_patch_window = MF_AGENT_DEFAULT_PATCH_WINDOW;
    if (o->version >= 2) {
        a->health_fn = o->health_fn;
        a->health_payload = o->health_payload;
        a->progress_fn = o->progress_fn;
        a->progress_payload = o->progress_payload;
        a->max_unconfirmed_starts = o->max_unconfirmed_starts ? o->max_unconfirmed_starts : 1;
        a->metered = o->metered;
        a->max_recv_bytes_per_s = o->max_recv_bytes_per_s;
        a->retry_base_ms = o->retry_base_ms > 0 ? o->retry_base_ms : 0;
        a->retry_max_ms = o->retry_max_ms > 0 ? o->retry_max_ms : 600000;
        a->max_patch_window = o->max_patch_window;
        a->control_only = o->control_only;
    }
    a->own_poll_interval_s = o->version >= 5 ? o->poll_interval_s : 0;
    a->idle_fn = o->version >= 5 ? o->idle_fn : NULL;
    a->idle_payload = o->version >= 5 ? o->idle_payload : NULL;
    if (o->version >= 6 && o->device_class) {
        const mf_agent_device_class *c = o->device_class;

        a->has_class = 1;
        (void)snprintf(a->class_tag, sizeof(a->class_tag), "%s", c->tag ? c->tag : "");
        (void)snprintf(a->class_accel, sizeof(a->class_accel), "%s",
                       c->accelerator ? c->accelerator : "");
        a->class_ram_mb = c->ram_mb;
        a->class_storage_mb = c->storage_mb;
        a->class_int8 = c->int8 != 0;
        a->class_fp16 = c->fp16 != 0;
    }
    a->download_buffer = o->version >= 7 ? o->download_buffer : 0;
    a->window_start_min = a->window_end_min = -1;
    err = copy_strings(a, o);
    if (err >= 0) {
        hc.ca_file = a->ca_file;
        err = mf_http__init(&a->http, &a->ctx, &hc);
    }
    if (err >= 0)
        err = setup_models(a, o);
    if (err >= 0)
        err = mf_agent__trust_open(a, o->trust_root, o->trust_root_len);
    if (err >= 0)
        err = mf_agent__credential_load(a);
    if (err >= 0)
        err = mf_agent__degrade_open(a, o);
    if (err >= 0)
        err = mf_agent__offload_open(a, o);
    if (err >= 0)
        mf_agent__offload_credential(a); /* the app's own handles (offloads) too */
    if (err >= 0 && !a->control_only)
        err = mf_agent__count_start(a);
    return err;
}

/* A failed constructor's message goes to the caller's error buffer (options version 4) and
 * to log_fn. */
static int new_failed(const mf_agent_options *opts, struct mf_ctx *ctx, int err)
{
    if (opts->version < 4)
        return mf_ctx__fail_new(ctx, NULL, 0, err);
    return mf_ctx__fail_new(ctx, opts->errbuf, opts->errbuf_size, err);
}

int mf_agent_new(mf_agent **out, const mf_agent_options *opts)
{
    struct mf_ctx boot;
    mf_agent *a;
    int err;

    *out = NULL;
    mf_ctx__init(&boot, opts->allocator, opts->log_fn, opts->log_payload, "agent");
    err = check_options(&boot, opts);
    if (err < 0)
        return new_failed(opts, &boot, err);
    a = mf_alloc(opts->allocator, sizeof(*a));
    if (!a)
        return new_failed(opts, &boot, mf_fail(&boot, MF_E_NOMEM, "no memory for the agent"));
    memset(a, 0, sizeof(*a));
    a->ctx = boot;
    err = setup(a, opts);
    if (err < 0) {
        err = new_failed(opts, &a->ctx, err);
        mf_agent_free(a);
        return err;
    }
    *out = a;
    return MF_OK;
}

static void free_secret(mf_agent *a, char *s)
{
    if (s) {
        mf_secure_zero(s, strlen(s));
        mf_free(&a->ctx.alloc, s);
    }
}

void mf_agent_free(mf_agent *a)
{
    if (!a)
        return;
    if (a->assignments)
        mf_agent__checkin_drop(a);
    if (a->models)
        mf_agent__offload_close(a);
    mf_agent__degrade_close(a);
    mf_trust_free(a->trust);
    mf_http__cleanup(&a->http);
    mf_secure_zero(a->credential, sizeof(a->credential));
    free_secret(a, a->enroll_token);
    mf_free(&a->ctx.alloc, a->server_url);
    mf_free(&a->ctx.alloc, a->device_id);
    mf_free(&a->ctx.alloc, a->state_dir);
    mf_free(&a->ctx.alloc, a->ca_file);
    mf_free(&a->ctx.alloc, a->models);
    mf_free(&a->ctx.alloc, a->model_names);
    mf_free(&a->ctx.alloc, a->assignments);
    mf_free(&a->ctx.alloc, a);
}

static struct agent_model *find_model(const mf_agent *a, const char *name)
{
    for (size_t i = 0; i < a->n_models; i++) {
        if (strcmp(a->models[i].name, name) == 0)
            return &a->models[i];
    }
    return NULL;
}

/*
 * Records a refused assignment or failed install and reports it as "failed" with its
 * message as detail; the report's own failure is only logged so the first message
 * survives for mf_agent_errmsg(). The running model is untouched.
 */
static int fail_assignment(mf_agent *a, struct agent_model *m, const struct mf_agent_assignment *as,
                           int err)
{
    m->last_error = err;
    m->up_to_date = 0;
    memcpy(m->last_errmsg, a->ctx.errmsg, sizeof(m->last_errmsg));
    MF_LOG_ERR(&a->ctx, "model %s: %s", m->name, m->last_errmsg);
    mf_agent__telemetry_install(a, as->model, as->version, 0);
    if (mf_agent__report(a, as->model, as->version, as->sha256, "failed", m->last_errmsg) < 0)
        MF_LOG_WARN(&a->ctx, "%s", a->ctx.errmsg);
    memcpy(a->ctx.errmsg, m->last_errmsg, sizeof(m->last_errmsg));
    return err;
}

/* The server's device view shows a download waiting for the install window as the
 * model's state "pending_install" (docs/protocol.md, "POST /v1/report"), once. */
static void report_deferred(mf_agent *a, struct agent_model *m,
                            const struct mf_agent_assignment *as)
{
    char detail[128];

    if (m->deferred_reported)
        return;
    (void)snprintf(detail, sizeof(detail), "install window %02d:%02d-%02d:%02d UTC; running %s",
                   a->window_start_min / 60, a->window_start_min % 60, a->window_end_min / 60,
                   a->window_end_min % 60, m->state.active.slot ? m->state.active.version : "none");
    if (mf_agent__report(a, as->model, as->version, as->sha256, "pending_install", detail) < 0)
        MF_LOG_WARN(&a->ctx, "%s (reported again at the next step)", a->ctx.errmsg);
    else
        m->deferred_reported = 1;
}

/* Installs one verified assignment and records the outcome. */
static int apply_assignment(mf_agent *a, struct agent_model *m,
                            const struct mf_agent_assignment *as)
{
    int deferred = 0;
    int err;

    if (mf_agent__retry_waiting(a, m)) {
        MF_LOG_INFO(&a->ctx, "model %s: %s waits for its retry time", m->name, as->version);
        m->up_to_date = 0;
        return MF_OK;
    }
    if (m->deferred && strcmp(m->deferred_sha256, as->sha256) != 0) {
        m->deferred = 0; /* another release now: the report of the old one is stale */
        m->deferred_reported = 0;
    }
    err = mf_agent__install(&deferred, a, m, as);
    if (err < 0) {
        mf_agent__retry_failed(a, m);
        return fail_assignment(a, m, as, err);
    }
    if (deferred) {
        mf_agent__retry_ok(m);
        m->up_to_date = 0;
        report_deferred(a, m, as);
        return MF_OK;
    }
    m->deferred_reported = 0;
    mf_agent__retry_ok(m);
    m->last_error = MF_OK;
    m->last_errmsg[0] = '\0';
    m->dl_done = m->dl_total = 0;
    m->up_to_date = !m->report_rollback;
    m->report_pending = !m->report_rollback;
    return MF_OK;
}

/* Sends a pending "installed" report; a failure keeps it pending for the next step. */
static int send_pending_report(mf_agent *a, struct agent_model *m,
                               const struct mf_agent_assignment *as)
{
    int err;

    if (!m->report_pending)
        return MF_OK;
    err = mf_agent__report(a, as->model, as->version, as->sha256, "installed", "");
    if (err < 0)
        return err;
    m->report_pending = 0;
    mf_agent__telemetry_install(a, as->model, as->version, 1);
    return MF_OK;
}

/* Reports the newest rollback of `m` as a failure of the abandoned version. */
static int send_rollback_report(mf_agent *a, struct agent_model *m)
{
    const struct mf_agent_rolled_back *rb = &m->state.rolled_back[0];
    char detail[MF_AGENT_REASON_MAX + 16];
    int err;

    if (!m->report_rollback || m->state.n_rolled_back == 0)
        return MF_OK;
    (void)snprintf(detail, sizeof(detail), "rolled back: %s", rb->reason);
    err = mf_agent__report(a, m->name, rb->version, rb->sha256, "failed", detail);
    if (err >= 0)
        mf_agent__telemetry_rollback(a, m->name, rb->version, rb->reason);
    if (err >= 0) {
        struct mf_agent_model_state *next = mf_agent__state_copy(a, m);

        if (!next)
            return MF_E_NOMEM;
        next->rolled_back[0].reported = 1;
        err = mf_agent__state_save(a, m, next);
        mf_ctx__free(&a->ctx, next);
    }
    if (err < 0)
        return err;
    m->report_rollback = 0;
    return MF_OK;
}

/* Keeps the envelope of the release the active slot runs when the state does not name it
 * yet (a state file of an older agent), so later check-ins can leave it out. Best effort:
 * without it the device is only sent the envelope again. */
static void keep_release(mf_agent *a, struct agent_model *m, const struct mf_agent_assignment *as)
{
    struct mf_agent_model_state *next;
    char digest[MF_SHA256_HEX_LEN + 1];

    if (as->release_held)
        return;
    mf_hex__encode(digest, as->verified->release_sha256, MF_SHA256_LEN);
    if (strcmp(m->state.active.release, digest) == 0)
        return;
    next = mf_agent__state_copy(a, m);
    if (next && mf_agent__release_keep(next->active.release, a, m, next->active.slot, as) >= 0 &&
        mf_agent__state_save(a, m, next) >= 0) {
        mf_ctx__free(&a->ctx, next);
        return;
    }
    mf_ctx__free(&a->ctx, next);
    MF_LOG_WARN(&a->ctx, "model %s: %s (its release is sent again)", m->name, a->ctx.errmsg);
    mf_ctx__clear(&a->ctx);
}

static int step_assignments(mf_agent *a, size_t n)
{
    int first = MF_OK;

    for (size_t i = 0; i < a->n_models; i++)
        a->models[i].up_to_date = 1; /* nothing assigned: nothing to do */
    for (size_t i = 0; i < n; i++) {
        struct mf_agent_assignment *as = &a->assignments[i];
        struct agent_model *m = find_model(a, as->model);
        /* Nothing is downloaded before the chain verifies, in the order the director
         * numbered the assignments; a release left out is the one kept for the active slot. */
        int err = as->release_held ? mf_agent__release_load(a, m, as) : MF_OK;

        if (err >= 0)
            err = mf_agent__trust_verify(a, as);
        if (err < 0 && as->release_held)
            m->state.active.release[0] = '\0'; /* the kept one failed: ask for it again */
        if (err < 0) {
            m->report_pending = 0;
            err = fail_assignment(a, m, as, err);
        } else if ((!m->state.active.slot ||
                    !mf_ct_memeq(m->state.active.sha256, as->sha256, MF_SHA256_HEX_LEN)) &&
                   mf_agent__held(a, m, as)) {
            /* Pinned elsewhere or rolled back: staying is the intended state. */
            m->release_sequence = as->verified->release->sequence;
            m->up_to_date = 1;
            err = MF_OK;
        } else if (!m->state.active.slot ||
                   !mf_ct_memeq(m->state.active.sha256, as->sha256, MF_SHA256_HEX_LEN)) {
            m->release_sequence = as->verified->release->sequence;
            m->up_to_date = 0;
            m->report_pending = 0;
            err = apply_assignment(a, m, as);
        } else {
            m->held = 0;
            if (m->deferred_reported) /* the device view said "pending_install" */
                m->report_pending = 1;
            m->deferred = m->deferred_reported = 0;
            /* Runs the assigned release already; a floor not yet recorded (a power cut
             * between install and commit) is recorded now. */
            m->release_sequence = as->verified->release->sequence;
            err = mf_agent__trust_commit(a, as->verified->release);
            if (err >= 0)
                keep_release(a, m, as);
        }
        if (err >= 0)
            err = send_pending_report(a, m, as);
        mf_agent__fallback_sync(a, m, as); /* beside what runs now; never fails the step */
        if (err < 0 && first == MF_OK)
            first = err;
    }
    for (size_t i = 0; i < a->n_models; i++) {
        int err = send_rollback_report(a, &a->models[i]);

        if (err < 0 && first == MF_OK)
            first = err;
    }
    return first;
}

static int step(mf_agent *a)
{
    size_t n = 0;
    int err;

    /* The way down first: it never waits for the network. */
    if (a->dg && mf_agent_squeeze(a) < 0) {
        MF_LOG_WARN(&a->ctx, "%s", a->ctx.errmsg);
        mf_ctx__clear(&a->ctx);
    }
    if (!a->credential[0]) {
        err = mf_agent__enroll(a);
        if (err < 0)
            return err;
        mf_agent__offload_credential(a); /* before the check-in that brings their policy */
    }
    err = mf_agent__checkin(a, &n);
    if (err == MF_E_AUTH && a->enroll_token) {
        /* Revoked or lost on the server: enroll again at the next step. */
        MF_LOG_WARN(&a->ctx, "credential refused; will re-enroll");
        mf_agent__credential_drop(a);
        mf_agent__offload_credential(a);
    }
    if (err < 0)
        return err;
    mf_agent__offload_answer(a);
    mf_agent__degrade_answer(a); /* the server holds the switches it carried */
    if (a->telemetry)
        mf_telemetry_ack(a->telemetry); /* the server holds these totals now */
    err = step_assignments(a, n);
    mf_agent__offload_versions(a);
    return err;
}

int mf_agent_step(mf_agent *a)
{
    int err;

    mf_ctx__clear(&a->ctx);
    err = step(a);
    /* The next step is a poll interval away, longer than keep-alive usefully lasts: hold
     * no connection (nor libcurl's descriptors) meanwhile, on the device or the server. */
    mf_http__cleanup(&a->http);
    return err;
}

/*
 * The output structs the agent writes into app memory (status, counters, trust state) open
 * with `unsigned int struct_version` and only ever grow by appending. `ends[v - 1]` is where
 * version v ends: an app built against an older header passes a shorter struct, and the
 * newer fields would land past its end. Zeroes the caller's version and sets it; a version
 * this library does not know (a newer header, or garbage) is refused with nothing written.
 */
static int out_init(void *out, const size_t *ends, size_t versions, unsigned int version)
{
    if (version < 1 || version > versions)
        return MF_E_INVALID;
    memset(out, 0, ends[version - 1]);
    memcpy(out, &version, sizeof(version));
    return MF_OK;
}

static const size_t status_ends[MF_AGENT_STATUS_VERSION] = {
    offsetof(mf_agent_model_status, pending), offsetof(mf_agent_model_status, install_deferred),
    offsetof(mf_agent_model_status, fallback_installed), sizeof(mf_agent_model_status)};
static const size_t counters_ends[MF_AGENT_COUNTERS_VERSION] = {sizeof(mf_agent_counters)};
static const size_t trust_ends[MF_AGENT_TRUST_STATE_VERSION] = {sizeof(mf_agent_trust_state)};

int mf_agent_status_init(mf_agent_model_status *st, unsigned int version)
{
    return out_init(st, status_ends, MF_AGENT_STATUS_VERSION, version);
}

int mf_agent_counters_init(mf_agent_counters *c, unsigned int version)
{
    return out_init(c, counters_ends, MF_AGENT_COUNTERS_VERSION, version);
}

int mf_agent_trust_state_init(mf_agent_trust_state *t, unsigned int version)
{
    return out_init(t, trust_ends, MF_AGENT_TRUST_STATE_VERSION, version);
}

/* Only the fields of the caller's version are written: an app built against an older
 * header passes a shorter struct, and the newer fields would land past its end. */
int mf_agent_status(mf_agent_model_status *out, const mf_agent *a, const char *model)
{
    const struct agent_model *m = find_model(a, model);
    const struct mf_agent_slot *s;
    unsigned int version = out->struct_version;

    if (mf_agent_status_init(out, version) < 0)
        return MF_E_INVALID;
    if (!m)
        return MF_E_NOTFOUND;
    s = &m->state.active;
    out->installed = s->slot != 0;
    memcpy(out->version, s->version, sizeof(out->version));
    memcpy(out->sha256, s->sha256, sizeof(out->sha256));
    out->size = s->size;
    out->slot = s->slot;
    out->up_to_date = m->up_to_date;
    out->last_error = m->last_error;
    memcpy(out->last_errmsg, m->last_errmsg, sizeof(out->last_errmsg));
    out->security_floor = mf_trust_floor(a->trust, m->name);
    out->release_sequence = m->release_sequence;
    if (version < 2)
        return MF_OK;
    out->pending = m->state.pending;
    out->unconfirmed_starts = m->state.starts;
    memcpy(out->pinned, m->state.pin, sizeof(out->pinned));
    memcpy(out->previous_version, m->state.previous.version, sizeof(out->previous_version));
    out->previous_slot = m->state.previous.slot;
    out->held = m->held;
    memcpy(out->hold_reason, m->hold_reason, sizeof(out->hold_reason));
    out->rolled_back = m->state.n_rolled_back;
    if (m->state.n_rolled_back)
        memcpy(out->last_rollback, m->state.rolled_back[0].reason, sizeof(out->last_rollback));
    out->download_done = m->dl_done;
    out->download_total = m->dl_total;
    memcpy(out->download_kind, m->dl_kind, sizeof(out->download_kind));
    if (version < 3)
        return MF_OK;
    out->install_deferred = m->deferred;
    if (m->deferred)
        memcpy(out->deferred_version, m->deferred_version, sizeof(out->deferred_version));
    out->window_start_min = a->window_start_min;
    out->window_end_min = a->window_end_min;
    if (version < 4)
        return MF_OK;
    out->fallback_installed = mf_agent__fallback_usable(a, m);
    if (out->fallback_installed) {
        const struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);

        memcpy(out->fallback_variant, fb->variant, sizeof(out->fallback_variant));
        out->fallback_size = fb->size;
    }
    if (a->dg) {
        const mf_degrade_status *d = mf_degrade_status_get(a->dg->ctl);

        out->degraded = d->degraded && out->fallback_installed;
        out->degrade_reason = d->reason;
    }
    return MF_OK;
}

int mf_agent_offload(mf_offload **out, const mf_agent *a, const char *model)
{
    const struct agent_model *m = find_model(a, model);

    *out = m ? m->offload : NULL;
    return *out ? MF_OK : MF_E_NOTFOUND;
}

void mf_agent_set_metered(mf_agent *a, int metered)
{
    a->metered = metered != 0;
}

int mf_agent_stats(mf_agent_counters *out, const mf_agent *a)
{
    if (mf_agent_counters_init(out, out->struct_version) < 0)
        return MF_E_INVALID;
    /* ---- version 1 ---- */
    out->blob_requests = a->stats.requests;
    out->blob_bytes = a->stats.bytes_received;
    out->delta_installs = a->stats.delta_installs;
    out->full_installs = a->stats.full_installs;
    out->delta_fallbacks = a->stats.delta_fallbacks;
    out->resumes = a->stats.resumes;
    return MF_OK;
}

int mf_agent_trust_status(mf_agent_trust_state *out, const mf_agent *a)
{
    if (mf_agent_trust_state_init(out, out->struct_version) < 0)
        return MF_E_INVALID;
    /* ---- version 1 ---- */
    out->root_version = mf_trust_root_version(a->trust);
    out->keys_version = mf_trust_keys_version(a->trust);
    out->assignment_sequence = mf_trust_assignment_sequence(a->trust);
    return MF_OK;
}

long mf_agent_poll_interval_s(const mf_agent *a)
{
    long long retry_ms = mf_agent__retry_next_ms(a);
    long wait_s = retry_ms < 0 ? 0 : (long)((retry_ms + 999) / 1000);

    /* A retry due before the next regular check-in wakes the caller earlier (>= 1 s). */
    if (a->poll_interval_s > 0 && retry_ms >= 0 && wait_s < a->poll_interval_s)
        return wait_s > 0 ? wait_s : 1;
    return a->poll_interval_s;
}

const char *mf_agent_errmsg(const mf_agent *a)
{
    return mf_ctx__errmsg(&a->ctx);
}
