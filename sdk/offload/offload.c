/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload handle: options, policy installation and caching, model version changes and
 * mf_offload_ask(), which ties score -> decision -> (teacher | queue | local) together.
 * The network half lives in offload_ask.c and offload_uplink.c.
 */
#include "mf_offload_int.h"
#include "mf_offload_agent.h"
#include "mf/ct.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Bytes of mf_offload_options that a caller of `version` owns (fields are only appended);
 * 0 for a version this library does not know. */
static size_t options_size(unsigned int version)
{
    if (version == 1)
        return offsetof(mf_offload_options, errbuf);
    if (version == MF_OFFLOAD_OPTIONS_VERSION)
        return sizeof(mf_offload_options);
    return 0;
}

int mf_offload_options_init(mf_offload_options *opts, unsigned int version)
{
    if (options_size(version) == 0)
        return MF_E_INVALID;
    memset(opts, 0, options_size(version));
    opts->version = version;
    opts->max_input_bytes = 64 * 1024;
    opts->queue_max_bytes = 4 * 1024 * 1024;
    opts->queue_ttl_s = 7 * 24 * 3600;
    opts->segment_bytes = 64 * 1024;
    opts->sync_every = 1;
    opts->dedup_window = 256;
    opts->batch_max_samples = 32;
    opts->batch_max_bytes = 256 * 1024;
    opts->backoff_min_ms = 1000;
    opts->backoff_max_ms = 300000;
    opts->connect_timeout_ms = 10000;
    opts->request_timeout_ms = 30000;
    return MF_OK;
}

static int check_options(struct mf_ctx *ctx, const mf_offload_options *o)
{
    const mf_platform_ops *p = o->platform;

    if (options_size(o->version) == 0)
        return mf_fail(ctx, MF_E_INVALID, "offload options version %u, expected 1..%d", o->version,
                       MF_OFFLOAD_OPTIONS_VERSION);
    if (!mf_offload__name_ok(o->model))
        return mf_fail(ctx, MF_E_INVALID, "offload model name is not [A-Za-z0-9._-]{1,64}");
    if (!mf_offload__name_ok(o->model_version))
        return mf_fail(ctx, MF_E_INVALID, "offload model version is not [A-Za-z0-9._-]{1,64}");
    if (!p || !p->random || !p->monotonic_ms || !p->wall_clock_s || !p->open || !p->read_at ||
        !p->write || !p->sync || !p->close || !p->size || !p->rename || !p->remove || !p->mkdir)
        return mf_fail(ctx, MF_E_INVALID, "offload needs a complete platform port");
    if (o->server_url && strlen(o->server_url) > 512)
        return mf_fail(ctx, MF_E_INVALID, "offload server URL longer than 512 bytes");
    if (o->credential && strlen(o->credential) >= MF_OFFLOAD_CREDENTIAL_MAX)
        return mf_fail(ctx, MF_E_INVALID, "offload credential longer than %d bytes",
                       MF_OFFLOAD_CREDENTIAL_MAX - 1);
    if (o->max_input_bytes == 0 || o->max_input_bytes > 16u * 1024 * 1024)
        return mf_fail(ctx, MF_E_INVALID, "max_input_bytes %zu not in 1..16 MiB",
                       o->max_input_bytes);
    if (o->segment_bytes < 1024 || o->batch_max_samples == 0 || o->backoff_min_ms == 0 ||
        o->backoff_max_ms < o->backoff_min_ms)
        return mf_fail(ctx, MF_E_INVALID, "offload queue/batch/backoff options out of range");
    return MF_OK;
}

static char *join_url(mf_offload *o, const char *route)
{
    struct mf_dynbuf b;

    mf_dynbuf__init(&b, &o->ctx.alloc, strlen(o->server_url) + strlen(route) + 1);
    if (mf_dynbuf__appendf(&b, "%s%s", o->server_url, route) < 0) {
        mf_dynbuf__free(&b);
        return NULL;
    }
    return (char *)mf_dynbuf__take(&b, NULL);
}

static int copy_strings(mf_offload *o, const mf_offload_options *opts)
{
    size_t n;

    memcpy(o->model, opts->model, strlen(opts->model) + 1);
    memcpy(o->model_version, opts->model_version, strlen(opts->model_version) + 1);
    memcpy(o->tele[0].model_version, o->model_version, sizeof(o->model_version));
    if (opts->credential)
        memcpy(o->credential, opts->credential, strlen(opts->credential) + 1);
    if (!opts->server_url)
        return MF_OK;
    o->server_url = mf_strdup(&o->ctx.alloc, opts->server_url);
    if (!o->server_url)
        return mf_fail(&o->ctx, MF_E_NOMEM, "no memory for the server URL");
    n = strlen(o->server_url);
    while (n > 0 && o->server_url[n - 1] == '/')
        o->server_url[--n] = '\0';
    o->ask_url = join_url(o, "/v1/offload/ask");
    o->batch_url = join_url(o, "/v1/offload/batch");
    if (!o->ask_url || !o->batch_url)
        return mf_fail(&o->ctx, MF_E_NOMEM, "no memory for the server URL");
    return MF_OK;
}

