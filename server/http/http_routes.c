/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The routing table of docs/protocol.md. The router reads the auth kind from here and
 * checks it before a handler runs, so no handler can forget it.
 */
#include "http/http_req.h"

#include "handlers/handlers.h"

const struct mf_httpd_route mf_httpd__routes[] = {
    {"GET", "/healthz", MF_HTTPD_AUTH_NONE, MF_HTTPD_BODY_NONE, NULL, NULL, mf_handlers__healthz},
    {"POST", "/v1/enroll", MF_HTTPD_AUTH_NONE, MF_HTTPD_BODY_JSON, NULL, NULL, mf_handlers__enroll},
    {"POST", "/v1/checkin", MF_HTTPD_AUTH_DEVICE, MF_HTTPD_BODY_JSON, NULL, NULL,
     mf_handlers__checkin},
    {"POST", "/v1/report", MF_HTTPD_AUTH_DEVICE, MF_HTTPD_BODY_JSON, NULL, NULL,
     mf_handlers__report},
    /* "{*}": anything after /v1/blobs/ reaches the handler, whose name check answers 400
     * (not 404) to a traversal attempt or a malformed name. */
    {"GET", "/v1/blobs/{*}", MF_HTTPD_AUTH_DEVICE_OR_ADMIN, MF_HTTPD_BODY_NONE, NULL, NULL,
     mf_handlers__blob_get},
    {"GET", "/v1/admin/models", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_NONE, NULL, NULL,
     mf_handlers__models_list},
    {"PUT", "/v1/admin/models/{}/versions/{}", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_STREAM,
     mf_handlers__publish_begin, mf_handlers__publish_data, mf_handlers__publish_end},
    {"PUT", "/v1/admin/models/{}/versions/{}/release", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_STREAM,
     mf_handlers__release_begin, mf_handlers__release_data, mf_handlers__release_put},
    {"PUT", "/v1/admin/trust/root", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_JSON, NULL, NULL,
     mf_handlers__trust_root_put},
    {"PUT", "/v1/admin/trust/keys", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_JSON, NULL, NULL,
     mf_handlers__trust_keys_put},
    {"GET", "/v1/admin/trust", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_NONE, NULL, NULL,
     mf_handlers__trust_get},
    {"GET", "/v1/admin/devices", MF_HTTPD_AUTH_ADMIN, MF_HTTPD_BODY_NONE, NULL, NULL,
     mf_handlers__devices_list},
};

const size_t mf_httpd__route_count = sizeof(mf_httpd__routes) / sizeof(mf_httpd__routes[0]);
