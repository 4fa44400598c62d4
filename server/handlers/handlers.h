/* SPDX-License-Identifier: Apache-2.0 */
/* Route handlers, one file per route group; wired up in routes.c. */
#ifndef MF_SERVER_HANDLERS_H
#define MF_SERVER_HANDLERS_H

#include "http/http_req.h"
#include "mf/trust.h"
#include "mf_hex.h"

#include <stdint.h>

int mf_handlers__healthz(struct mf_httpd_req *r);
int mf_handlers__enroll(struct mf_httpd_req *r);
int mf_handlers__checkin(struct mf_httpd_req *r);
int mf_handlers__report(struct mf_httpd_req *r);
int mf_handlers__blob_get(struct mf_httpd_req *r);
int mf_handlers__models_list(struct mf_httpd_req *r);
int mf_handlers__model_get(struct mf_httpd_req *r);
int mf_handlers__model_deltas(struct mf_httpd_req *r);
/* One version's scorecard (admin_stats.c): devices, installs, P50/P95/P99, memory, offload
 * rate, teacher agreement, and "figures": every red-line figure it has data for (cold and
 * sustained latency, steady memory, energy, the robustness rates, the stratified accuracy
 * with its interval); `running` devices run it. NULL: out of memory. Model health shows
 * the fleet's, the device page one device's. */
struct mf_rollout_version_agg;
cJSON *mf_handlers__scorecard_json(const struct mf_rollout_version_agg *v, uint64_t running);
int mf_handlers__publish_begin(struct mf_httpd_req *r);
int mf_handlers__publish_data(struct mf_httpd_req *r, const char *data, size_t len);
int mf_handlers__publish_end(struct mf_httpd_req *r);
int mf_handlers__devices_list(struct mf_httpd_req *r);
int mf_handlers__release_begin(struct mf_httpd_req *r);
int mf_handlers__release_data(struct mf_httpd_req *r, const char *data, size_t len);
int mf_handlers__release_put(struct mf_httpd_req *r);
int mf_handlers__release_promote(struct mf_httpd_req *r);
/* The release envelope in r->body, verified with `t` as a device would, and describing blob
 * `v` (its model, version, sha256 and size): MF_OK with *out (free with
 * mf_manifest_release_free, also when a 400 was built: check r->resp) and its payload digest
 * in hex, or a 400 built on `r` with *out NULL. */
/* release_chunks.c: the chunk list of chunk-tree release `rel` (of staged version `v`) stored,
 * its sha256 into sha_out ("" for a release that carries its flat list); a root that does not
 * describe the stored blob answers 400 (r->resp). MF_E_IO, MF_E_NOMEM. */
int mf_handlers__release_chunks(char sha_out[MF_SHA256_HEX_LEN + 1], struct mf_httpd_req *r,
                                const mf_manifest_release *rel, const struct mf_store_version *v);
int mf_handlers__release_verify(mf_manifest_release **out, char digest[MF_SHA256_HEX_LEN + 1],
                                struct mf_httpd_req *r, mf_trust *t,
                                const struct mf_store_version *v);
/* The server's trust for judging a release: a 409 built on `r` when none is configured
 * (check r->resp), else mf_handlers__trust_load's result. */
int mf_handlers__release_trust(mf_trust **out, struct mf_httpd_req *r);
/* The upload's digest and size once its body is complete: a 400 built on `r` when they differ
 * from X-MF-Sha256 (check r->resp). */
int mf_handlers__upload_finish(char sha256[MF_SHA256_HEX_LEN + 1], uint64_t *size,
                               struct mf_httpd_req *r);
