/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server: `init` prepares a data directory, `serve` runs the registry on it until SIGINT
 * or SIGTERM. See docs/operations.md.
 */
#include "common/file_atomic.h"
#include "director/director.h"
#include "app/server.h"
#include "http/http_credcache.h"
#include "mf_cli.h"

#include <curl/curl.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct cli {
    const char *command;
    const char *port_file;
    const char *director_key; /* init: a director key given by ops */
    struct mf_server_options opts;
    int log_level;
};

static const char usage_text[] =
    "NAME\n"
    "    mf-server - the modelferry update server (registry, director, rollouts, offload)\n"
    "SYNOPSIS\n"
    "    mf-server init  --data-dir DIR [--director-key PRIV.pem] [--store URL]\n"
    "    mf-server serve --data-dir DIR [OPTIONS]\n"
    "    mf-server --help | --version\n"
    "DESCRIPTION\n"
    "    init prepares DIR: the store, the admin and enrolment tokens (admin.token,\n"
    "    enroll.token) and the director key (or imports PRIV.pem); a second init changes\n"
    "    nothing. serve runs the server on DIR until SIGINT or SIGTERM.\n"
    "    docs/operations.md has each option's default and when to change it.\n"
    "OPTIONS (serve)\n"
    "    --listen ADDR:PORT        address to listen on (default 127.0.0.1:8080; port 0:\n"
    "                              any free port, written to --port-file F)\n"
    "    --store URL               sqlite path or postgresql:// URL (default DIR/store.db)\n"
    "    --log-level L             error|warn|info|debug|trace (default info)\n"
    "    --tls-cert CERT.pem --tls-key KEY.pem   serve HTTPS\n"
    "    --max-upload BYTES        largest model upload\n"
    "    --threads N               libmicrohttpd workers (1..256)\n"
    "    --conn-limit N            connections at once (1..65536)\n"
    "    --conn-per-addr N         connections per client address (0: no cap)\n"
    "    --conn-timeout S          idle connection timeout (0..86400)\n"
    "    --header-timeout S        time to send the request head (0..3600)\n"
    "    --body-min-rate B         body bytes per second a request must average (0: off)\n"
    "    --body-rate-window S      window of that average (1..3600)\n"
    "    --checkin-stage 0|1       check-ins on one stage thread (default 1)\n"
    "    --checkin-batch N         check-ins grouped into one store call (1..64)\n"
    "    --sign-batch N            assignments per director signature (1..64)\n"
    "    --credential-cache N      device credentials kept verified per node\n"
    "    --device-rate PER_S --device-burst N   per-device request rate limit\n"
    "    --delta-worker 0|1 --delta-k K          precomputed deltas from K older versions\n"
    "    --offload-config FILE     teachers and per-model offload (docs/offload.md)\n"
    "    --distill-config FILE     the distillation loop (docs/distill.md)\n"
    "    --blob-grace S            age before an unreferenced blob is an orphan\n"
    "    --audit-keep-days N --audit-keep-rows N   audit log retention (400 days, 1,000,000)\n"
    "    --webhook-sender 0|1      deliver rollout events to registered webhooks (default 1)\n"
    "    --webhook-retry S         first retry delay of a failed delivery (doubles each time)\n"
    "    --ui-dir DIR              the web console's files, served at /ui/ (default: the\n"
    "                              install's share/modelferry/ui)\n"
    "EXIT STATUS\n"
    "    0 success; 1 failure (message on stderr); 2 bad usage.\n";

/* One line naming what is wrong, then where the options are; -1. */
static int usage_error(const char *fmt, ...) MF_PRINTF(1, 2);
static int usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)fputs("mf-server: ", stderr);
    (void)vfprintf(stderr, fmt, ap);
    va_end(ap);
    (void)fputs("\nRun `mf-server --help` for the options.\n", stderr);
    return -1;
}

static int parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};

    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(s, names[i]) == 0)
            return i;
    }
    return -1;
}

static int parse_double(double *out, const char *s)
{
    char *end;

    errno = 0;
    *out = strtod(s, &end);
    return (errno || end == s || *end || !(*out >= 0) || *out > 1e6) ? -1 : 0;
}

static int parse_u64(unsigned long long *out, const char *s, unsigned long long max)
{
    char *end;

    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    *out = strtoull(s, &end, 10);
    return (errno || *end || *out > max) ? -1 : 0;
}

