/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-sim's command line (sim.h): every flag's value checked, with a one-line message naming
 * the flag, and the device ids it makes from --prefix. Apart from the fleet, so a unit test
 * (test_sim) can feed it arguments without a server.
 */
#include "sim.h"

#include "mf_cli.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char sim__usage[] =
    "NAME\n"
    "    mf-sim - a fleet of simulated devices (real libmf agents) against mf-server\n"
    "SYNOPSIS\n"
    "    mf-sim --server URL --enroll-token-file F --trust-root ROOT.json --state DIR\n"
    "           --model NAME --devices N --cycles K [--interval-ms MS] [--inferences N]\n"
    "           [--threads T] [--prefix P] [--behave SPEC]... [--offline FROM-TO:C0-C1]\n"
    "           [--class SPEC]... [--squeeze SPEC]... [--cycle-ms MS] [--report FILE]\n"
    "    mf-sim --help | --version\n"
    "DESCRIPTION\n"
    "    Each cycle every device runs N simulated inferences of its installed version as\n"
    "    --behave describes it and steps its libmf agent, whose check-in carries them (and\n"
    "    installs what is assigned). At the end it prints \"version V devices N\" per\n"
    "    installed version and the check-in latency percentiles; with --class, also per\n"
    "    class; with --squeeze, the degrade and restore switches.\n"
    "OPTIONS\n"
    "    --devices N          fleet size, 1..20000\n"
    "    --cycles K           cycles to run, at least 1\n"
    "    --interval-ms MS     pause between cycles (default 500)\n"
    "    --inferences N       simulated inferences per device per cycle (default 20)\n"
    "    --threads T          devices stepped in parallel, 1..64 (default 4)\n"
    "    --prefix P           device ids are P-00000, P-00001, ... (default \"sim\"); a P\n"
    "                         ending in '-', '_' or '.' is joined without another '-'\n"
    "    --behave SPEC        VERSION[@CLASS]:lat=US,mem=BYTES|NM,health=ok|fail,offload=PCT\n"
    "                         (up to 8; a version without one: 1 ms, 32 MiB, healthy, 5%;\n"
    "                         @CLASS: only on that class's devices, over a plain one)\n"
    "    --class FROM-TO:TAG,ram=MB,storage=MB[,accel=NAME][,int8][,fp16]\n"
    "                         devices FROM..TO-1 declare that class (up to 4)\n"
    "    --squeeze WHO:[after=MIN,factor=F][,mem=A-B][,battery=A-B][,deadline=US]\n"
    "                 [,hold=MS][,fallback=PCT][,version=V]\n"
    "                         squeeze events (up to 4) on WHO (all, @CLASS or FROM-TO),\n"
    "                         only while running V if given: from minute MIN after the\n"
    "                         version's activation latency x F (1..100, e.g. 2.5) and the\n"
    "                         device hot; memory pressure in minutes A..B-1; battery low\n"
    "                         (10 %) in minutes A..B-1. With any squeeze every agent runs\n"
    "                         libmf's degrade controller on the simulated clock, fed those\n"
    "                         signals (and, with deadline, each latency against US): it\n"
    "                         holds MS simulated ms after a switch (default 60000), and\n"
    "                         while the agent answers its fallback variant the device runs\n"
    "                         it at PCT % of the latency (default 50). A spec of a hold\n"
    "                         only squeezes nothing (a restart that recovers)\n"
    "    --cycle-ms MS        simulated time one cycle spans (default: the interval), the\n"
    "                         clock of sustained windows, squeezes and degrading\n"
    "    --offline FROM-TO:C0-C1  devices FROM..TO-1 skip cycles C0..C1-1\n"
    "    --report FILE        write \"<device> <version>\" per device at the end\n"
    "EXIT STATUS\n"
    "    0 the fleet ran; 1 a failure (message on stderr); 2 bad usage.\n";