/* Ends a STREAM upload route with `err`: the temp blob dropped before the reply. */
int mf_handlers__upload_end(struct mf_httpd_req *r, int err);
/* Model variants (admin_variants.c; docs/protocol.md, "Variants"). */
int mf_handlers__variant_begin(struct mf_httpd_req *r);
int mf_handlers__variant_end(struct mf_httpd_req *r);
int mf_handlers__variant_release_begin(struct mf_httpd_req *r);
int mf_handlers__variant_release_put(struct mf_httpd_req *r);
int mf_handlers__trust_root_put(struct mf_httpd_req *r);
int mf_handlers__trust_keys_put(struct mf_httpd_req *r);
int mf_handlers__trust_get(struct mf_httpd_req *r);
int mf_handlers__metrics(struct mf_httpd_req *r);
/* metrics_rollouts.c: the rollout, fleet and webhook series, appended to `out`. */
int mf_handlers__metrics_rollouts(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx);
/* admin_fleet.c: groups, channels, device revocation */
int mf_handlers__device_groups_put(struct mf_httpd_req *r);
int mf_handlers__device_channel_put(struct mf_httpd_req *r);
int mf_handlers__device_revoke(struct mf_httpd_req *r);
int mf_handlers__groups_list(struct mf_httpd_req *r);
/* admin_group_settings.c */
int mf_handlers__group_poll_put(struct mf_httpd_req *r);
int mf_handlers__group_poll_delete(struct mf_httpd_req *r);
int mf_handlers__group_window_put(struct mf_httpd_req *r);
int mf_handlers__group_window_delete(struct mf_httpd_req *r);
int mf_handlers__group_settings_list(struct mf_httpd_req *r);
/* admin_pins.c: ops pins, channel versions and fleet rollbacks */
int mf_handlers__pins_list(struct mf_httpd_req *r);
int mf_handlers__pin_put(struct mf_httpd_req *r);
int mf_handlers__pin_delete(struct mf_httpd_req *r);
int mf_handlers__rollback_put(struct mf_httpd_req *r);
int mf_handlers__rollback_delete(struct mf_httpd_req *r);
/* admin_blobs.c: the orphan sweep (blob/blob_gc.h) */
int mf_handlers__blobs_sweep(struct mf_httpd_req *r);
/* admin_tokens.c */
int mf_handlers__tokens_list(struct mf_httpd_req *r);
int mf_handlers__token_create(struct mf_httpd_req *r);
int mf_handlers__token_revoke(struct mf_httpd_req *r);
int mf_handlers__whoami(struct mf_httpd_req *r);

/* offload.c, admin_offload.c: docs/protocol-offload.md */
int mf_handlers__offload_ask(struct mf_httpd_req *r);
int mf_handlers__offload_batch(struct mf_httpd_req *r);
int mf_handlers__offload_rates(struct mf_httpd_req *r);
int mf_handlers__offload_calibration_put(struct mf_httpd_req *r);
int mf_handlers__offload_samples_export(struct mf_httpd_req *r);
int mf_handlers__offload_samples_delete(struct mf_httpd_req *r);

/* admin_rollouts.c, admin_stats.c: docs/protocol.md, "Rollouts" */
int mf_handlers__rollout_create(struct mf_httpd_req *r);
int mf_handlers__rollouts_list(struct mf_httpd_req *r);
int mf_handlers__rollout_get(struct mf_httpd_req *r);
int mf_handlers__rollout_act(struct mf_httpd_req *r);
int mf_handlers__model_stats(struct mf_httpd_req *r);

/* admin_audit.c: docs/operations.md, "Audit log" */
int mf_handlers__audit_list(struct mf_httpd_req *r);
/* admin_webhooks.c: docs/operations.md, "Webhooks" */
int mf_handlers__webhooks_list(struct mf_httpd_req *r);
int mf_handlers__webhook_add(struct mf_httpd_req *r);
int mf_handlers__webhook_remove(struct mf_httpd_req *r);

/* admin_distill.c: docs/distill.md */
int mf_handlers__distill_run_create(struct mf_httpd_req *r);
int mf_handlers__distill_runs_list(struct mf_httpd_req *r);
int mf_handlers__distill_run_get(struct mf_httpd_req *r);
int mf_handlers__version_get(struct mf_httpd_req *r);

/* ui.c: the web console's static files (docs/console.md). path_ok: 1 when `path` (the part
 * after /ui/) is segments of [A-Za-z0-9._-], none empty nor starting with '.'. */
int mf_handlers__ui_get(struct mf_httpd_req *r);
int mf_handlers__ui_redirect(struct mf_httpd_req *r);
int mf_handlers__ui_path_ok(const char *path);
/* admin_fleet_view.c: the fleet aggregated, devices a page at a time, one device whole. */
int mf_handlers__fleet_summary(struct mf_httpd_req *r);
int mf_handlers__fleet_devices(struct mf_httpd_req *r);
int mf_handlers__device_get(struct mf_httpd_req *r);
/* The console's time series (admin_history.c): a rollout's red lines over its
 * evaluations, a model's installed versions per time bin. */
int mf_handlers__rollout_history(struct mf_httpd_req *r);
int mf_handlers__model_installed(struct mf_httpd_req *r);
/* Replies `status` with `body` when `err` is MF_OK; else frees `body` and answers 404 with
 * the context's message for MF_E_NOTFOUND, or returns `err` (list_reply.c). */
int mf_handlers__reply_body(struct mf_httpd_req *r, unsigned status, cJSON *body, int err);
/* params[0] as a rollout id (a positive decimal), 400 naming it otherwise; MF_OK either way
 * (check r->resp). */
int mf_handlers__rollout_id(int64_t *out, struct mf_httpd_req *r);

/* Replies 200 {"<key>": [...]} with the rows `walk` appends to the array (a store listing);
 * a walk's MF_E_NOMEM gets its message here. */
