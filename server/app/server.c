/* SPDX-License-Identifier: Apache-2.0 */
/* Starting and stopping the HTTP daemon over a data directory (see server.h). */
#include "app/server.h"

#include "director/director.h"
#include "blob/blob_gc.h"
#include "blob/blob_store.h"
#include "deltas/delta_worker.h"
#include "distill/job/distill_job.h"
#include "handlers/handlers.h"
#include "director/checkin_stage.h"
#include "director/checkin_batch.h"
#include "director/checkin_cache.h"
#include "http/http_credcache.h"
#include "http/http_conns.h"
#include "http/http_metrics.h"
#include "http/http_ratelimit.h"
#include "http/http_req.h"
#include "mf/ct.h"
#include "offload/offload_srv.h"
#include "rollout/rollout_ctl.h"
#include "store/store.h"
#include "webhooks/webhook_sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TLS_PEM_MAX (64u * 1024u)
/* Descriptors kept out of the connection budget: store, WAL, blobs being served or uploaded,
 * the delta worker's files, logs. */
#define FD_RESERVE 128u
/* Released blobs a node keeps answered (http_credcache.h): far more than the releases and
 * deltas any fleet downloads at once. */
#define RELEASED_CACHE_SLOTS 4096u

struct mf_server {
    mf_allocator alloc;
    struct MHD_Daemon *mhd;
    struct mf_httpd_env env;
    struct mf_metrics metrics;
    struct mf_dynbuf tls_cert, tls_key;   /* PEM text, alive as long as the daemon */
    struct mf_offload_jobs offload_jobs;  /* the label job kind's state, read by the worker */
    struct mf_distill_config distill_cfg; /* read once at start */
    struct mf_distill_jobs distill_jobs;  /* the distill job kind's state */
    struct mf_delta_worker *distill_worker;
    struct mf_httpd_conns conns;
    unsigned per_addr; /* the per-address cap in force (0: none) */
    uint16_t port;
    struct audit_keep {
        struct mf_store *store;
        int64_t keep_s, keep_rows;
        int64_t last; /* the worker thread's alone */
    } audit_keep;
    struct mf_webhook_sender *webhooks; /* NULL: this node sends none */
};

/* MHD's own diagnostics go to our log sink, not straight to stderr. */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    const struct mf_httpd_env *env = cls;
    char line[256];
    size_t n;

    if (!env->log_fn)
        return;
    (void)vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    env->log_fn(env->log_payload, MF_LOG_WARN, "mhd", line);
}

static int bound_port(uint16_t *out, struct mf_ctx *ctx, struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (!info || getsockname(info->listen_fd, (struct sockaddr *)&ss, &len) != 0)
        return mf_fail(ctx, MF_E_IO, "cannot read the bound port");
    if (ss.ss_family == AF_INET6)
        *out = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    else
        *out = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return MF_OK;
}

/* At start, when this node has no upload in flight (other nodes may: the grace period
 * covers them). A failure is logged, not fatal: orphans only take room. */
static void sweep_orphans(struct mf_server *s, struct mf_ctx *ctx)
{
    struct mf_blobgc_report rep;

    if (mf_blobgc__sweep(&rep, ctx, s->env.store, s->env.blob_root, mf_blob__clock_ms(),
                         s->env.blob_grace_s, 0, NULL, NULL) < 0)
        MF_LOG_WARN(ctx, "blob sweep: %s", mf_ctx__errmsg(ctx));
    else if (rep.removed)
        MF_LOG_INFO(ctx, "blob sweep: removed %lld orphan blob(s)", (long long)rep.removed);
}

/* The console's directory (docs/console.md): `dir` as given (it must be a directory), or the
 * install's share/modelferry/ui beside the program when there is one, else "" (none). */