static int open_storage(mf_offload *o)
{
    struct mf_offload_queue_config qc;
    char dir[MF_OFFLOAD_STORE_NAME_MAX];
    const mf_platform_ops *p = &o->plat;
    int err;

    err = mf_offload__store_name(o, dir, "");
    if (err >= 0)
        err = p->mkdir(p->payload, "offload");
    if (err >= 0)
        err = p->mkdir(p->payload, dir);
    if (err < 0)
        return mf_fail(&o->ctx, err, "cannot create %s in the state dir", dir);
    qc.dir = dir;
    qc.max_bytes = o->opts.queue_max_bytes;
    qc.seg_bytes = o->opts.segment_bytes;
    if (qc.seg_bytes > qc.max_bytes / 4) /* eviction works in whole segments */
        qc.seg_bytes = (uint32_t)(qc.max_bytes / 4);
    qc.ttl_s = o->opts.queue_ttl_s;
    qc.sync_every = o->opts.sync_every;
    qc.dedup_window = o->opts.dedup_window;
    qc.max_record = o->max_record;
    if (qc.max_bytes < 2 * (o->max_record + 8))
        return mf_fail(&o->ctx, MF_E_INVALID,
                       "queue_max_bytes %llu holds fewer than two samples of %zu bytes",
                       (unsigned long long)qc.max_bytes, o->max_record);
    err = mf_offload__queue_open(&o->queue, &o->ctx, p, &qc);
    if (err < 0)
        return err;
    return mf_offload__policy_cache_load(o);
}

static int offload_init(mf_offload *o, const mf_offload_options *opts)
{
    uint8_t seed[8];
    int err;

    err = check_options(&o->ctx, opts);
    if (err < 0)
        return err;
    /* A version-1 caller's struct ends before the error buffer: copy only what it owns. */
    memcpy(&o->opts, opts, options_size(opts->version));
    o->opts.model = o->opts.model_version = o->opts.server_url = o->opts.credential = NULL;
    o->opts.app_limits = NULL;
    o->plat = *opts->platform;
    o->link = MF_OFFLOAD_LINK_UNMETERED;
    if (opts->app_limits) {
        o->limits = *opts->app_limits;
        o->has_limits = 1;
    }
    err = copy_strings(o, opts);
    if (err < 0)
        return err;
    o->max_record =
        mf_offload__record_size(opts->max_input_bytes, MF_OFFLOAD_MAX_CLASSES, MF_OFFLOAD_NAME_MAX);
    o->scratch = mf_ctx__alloc(&o->ctx, o->max_record);
    if (!o->scratch)
        return mf_fail(&o->ctx, MF_E_NOMEM, "no memory for a %zu-byte sample buffer",
                       o->max_record);
    err = o->plat.random(o->plat.payload, seed, sizeof(seed));
    if (err < 0)
        return mf_fail(&o->ctx, err, "platform randomness failed");
    o->rng = mf_offload__get_u64(seed);
    return open_storage(o);
}

/* A failed constructor's message goes to the caller's error buffer (options version 2) and
 * to log_fn. */
static int new_failed(const mf_offload_options *opts, struct mf_ctx *ctx, int err)
{
    if (opts->version < 2)
        return mf_ctx__fail_new(ctx, NULL, 0, err);
    return mf_ctx__fail_new(ctx, opts->errbuf, opts->errbuf_size, err);
}

/*
 * No handle to hold the message: a context of its own, in a frame of its own (a struct
 * mf_ctx is an error buffer; inlined into mf_offload_new() with offload_init() it went over
 * the 512-byte stack bound on AArch64: 528).
 */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int
new_nomem(const mf_offload_options *opts, const mf_allocator *a)
{
    struct mf_ctx boot;

    mf_ctx__init(&boot, a, opts->log_fn, opts->log_payload, "offload");
    return new_failed(opts, &boot, mf_fail(&boot, MF_E_NOMEM, "no memory for the handle"));
}

int mf_offload_new(mf_offload **out, const mf_offload_options *opts)
{
    const mf_allocator *a = opts->allocator ? opts->allocator : mf_allocator_default();
    mf_offload *o;
    int err;

    *out = NULL;
    o = mf_calloc(a, 1, sizeof(*o));
    if (!o)
        return new_nomem(opts, a);
    mf_ctx__init(&o->ctx, a, opts->log_fn, opts->log_payload, "offload");
    err = offload_init(o, opts);
    if (err < 0) {
        err = new_failed(opts, &o->ctx, err);
        mf_offload_free(o);
        return err;
    }
    *out = o;
    return MF_OK;
}

void mf_offload_free(mf_offload *o)
{
    mf_allocator a;

    if (!o)
        return;
    mf_offload__queue_close(&o->queue);
    if (o->http_ready)
        mf_http__cleanup(&o->http);
    mf_secure_zero(o->credential, sizeof(o->credential));
    mf_ctx__free(&o->ctx, o->server_url);
    mf_ctx__free(&o->ctx, o->ask_url);
    mf_ctx__free(&o->ctx, o->batch_url);
    mf_ctx__free(&o->ctx, o->scratch);
    a = o->ctx.alloc;
    mf_free(&a, o);
}

