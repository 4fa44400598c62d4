/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-sim: drives a fleet of simulated devices (sim.h) against a real mf-server for a number
 * of cycles, then prints how many devices run each version (and, with --report, each
 * device's version), so rollout tests and the benchmark can check where the fleet ended.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */
#include "sim.h"

#include "mf/degrade.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    (void)nanosleep(&ts, NULL);
}

static int offline(const struct sim_config *c, unsigned dev, unsigned cycle)
{
    return dev >= c->offline_from && dev < c->offline_to && cycle >= c->offline_c0 &&
           cycle < c->offline_c1;
}

/* Prints "<version> <devices>" per installed version and writes the per-device report. */
static int summary(const struct sim_config *c, struct sim_device **devs)
{
    FILE *rep = c->report_path ? fopen(c->report_path, "w") : NULL;

    if (c->report_path && !rep)
        return -1;
    for (unsigned i = 0; i < c->devices; i++) {
        unsigned same = 0;
        int first = 1;

        if (rep)
            (void)fprintf(rep, "%s %s\n", sim__device_id(devs[i]),
                          sim__device_version(devs[i])[0] ? sim__device_version(devs[i]) : "-");
        for (unsigned j = 0; j < c->devices; j++) {
            if (strcmp(sim__device_version(devs[i]), sim__device_version(devs[j])) == 0) {
                first = first && j >= i;
                same++;
            }
        }
        if (first)
            (void)printf("version %s devices %u\n",
                         sim__device_version(devs[i])[0] ? sim__device_version(devs[i]) : "-",
                         same);
    }
    if (c->n_squeeze) {
        unsigned degraded = 0;

        for (unsigned i = 0; i < c->devices; i++)
            degraded += (unsigned)sim__device_degraded(devs[i]);
        (void)printf("degraded devices %u\n", degraded);
    }
    return rep && fclose(rep) != 0 ? -1 : 0;
}

/* "class TAG version V devices N" per declared class and version its devices run, so a
 * per-class halt shows which classes went back. */
static void class_summary(const struct sim_config *c, struct sim_device **devs)
{
    for (size_t k = 0; k < c->n_classes; k++) {
        const struct sim_class *cls = &c->classes[k];

        for (unsigned i = cls->from; i < cls->to && i < c->devices; i++) {
            unsigned same = 0;
            int first = 1;

            for (unsigned j = cls->from; j < cls->to && j < c->devices; j++) {
                if (strcmp(sim__device_version(devs[i]), sim__device_version(devs[j])) == 0) {
                    first = first && j >= i;
                    same++;
                }
            }
            if (first)
                (void)printf("class %s version %s devices %u\n", cls->tag,
                             sim__device_version(devs[i])[0] ? sim__device_version(devs[i]) : "-",
                             same);
        }
    }
}

/* libmf's degrade controllers of the devices: "degrade switches D (memory M thermal T)
 * restores R degraded now K inferences degraded I (battery B deadline L)", I the inferences
 * run on a fallback variant. */
static void degrade_summary(const struct sim_config *c, struct sim_device **devs)
{
    struct sim_degrade_counts all, one;

    if (!c->n_squeeze)
        return;
    memset(&all, 0, sizeof(all));
    for (unsigned i = 0; i < c->devices; i++) {
        sim__device_degrade_counts(&one, devs[i]);
        all.degrades += one.degrades;
        all.restores += one.restores;
        all.degraded_inferences += one.degraded_inferences;
        for (size_t r = 0; r < 8; r++)
            all.by_reason[r] += one.by_reason[r];
        all.degraded += one.degraded;
    }
    (void)printf("degrade switches %lu (memory %lu thermal %lu) restores %lu degraded now %d "
                 "inferences degraded %lu (battery %lu deadline %lu)\n",
                 all.degrades, all.by_reason[MF_DEGRADE_MEMORY], all.by_reason[MF_DEGRADE_THERMAL],
                 all.restores, all.degraded, all.degraded_inferences,
                 all.by_reason[MF_DEGRADE_BATTERY], all.by_reason[MF_DEGRADE_DEADLINE]);
}