int sim__device_name(char *out, size_t cap, const char *prefix, unsigned index)
{
    size_t n = strlen(prefix);
    /* "sim-" + "-00000" read as a typo of the separator: the prefix's own one is kept. */
    const char *sep = n == 0 || strchr("-_.", prefix[n - 1]) ? "" : "-";
    int len = snprintf(out, cap, "%s%s%05u", prefix, sep, index);

    return len > 0 && (size_t)len < cap ? 0 : -1;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? mf_alloc(NULL, 65537) : NULL;
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;

    if (f)
        (void)fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* "A-B" with A < B, ending at `stop` ('\0' or ':'). */
static int parse_range(unsigned *a, unsigned *b, const char *s, char stop)
{
    int used = 0;

    return s[0] >= '0' && s[0] <= '9' && sscanf(s, "%u-%u%n", a, b, &used) == 2 &&
                   s[used] == stop && *a < *b
               ? 0
               : -1;
}

/* Decimal digits only, in [min, max]. */
static int parse_uint(unsigned *out, const char *s, unsigned min, unsigned max)
{
    char *end = NULL;
    unsigned long v;

    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int bad(const char *flag, const char *value, const char *why)
{
    (void)fprintf(stderr, "mf-sim: %s \"%s\": %s\n", flag, value, why);
    return -1;
}

/* The numeric flags: where each lands and its range. */
struct uint_flag {
    const char *name;
    size_t offset;
    unsigned min, max;
};

static const struct uint_flag uint_flags[] = {
    {"--devices", offsetof(struct sim_config, devices), 1, SIM_MAX_DEVICES},
    {"--cycles", offsetof(struct sim_config, cycles), 1, 1000000},
    {"--interval-ms", offsetof(struct sim_config, interval_ms), 0, 3600000},
    {"--inferences", offsetof(struct sim_config, inferences), 0, 1000000},
    {"--threads", offsetof(struct sim_config, threads), 1, SIM_MAX_THREADS},
    {"--cycle-ms", offsetof(struct sim_config, cycle_ms), 0, 86400000},
};

static int parse_one(struct sim_config *c, const char *k, const char *v, char **token, char **root)
{
    size_t len = 0;

    c->cycle_ms_set |= strcmp(k, "--cycle-ms") == 0;
    for (size_t i = 0; i < sizeof(uint_flags) / sizeof(uint_flags[0]); i++) {
        if (strcmp(k, uint_flags[i].name) == 0) {
            unsigned *dst = (unsigned *)(void *)((char *)c + uint_flags[i].offset);

            if (parse_uint(dst, v, uint_flags[i].min, uint_flags[i].max) < 0) {
                (void)fprintf(stderr, "mf-sim: %s \"%s\": not an integer in %u..%u\n", k, v,
                              uint_flags[i].min, uint_flags[i].max);
                return -1;
            }
            return 0;
        }
    }
    if (strcmp(k, "--server") == 0) {
        c->server_url = v;
    } else if (strcmp(k, "--enroll-token-file") == 0) {
        mf_free(NULL, *token);
        *token = slurp(v, &len);
        if (!*token)
            return bad(k, v, "cannot be read");
        (*token)[strcspn(*token, "\r\n")] = '\0';
        c->enroll_token = *token;
    } else if (strcmp(k, "--trust-root") == 0) {
        mf_free(NULL, *root);
        *root = slurp(v, &c->trust_root_len);
        if (!*root)
            return bad(k, v, "cannot be read");
        c->trust_root = *root;
    } else if (strcmp(k, "--state") == 0) {
        c->state_root = v;
    } else if (strcmp(k, "--model") == 0) {
        c->model = v;
    } else if (strcmp(k, "--prefix") == 0) {
        c->prefix = v;
    } else if (strcmp(k, "--report") == 0) {
        c->report_path = v;
    } else if (strcmp(k, "--behave") == 0) {
        if (c->n_behave == SIM_MAX_BEHAVIOURS)
            return bad(k, v, "more than 8 behaviours");
        if (sim__parse_behaviour(&c->behave[c->n_behave], v) < 0)
            return bad(k, v, "not VERSION:lat=US,mem=BYTES|NM,health=ok|fail,offload=PCT");
        c->n_behave++;
    } else if (strcmp(k, "--class") == 0) {
        if (c->n_classes == SIM_MAX_CLASSES)
            return bad(k, v, "more than 4 classes");
        if (sim__parse_class(&c->classes[c->n_classes], v) < 0)
            return bad(k, v, "not FROM-TO:TAG,ram=MB,storage=MB[,accel=NAME][,int8][,fp16]");
        c->n_classes++;
    } else if (strcmp(k, "--squeeze") == 0) {
        const char *why = NULL;

        if (c->n_squeeze == SIM_MAX_SQUEEZES)
            return bad(k, v, "more than 4 squeezes");
        if (sim__parse_squeeze(&c->squeeze[c->n_squeeze], v, &why) < 0)
            return bad(k, v, why);
        c->n_squeeze++;
    } else if (strcmp(k, "--offline") == 0) {
        if (!strchr(v, ':') || parse_range(&c->offline_from, &c->offline_to, v, ':') < 0 ||
            parse_range(&c->offline_c0, &c->offline_c1, strchr(v, ':') + 1, '\0') < 0)
            return bad(k, v, "not FROM-TO:C0-C1 with FROM < TO and C0 < C1");
    } else {
        (void)fprintf(stderr, "mf-sim: unknown option \"%s\"\n", k);
        return -1;
    }
    return 0;
}

/* The first of the required flags that is missing, or NULL. */
static const char *missing(const struct sim_config *c)
{
    if (!c->server_url)
        return "--server";
    if (!c->enroll_token)
        return "--enroll-token-file";
    if (!c->trust_root)
        return "--trust-root";
    if (!c->state_root)
        return "--state";
    if (!c->model)
        return "--model";
    if (!c->devices)
        return "--devices";
    return c->cycles ? NULL : "--cycles";
}

int sim__parse_args(struct sim_config *c, int argc, char **argv, char **token, char **root)
{
    char id[MF_AGENT_NAME_MAX + 1];
    const char *need;
    size_t ok;

    if (mf_cli__std_flags(argc, argv, "mf-sim", sim__usage) == 0)
        return 1;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 == argc) {
            (void)fprintf(stderr, "mf-sim: option \"%s\" needs a value\n", argv[i]);
            return -1;
        }
        if (parse_one(c, argv[i], argv[i + 1], token, root) < 0)
            return -1;
    }
    if (!c->cycle_ms_set)
        c->cycle_ms = c->interval_ms;
    need = missing(c);
    if (need) {
        (void)fprintf(stderr, "mf-sim: %s is required\n", need);
        return -1;
    }
    ok = strspn(c->prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
    /* Device ids match [A-Za-z0-9._-]{1,64} (docs/protocol.md): the largest one must too. */
    if (c->prefix[ok] != '\0' || sim__device_name(id, sizeof(id), c->prefix, c->devices - 1) < 0)
        return bad("--prefix", c->prefix, "device ids must match [A-Za-z0-9._-]{1,64}");
    return 0;
}