const char *mf_offload_errmsg(const mf_offload *o)
{
    return mf_ctx__errmsg(&o->ctx);
}

int mf_offload_set_policy_json(mf_offload *o, const char *json, size_t len)
{
    mf_offload_policy pol;
    int err;

    mf_ctx__clear(&o->ctx);
    err = mf_offload__policy_parse(&o->ctx, &pol, json, len);
    if (err < 0)
        return err;
    mf_offload__policy_apply(o, &pol);
    return mf_offload__policy_cache_write(o, json, len);
}

const mf_offload_policy *mf_offload_policy_get(const mf_offload *o)
{
    return o->has_policy ? &o->policy : NULL;
}

/* Swaps two telemetry slots in small chunks (a whole slot is too big for a device stack). */
static void swap_slots(mf_offload_telemetry *a, mf_offload_telemetry *b)
{
    uint8_t *pa = (uint8_t *)a, *pb = (uint8_t *)b, tmp[64];

    for (size_t off = 0; off < sizeof(*a); off += sizeof(tmp)) {
        size_t n = sizeof(*a) - off < sizeof(tmp) ? sizeof(*a) - off : sizeof(tmp);

        memcpy(tmp, pa + off, n);
        memcpy(pa + off, pb + off, n);
        memcpy(pb + off, tmp, n);
    }
}

int mf_offload_set_model_version(mf_offload *o, const char *version)
{
    int slot = MF_OFFLOAD_TELEMETRY_SLOTS - 1;

    if (!mf_offload__name_ok(version))
        return mf_fail(&o->ctx, MF_E_INVALID, "model version is not [A-Za-z0-9._-]{1,64}");
    if (strcmp(version, o->model_version) == 0)
        return MF_OK;
    /* Move the new version's slot (or the oldest, dropped) to the front. */
    for (int i = 0; i < MF_OFFLOAD_TELEMETRY_SLOTS; i++) {
        if (strcmp(o->tele[i].model_version, version) == 0) {
            slot = i;
            break;
        }
    }
    if (strcmp(o->tele[slot].model_version, version) != 0) {
        memset(&o->tele[slot], 0, sizeof(o->tele[slot]));
        memcpy(o->tele[slot].model_version, version, strlen(version) + 1);
    }
    for (; slot > 0; slot--)
        swap_slots(&o->tele[slot], &o->tele[slot - 1]);
    memcpy(o->model_version, version, strlen(version) + 1);
    memset(o->calib, 0, sizeof(o->calib));
    return MF_OK;
}

int mf_offload__set_credential(mf_offload *o, const char *credential)
{
    size_t n = credential ? strlen(credential) : 0;

    mf_secure_zero(o->credential, sizeof(o->credential));
    if (n >= sizeof(o->credential))
        return mf_fail(&o->ctx, MF_E_LIMIT, "offload credential longer than %d bytes",
                       MF_OFFLOAD_CREDENTIAL_MAX - 1);
    if (n)
        memcpy(o->credential, credential, n + 1);
    return MF_OK;
}

void mf_offload_set_link(mf_offload *o, mf_offload_link link)
{
    o->link = link;
}

float mf_offload__threshold(mf_offload *o)
{
    uint64_t n = 0;

    if (!o->has_policy)
        return -1.0f;
    if (o->policy.threshold >= 0.0f)
        return o->policy.threshold;
    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++)
        n += o->calib[i];
    if (o->policy.target_rate > 0.0f && n >= MF_OFFLOAD_MIN_QUANTILE_SAMPLES)
        return mf_offload_hist_quantile(o->calib, o->policy.target_rate);
    return -1.0f;
}

int mf_offload__record_fill(mf_offload *o, struct mf_offload_record *r, size_t *len_out,
                            const mf_offload_sample *s, int kind, int method, float score)
{
    struct mf_offload_record in;
    uint64_t a = mf_offload__rng_next(&o->rng), b = mf_offload__rng_next(&o->rng);
    int64_t now = o->plat.wall_clock_s(o->plat.payload);
    int err;

    memset(&in, 0, sizeof(in));
    in.kind = kind;
    in.method = method;
    in.output_kind = s->output_kind;
    in.n_classes = (uint32_t)s->n_classes;
    in.created_s = now < 0 ? -1 : now;
    in.hash = mf_offload__fnv1a64(s->input, s->input_len);
    (void)mf_offload__put_u64(in.id, a);
    (void)mf_offload__put_u64(in.id + 8, b);
    in.score = score;
    memcpy(in.model_version, o->model_version, sizeof(in.model_version));
    in.input = s->input;
    in.input_len = (uint32_t)s->input_len;
    err = mf_offload__record_encode(o->scratch, o->max_record, len_out, &in, s->output);
    if (err < 0)
        return mf_fail(&o->ctx, err, "sample does not fit the %zu-byte record buffer",
                       o->max_record);
    return mf_offload__record_decode(r, o->scratch, *len_out);
}
