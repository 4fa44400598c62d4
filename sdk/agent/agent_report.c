/* SPDX-License-Identifier: Apache-2.0 */
/* Install reports (POST /v1/report): "installed", or "failed" with the reason as detail. */
#include "mf_agent_int.h"

int mf_agent__report(struct mf_agent *a, const char *model, const char *version, const char *sha256,
                     const char *status, const char *detail)
{
    struct mf_http_response resp;
    struct mf_dynbuf body;
    int err;

    mf_dynbuf__init(&body, &a->ctx.alloc, 4096);
    mf_http__response_init(&resp, &a->http);
    /* model, version and sha256 were validated by the check-in parser: nothing to escape. */
    err = mf_dynbuf__appendf(&body,
                             "{\"model\":\"%s\",\"version\":\"%s\",\"sha256\":\"%s\","
                             "\"status\":\"%s\",\"detail\":",
                             model, version, sha256, status);
    if (err >= 0)
        err = mf_agent__json_str(&body, detail);
    if (err >= 0)
        err = mf_dynbuf__append(&body, "}", 1);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot build the report for model %s", model);
    else
        err = mf_agent__post_json(a, &resp, "/v1/report", &body, 1, "report");
    mf_dynbuf__free(&body);
    mf_http__response_free(&resp);
    return err;
}
