/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Example: a fleet of devices that embed the SDK and run the int8 student on a real
 * dataset (docs/example-model.md, "The example fleet"). N devices live in one process, each
 * with its own libmf agent, offload handle and runtime report (fleet_device.c); they share
 * one read-only copy of the dataset. Every pass, each device checks in (installing what is
 * assigned), classifies its next K images of the slice [A, B) in its own seeded order
 * through the offload handle, and uplinks its queue; then the counters of all devices are
 * written to the stats file (temporary file + rename). SIGTERM or SIGINT stops the fleet
 * after the device in progress, with a last stats file.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include "fleet.h"

#include "mf_cli.h"
#include "mf_ctx.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FLEET_MAX_DEVICES 10000
#define FLEET_MAX_THREADS 64

static const char usage[] =
    "NAME\n"
    "    mf-example-fleet - example fleet: libmf agents classifying digits, offloading\n"
    "SYNOPSIS\n"
    "    mf-example-fleet --help | --version\n"
    "usage: mf-example-fleet --server URL --enroll-token-file F --trust-root ROOT.json\n"
    "           --dir STATE_DIR --devices N --model NAME\n"
    "           (--images IDX --labels IDX | --digits CSV) [--range A:B] [--per-pass K]\n"
    "           [--passes P] --stats FILE [--threads T] [--seed S] [--deadline-ms D]\n"
    "           [--squeeze FROM-TO:P0-P1] [-v]\n"
    "Each pass every device checks in (installs what is assigned), classifies its next K\n"
    "images of [A, B) through the offload policy and uplinks its queue; FILE then holds the\n"
    "counters per model version. P = 0 runs until SIGTERM/SIGINT. --squeeze turns on libmf's\n"
    "runtime degradation (every device declares class \"fleet\" and keeps the version's\n"
    "fallback variant) and puts devices FROM..TO-1 under memory pressure in passes P0..P1-1\n"
    "of the run (a pass is a simulated minute): the agents' controllers switch them to the\n"
    "fallback variant and back.\n";

struct fleet_args {
    struct fleet_config cfg;
    const char *token_file, *root_file, *images, *labels, *digits, *stats, *range;
    unsigned devices, passes, threads;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int parse_uint(unsigned *out, const char *s, unsigned min, unsigned max)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* "FROM-TO:P0-P1", both ranges non-empty. */
static int parse_squeeze(struct fleet_config *c, const char *v)
{
    int used = 0;

    return sscanf(v, "%u-%u:%u-%u%n", &c->squeeze_from, &c->squeeze_to, &c->squeeze_p0,
                  &c->squeeze_p1, &used) == 4 &&
                   v[used] == '\0' && v[0] >= '0' && v[0] <= '9' &&
                   c->squeeze_from < c->squeeze_to && c->squeeze_p0 < c->squeeze_p1
               ? 0
               : -1;
}

static int parse_args(struct fleet_args *a, int argc, char **argv)
{
    unsigned u;

    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;

        if (strcmp(k, "-v") == 0) {
            a->cfg.verbose = 1;
            continue;
        }
        if (!v) {
            (void)fprintf(stderr, "mf-example-fleet: option \"%s\" needs a value\n", k);
            return -1;
        }
        i++;
        if (strcmp(k, "--server") == 0)
            a->cfg.server_url = v;
        else if (strcmp(k, "--enroll-token-file") == 0)
            a->token_file = v;
        else if (strcmp(k, "--trust-root") == 0)
            a->root_file = v;
        else if (strcmp(k, "--dir") == 0)
            a->cfg.state_root = v;
        else if (strcmp(k, "--model") == 0)
            a->cfg.model = v;
        else if (strcmp(k, "--images") == 0)
            a->images = v;
        else if (strcmp(k, "--labels") == 0)
            a->labels = v;
        else if (strcmp(k, "--digits") == 0)
            a->digits = v;
        else if (strcmp(k, "--range") == 0)
            a->range = v;
        else if (strcmp(k, "--stats") == 0)
            a->stats = v;
        else if (strcmp(k, "--devices") == 0)
            bad = parse_uint(&a->devices, v, 1, FLEET_MAX_DEVICES);
        else if (strcmp(k, "--per-pass") == 0)
            bad = parse_uint(&a->cfg.per_pass, v, 1, 1000000);
        else if (strcmp(k, "--passes") == 0)
            bad = parse_uint(&a->passes, v, 0, 1000000);
        else if (strcmp(k, "--threads") == 0)
            bad = parse_uint(&a->threads, v, 1, FLEET_MAX_THREADS);
        else if (strcmp(k, "--deadline-ms") == 0)
            bad = parse_uint(&a->cfg.deadline_ms, v, 1, 60000);
        else if (strcmp(k, "--squeeze") == 0)
            bad = parse_squeeze(&a->cfg, v);
        else if (strcmp(k, "--seed") == 0 && parse_uint(&u, v, 0, 0xffffffffu) == 0)
            a->cfg.seed = u;
        else
            bad = 1;
        if (bad) {
            (void)fprintf(stderr, "mf-example-fleet: unknown option or bad value: %s %s\n", k, v);
            return -1;
        }
    }
    return a->cfg.server_url && a->token_file && a->root_file && a->cfg.state_root &&
                   a->cfg.model && a->stats && a->devices && (a->digits || (a->images && a->labels))
               ? 0
               : -1;
}

