/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-example-fleet: N simulated devices in one process, each embedding the SDK the way
 * docs/agent.md and docs/offload.md tell an app team to (docs/example-model.md, "The
 * example fleet"). This header joins the program's two files: fleet_main.c (options,
 * dataset, threads, passes, the stats file) and fleet_device.c (one device).
 */
#ifndef MF_EXAMPLE_FLEET_H
#define MF_EXAMPLE_FLEET_H

#include "mf_dataset.h"
#include "mf_fleet_stats.h"

#include <stddef.h>
#include <stdint.h>

/* What every device shares; read-only once the devices exist. */
struct fleet_config {
    const char *server_url;
    const char *enroll_token; /* the token itself */
    const void *trust_root;
    size_t trust_root_len;
    const char *state_root; /* device i keeps its state in <state_root>/fleet-<i> */
    const char *model;
    const mf_dataset *data; /* one copy, shared by every device */
    size_t first, end;      /* the slice [first, end) of `data` the devices classify */
    unsigned per_pass;      /* images per device per pass */
    const size_t *order;    /* a seeded permutation of 0..end-first-1, shared */
    uint64_t seed;          /* each device's walk through `order` derives from it */
    uint32_t deadline_ms;   /* 0, or the app's ceiling on the sync ask deadline */
    int verbose;            /* 1: the SDK's info lines too (warnings and errors always) */
    /* Squeeze (--squeeze FROM-TO:P0-P1): devices [from, to) are under memory pressure in
     * the passes [p0, p1) of the run; to == 0: nobody is, and no agent degrades. With it a
     * pass is a simulated minute on the ports' clock, which the agents' degrade controllers
     * read (their hold window, 60 s, is one pass). */
    unsigned squeeze_from, squeeze_to, squeeze_p0, squeeze_p1;
};

struct fleet_device;

/* Creates device `index` (it enrolls on its first pass). NULL after printing why. */
struct fleet_device *fleet_device_new(const struct fleet_config *cfg, unsigned index);
void fleet_device_free(struct fleet_device *d);

/* One pass: check in (install, telemetry), classify `per_pass` images through the offload
 * handle, drain the uplink queue, save the runtime report. Failures are printed and the
 * device tries again next pass. */
void fleet_device_pass(struct fleet_device *d);

/* The device's counters (cumulative) and the version it runs ("" for none). Borrowed. */
const mf_fleet_stats *fleet_device_stats(const struct fleet_device *d);
const char *fleet_device_version(const struct fleet_device *d);

#endif /* MF_EXAMPLE_FLEET_H */