static int parse_args(struct cli *c, int argc, char **argv)
{
    unsigned long long v;

    if (argc < 2)
        return usage_error("no command given (init or serve)");
    c->command = argv[1];
    if (strcmp(c->command, "init") != 0 && strcmp(c->command, "serve") != 0)
        return usage_error("unknown command \"%s\"", c->command);
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!val)
            return usage_error("option \"%s\" needs a value", k);
        i++;
        if (strcmp(k, "--data-dir") == 0) {
            c->opts.data_dir = val;
        } else if (strcmp(k, "--listen") == 0) {
            c->opts.listen = val;
        } else if (strcmp(k, "--director-key") == 0) {
            c->director_key = val;
        } else if (strcmp(k, "--port-file") == 0) {
            c->port_file = val;
        } else if (strcmp(k, "--store") == 0) {
            c->opts.store_url = val;
        } else if (strcmp(k, "--log-level") == 0) {
            c->log_level = parse_level(val);
            if (c->log_level < 0)
                return usage_error("bad option or value: %s %s", k, val);
        } else if (strcmp(k, "--max-upload") == 0 && parse_u64(&v, val, UINT64_MAX) == 0) {
            c->opts.max_upload = v;
        } else if (strcmp(k, "--conn-timeout") == 0 && parse_u64(&v, val, 86400) == 0) {
            c->opts.conn_timeout_s = (unsigned)v;
        } else if (strcmp(k, "--conn-limit") == 0 && parse_u64(&v, val, 65536) == 0 && v) {
            c->opts.conn_limit = (unsigned)v;
        } else if (strcmp(k, "--header-timeout") == 0 && parse_u64(&v, val, 3600) == 0) {
            c->opts.header_timeout_s = (unsigned)v;
        } else if (strcmp(k, "--body-min-rate") == 0 && parse_u64(&v, val, 1u << 30) == 0) {
            c->opts.body_min_rate = (unsigned)v;
        } else if (strcmp(k, "--body-rate-window") == 0 && parse_u64(&v, val, 3600) == 0 && v) {
            c->opts.body_rate_window_s = (unsigned)v;
        } else if (strcmp(k, "--conn-per-addr") == 0 && parse_u64(&v, val, 65536) == 0) {
            c->opts.conn_per_addr = (unsigned)v;
        } else if (strcmp(k, "--threads") == 0 && parse_u64(&v, val, 256) == 0 && v) {
            c->opts.threads = (unsigned)v;
        } else if (strcmp(k, "--checkin-batch") == 0 && parse_u64(&v, val, 64) == 0 && v) {
            c->opts.checkin_batch = (unsigned)v;
        } else if (strcmp(k, "--tls-cert") == 0) {
            c->opts.tls_cert = val;
        } else if (strcmp(k, "--tls-key") == 0) {
            c->opts.tls_key = val;
        } else if (strcmp(k, "--device-rate") == 0 &&
                   parse_double(&c->opts.device_rate, val) == 0) {
            continue;
        } else if (strcmp(k, "--device-burst") == 0 &&
                   parse_double(&c->opts.device_burst, val) == 0) {
            continue;
        } else if (strcmp(k, "--checkin-stage") == 0 && parse_u64(&v, val, 1) == 0) {
            c->opts.checkin_stage = (int)v;
        } else if (strcmp(k, "--delta-worker") == 0 && parse_u64(&v, val, 1) == 0) {
            c->opts.delta_worker = (int)v;
        } else if (strcmp(k, "--delta-k") == 0 && parse_u64(&v, val, 64) == 0) {
            c->opts.delta_k = (unsigned)v;
        } else if (strcmp(k, "--offload-config") == 0) {
            c->opts.offload_config = val;
        } else if (strcmp(k, "--distill-config") == 0) {
            c->opts.distill_config = val;
        } else if (strcmp(k, "--credential-cache") == 0 &&
                   parse_u64(&v, val, MF_CREDCACHE_SLOTS_MAX) == 0 && v) {
            c->opts.credential_cache = (size_t)v;
        } else if (strcmp(k, "--blob-grace") == 0 && parse_u64(&v, val, 365u * 86400u) == 0 && v) {
            c->opts.blob_grace_s = (int64_t)v;
        } else if (strcmp(k, "--audit-keep-days") == 0 && parse_u64(&v, val, 36500) == 0 && v) {
            c->opts.audit_keep_s = (int64_t)v * 86400;
        } else if (strcmp(k, "--audit-keep-rows") == 0 && parse_u64(&v, val, 1000000000) == 0 &&
                   v) {
            c->opts.audit_keep_rows = (int64_t)v;
        } else if (strcmp(k, "--webhook-sender") == 0 && parse_u64(&v, val, 1) == 0) {
            c->opts.webhook_sender = (int)v;
        } else if (strcmp(k, "--ui-dir") == 0) {
            c->opts.ui_dir = val;
        } else if (strcmp(k, "--webhook-retry") == 0 && parse_u64(&v, val, 3600) == 0 && v) {
            c->opts.webhook_retry_s = (unsigned)v;
        } else if (strcmp(k, "--sign-batch") == 0 &&
                   parse_u64(&v, val, MF_DIRECTOR_BATCH_MAX) == 0 && v) {
            c->opts.sign_batch = (unsigned)v;
        } else {
            return usage_error("unknown option or bad value: %s %s", k, val);
        }
    }
    return c->opts.data_dir ? 0 : usage_error("--data-dir DIR is required");
}

