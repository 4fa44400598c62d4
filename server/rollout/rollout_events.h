/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place a rollout event is written (docs/rollouts.md, "Events"): the rollout's
 * event row, for an automatic event the audit row of actor "rollout-engine", and a signed
 * delivery to every registered webhook in the outbox, in one transaction (store audit
 * event_record); then one structured log line (key=value, the server's logger at INFO).
 * Every event of server/rollout goes through mf_rollout__emit.
 */
#ifndef MF_SERVER_ROLLOUT_EVENTS_H
#define MF_SERVER_ROLLOUT_EVENTS_H

#include "store/store.h"

/* 1 for the kinds the engine writes by itself (advanced, halted, done, promoted,
 * rollback_started, rollback_ended); 0 for the ones an ops request causes (created, paused,
 * running, aborted, rolled_back), whose audit row the router writes with the token. */
int mf_rollout__event_automatic(const char *kind);

/* Records event `kind` with `detail` of rollout `r` at `now`: what the store returns (the
 * log line is written only once the rows are committed). */
int mf_rollout__emit(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_rollout *r,
                     const char *kind, const char *detail, int64_t now);

/* The log line of an event into `out` (bounded, always terminated): "event=rollout.<kind>
 * rollout=<id> model=.. version=.. previous=.. state=.. wave=.. at=<ISO 8601>
 * detail=\"..\"" with '"' and '\' in the detail escaped. Pure, for the tests. */
void mf_rollout__event_line(char *out, size_t size, const struct mf_store_rollout *r,
                            const char *kind, const char *detail, int64_t now);

/* The JSON a webhook receives for the event (docs/operations.md, "Webhooks"): {"id",
 * "type": "rollout.<kind>", "at" (ISO 8601), "at_unix", "rollout": {"id", "model",
 * "version", "previous", "state", "wave"}, "detail"}. Ownership: cJSON_free(*out). */
int mf_rollout__event_body(char **out, struct mf_ctx *ctx, const char *event_id,
                           const struct mf_store_rollout *r, const char *kind, const char *detail,
                           int64_t now);

#endif /* MF_SERVER_ROLLOUT_EVENTS_H */
