/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's reader of the check-in "telemetry" field (docs/protocol.md, "Check-in field
 * for telemetry"): one model's value into per-version totals and scorecards, the same
 * structs the device keeps (mf/telemetry.h), so what the fleet views merge is exactly what devices
 * counted.
 */
#ifndef MF_SERVER_ROLLOUT_REPORT_H
#define MF_SERVER_ROLLOUT_REPORT_H

#include "mf_ctx.h"
#include "mf/telemetry.h"
#include "rollout/rollout_plan.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/*
 * Parses `value` (the "telemetry" object of one model entry) into out[0..*n_out-1] (at most
 * MF_TELEMETRY_MAX_VERSIONS), each with `model` set. MF_E_INVALID with a message naming the
 * field for anything outside the contract (a bucket index out of range, a negative or
 * non-integer count, a bad version name, too many versions).
 */
int mf_rollout__report_parse(struct mf_rollout_row *out, size_t *n_out, struct mf_ctx *ctx,
                             const char *model, const cJSON *value);

/* One entry of "versions" (what the store keeps per device and version) into `out`. */
int mf_rollout__report_parse_one(struct mf_rollout_row *out, struct mf_ctx *ctx, const char *model,
                                 const cJSON *entry);

#endif /* MF_SERVER_ROLLOUT_REPORT_H */
