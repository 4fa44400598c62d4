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
    if (!colon || colon == spec || (size_t)(colon - spec) > MF_AGENT_NAME_MAX)
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
