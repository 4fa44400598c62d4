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

#include "http/http_metrics.h"
#include "offload/offload_srv.h"

#define ALL_ROLES (MF_ROLE_OPS | MF_ROLE_DATA | MF_ROLE_ADMIN)
#define OPS (MF_ROLE_OPS | MF_ROLE_ADMIN)
#define DATA (MF_ROLE_DATA | MF_ROLE_ADMIN)
#define ADMIN MF_ROLE_ADMIN

#define ROUTE(m, p, a, b, h, r)                                                                    \
    {                                                                                              \
        .method = m, .pattern = p, .auth = MF_HTTPD_AUTH_##a, .body = MF_HTTPD_BODY_##b,           \
        .handle = h, .roles = r                                                                    \
    }
#define STREAM(m, p, begin, data, end, r)                                                          \
    {                                                                                              \
        .method = m, .pattern = p, .auth = MF_HTTPD_AUTH_ADMIN, .body = MF_HTTPD_BODY_STREAM,      \
        .on_begin = begin, .on_data = data, .handle = end, .roles = r                              \
    }

/* A device JSON route whose body may reach MF_OFFLOAD_BODY_MAX, not MF_HTTPD_JSON_MAX. */
#define DEVICE_BIG(m, p, h)                                                                        \
    {                                                                                              \
        .method = m, .pattern = p, .auth = MF_HTTPD_AUTH_DEVICE, .body = MF_HTTPD_BODY_JSON,       \
        .handle = h, .max_body = MF_OFFLOAD_BODY_MAX                                               \
    }