static long long now_ms(void)
{
    struct timespec now;

    (void)clock_gettime(CLOCK_REALTIME, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The version whose spread the progress lines follow: the last --behave one (without its
 * "@CLASS"). */
static const char *watched(const struct sim_config *c)
{
    static char v[sizeof(c->behave[0].version)];

    if (!c->n_behave)
        return "";
    (void)snprintf(v, sizeof(v), "%s", c->behave[c->n_behave - 1].version);
    v[strcspn(v, "@")] = '\0';
    return v;
}

/* "cycle K at MS v2 N": wall clock (ms) and how many devices run the watched version after
 * each cycle, so the benchmark can time a fleet rollback. */
static void progress(const struct sim_config *c, struct sim_device **devs, unsigned cycle)
{
    unsigned on = 0;

    for (unsigned i = 0; i < c->devices; i++)
        on += strcmp(sim__device_version(devs[i]), watched(c)) == 0;
    (void)printf("cycle %u at %lld %s %u\n", cycle, now_ms(), watched(c)[0] ? watched(c) : "-", on);
    /* Per declared class: "class-cycle K at MS TAG v2 N". */
    for (size_t k = 0; k < c->n_classes; k++) {
        on = 0;
        for (unsigned i = c->classes[k].from; i < c->classes[k].to && i < c->devices; i++)
            on += strcmp(sim__device_version(devs[i]), watched(c)) == 0;
        (void)printf("class-cycle %u at %lld %s %s %u\n", cycle, now_ms(), c->classes[k].tag,
                     watched(c)[0] ? watched(c) : "-", on);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Check-in steps (those that downloaded nothing; UINT64_MAX marks none): count, rate over
 * the run, p50/p99 duration. */
static void timing(uint64_t *lat, size_t n_all, double seconds)
{
    size_t n = 0;

    (void)printf("device steps %zu in %.1f s (%.0f/s)\n", n_all, seconds, (double)n_all / seconds);

    for (size_t i = 0; i < n_all; i++) {
        if (lat[i] != UINT64_MAX)
            lat[n++] = lat[i];
    }
    if (!n)
        return;
    qsort(lat, n, sizeof(*lat), cmp_u64);
    (void)printf("check-in steps %zu: p50 %.2f ms p99 %.2f ms\n", n, lat[(n - 1) / 2] / 1000.0,
                 lat[(size_t)((double)(n - 1) * 0.99)] / 1000.0);
}

/* One pass over the fleet (creating it, or one cycle), shared by the threads: each takes
 * the next device index until none is left. */
struct pass {
    const struct sim_config *c;
    struct sim_device **devs;
    uint64_t *lat; /* this cycle's slots, one per device */
    int create;    /* 1: create the devices; 0: run cycle `cycle` */
    unsigned cycle;
    atomic_uint next;
    atomic_ulong failures;
    atomic_int on_watched; /* devices running the watched version, kept while they step */
};

static int runs_watched(const struct pass *p, unsigned i)
{
    return watched(p->c)[0] && strcmp(sim__device_version(p->devs[i]), watched(p->c)) == 0;
}

/* Device i stepped: when it was the last one on the watched version, "none on v2 at MS"
 * says so at once, a finer clock for the fleet rollback than the cycle lines. */
static void note_step(struct pass *p, unsigned i, int was)
{
    int d = runs_watched(p, i) - was;

    if (d && atomic_fetch_add(&p->on_watched, d) + d == 0)
        (void)printf("none on %s at %lld\n", watched(p->c), now_ms());
}

static void *pass_worker(void *arg)
{
    struct pass *p = arg;

    for (;;) {
        unsigned i = atomic_fetch_add(&p->next, 1);

        if (i >= p->c->devices)
            return NULL;
        if (p->create) {
            p->devs[i] = sim__device_new(p->c, i);
            if (!p->devs[i])
                atomic_fetch_add(&p->failures, 1);
            else if (runs_watched(p, i))
                atomic_fetch_add(&p->on_watched, 1);
        } else if (!offline(p->c, i, p->cycle)) {
            int was = runs_watched(p, i);

            if (sim__device_cycle(&p->lat[i], p->devs[i], p->cycle) < 0)
                atomic_fetch_add(&p->failures, 1);
            note_step(p, i, was);
        }
    }
}

/* Runs the pass on c->threads threads (fewer if creating one fails); the failures. */
static unsigned long run_pass(struct pass *p)
{
    pthread_t t[SIM_MAX_THREADS];
    unsigned n = 0;

    atomic_init(&p->next, 0);
    atomic_init(&p->failures, 0);
    while (n < p->c->threads && pthread_create(&t[n], NULL, pass_worker, p) == 0)
        n++;
    if (n == 0)
        (void)pass_worker(p);
    while (n)
        (void)pthread_join(t[--n], NULL);
    return atomic_load(&p->failures);
}

int main(int argc, char **argv)
{
    /* static: its class and behaviour tables outgrow the stack bound of main */
    static struct sim_config c = {
        .prefix = "sim", .interval_ms = 500, .inferences = 20, .threads = 4};
    struct pass p = {.c = &c, .create = 1};
    char *token = NULL, *root = NULL;
    unsigned long failures = 0;
    struct timespec t0, t1;
    uint64_t *lat = NULL;
    int rc = 1;

    rc = sim__parse_args(&c, argc, argv, &token, &root);
    if (rc != 0) {
        if (rc < 0)
            (void)fputs("Run `mf-sim --help` for the options.\n", stderr);
        mf_free(NULL, token);
        mf_free(NULL, root);
        return rc < 0 ? 2 : 0;
    }
    rc = 1;
    (void)setvbuf(stdout, NULL, _IOLBF, 0);      /* progress lines as they happen */
    (void)curl_global_init(CURL_GLOBAL_DEFAULT); /* before agents on threads: mf/agent.h */
    p.devs = mf_calloc(NULL, c.devices, sizeof(*p.devs));
    lat = mf_calloc(NULL, (size_t)c.devices * c.cycles, sizeof(*lat));
    if (!p.devs || !lat || run_pass(&p) != 0)
        goto out;
    memset(lat, 0xff, (size_t)c.devices * c.cycles * sizeof(*lat)); /* UINT64_MAX: none */
    p.create = 0;
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned cycle = 0; cycle < c.cycles; cycle++) {
        p.cycle = cycle;
        p.lat = lat + (size_t)cycle * c.devices;
        failures += run_pass(&p);
        progress(&c, p.devs, cycle);
        if (cycle + 1 < c.cycles)
            sleep_ms(c.interval_ms);
    }
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    timing(lat, (size_t)c.devices * c.cycles,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    rc = summary(&c, p.devs) == 0 ? 0 : 1;
    class_summary(&c, p.devs);
    degrade_summary(&c, p.devs);
    (void)printf("failed device cycles %lu\n", failures);
out:
    for (unsigned i = 0; p.devs && i < c.devices; i++)
        sim__device_free(p.devs[i]);
    mf_free(NULL, p.devs);
    mf_free(NULL, lat);
    mf_free(NULL, token);
    mf_free(NULL, root);
    curl_global_cleanup();
    return rc;
}