static int ui_root(char *out, size_t size, struct mf_ctx *ctx, const char *dir)
{
    char exe[4096];
    struct stat st;
    ssize_t n;
    char *slash;
    int len;

    out[0] = '\0';
    if (dir) {
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return mf_fail(ctx, MF_E_NOTFOUND, "--ui-dir '%s' is not a directory", dir);
        len = snprintf(out, size, "%s", dir);
        return len < 0 || (size_t)len >= size ? mf_fail(ctx, MF_E_LIMIT, "--ui-dir too long")
                                              : MF_OK;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return MF_OK;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash)
        return MF_OK;
    *slash = '\0';
    len = snprintf(out, size, "%s/../share/modelferry/ui", exe);
    if (len < 0 || (size_t)len >= size || stat(out, &st) != 0 || !S_ISDIR(st.st_mode))
        out[0] = '\0';
    else
        MF_LOG_INFO(ctx, "web console at /ui/ from %s", out);
    return MF_OK;
}

static int open_store(struct mf_server *s, struct mf_ctx *ctx, const struct mf_server_options *o)
{
    char url[4200];
    int applied = 0, removed = 0, err, n;

    if (o->store_url)
        n = snprintf(url, sizeof(url), "%s", o->store_url);
    else
        n = snprintf(url, sizeof(url), "sqlite:%s/store.db", o->data_dir);
    if (n < 0 || (size_t)n >= sizeof(url))
        return mf_fail(ctx, MF_E_LIMIT, "store location too long");
    s->env.blob_grace_s = o->blob_grace_s > 0 ? o->blob_grace_s : MF_BLOBGC_GRACE_S;
    n = snprintf(s->env.blob_root, sizeof(s->env.blob_root), "%s/blobs", o->data_dir);
    if (n < 0 || (size_t)n >= sizeof(s->env.blob_root))
        return mf_fail(ctx, MF_E_LIMIT, "data directory path too long");
    err = ui_root(s->env.ui_root, sizeof(s->env.ui_root), ctx, o->ui_dir);
    if (err < 0)
        return err;
    err = mf_store__open(&s->env.store, ctx, url, 0);
    if (err == MF_E_NOTFOUND)
        return mf_fail(ctx, err, "no store in '%s': run mf-server init --data-dir %s first",
                       o->data_dir, o->data_dir);
    if (err == MF_OK)
        err = s->env.store->ops->migrate(&applied, s->env.store, ctx);
    if (err == MF_OK)
        err = mf_director__open(&s->env.director, ctx, o->data_dir);
    if (err == MF_OK)
        mf_director__set_batch(s->env.director, o->sign_batch);
    if (err == MF_OK)
        err = mf_ccache__new(&s->env.ccache, ctx);
    if (err == MF_OK)
        err =
            mf_checkin_batch__new(&s->env.checkins, ctx, s->env.store,
                                  o->checkin_batch ? o->checkin_batch : MF_STORE_CHECKIN_BATCH_MAX);
    if (err == MF_OK)
        err = mf_httpd__credcache_new(&s->env.creds, ctx, o->credential_cache);
    if (err == MF_OK)
        err = mf_httpd__credcache_new(&s->env.released, ctx, RELEASED_CACHE_SLOTS);
    if (err == MF_OK)
        err = mf_blob__ensure_dirs(ctx, s->env.blob_root);
    if (err == MF_OK)
        err = mf_blob__sweep_tmp(&removed, ctx, s->env.blob_root);
    if (err == MF_OK && (applied || removed))
        MF_LOG_INFO(ctx, "applied %d migration(s), removed %d stale upload(s)", applied, removed);
    if (err == MF_OK)
        sweep_orphans(s, ctx);
    return err;
}

