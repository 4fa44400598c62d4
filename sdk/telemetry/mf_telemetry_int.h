/* SPDX-License-Identifier: Apache-2.0 */
/* Inside mf_telemetry: the handle, shared by the record, JSON and storage files. */
#ifndef MF_TELEMETRY_INT_H
#define MF_TELEMETRY_INT_H

#include "mf/telemetry.h"
#include "mf_ctx.h"

#define MF_TELEMETRY_NAME_MAX 63 /* storage object name, bytes */

/*
 * One version's slot: the totals apps read (mf_telemetry_get()) and the handle's own mark.
 * The slots are stored byte for byte (telemetry_store.c): `dirty` sits where it sat when it
 * was the public struct's last field, so files saved before it left mf/telemetry.h load.
 */
struct telemetry_slot {
    mf_telemetry_version v;
    int dirty; /* changed since the last acknowledged check-in */
};

struct mf_telemetry {
    struct telemetry_slot slot[MF_TELEMETRY_MAX_VERSIONS];
    uint64_t last_use[MF_TELEMETRY_MAX_VERSIONS]; /* tick of the last record per slot */
    uint64_t tick;
    mf_platform_ops platform;
    int has_platform;
    int heap; /* made by mf_telemetry_new() */
    mf_allocator alloc;
    char name[MF_TELEMETRY_NAME_MAX + 1];
    char tmp_name[MF_TELEMETRY_NAME_MAX + 5]; /* name + ".tmp" */
};

#endif /* MF_TELEMETRY_INT_H */
