/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fleet figures of one model from the stored device reports (docs/rollouts.md): check-in
 * ingest (every version of every model validated before anything is stored) and the
 * per-version aggregates that the stats view and the rollout evaluation read. Aggregates
 * merge histograms and sum counters; percentiles come from the merged counts.
 */
#ifndef MF_SERVER_ROLLOUT_FLEET_H
#define MF_SERVER_ROLLOUT_FLEET_H

#include "rollout/rollout_plan.h"
#include "store/store.h"

#define MF_ROLLOUT_FLEET_VERSIONS 32 /* versions of one model in one view; more are counted */

struct mf_rollout_version_agg {
    char version[MF_STORE_NAME_SIZE];
    struct mf_rollout_agg agg;
};

struct mf_rollout_fleet {
    struct mf_rollout_version_agg v[MF_ROLLOUT_FLEET_VERSIONS];
    size_t n;
    uint64_t skipped; /* reports of versions beyond the table, or unreadable */
};

/* Which stored reports a view covers (by device, version, time): 1 to include. NULL in
 * collect: every report. */
typedef int (*mf_rollout_keep_fn)(void *payload, const struct mf_store_telemetry *t);

/*
 * Aggregates the stored reports of `model` per version into `out` (zeroed first).
 * Returns what the store's walk returns.
 */
int mf_rollout__fleet_collect(struct mf_rollout_fleet *out, struct mf_store *s, struct mf_ctx *ctx,
                              const char *model, mf_rollout_keep_fn keep, void *payload);

/* The same for one device's reports alone (its scorecard: the console's Device view). */
int mf_rollout__device_collect(struct mf_rollout_fleet *out, struct mf_store *s, struct mf_ctx *ctx,
                               const char *model, const char *device_id);

/*
 * Adds the labelled samples of `model` (hard and audit, server/offload) that `keep` selects
 * (called with the sample's device, version and received_at as a report's) into the
 * aggregates of their versions in `fleet` (those with reports only: the strata's shares
 * come from them). A sample whose outputs do not parse is skipped.
 */
int mf_rollout__accuracy_collect(struct mf_rollout_fleet *fleet, struct mf_store *s,
                                 struct mf_ctx *ctx, const char *model, mf_rollout_keep_fn keep,
                                 void *payload);

/* The aggregate of `version` in `f`, or NULL. Borrowed from f. */
const struct mf_rollout_agg *mf_rollout__fleet_find(const struct mf_rollout_fleet *f,
                                                    const char *version);

/*
 * Check-in ingest: validates the "telemetry" value of every entry of root["models"] (at most
 * MF_TELEMETRY_MAX_VERSIONS versions in all, as a device keeps), then stores each version's
 * entry for (device_id, model, version), replacing the previous report. MF_E_INVALID (with
 * the message naming the field) before anything is stored; *stored_out counts the rows.
 */
int mf_rollout__ingest(int *stored_out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *device_id, const cJSON *root, int64_t now);
/* The validation of mf_rollout__ingest alone (MF_E_INVALID as it would answer), so a caller
 * can refuse a malformed check-in before it writes anything else. */
int mf_rollout__ingest_check(struct mf_ctx *ctx, const cJSON *root);

#endif /* MF_SERVER_ROLLOUT_FLEET_H */