/* Reads a PEM file (NUL-terminated, as MHD wants it) into `out`. */
static int read_pem(struct mf_dynbuf *out, const mf_allocator *alloc, struct mf_ctx *ctx,
                    const char *path)
{
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;
    int err = MF_OK;

    mf_dynbuf__init(out, alloc, TLS_PEM_MAX); /* the server's allocator: it outlives ctx */
    if (!f)
        return mf_fail(ctx, MF_E_IO, "cannot open TLS file '%s'", path);
    while (err == MF_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        err = mf_dynbuf__append(out, chunk, n);
    if (err == MF_OK)
        err = mf_dynbuf__append(out, "", 1);
    (void)fclose(f);
    if (err < 0)
        return mf_fail(ctx, err, "TLS file '%s' is larger than %u bytes", path, TLS_PEM_MAX - 1);
    return MF_OK;
}

static int load_tls(struct mf_server *s, struct mf_ctx *ctx, const struct mf_server_options *o)
{
    int err;

    if (!o->tls_cert && !o->tls_key)
        return MF_OK;
    if (!o->tls_cert || !o->tls_key)
        return mf_fail(ctx, MF_E_INVALID, "TLS needs both a certificate and a key");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return mf_fail(ctx, MF_E_STATE, "this libmicrohttpd was built without TLS support");
    err = read_pem(&s->tls_cert, &s->alloc, ctx, o->tls_cert);
    if (err == MF_OK)
        err = read_pem(&s->tls_key, &s->alloc, ctx, o->tls_key);
    return err;
}

/* Teachers and policies from the offload configuration file. */
static int start_offload(struct mf_server *s, struct mf_ctx *ctx, const char *path)
{
    struct mf_offload_config *cfg = mf_calloc(&ctx->alloc, 1, sizeof(*cfg));
    int err;

    if (!cfg)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading the offload config");
    err = mf_offsrv__config_load(cfg, ctx, path);
    if (err == MF_OK) {
        /* The server's allocator: teachers live as long as the server, not `ctx`. */
        struct mf_ctx sctx;

        mf_ctx__init(&sctx, &s->alloc, s->env.log_fn, s->env.log_payload, "offload");
        err = mf_offsrv__srv_new(&s->env.offload, &sctx, cfg);
        if (err < 0)
            err = mf_fail(ctx, err, "%s", mf_ctx__errmsg(&sctx));
    }
    mf_free(&ctx->alloc, cfg);
    s->offload_jobs.srv = s->env.offload;
    s->offload_jobs.store = s->env.store;
    (void)snprintf(s->offload_jobs.blob_root, sizeof(s->offload_jobs.blob_root), "%s",
                   s->env.blob_root);
    return err;
}

/* The distillation loop: its config, and a worker of its own (runs take minutes). */
static int start_distill(struct mf_server *s, struct mf_ctx *ctx, const struct mf_server_options *o)
{
    struct mf_delta_options d;
    struct mf_ctx wctx;
    int err = mf_distill__config_load(&s->distill_cfg, ctx, o->distill_config);

    if (err < 0)
        return err;
    s->distill_jobs.cfg = &s->distill_cfg;
    s->distill_jobs.store = s->env.store;
    s->distill_jobs.offload = s->env.offload;
    s->distill_jobs.deltas = &s->env.deltas;
    (void)snprintf(s->distill_jobs.blob_root, sizeof(s->distill_jobs.blob_root), "%s",
                   s->env.blob_root);
    s->env.distill = &s->distill_jobs;
    if (!o->delta_worker)
        return MF_OK; /* runs execute on the nodes that do background work */
    mf_delta__options_init(&d);
    d.run_deltas = 0;
    mf_distill__jobs_kind(&d.kinds[d.n_kinds++], &s->distill_jobs);
    d.lease_s = 3600;
    mf_ctx__init(&wctx, &s->alloc, s->env.log_fn, s->env.log_payload, "distill");
    err =
        mf_delta__worker_start(&s->distill_worker, &wctx, s->env.store, s->env.blob_root, NULL, &d);
    s->distill_jobs.worker = s->distill_worker;
    if (err < 0)
        err = mf_fail(ctx, err, "%s", mf_ctx__errmsg(&wctx));
    return err;
}

/* The audit log's bound, on the worker's tick: a DELETE every node may run (it is the same
 * rows whoever deletes them), so there is nothing to claim. */
static void audit_prune_tick(void *payload, struct mf_ctx *ctx)
{
    struct audit_keep *k = payload;
    struct mf_store *s = k->store;
    int64_t now = (int64_t)time(NULL), deleted = 0;

    if (now - k->last < MF_SERVER_AUDIT_PRUNE_S)
        return;
    k->last = now;
    if (s->ops->audit->audit_prune(&deleted, s, ctx, now - k->keep_s, k->keep_rows) < 0)
        MF_LOG_WARN(ctx, "pruning the audit log: %s", mf_ctx__errmsg(ctx));
    else if (deleted > 0)
        MF_LOG_INFO(ctx, "audit log: %lld rows past the bound removed", (long long)deleted);
}

static int audit_never_queued(int *made_out, void *payload, struct mf_ctx *ctx, const char *arg)
{
    (void)payload;
    *made_out = 0;
    return mf_fail(ctx, MF_E_INVALID, "audit job '%s': the audit kind has no queued jobs", arg);
}

/* The per-node parts that are not the HTTP daemon: metrics, rate limiter, delta worker. */
static int start_services(struct mf_server *s, struct mf_ctx *ctx,
                          const struct mf_server_options *o)
{
    struct mf_delta_options d;
    int err;

    s->env.metrics = &s->metrics;
    s->env.routes = mf_handlers__routes;
    s->env.n_routes = mf_handlers__route_count;
    /* A request counter row per route, however many the table holds. */
    err = mf_metrics__init(&s->metrics, &s->alloc, s->env.n_routes);
    if (err < 0)
        return mf_fail(ctx, err, "out of memory for the request counters");
    err = mf_ratelimit__new(&s->env.ratelimit, ctx, o->device_rate, o->device_burst);
    if (err == MF_OK && o->offload_config)
        err = start_offload(s, ctx, o->offload_config);
    if (err == MF_OK && o->delta_worker) {
        mf_delta__options_init(&d);
        d.k = o->delta_k;
        if (s->env.offload)
            mf_offsrv__jobs_kind(&d.kinds[d.n_kinds++], &s->offload_jobs);
        /* Rollout evaluation: one job per running rollout per tick, once across nodes. */
        d.kinds[d.n_kinds++] = (struct mf_job_kind){MF_ROLLOUT_JOB_KIND, mf_rollout__jobs_run,
                                                    mf_rollout__jobs_tick, s->env.store};
        s->audit_keep = (struct audit_keep){
            .store = s->env.store,
            .keep_s = o->audit_keep_s > 0 ? o->audit_keep_s : MF_SERVER_AUDIT_KEEP_S,
            .keep_rows = o->audit_keep_rows > 0 ? o->audit_keep_rows : MF_SERVER_AUDIT_KEEP_ROWS,
        };
        d.kinds[d.n_kinds++] =
            (struct mf_job_kind){"audit", audit_never_queued, audit_prune_tick, &s->audit_keep};
        /* The worker logs through the server's sink for its whole life, not the caller's. */
        struct mf_ctx wctx;

        mf_ctx__init(&wctx, &s->alloc, s->env.log_fn, s->env.log_payload, "deltas");
        err = mf_delta__worker_start(&s->env.deltas, &wctx, s->env.store, s->env.blob_root,
                                     &s->metrics, &d);
        if (err < 0)
            err = mf_fail(ctx, err, "%s", mf_ctx__errmsg(&wctx));
    }
    if (err == MF_OK && o->distill_config)
        err = start_distill(s, ctx, o);
    if (err == MF_OK && o->webhook_sender) {
        struct mf_webhook_options w;
        struct mf_ctx wctx;

        mf_webhook__options_init(&w);
        if (o->webhook_retry_s)
            w.retry_base_s = o->webhook_retry_s;
        mf_ctx__init(&wctx, &s->alloc, s->env.log_fn, s->env.log_payload, "webhooks");
        err = mf_webhook__sender_start(&s->webhooks, &wctx, s->env.store, &w);
        if (err < 0)
            err = mf_fail(ctx, err, "%s", mf_ctx__errmsg(&wctx));
    }
    return err;
}

/*
 * Every connection is a descriptor, and the usual soft RLIMIT_NOFILE of 1024 is far below
 * what a fleet needs, while the hard limit (up to which an unprivileged process may raise
 * its soft limit) is usually much higher: raise the soft limit to the hard one. When even
 * that cannot hold the connection limit plus FD_RESERVE, serve fewer connections and say so,
 * rather than fail accept() with EMFILE at an arbitrary point. Returns the limit to serve.
 */
static unsigned fd_budget(struct mf_ctx *ctx, unsigned want)
{
    struct rlimit rl;
    rlim_t was;
    unsigned fit = want;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want;
    was = rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max; /* refused for "unlimited" (above fs.nr_open): keep was */
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = was;
    }
    if (rl.rlim_cur != was)
        MF_LOG_INFO(ctx, "open file limit raised from %llu to %llu", (unsigned long long)was,
                    (unsigned long long)rl.rlim_cur);
    if (rl.rlim_cur == RLIM_INFINITY)
        return want;
    while (fit > 1 && (rlim_t)mf_httpd__conns_mhd_limit(fit) + FD_RESERVE > rl.rlim_cur)
        fit = fit > 64 ? fit - fit / 16 : fit - 1;
    if (fit < want)
        MF_LOG_WARN(ctx,
                    "open file limit %llu (hard %llu) is too low for %u connections: serving %u "
                    "(raise the hard limit, e.g. systemd LimitNOFILE=)",
                    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, want, fit);
    return fit;
}

