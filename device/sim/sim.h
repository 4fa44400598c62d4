/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-sim: a fleet of simulated devices in one process (docs/rollouts.md). Each device is a
 * real libmf agent (mf/agent.h) with its own state directory talking HTTP to a real
 * mf-server, plus the mf_telemetry it hands its agent, recording what the installed model
 * version "does" (latency, memory, health, offloads) as the command line describes it per
 * version. Devices step on a few threads; an agent holds no connection between steps.
 */
#ifndef MF_SIM_H
#define MF_SIM_H

#include "mf/agent.h"
#include "mf/telemetry.h"

#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_BEHAVIOURS 8
#define SIM_MAX_CLASSES 4
#define SIM_MAX_DEVICES 20000
#define SIM_MAX_THREADS 64
#define SIM_MAX_SQUEEZES 4

/* What a model version does on every device that runs it ("v2"), or only on the devices of
 * one class ("v2@cam-lite", which wins over "v2" there): the variant that class runs. */
struct sim_behaviour {
    char version[2 * MF_AGENT_NAME_MAX + 2];
    uint64_t latency_us;  /* samples spread over [l, 2l) */
    uint64_t memory;      /* peak bytes */
    int health_fail;      /* 1: its health checks fail */
    unsigned offload_pct; /* uncertain share of asked samples */
};

/* Devices [from, to) declare this class in their check-ins (docs/protocol.md, "Device class"). */
struct sim_class {
    unsigned from, to;
    char tag[MF_AGENT_NAME_MAX + 1], accel[MF_AGENT_NAME_MAX + 1];
    mf_agent_device_class cls; /* tag and accelerator point into the two above */
};

/* A squeeze event (--squeeze): devices [from, to), or those of class `tag`, optionally only
 * while they run `version`. Minutes count on the simulated clock from the activation of the
 * installed version (its first inference in this run): from `throttle_after_min` on the
 * latency is multiplied by factor_pct / 100 and the platform reports the device hot; in
 * minutes [mem_from_min, mem_to_min) it is under memory pressure, in [battery_from_min,
 * battery_to_min) its battery is low (SIM_BATTERY_LOW_PCT). These are the signals the
 * device's platform port gives libmf's own degrade controller (mf_agent_options.squeeze_fn),
 * which reads the simulated clock through the port too, so its hold window (`hold_ms`, 0:
 * the controller's default) counts simulated time; `deadline_us` (0: none) turns on its
 * latency-deadline trigger. While the agent answers the fallback variant, the device runs it
 * at fallback_pct % of the latency (throttled alike). */
struct sim_squeeze {
    unsigned from, to;
    char tag[MF_AGENT_NAME_MAX + 1];
    char version[MF_AGENT_NAME_MAX + 1];
    unsigned throttle_after_min, factor_pct;   /* factor_pct 0: no throttling */
    unsigned mem_from_min, mem_to_min;         /* mem_to_min 0: no memory pressure */
    unsigned battery_from_min, battery_to_min; /* battery_to_min 0: no low battery */
    unsigned fallback_pct;
    unsigned hold_ms;     /* the controller's hold window; 0: its default (mf/degrade.h) */
    unsigned deadline_us; /* the controller's latency deadline; 0: none */
};

/* The battery level a squeeze's low-battery minutes report (below mf_degrade_config's default
 * low mark of 15 %); outside them the device runs on mains (-1). */
#define SIM_BATTERY_LOW_PCT 10

/* What a squeeze does at one minute. */
struct sim_squeeze_now {
    unsigned factor_pct; /* latency x factor_pct / 100 (100: none) */
    int thermal;         /* platform thermal level: 2 while throttled, else 0 */
    int memory_pressure; /* 1 under pressure */
    int battery_pct;     /* SIM_BATTERY_LOW_PCT in the low-battery minutes, else -1 */
};