/* Reads a small text file (token, root document) whole; NULL after printing why. */
static char *read_small(struct mf_ctx *ctx, const char *path, size_t *len_out)
{
    uint8_t *buf = NULL;
    size_t len = 0;

    if (mf_file_read_all(&buf, &len, ctx, NULL, path, 64u * 1024) < 0) {
        (void)fprintf(stderr, "mf-example-fleet: %s\n", mf_ctx__errmsg(ctx));
        return NULL;
    }
    if (len_out)
        *len_out = len;
    return (char *)buf;
}

/* Loads the dataset, checks the slice and shuffles it once for every device (seeded);
 * MF_OK or an error already printed. */
static int load_data(struct fleet_args *a, mf_dataset **out, size_t **order, struct mf_ctx *ctx)
{
    unsigned long first = 0, end = 0;
    int err = a->digits ? mf_dataset_load_digits(out, ctx, NULL, a->digits)
                        : mf_dataset_load_idx(out, ctx, NULL, a->images, a->labels);

    if (err < 0) {
        (void)fprintf(stderr, "mf-example-fleet: %s\n", mf_ctx__errmsg(ctx));
        return err;
    }
    end = (unsigned long)(*out)->n;
    if (a->range &&
        (sscanf(a->range, "%lu:%lu", &first, &end) != 2 || first >= end || end > (*out)->n)) {
        (void)fprintf(stderr, "mf-example-fleet: --range %s is not A:B within 0..%zu\n", a->range,
                      (*out)->n);
        return MF_E_INVALID;
    }
    a->cfg.data = *out;
    a->cfg.first = first;
    a->cfg.end = end;
    *order = mf_calloc(NULL, end - first, sizeof(**order));
    if (!*order) {
        (void)fprintf(stderr, "mf-example-fleet: no memory for %lu images\n", end - first);
        return MF_E_NOMEM;
    }
    mf_dataset_permutation(*order, end - first, a->cfg.seed);
    a->cfg.order = *order;
    return MF_OK;
}

struct worker {
    pthread_t thread;
    struct fleet_device **devs;
    unsigned from, step, n;
};

/* A thread's share of a pass: devices from, from + step, ...; stops between devices. */
static void *run_worker(void *arg)
{
    struct worker *w = arg;

    for (unsigned i = w->from; i < w->n && !stop_requested; i += w->step)
        fleet_device_pass(w->devs[i]);
    return NULL;
}

static void run_pass(struct fleet_device **devs, unsigned n, unsigned threads)
{
    static struct worker w[FLEET_MAX_THREADS]; /* main thread only; 2.5 KiB off the stack */
    unsigned started = 0;

    for (unsigned t = 0; t < threads; t++) {
        w[t] = (struct worker){.devs = devs, .from = t, .step = threads, .n = n};
        if (t > 0 && pthread_create(&w[t].thread, NULL, run_worker, &w[t]) != 0)
            break;
        started = t + 1;
    }
    /* Worker 0 is this thread; it also takes the shares of threads that could not start. */
    (void)run_worker(&w[0]);
    for (unsigned t = started > 0 ? started : 1; t < threads; t++) {
        w[t] = (struct worker){.devs = devs, .from = t, .step = threads, .n = n};
        (void)run_worker(&w[t]);
    }
    for (unsigned t = 1; t < started; t++)
        (void)pthread_join(w[t].thread, NULL);
}

