/* SPDX-License-Identifier: Apache-2.0 */
/* The per-version behaviour specs of mf-sim's --behave (sim.h). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int number(uint64_t *out, const char *s, const char *end)
{
    char *stop = NULL;
    unsigned long long v = strtoull(s, &stop, 10);

    if (stop == s)
        return -1;
    if (stop < end && *stop == 'M') { /* mebibytes, for memory */
        v <<= 20;
        stop++;
    }
    if (stop != end)
        return -1;
    *out = v;
    return 0;
}

int sim__parse_behaviour(struct sim_behaviour *b, const char *spec)
{
    const char *colon = strchr(spec, ':');
    const char *p;

    memset(b, 0, sizeof(*b));
    b->latency_us = 1000;
    b->memory = 32u << 20;
    b->offload_pct = 5;
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(b->version))
        return -1;
    (void)snprintf(b->version, sizeof(b->version), "%.*s", (int)(colon - spec), spec);
    for (p = colon + 1; *p;) {
        const char *end = strchr(p, ',');
        const char *eq = strchr(p, '=');
        uint64_t v = 0;

        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end)
            return -1;
        if (strncmp(p, "health=", 7) == 0) {
            if (end - eq - 1 == 4 && strncmp(eq + 1, "fail", 4) == 0)
                b->health_fail = 1;
            else if (!(end - eq - 1 == 2 && strncmp(eq + 1, "ok", 2) == 0))
                return -1;
        } else if (number(&v, eq + 1, end) < 0) {
            return -1;
        } else if (strncmp(p, "lat=", 4) == 0 && v > 0) {
            b->latency_us = v;
        } else if (strncmp(p, "mem=", 4) == 0) {
            b->memory = v;
        } else if (strncmp(p, "offload=", 8) == 0 && v <= 100) {
            b->offload_pct = (unsigned)v;
        } else {
            return -1;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* A name of the class spec: [A-Za-z0-9._-]{1,64} between p and end. */
static int class_name(char *out, const char *p, const char *end)
{
    size_t n = (size_t)(end - p);

    if (n == 0 || n > MF_AGENT_NAME_MAX ||
        strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                  "qrstuvwxyz0123456789._-") < n)
        return -1;
    (void)snprintf(out, MF_AGENT_NAME_MAX + 1, "%.*s", (int)n, p);
    return 0;
}

int sim__parse_class(struct sim_class *c, const char *spec)
{
    const char *colon = strchr(spec, ':'), *dash = strchr(spec, '-'), *p, *comma;
    char *stop = NULL;
    int have_ram = 0, have_storage = 0;

    memset(c, 0, sizeof(*c));
    if (!colon || !dash || dash > colon)
        return -1;
    c->from = (unsigned)strtoul(spec, &stop, 10);
    if (stop != dash)
        return -1;
    c->to = (unsigned)strtoul(dash + 1, &stop, 10);
    if (stop != colon || c->to <= c->from)
        return -1;
    comma = strchr(colon + 1, ',');
    if (!comma || class_name(c->tag, colon + 1, comma) < 0)
        return -1;
    for (p = comma + 1; *p;) {
        const char *end = strchr(p, ',');
        uint64_t v = 0;

        if (!end)
            end = p + strlen(p);
        if (strncmp(p, "ram=", 4) == 0 && number(&v, p + 4, end) == 0 &&
            v <= MF_AGENT_CLASS_MB_MAX) {
            c->cls.ram_mb = v;
            have_ram = 1;
        } else if (strncmp(p, "storage=", 8) == 0 && number(&v, p + 8, end) == 0 &&
                   v <= MF_AGENT_CLASS_MB_MAX) {
            c->cls.storage_mb = v;
            have_storage = 1;
        } else if (strncmp(p, "accel=", 6) == 0 && class_name(c->accel, p + 6, end) == 0) {
            c->cls.accelerator = c->accel;
        } else if (end - p == 4 && strncmp(p, "int8", 4) == 0) {
            c->cls.int8 = 1;
        } else if (end - p == 4 && strncmp(p, "fp16", 4) == 0) {
            c->cls.fp16 = 1;
        } else {
            return -1;
        }
        p = *end ? end + 1 : end;
    }
    c->cls.tag = c->tag;
    return have_ram && have_storage ? 0 : -1;
}

const struct sim_class *sim__class_of(const struct sim_config *cfg, unsigned index)
{
    for (size_t i = 0; i < cfg->n_classes; i++) {
        if (index >= cfg->classes[i].from && index < cfg->classes[i].to)
            return &cfg->classes[i];
    }
    return NULL;
}
