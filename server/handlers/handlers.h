/* SPDX-License-Identifier: Apache-2.0 */
/* Route handlers, one file per route group; wired up in http/http_routes.c. */
#ifndef MF_SERVER_HANDLERS_H
#define MF_SERVER_HANDLERS_H

#include "http/http_req.h"
#include "mf/manifest.h"

#include <stdint.h>

int mf_handlers__healthz(struct mf_httpd_req *r);
int mf_handlers__enroll(struct mf_httpd_req *r);
int mf_handlers__checkin(struct mf_httpd_req *r);
int mf_handlers__report(struct mf_httpd_req *r);
int mf_handlers__blob_get(struct mf_httpd_req *r);
int mf_handlers__models_list(struct mf_httpd_req *r);
int mf_handlers__publish_begin(struct mf_httpd_req *r);
int mf_handlers__publish_data(struct mf_httpd_req *r, const char *data, size_t len);
int mf_handlers__publish_end(struct mf_httpd_req *r);
int mf_handlers__devices_list(struct mf_httpd_req *r);
int mf_handlers__release_begin(struct mf_httpd_req *r);
int mf_handlers__release_data(struct mf_httpd_req *r, const char *data, size_t len);
int mf_handlers__release_put(struct mf_httpd_req *r);
int mf_handlers__trust_root_put(struct mf_httpd_req *r);
int mf_handlers__trust_keys_put(struct mf_httpd_req *r);
int mf_handlers__trust_get(struct mf_httpd_req *r);

/*
 * A trust state (manifests/verify) holding the store's newest root and, when `need_keys`,
 * its newest keys document: what the server judges incoming documents with. MF_E_NOTFOUND
 * when the store has none yet. Ownership: release with mf_trust_free().
 */
int mf_handlers__trust_load(mf_trust **out, struct mf_httpd_req *r, int need_keys);

/* Wall-clock Unix seconds for stored timestamps. */
int64_t mf_handlers__now(void);

#endif /* MF_SERVER_HANDLERS_H */