/*
 * MHD workers when ops do not say. With the check-in stage a worker never waits for a
 * check-in's store work or signature, so one per core, as an event-driven server has: more
 * only added polls and context switches (bench/server/README.md has the check-in rates by
 * worker count on both stores).
 * Without the stage the workers run check-ins themselves: the store's default (4 on SQLite,
 * 16 on PostgreSQL, whose check-ins then wait for round trips in the worker).
 */
static unsigned worker_threads(const struct mf_server *s, const struct mf_server_options *o)
{
    long cores;

    if (o->threads)
        return o->threads;
    if (!s->env.stage)
        return s->env.store->ops->default_threads;
    cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 2 ? 2 : cores > 64 ? 64 : (unsigned)cores;
}

/*
 * The connection rules over the limit being served. The default per-address cap is a
 * thirty-second of it (128 of 4096), at least 16: one address (a slowloris) cannot take
 * the limit, and ten such addresses stay below the half of it past which replies close
 * their connections (bench/slowloris/README.md: with a sixteenth, ten attacking addresses
 * held enough connections that devices lost keep-alive and queued behind the attackers'
 * reconnects at MHD's accept), while devices behind one NAT, each holding one
 * connection only while it checks in or downloads, stay far below it. Behind a reverse proxy every
 * client has the proxy's address: ops turn the cap off there (docs/operations.md).
 */
