/* SPDX-License-Identifier: Apache-2.0 */
/* Inside mf_telemetry: the handle, shared by the record, JSON and storage files. */
#ifndef MF_TELEMETRY_INT_H
#define MF_TELEMETRY_INT_H

#include "mf/telemetry.h"
#include "mf_ctx.h"

#include <stddef.h>

#define MF_TELEMETRY_NAME_MAX 63 /* storage object name, bytes */

/*
 * One version's slot: the totals apps read (mf_telemetry_get()), the handle's own mark and
 * the scorecard. The slots are stored byte for byte (telemetry_store.c): `dirty` sits where
 * it sat when it was the public struct's last field, and the scorecard comes after both, so
 * a file of format 1 (slots without a scorecard) still loads into the prefix of each slot.
 */
struct telemetry_slot {
    mf_telemetry_version v;
    int dirty; /* changed since the last acknowledged check-in */
    mf_telemetry_scorecard sc;
};

/* Format 1's slot: what sits before `sc`. */
struct telemetry_slot_v1 {
    mf_telemetry_version v;
    int dirty;
};
_Static_assert(offsetof(struct telemetry_slot, sc) == sizeof(struct telemetry_slot_v1),
               "a format-1 slot is the prefix of a slot");

/* In memory only (never stored): the activation a slot's sustained windows count from. */
struct telemetry_run {
    int active;          /* 0: the next latency starts an activation */
    uint64_t started_ms; /* monotonic clock at the activation */
    int window;          /* newest sustained window reached, -1 before the first */
    uint64_t minute;     /* newest minute reached (the last window counts each) */
};

struct mf_telemetry {
    struct telemetry_slot slot[MF_TELEMETRY_MAX_VERSIONS];
    uint64_t last_use[MF_TELEMETRY_MAX_VERSIONS]; /* tick of the last record per slot */
    uint64_t tick;
    struct telemetry_run run[MF_TELEMETRY_MAX_VERSIONS];
    /* The check-in plan (mf_telemetry_checkin_plan), in memory only. */
    uint64_t sent_seq[MF_TELEMETRY_MAX_VERSIONS];    /* ack order of the last send, 0: never */
    uint64_t planned_use[MF_TELEMETRY_MAX_VERSIONS]; /* last_use when chosen */
    uint64_t seq;
    unsigned char planned[MF_TELEMETRY_MAX_VERSIONS];
    int plan_active; /* 1: checkin_json writes only the planned slots */
    mf_telemetry_energy_fn energy;
    void *energy_payload;
    int energy_slot;         /* slot the pending inferences belong to, -1: none */
    int energy_base_ok;      /* energy_base holds a reading */
    uint64_t energy_base;    /* counter at the last read */
    uint64_t energy_pending; /* inferences recorded since */
    mf_platform_ops platform;
    int has_platform;
    int heap; /* made by mf_telemetry_new() */
    mf_allocator alloc;
    char name[MF_TELEMETRY_NAME_MAX + 1];
    char tmp_name[MF_TELEMETRY_NAME_MAX + 5]; /* name + ".tmp" */
};

/* Storage shared by the totals and the degrade state (telemetry_store.c): `parts` written in
 * order to `tmp_name`, synced and renamed over `name` (a power cut leaves the old or the new
 * object); and exactly `len` bytes at `off` (a short object is MF_E_INVALID). */
int mf_telemetry__write_object(const mf_platform_ops *p, const char *tmp_name, const char *name,
                               const void *const *parts, const size_t *lens, size_t n);
int mf_telemetry__read_exact(const mf_platform_ops *p, mf_platform_file *f, uint64_t off, void *buf,
                             size_t len);

#endif /* MF_TELEMETRY_INT_H */