struct sim_config {
    const char *server_url;
    const char *enroll_token; /* the token itself */
    const void *trust_root;
    size_t trust_root_len;
    const char *state_root; /* device i keeps its state in <state_root>/<prefix>-<i> */
    const char *prefix;
    const char *model;
    unsigned devices;
    unsigned cycles;
    unsigned interval_ms;
    unsigned inferences;               /* per device per cycle */
    unsigned threads;                  /* devices stepped in parallel */
    unsigned offline_from, offline_to; /* devices [from, to) skip cycles ... */
    unsigned offline_c0, offline_c1;   /* ... [c0, c1); to == 0: nobody is offline */
    struct sim_behaviour behave[SIM_MAX_BEHAVIOURS];
    size_t n_behave;
    const char *report_path; /* final "<device> <version>" lines; NULL: none */
    struct sim_class classes[SIM_MAX_CLASSES];
    size_t n_classes;
    struct sim_squeeze squeeze[SIM_MAX_SQUEEZES];
    size_t n_squeeze;
    /* Simulated milliseconds one cycle spans (the clock of the telemetry's sustained windows,
     * the squeezes and the agents' degrade controllers); cycle_ms_set 0: the interval's. With
     * any squeeze every device's agent degrades (docs/agent.md, "Runtime degradation"). */
    unsigned cycle_ms;
    int cycle_ms_set;
};

/* The man-page-style usage (--help). */
extern const char sim__usage[];
/* Parses the command line into `c` (defaults set by the caller); *token and *root receive
 * the files read (mf_free them, also on failure). 0, 1 after answering --help/--version, or
 * -1 after a one-line message naming the flag (sim_args.c). */
int sim__parse_args(struct sim_config *c, int argc, char **argv, char **token, char **root);
/* Device `index`'s id: "<prefix>-<index, 5 digits>", without the '-' when the prefix ends in
 * '-', '_' or '.'. 0, or -1 when it does not fit `cap`. */
int sim__device_name(char *out, size_t cap, const char *prefix, unsigned index);

/* Parses "FROM-TO:TAG,ram=MB,storage=MB[,accel=NAME][,int8][,fp16]" into `c`. 0 or -1. */
int sim__parse_class(struct sim_class *c, const char *spec);
/* The class device `index` declares, or NULL. */
const struct sim_class *sim__class_of(const struct sim_config *cfg, unsigned index);

/* Parses "VERSION[@TAG]:lat=N,mem=N,health=ok|fail,offload=PCT" into `b`. 0 or -1. */
int sim__parse_behaviour(struct sim_behaviour *b, const char *spec);

/* Parses "all|@TAG|FROM-TO:[after=MIN,factor=F][,mem=A-B][,battery=A-B][,deadline=US]
 * [,hold=MS][,fallback=PCT][,version=V]" into `q`: a throttle, memory pressure, low battery, a
 * deadline, or only a hold window (a restart that recovers). 0, or -1 with *why naming the
 * fault. */
int sim__parse_squeeze(struct sim_squeeze *q, const char *spec, const char **why);
/* The first squeeze that hits device `index` of class `tag` (NULL: none) running `version`
 * (NULL: any version), or NULL. */
const struct sim_squeeze *sim__squeeze_of(const struct sim_config *cfg, unsigned index,
                                          const char *tag, const char *version);
/* What `q` (NULL: none) does at `minute` since the activation. */
void sim__squeeze_at(struct sim_squeeze_now *out, const struct sim_squeeze *q, uint64_t minute);

/* One simulated device. */
struct sim_device;

/* Creates device `index` (its agent enrolls on its first step). NULL after printing why. */
struct sim_device *sim__device_new(const struct sim_config *cfg, unsigned index);
void sim__device_free(struct sim_device *d);

/* Cycle `cycle`: `inferences` simulated inferences of the installed version recorded into the
 * device's telemetry (spread over the cycle's simulated span, under its squeezes), then the agent's
 * step (check-in carrying them, installs). A step that downloaded nothing puts its duration in
 * *checkin_us (left alone otherwise). Returns 0, or -1 after printing why the step failed (the
 * device tries again next cycle). Devices are independent: distinct devices may cycle on distinct
 * threads at once. */
int sim__device_cycle(uint64_t *checkin_us, struct sim_device *d, unsigned cycle);

/* 1 while the device runs its fallback variant (mf_agent_model_path answers it). */
int sim__device_degraded(const struct sim_device *d);

/* The installed version ("" when none) and the device id. Borrowed. */
const char *sim__device_version(const struct sim_device *d);
const char *sim__device_id(const struct sim_device *d);
/* The class tag it declares ("" when none). Borrowed. */
const char *sim__device_class(const struct sim_device *d);

/* What libmf's degrade controller of a device did in this run: switches to the fallback and
 * back, the inferences run on the fallback variant, and whether it says degraded now. */
struct sim_degrade_counts {
    unsigned long degrades, restores, degraded_inferences;
    unsigned long by_reason[8]; /* degrades by mf_degrade_reason */
    int degraded;
};
void sim__device_degrade_counts(struct sim_degrade_counts *out, const struct sim_device *d);

#endif /* MF_SIM_H */