static int start_conn_rules(struct mf_server *s, struct mf_ctx *ctx,
                            const struct mf_server_options *o)
{
    struct mf_conn_rules r = {
        .header_timeout_s = o->header_timeout_s,
        .body_min_rate = o->body_min_rate,
        .body_window_s = o->body_rate_window_s,
        .per_addr = o->conn_per_addr,
    };

    if (r.per_addr == MF_SERVER_CONN_PER_ADDR_AUTO)
        r.per_addr = s->conns.limit / 32 > 16 ? s->conns.limit / 32 : 16;
    s->per_addr = r.per_addr;
    return mf_httpd__conns_start(&s->conns, ctx, &r, &s->metrics, s->env.log_fn,
                                 s->env.log_payload);
}

int mf_server__start(struct mf_server **out, struct mf_ctx *ctx, const struct mf_server_options *o)
{
    struct sockaddr_storage addr;
    struct mf_server *s;
    /* poll(), not the epoll MHD_USE_AUTO picks on Linux: with libmicrohttpd 0.9.75's
     * edge-triggered epoll, a client closing mid-upload was sometimes noticed only at the
     * idle timeout, keeping its temp blob that long (test_server_http, 3 of 15 runs). */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    int err;

    *out = NULL;
    err = mf_server__parse_listen(&addr, ctx, o->listen);
    if (err < 0)
        return err;
    s = mf_calloc(&ctx->alloc, 1, sizeof(*s));
    if (!s)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory starting the server");
    s->alloc = ctx->alloc;
    s->env.max_upload = o->max_upload;
    s->env.poll_interval_s = 60;
    s->env.poll_jitter_pct = 10; /* a fleet restarted together spreads out within minutes */
    s->env.log_fn = o->log_fn;
    s->env.log_payload = o->log_payload;
    mf_dynbuf__init(&s->tls_cert, &s->alloc, 1);
    mf_dynbuf__init(&s->tls_key, &s->alloc, 1);
    err = load_tls(s, ctx, o);
    if (err == MF_OK)
        err = open_store(s, ctx, o);
    if (err == MF_OK)
        err = start_services(s, ctx, o);
    if (err == MF_OK && o->checkin_stage)
        err = mf_checkin_stage__start(
            &s->env.stage, ctx, o->checkin_batch ? o->checkin_batch : MF_STORE_CHECKIN_BATCH_MAX);
    if (err < 0)
        goto fail;
    mf_httpd__conns_init(&s->conns, fd_budget(ctx, o->conn_limit));
    s->env.conns = &s->conns;
    err = start_conn_rules(s, ctx, o);
    if (err < 0)
        goto fail;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (s->tls_cert.len)
        flags |= MHD_USE_TLS;
    /* The logger goes first so that MHD reports even option errors through it. The TLS
     * options come last: MHD_OPTION_END in their place ends the list without TLS. */
    s->mhd = MHD_start_daemon(
        flags, 0, mf_httpd__accept_policy, &s->conns, mf_httpd__on_request, &s->env,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, &s->env, MHD_OPTION_UNESCAPE_CALLBACK,
        mf_httpd__unescape, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, worker_threads(s, o), MHD_OPTION_CONNECTION_TIMEOUT,
        o->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT, mf_httpd__conns_mhd_limit(s->conns.limit),
        MHD_OPTION_NOTIFY_CONNECTION, mf_httpd__on_connection, &s->conns,
        MHD_OPTION_NOTIFY_COMPLETED, mf_httpd__on_completed, &s->env,
        s->tls_cert.len ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
        (const char *)s->tls_cert.data, MHD_OPTION_HTTPS_MEM_KEY, (const char *)s->tls_key.data,
        MHD_OPTION_END);
    if (!s->mhd) {
        err = mf_fail(ctx, MF_E_IO, "cannot listen on %s", o->listen);
        goto fail;
    }
    err = bound_port(&s->port, ctx, s->mhd);
    if (err < 0)
        goto fail;
    MF_LOG_INFO(ctx,
                "serving %s on port %u%s, up to %u connections (%u per address; headers "
                "within %u s; bodies at %u bytes/s over %u s; 0: off)",
                o->data_dir, (unsigned)s->port, s->tls_cert.len ? " (TLS)" : "", s->conns.limit,
                s->per_addr, o->header_timeout_s, o->body_min_rate, o->body_rate_window_s);
    *out = s;
    return MF_OK;
fail:
    mf_server__stop(s);
    return err;
}