const struct mf_httpd_route mf_handlers__routes[] = {
    ROUTE("GET", "/healthz", NONE, NONE, mf_handlers__healthz, 0),
    ROUTE("GET", "/metrics", ADMIN, NONE, mf_handlers__metrics, ALL_ROLES),
    ROUTE("POST", "/v1/enroll", NONE, JSON, mf_handlers__enroll, 0),
    /* checkin_begin verifies the credential with its writes (handlers/checkin.c). */
    {.method = "POST",
     .pattern = "/v1/checkin",
     .auth = MF_HTTPD_AUTH_DEVICE,
     .body = MF_HTTPD_BODY_JSON,
     .handle = mf_handlers__checkin,
     .verifies_credential = 1},
    ROUTE("POST", "/v1/report", DEVICE, JSON, mf_handlers__report, 0),
    /* "{*}": anything after /v1/blobs/ reaches the handler, whose name check answers 400
     * (not 404) to a traversal attempt or a malformed name. A download's range requests
     * take a recently verified credential from the node's cache (http_credcache.h). */
    {.method = "GET",
     .pattern = "/v1/blobs/{*}",
     .auth = MF_HTTPD_AUTH_DEVICE_OR_ADMIN,
     .body = MF_HTTPD_BODY_NONE,
     .handle = mf_handlers__blob_get,
     .roles = ALL_ROLES,
     .trusts_recent_auth = 1},
    ROUTE("GET", "/v1/admin/models", ADMIN, NONE, mf_handlers__models_list, ALL_ROLES),
    ROUTE("GET", "/v1/admin/models/{}", ADMIN, NONE, mf_handlers__model_get, ALL_ROLES),
    STREAM("PUT", "/v1/admin/models/{}/versions/{}", mf_handlers__publish_begin,
           mf_handlers__publish_data, mf_handlers__publish_end, DATA),
    STREAM("PUT", "/v1/admin/models/{}/versions/{}/release", mf_handlers__release_begin,
           mf_handlers__release_data, mf_handlers__release_put, DATA),
    /* Promote by hand (`mfctl promote --force`): deploys a release to every device with no
     * canary, so it is an ops action, and one the audit log must record (who, when, what). */
    ROUTE("POST", "/v1/admin/models/{}/versions/{}/promote", ADMIN, JSON,
          mf_handlers__release_promote, OPS),
    ROUTE("PUT", "/v1/admin/trust/root", ADMIN, JSON, mf_handlers__trust_root_put, ADMIN),
    ROUTE("PUT", "/v1/admin/trust/keys", ADMIN, JSON, mf_handlers__trust_keys_put, ADMIN),
    ROUTE("GET", "/v1/admin/trust", ADMIN, NONE, mf_handlers__trust_get, ALL_ROLES),
    ROUTE("GET", "/v1/admin/devices", ADMIN, NONE, mf_handlers__devices_list, OPS),
    ROUTE("PUT", "/v1/admin/devices/{}/groups", ADMIN, JSON, mf_handlers__device_groups_put, OPS),
    ROUTE("PUT", "/v1/admin/devices/{}/channel", ADMIN, JSON, mf_handlers__device_channel_put, OPS),
    ROUTE("DELETE", "/v1/admin/devices/{}/credential", ADMIN, NONE, mf_handlers__device_revoke,
          OPS),
    ROUTE("GET", "/v1/admin/groups", ADMIN, NONE, mf_handlers__groups_list, OPS),
    ROUTE("GET", "/v1/admin/group-settings", ADMIN, NONE, mf_handlers__group_settings_list, OPS),
    ROUTE("PUT", "/v1/admin/groups/{}/poll", ADMIN, JSON, mf_handlers__group_poll_put, OPS),
    ROUTE("DELETE", "/v1/admin/groups/{}/poll", ADMIN, NONE, mf_handlers__group_poll_delete, OPS),
    ROUTE("PUT", "/v1/admin/groups/{}/install-window", ADMIN, JSON, mf_handlers__group_window_put,
          OPS),
    ROUTE("DELETE", "/v1/admin/groups/{}/install-window", ADMIN, NONE,
          mf_handlers__group_window_delete, OPS),
    ROUTE("POST", "/v1/admin/blobs/sweep", ADMIN, NONE, mf_handlers__blobs_sweep, OPS),
    ROUTE("GET", "/v1/admin/pins", ADMIN, NONE, mf_handlers__pins_list, OPS),
    ROUTE("PUT", "/v1/admin/pins/{}/{}/{}", ADMIN, JSON, mf_handlers__pin_put, OPS),
    ROUTE("DELETE", "/v1/admin/pins/{}/{}/{}", ADMIN, NONE, mf_handlers__pin_delete, OPS),
    ROUTE("PUT", "/v1/admin/rollbacks/{}", ADMIN, JSON, mf_handlers__rollback_put, OPS),
    ROUTE("DELETE", "/v1/admin/rollbacks/{}", ADMIN, NONE, mf_handlers__rollback_delete, OPS),
    ROUTE("GET", "/v1/admin/tokens", ADMIN, NONE, mf_handlers__tokens_list, ADMIN),
    ROUTE("POST", "/v1/admin/tokens", ADMIN, JSON, mf_handlers__token_create, ADMIN),
    ROUTE("DELETE", "/v1/admin/tokens/{}", ADMIN, NONE, mf_handlers__token_revoke, ADMIN),
    /* Offload (docs/protocol-offload.md): device routes take bodies up to 1 MiB. */
    DEVICE_BIG("POST", "/v1/offload/ask", mf_handlers__offload_ask),
    DEVICE_BIG("POST", "/v1/offload/batch", mf_handlers__offload_batch),
    ROUTE("GET", "/v1/admin/offload/rates", ADMIN, NONE, mf_handlers__offload_rates, ALL_ROLES),
    ROUTE("PUT", "/v1/admin/offload/calibration/{}/{}", ADMIN, JSON,
          mf_handlers__offload_calibration_put, DATA),
    ROUTE("GET", "/v1/admin/samples", ADMIN, NONE, mf_handlers__offload_samples_export, DATA),
    ROUTE("DELETE", "/v1/admin/devices/{}/samples", ADMIN, NONE,
          mf_handlers__offload_samples_delete, OPS | DATA),
    /* Rollouts (docs/protocol.md, "Rollouts"): ops act, every role reads. */
    ROUTE("POST", "/v1/admin/rollouts", ADMIN, JSON, mf_handlers__rollout_create, OPS),
    ROUTE("GET", "/v1/admin/rollouts", ADMIN, NONE, mf_handlers__rollouts_list, ALL_ROLES),
    ROUTE("GET", "/v1/admin/rollouts/{}", ADMIN, NONE, mf_handlers__rollout_get, ALL_ROLES),
    ROUTE("POST", "/v1/admin/rollouts/{}/{}", ADMIN, JSON, mf_handlers__rollout_act, OPS),
    ROUTE("GET", "/v1/admin/models/{}/stats", ADMIN, NONE, mf_handlers__model_stats, ALL_ROLES),
    ROUTE("GET", "/v1/admin/models/{}/versions/{}", ADMIN, NONE, mf_handlers__version_get,
          ALL_ROLES),
    ROUTE("POST", "/v1/admin/distill/{}/runs", ADMIN, JSON, mf_handlers__distill_run_create, DATA),
    ROUTE("GET", "/v1/admin/distill/runs", ADMIN, NONE, mf_handlers__distill_runs_list, ALL_ROLES),
    ROUTE("GET", "/v1/admin/distill/runs/{}", ADMIN, NONE, mf_handlers__distill_run_get, ALL_ROLES),
    /* The audit log (docs/operations.md): who did what; the router writes it (http_audit.c). */
    ROUTE("GET", "/v1/admin/audit", ADMIN, NONE, mf_handlers__audit_list, OPS),
    /* Webhooks (docs/operations.md): signed rollout events, delivered from an outbox. */
    ROUTE("GET", "/v1/admin/webhooks", ADMIN, NONE, mf_handlers__webhooks_list, OPS),
    ROUTE("POST", "/v1/admin/webhooks", ADMIN, JSON, mf_handlers__webhook_add, OPS),
    ROUTE("DELETE", "/v1/admin/webhooks/{}", ADMIN, NONE, mf_handlers__webhook_remove, OPS),
};

const size_t mf_handlers__route_count =
    sizeof(mf_handlers__routes) / sizeof(mf_handlers__routes[0]);

_Static_assert(sizeof(mf_handlers__routes) / sizeof(mf_handlers__routes[0]) <=
                   MF_METRICS_MAX_ROUTES,
               "every route has its own request counters (http_metrics.h)");
