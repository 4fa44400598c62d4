/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/report: a device's install result for one model, kept as its current state
 * per model plus a row in the event log. */
#include "handlers/handlers.h"

#include "common/req_parse.h"

#include <stdio.h>
#include <string.h>

int mf_handlers__report(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_status st;
    struct mf_report_req req;
    int err;

    err = mf_reqparse__report(&req, &r->ctx, r->json);
    if (err < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", mf_ctx__errmsg(&r->ctx));
    memset(&st, 0, sizeof(st));
    (void)snprintf(st.device_id, sizeof(st.device_id), "%s", r->device_id);
    (void)snprintf(st.model, sizeof(st.model), "%s", req.model);
    (void)snprintf(st.version, sizeof(st.version), "%s", req.version);
    (void)snprintf(st.sha256, sizeof(st.sha256), "%s", req.sha256);
    (void)snprintf(st.status, sizeof(st.status), "%s", req.status);
    (void)snprintf(st.detail, sizeof(st.detail), "%s", req.detail);
    st.reported_at = mf_handlers__now();
    err = s->ops->devices->report_insert(s, &r->ctx, &st);
    if (err == MF_OK)
        err = s->ops->devices->device_touch(s, &r->ctx, r->device_id, st.reported_at);
    if (err < 0)
        return err;
    return mf_httpd__reply_empty(r, MHD_HTTP_NO_CONTENT);
}
