/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The routing table of docs/protocol.md (and docs/openapi.yaml, which a test checks
 * against this table). The router reads the auth kind and the allowed roles from here and
 * checks both before a handler runs, so no handler can forget them; test_server_auth walks
 * this same table, so a new route cannot skip the role x credential denial test.
 *
 * Roles (docs/operations.md, "Tokens and roles"): ops runs the fleet (devices, groups,
 * channels, pins, rollbacks); data publishes models and releases; admin holds trust and
 * tokens and may do everything the others may. Reads of the registry are open to all three.
 */
#include "handlers/handlers.h"

#include "offload/offload_srv.h"

#define ALL_ROLES (MF_ROLE_OPS | MF_ROLE_DATA | MF_ROLE_ADMIN)
#define OPS (MF_ROLE_OPS | MF_ROLE_ADMIN)
#define DATA (MF_ROLE_DATA | MF_ROLE_ADMIN)
#define ADMIN MF_ROLE_ADMIN

/* A route's members: method, pattern, auth kind, body kind, handler, roles. ROUTE is a route with
 * nothing more (auth and body kinds by their last word); a route with more adds it after them. */
#define ROUTE_MEMBERS(m, p, auth_, body_, h, r)                                                    \
    .method = m, .pattern = p, .auth = auth_, .body = body_, .handle = h, .roles = r
