/* SPDX-License-Identifier: Apache-2.0 */
/* Inside mf_telemetry: the handle, shared by the record, JSON and storage files. */
#ifndef MF_TELEMETRY_INT_H
#define MF_TELEMETRY_INT_H

#include "mf/telemetry.h"
#include "mf_ctx.h"

#define MF_TELEMETRY_NAME_MAX 63 /* storage object name, bytes */

struct mf_telemetry {
    mf_telemetry_version slot[MF_TELEMETRY_MAX_VERSIONS];
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