typedef int (*mf_handlers_walk_fn)(struct mf_httpd_req *r, cJSON *list);
int mf_handlers__reply_list(struct mf_httpd_req *r, const char *key, mf_handlers_walk_fn walk);
/* Defines `name`, the handler of a listing route that takes nothing: 200 {"<key>": [...]} with
 * a row per call of `add` (the row visitor, handed the array as its payload) from the store's
 * ops->`domain`->`op`. */
#define MF_HANDLERS_LISTING(name, key, domain, op, add)                                            \
    static int name##_walk(struct mf_httpd_req *r, cJSON *list)                                    \
    {                                                                                              \
        return r->env->store->ops->domain->op(r->env->store, &r->ctx, add, list);                  \
    }                                                                                              \
    int name(struct mf_httpd_req *r)                                                               \
    {                                                                                              \
        return mf_handlers__reply_list(r, key, name##_walk);                                       \
    }

/* Replies `code` with the one row of `list`, which a listing's row adder wrote (so a row a
 * request creates or changes reads as it does in its listing), and frees the array. `add_err`
 * is the adder's result: a failure, or no `list`, is MF_E_NOMEM "out of memory answering
 * <what>". */
int mf_handlers__reply_row(struct mf_httpd_req *r, unsigned code, cJSON *list, int add_err,
                           const char *what);

/* Replies `status` with version `v` (model, version, sha256, size), and with `with_release`
 * its release (sequence, security floor, release digest, promoted): the answer of a publish,
 * a release and a version read (admin_models.c). */
int mf_handlers__reply_version(struct mf_httpd_req *r, unsigned status,
                               const struct mf_store_version *v, int with_release);

/* Query strings: query_check replies 400 naming the first key not in `known` (NULL-terminated)
 * and the keys it knows, MF_OK either way (check r->resp); query_arg is a key's value or
 * NULL; count_arg reads an integer in [1, max] (absent: `dflt`), 400 naming it otherwise. */
int mf_handlers__query_check(struct mf_httpd_req *r, const char *const *known);
const char *mf_handlers__query_arg(const struct mf_httpd_req *r, const char *key);
int mf_handlers__count_arg(int64_t *out, struct mf_httpd_req *r, const char *key, int64_t dflt,
                           int64_t max);

/* A new object appended to the array `list` (a listing's row), NULL when out of memory (the
 * object is then freed, the array unchanged). */
cJSON *mf_handlers__add_row(cJSON *list);

/* The name of the first member of the JSON object `body` that is not in `known`
 * (NULL-terminated), NULL when there is none: a body refuses unknown keys, each route with
 * its own 400 message. */
const char *mf_handlers__unknown_member(const cJSON *body, const char *const *known);

/* The answer of a change without a body (a removal, a setting): the store's `err` 404 with
 * its message when it found nothing to change, any other error as it is, else 204 and the
 * INFO line `done`. */
int mf_handlers__reply_changed(struct mf_httpd_req *r, int err, const char *done);
/* An error the client caused becomes its 4xx with the context's message (MF_E_INVALID and
 * MF_E_LIMIT 400, MF_E_NOTFOUND 404, MF_E_STATE 409); any other error is returned as the
 * server's. */
int mf_handlers__reply_failure(struct mf_httpd_req *r, int err);

/* Replies 400 unless params[0..n-1] all match [A-Za-z0-9._-]{1,64}; MF_OK when they do
 * (check r->resp). */
int mf_handlers__check_names(struct mf_httpd_req *r, size_t n);

/* Admin routes that name something which must exist (admin_fleet.c): reply 404 naming `id`
 * ("unknown device 'x'") unless it does, MF_OK either way (check r->resp), the store's error
 * otherwise. A device is enrolled; a model has a version (staged or released); a group has
 * a device in it (groups exist through `mfctl device groups`). */
int mf_handlers__need_device(struct mf_httpd_req *r, const char *id);
int mf_handlers__need_model(struct mf_httpd_req *r, const char *id);
int mf_handlers__need_group(struct mf_httpd_req *r, const char *id);

/*
 * A trust state (manifests/verify) holding the store's newest root and, when `need_keys`,
 * its newest keys document: what the server judges incoming documents with. MF_E_NOTFOUND
 * when the store has none yet. Ownership: release with mf_trust_free().
 */
int mf_handlers__trust_load(mf_trust **out, struct mf_httpd_req *r, int need_keys);

/* The static routing table (routes.c), which the server hands the router in its env. */
extern const struct mf_httpd_route mf_handlers__routes[];
extern const size_t mf_handlers__route_count;

/* Wall-clock Unix seconds for stored timestamps. */
int64_t mf_handlers__now(void);

#endif /* MF_SERVER_HANDLERS_H */