static int cmd_init(struct cli *c, struct mf_ctx *ctx)
{
    struct mf_director *d = NULL;
    int changed = 0, err = MF_OK;

    /* An imported key goes in first, so init's own generation finds a key and keeps it. */
    if (c->director_key && mkdir(c->opts.data_dir, 0750) != 0 && errno != EEXIST)
        err = mf_fail(ctx, MF_E_IO, "cannot create '%s': %s", c->opts.data_dir, strerror(errno));
    if (err == MF_OK && c->director_key)
        err = mf_director__init_key(&changed, ctx, c->opts.data_dir, c->director_key);
    if (err == MF_OK)
        err = mf_server__init_data_dir(&changed, ctx, c->opts.data_dir, c->opts.store_url);
    if (err == MF_OK)
        err = mf_director__open(&d, ctx, c->opts.data_dir);
    if (err < 0) {
        (void)fprintf(stderr, "mf-server: init failed: %s\n", mf_ctx__errmsg(ctx));
        return 1;
    }
    if (changed)
        (void)printf("initialized %s (tokens in %s/admin.token and %s/enroll.token)\n",
                     c->opts.data_dir, c->opts.data_dir, c->opts.data_dir);
    else
        (void)printf("%s is already initialized; nothing changed\n", c->opts.data_dir);
    (void)printf("director key %s (public key in %s/%s: name it in the keys document)\n",
                 mf_director__keyid(d), c->opts.data_dir, MF_DIRECTOR_PUB_FILE);
    mf_director__close(d);
    return 0;
}

/*
 * glibc gives a worker thread's arena back to the kernel (madvise) whenever more than the
 * trim threshold (128 KiB) sits free at its top, which a check-in's SQLite and JSON work
 * reached on every request: the madvise and the TLB shootdown it sends to the other cores
 * were a large share of a check-in's CPU (bench/server/README.md). A long-running server keeps up
 * to 8 MiB free per arena instead; blocks of 1 MiB and more still come from mmap, so large
 * transient buffers (delta work, uploads) go back to the kernel when freed.
 */
static void tune_malloc(void)
{
#ifdef __GLIBC__
    (void)mallopt(M_MMAP_THRESHOLD, 1 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 8 << 20);
#endif
}

static int cmd_serve(struct cli *c, struct mf_ctx *ctx)
{
    struct mf_server *srv = NULL;
    char port[16];
    sigset_t set;
    int sig = 0, err;

    /* Block the stop signals before MHD starts its threads, so they inherit the mask and
     * only sigwait() below ever sees them: shutdown runs in plain thread context. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    (void)pthread_sigmask(SIG_BLOCK, &set, NULL);
    (void)signal(SIGPIPE, SIG_IGN); /* sendfile to a vanished client */
    tune_malloc();
    /* Before any thread: the webhook sender and the KServe teachers use libcurl on theirs. */
    (void)curl_global_init(CURL_GLOBAL_DEFAULT);

    err = mf_server__start(&srv, ctx, &c->opts);
    if (err == MF_OK && c->port_file) {
        (void)snprintf(port, sizeof(port), "%u\n", (unsigned)mf_server__port(srv));
        err = mf_file__write_atomic(ctx, c->port_file, port, 0644);
    }
    if (err < 0) {
        (void)fprintf(stderr, "mf-server: serve failed: %s\n", mf_ctx__errmsg(ctx));
        mf_server__stop(srv);
        return 1;
    }
    (void)sigwait(&set, &sig);
    mf_log_stderr(&c->log_level, MF_LOG_INFO, "server", "stopping");
    mf_server__stop(srv);
    return 0;
}

int main(int argc, char **argv)
{
    struct cli c;
    struct mf_ctx ctx;

    memset(&c, 0, sizeof(c));
    mf_server__options_init(&c.opts);
    c.log_level = MF_LOG_INFO;
    if (mf_cli__std_flags(argc, argv, "mf-server", usage_text) == 0)
        return 0;
    if (parse_args(&c, argc, argv) < 0)
        return 2;
    c.opts.log_fn = mf_log_stderr;
    c.opts.log_payload = &c.log_level;
    mf_ctx__init(&ctx, NULL, mf_log_stderr, &c.log_level, "server");
    if (strcmp(c.command, "init") == 0)
        return cmd_init(&c, &ctx);
    return cmd_serve(&c, &ctx);
}