#define ROUTE(m, p, a, b, h, r)                                                                    \
    {                                                                                              \
        ROUTE_MEMBERS(m, p, MF_HTTPD_AUTH_##a, MF_HTTPD_BODY_##b, h, r)                            \
    }
#define STREAM(m, p, begin, data, end, r)                                                          \
    {                                                                                              \
        .on_begin = begin, .on_data = data,                                                        \
        ROUTE_MEMBERS(m, p, MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_STREAM, end, r)                     \
    }

/* An admin route (an admin token holding one of roles `r`): reads and deletes take no body,
 * writes a JSON one. */
#define ADMIN_GET(p, h, r) ROUTE("GET", p, ADMIN, NONE, h, r)
#define ADMIN_DELETE(p, h, r) ROUTE("DELETE", p, ADMIN, NONE, h, r)
#define ADMIN_PUT(p, h, r) ROUTE("PUT", p, ADMIN, JSON, h, r)
#define ADMIN_POST(p, h, r) ROUTE("POST", p, ADMIN, JSON, h, r)

/* A device JSON route whose body may reach MF_OFFLOAD_BODY_MAX, not MF_HTTPD_JSON_MAX. */
#define DEVICE_BIG(m, p, h)                                                                        \
    {                                                                                              \
        .max_body = MF_OFFLOAD_BODY_MAX,                                                           \
        ROUTE_MEMBERS(m, p, MF_HTTPD_AUTH_DEVICE, MF_HTTPD_BODY_JSON, h, 0)                        \
    }

const struct mf_httpd_route mf_handlers__routes[] = {
    ROUTE("GET", "/healthz", NONE, NONE, mf_handlers__healthz, 0),
    ADMIN_GET("/metrics", mf_handlers__metrics, ALL_ROLES),
    /* The web console (docs/console.md): static files, no token; every call the page makes
     * is an admin route below, checked by role like any other client's. */
    ROUTE("GET", "/ui", NONE, NONE, mf_handlers__ui_redirect, 0),
    ROUTE("GET", "/ui/{*}", NONE, NONE, mf_handlers__ui_get, 0),
    ROUTE("POST", "/v1/enroll", NONE, JSON, mf_handlers__enroll, 0),
    /* checkin_begin verifies the credential with its writes (handlers/checkin.c). */
    {ROUTE_MEMBERS("POST", "/v1/checkin", MF_HTTPD_AUTH_DEVICE, MF_HTTPD_BODY_JSON,
                   mf_handlers__checkin, 0),
     .verifies_credential = 1},
    ROUTE("POST", "/v1/report", DEVICE, JSON, mf_handlers__report, 0),
    /* "{*}": anything after /v1/blobs/ reaches the handler, whose name check answers 400
     * (not 404) to a traversal attempt or a malformed name. A download's range requests
     * take a recently verified credential from the node's cache (http_credcache.h). */
    {ROUTE_MEMBERS("GET", "/v1/blobs/{*}", MF_HTTPD_AUTH_DEVICE_OR_ADMIN, MF_HTTPD_BODY_NONE,
                   mf_handlers__blob_get, ALL_ROLES),
     .trusts_recent_auth = 1},
    ADMIN_GET("/v1/admin/models", mf_handlers__models_list, ALL_ROLES),
    ADMIN_GET("/v1/admin/models/{}", mf_handlers__model_get, ALL_ROLES),
    ADMIN_GET("/v1/admin/models/{}/deltas", mf_handlers__model_deltas, ALL_ROLES),
    STREAM("PUT", "/v1/admin/models/{}/versions/{}", mf_handlers__publish_begin,
           mf_handlers__publish_data, mf_handlers__publish_end, DATA),
    STREAM("PUT", "/v1/admin/models/{}/versions/{}/release", mf_handlers__release_begin,
           mf_handlers__release_data, mf_handlers__release_put, DATA),
    /* Variants of a version (admin_variants.c): bytes with the needs of the device classes
     * that may run them, then each variant's own signed release. */
    STREAM("PUT", "/v1/admin/models/{}/versions/{}/variants/{}", mf_handlers__variant_begin,
           mf_handlers__publish_data, mf_handlers__variant_end, DATA),
    STREAM("PUT", "/v1/admin/models/{}/versions/{}/variants/{}/release",
           mf_handlers__variant_release_begin, mf_handlers__release_data,
           mf_handlers__variant_release_put, DATA),
    /* Promote by hand (`mfctl promote --force`): deploys a release to every device with no
     * canary, so it is an ops action, and one the audit log must record (who, when, what). */
    ADMIN_POST("/v1/admin/models/{}/versions/{}/promote", mf_handlers__release_promote, OPS),
    ADMIN_PUT("/v1/admin/trust/root", mf_handlers__trust_root_put, ADMIN),
    ADMIN_PUT("/v1/admin/trust/keys", mf_handlers__trust_keys_put, ADMIN),
    ADMIN_GET("/v1/admin/trust", mf_handlers__trust_get, ALL_ROLES),
    ADMIN_GET("/v1/admin/devices", mf_handlers__devices_list, OPS),
    ADMIN_GET("/v1/admin/devices/{}", mf_handlers__device_get, OPS),
    /* The fleet aggregated on the server (any role: counts, no device rows), and a page of
     * devices (ops): what the console shows for 10,000 devices without listing them all. */
    ADMIN_GET("/v1/admin/fleet/summary", mf_handlers__fleet_summary, ALL_ROLES),
    ADMIN_GET("/v1/admin/fleet/devices", mf_handlers__fleet_devices, OPS),
    ADMIN_PUT("/v1/admin/devices/{}/groups", mf_handlers__device_groups_put, OPS),
    ADMIN_PUT("/v1/admin/devices/{}/channel", mf_handlers__device_channel_put, OPS),
    ADMIN_DELETE("/v1/admin/devices/{}/credential", mf_handlers__device_revoke, OPS),
    ADMIN_GET("/v1/admin/groups", mf_handlers__groups_list, OPS),
    ADMIN_GET("/v1/admin/group-settings", mf_handlers__group_settings_list, OPS),
    ADMIN_PUT("/v1/admin/groups/{}/poll", mf_handlers__group_poll_put, OPS),
    ADMIN_DELETE("/v1/admin/groups/{}/poll", mf_handlers__group_poll_delete, OPS),
    ADMIN_PUT("/v1/admin/groups/{}/install-window", mf_handlers__group_window_put, OPS),
    ADMIN_DELETE("/v1/admin/groups/{}/install-window", mf_handlers__group_window_delete, OPS),
    ROUTE("POST", "/v1/admin/blobs/sweep", ADMIN, NONE, mf_handlers__blobs_sweep, OPS),
    ADMIN_GET("/v1/admin/pins", mf_handlers__pins_list, OPS),
    ADMIN_PUT("/v1/admin/pins/{}/{}/{}", mf_handlers__pin_put, OPS),
    ADMIN_DELETE("/v1/admin/pins/{}/{}/{}", mf_handlers__pin_delete, OPS),
    ADMIN_PUT("/v1/admin/rollbacks/{}", mf_handlers__rollback_put, OPS),
    ADMIN_DELETE("/v1/admin/rollbacks/{}", mf_handlers__rollback_delete, OPS),
    ADMIN_GET("/v1/admin/whoami", mf_handlers__whoami, ALL_ROLES),
    ADMIN_GET("/v1/admin/tokens", mf_handlers__tokens_list, ADMIN),
    ADMIN_POST("/v1/admin/tokens", mf_handlers__token_create, ADMIN),
    ADMIN_DELETE("/v1/admin/tokens/{}", mf_handlers__token_revoke, ADMIN),
    /* Offload (docs/protocol-offload.md): device routes take bodies up to 1 MiB. */
    DEVICE_BIG("POST", "/v1/offload/ask", mf_handlers__offload_ask),
    DEVICE_BIG("POST", "/v1/offload/batch", mf_handlers__offload_batch),
    ADMIN_GET("/v1/admin/offload/rates", mf_handlers__offload_rates, ALL_ROLES),
    ADMIN_PUT("/v1/admin/offload/calibration/{}/{}", mf_handlers__offload_calibration_put, DATA),
    ADMIN_GET("/v1/admin/samples", mf_handlers__offload_samples_export, DATA),
    ADMIN_DELETE("/v1/admin/devices/{}/samples", mf_handlers__offload_samples_delete, OPS | DATA),
    /* Rollouts (docs/protocol.md, "Rollouts"): ops act, every role reads. */
    ADMIN_POST("/v1/admin/rollouts", mf_handlers__rollout_create, OPS),
    ADMIN_GET("/v1/admin/rollouts", mf_handlers__rollouts_list, ALL_ROLES),
    ADMIN_GET("/v1/admin/rollouts/{}", mf_handlers__rollout_get, ALL_ROLES),
    /* The console's time series (admin_history.c): aggregated here, never in the page. */
    ADMIN_GET("/v1/admin/rollouts/{}/history", mf_handlers__rollout_history, ALL_ROLES),
    ADMIN_GET("/v1/admin/models/{}/installed", mf_handlers__model_installed, ALL_ROLES),
    ADMIN_POST("/v1/admin/rollouts/{}/{}", mf_handlers__rollout_act, OPS),
    ADMIN_GET("/v1/admin/models/{}/stats", mf_handlers__model_stats, ALL_ROLES),
    ADMIN_GET("/v1/admin/models/{}/versions/{}", mf_handlers__version_get, ALL_ROLES),
    ADMIN_POST("/v1/admin/distill/{}/runs", mf_handlers__distill_run_create, DATA),
    ADMIN_GET("/v1/admin/distill/runs", mf_handlers__distill_runs_list, ALL_ROLES),
    ADMIN_GET("/v1/admin/distill/runs/{}", mf_handlers__distill_run_get, ALL_ROLES),
    /* The audit log (docs/operations.md): who did what; the router writes it (http_audit.c). */
    ADMIN_GET("/v1/admin/audit", mf_handlers__audit_list, OPS),
    /* Webhooks (docs/operations.md): signed rollout events, delivered from an outbox. */
    ADMIN_GET("/v1/admin/webhooks", mf_handlers__webhooks_list, OPS),
    ADMIN_POST("/v1/admin/webhooks", mf_handlers__webhook_add, OPS),
    ADMIN_DELETE("/v1/admin/webhooks/{}", mf_handlers__webhook_remove, OPS),
};

const size_t mf_handlers__route_count =
    sizeof(mf_handlers__routes) / sizeof(mf_handlers__routes[0]);
