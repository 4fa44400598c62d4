/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/checkin: parses and validates the request in the MHD worker, hands it to the
 * director's check-in flow (director/checkin_flow.h) on the check-in stage, or inline when
 * the server runs none or the stage is stopping, and replies with the answer.
 */
#include "handlers/handlers.h"

#include "common/req_parse.h"
#include "director/checkin_degrade.h"
#include "director/checkin_flow.h"
#include "director/checkin_stage.h"
#include "rollout/rollout_fleet.h"

int mf_handlers__checkin(struct mf_httpd_req *r)
{
    struct mf_checkin_job *j;
    struct mf_checkin_req *req;
    char *text = NULL;
    size_t len = 0;
    int err = mf_checkin_flow__job_new(&j, &req, r);

    if (err < 0)
        return err;
    err = mf_reqparse__checkin(req, &r->ctx, r->json);
    if (err == MF_OK)
        err = mf_rollout__ingest_check(&r->ctx, r->json);
    if (err == MF_OK) /* degrade switches: all valid or the check-in is refused */
        err = mf_checkin_degrade__check(&r->ctx, r->json);
    if (err == MF_OK)
        err = mf_checkin_flow__job_prepare(j, r);
    if (err < 0) {
        mf_checkin_flow__job_free(r, j);
        if (err == MF_E_INVALID) /* runtime reports: all valid or none stored (docs/rollouts.md) */
            return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", mf_ctx__errmsg(&r->ctx));
        return err;
    }
    if (r->env->stage) {
        r->stage_data = j;
        if (mf_checkin_stage__submit(r->env->stage, r))
            return MF_OK; /* answered by the stage */
        r->stage_data = NULL;
    }
    err = mf_checkin_flow__run(&text, &len, r, j);
    if (err < 0 || r->resp) {
        mf_free(NULL, text);
        return err;
    }
    return mf_httpd__reply_json_text(r, MHD_HTTP_OK, text, len);
}