uint16_t mf_server__port(const struct mf_server *s)
{
    return s->port;
}

unsigned mf_server__conn_limit(const struct mf_server *s)
{
    return s->conns.limit;
}

void mf_server__stop(struct mf_server *s)
{
    mf_allocator alloc;

    if (!s)
        return;
    /* First: it answers what it holds and resumes those connections, and MHD must not be
     * stopped with a connection suspended. Check-ins arriving meanwhile run inline: the
     * workers still reach the stopped stage until MHD has stopped, so it is freed after. */
    mf_checkin_stage__stop(s->env.stage);
    if (s->mhd)
        MHD_stop_daemon(s->mhd);
    mf_httpd__conns_stop(&s->conns); /* MHD has closed every connection it tracked */
    mf_checkin_stage__free(s->env.stage);
    mf_delta__worker_stop(s->distill_worker); /* before the store and the teachers */
    mf_distill__config_free(&s->distill_cfg);
    mf_delta__worker_stop(s->env.deltas); /* before the store it uses */
    mf_webhook__sender_stop(s->webhooks); /* the same */
    mf_offsrv__srv_free(s->env.offload);
    mf_ratelimit__free(s->env.ratelimit);
    mf_store__close(s->env.store);
    mf_director__close(s->env.director);
    mf_ccache__free(s->env.ccache);
    mf_checkin_batch__free(s->env.checkins);
    mf_httpd__credcache_free(s->env.creds);
    mf_httpd__credcache_free(s->env.released);
    mf_secure_zero(s->tls_key.data, s->tls_key.len);
    mf_dynbuf__free(&s->tls_key);
    mf_dynbuf__free(&s->tls_cert);
    mf_metrics__free(&s->metrics, &s->alloc); /* after every thread that counts into it */
    alloc = s->alloc;
    mf_free(&alloc, s);
}