/* Merges every device's counters, writes the stats file and prints one line per version. */
static int report(struct mf_ctx *ctx, const struct fleet_args *a, struct fleet_device **devs,
                  unsigned pass, int finished)
{
    static mf_fleet_stats all; /* tens of KiB: not on the stack */
    int err;

    memset(&all, 0, sizeof(all));
    for (unsigned i = 0; i < a->devices; i++)
        mf_fleet_stats_merge(&all, fleet_device_stats(devs[i]), fleet_device_version(devs[i]));
    err = mf_fleet_stats_write(ctx, a->stats, &all, a->cfg.model, pass, a->devices, finished);
    if (err < 0)
        (void)fprintf(stderr, "mf-example-fleet: %s\n", mf_ctx__errmsg(ctx));
    for (size_t i = 0; i < all.n; i++) {
        const mf_fleet_counts *c = &all.v[i].c;
        const double n = c->images ? (double)c->images : 1.0;

        printf("pass %u: %s on %llu devices, %llu images, student %.2f %%, cascade %.2f %%, "
               "teacher %.2f %%, audit %llu\n",
               pass, all.v[i].version, (unsigned long long)all.v[i].devices,
               (unsigned long long)c->images, 100.0 * (double)c->student_correct / n,
               100.0 * (double)c->cascade_correct / n, 100.0 * (double)c->by_teacher / n,
               (unsigned long long)c->audit);
        if (c->degrades || c->restores || c->degraded) /* the way down and what it cost */
            printf("pass %u: %s degrades %llu restores %llu, degraded images %llu: fallback "
                   "%s %.2f %% right where %s would be %.2f %%\n",
                   pass, all.v[i].version, (unsigned long long)c->degrades,
                   (unsigned long long)c->restores, (unsigned long long)c->degraded,
                   all.v[i].fallback[0] ? all.v[i].fallback : "-",
                   100.0 * (double)c->degraded_fallback_ok /
                       (double)(c->degraded ? c->degraded : 1),
                   all.v[i].version,
                   100.0 * (double)c->degraded_main_ok / (double)(c->degraded ? c->degraded : 1));
    }
    (void)fflush(stdout);
    return err;
}

int main(int argc, char **argv)
{
    struct fleet_args a = {.cfg = {.per_pass = 100, .seed = 1}, .passes = 1, .threads = 1};
    struct fleet_device **devs = NULL;
    struct sigaction sa;
    struct mf_ctx ctx;
    mf_dataset *data = NULL;
    char *token = NULL, *root = NULL;
    size_t *order = NULL;
    unsigned pass = 0, made = 0;
    int rc = 1;

    if (mf_cli__std_flags(argc, argv, "mf-example-fleet", usage) == 0)
        return 0;
    if (parse_args(&a, argc, argv) < 0) {
        (void)fputs(usage, stderr);
        return 2;
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "fleet");
    token = read_small(&ctx, a.token_file, NULL);
    root = token ? read_small(&ctx, a.root_file, &a.cfg.trust_root_len) : NULL;
    if (!root || load_data(&a, &data, &order, &ctx) < 0)
        goto done;
    token[strcspn(token, "\r\n")] = '\0';
    a.cfg.enroll_token = token;
    a.cfg.trust_root = root;
    if (mkdir(a.cfg.state_root, 0700) != 0 && errno != EEXIST) {
        (void)fprintf(stderr, "mf-example-fleet: cannot create %s\n", a.cfg.state_root);
        goto done;
    }
    /* libcurl's global state, once, before agents are used from several threads. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        (void)fprintf(stderr, "mf-example-fleet: libcurl cannot be initialised\n");
        goto done;
    }
    devs = mf_calloc(NULL, a.devices, sizeof(*devs));
    for (made = 0; devs && made < a.devices; made++) {
        devs[made] = fleet_device_new(&a.cfg, made);
        if (!devs[made])
            break;
    }
    if (made < a.devices)
        goto cleanup;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGINT, &sa, NULL);
    rc = 0;
    while (!stop_requested && (a.passes == 0 || pass < a.passes)) {
        run_pass(devs, a.devices, a.threads);
        if (!stop_requested)
            pass++;
        if (report(&ctx, &a, devs, pass, a.passes != 0 && pass == a.passes) < 0) {
            rc = 1;
            break;
        }
    }
cleanup:
    for (unsigned i = 0; devs && i < made; i++)
        fleet_device_free(devs[i]);
    mf_free(NULL, devs);
    curl_global_cleanup();
done:
    mf_dataset_free(data);
    mf_free(NULL, order);
    if (token)
        memset(token, 0, strlen(token));
    mf_free(NULL, token);
    mf_free(NULL, root);
    return rc;
}
