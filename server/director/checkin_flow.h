/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's check-in flow: from a parsed check-in request (common/req_parse.h) to the
 * answer's text. The handler (handlers/checkin.c) parses the body into a job and replies; the
 * flow runs the job, either inline in the MHD worker (mf_checkin_flow__run) or with the
 * others of a group on the check-in stage (mf_checkin_flow__group, checkin_stage.h), where
 * one store call and one signature serve the whole group (docs/architecture.md, "Check-in
 * path"). A job lives on its request's allocator.
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_FLOW_H
#define MF_SERVER_DIRECTOR_CHECKIN_FLOW_H

#include "common/req_parse.h"
#include "http/http_req.h"

struct mf_checkin_job;

/* A new job (*out), and in *req_out its request, for the caller to parse the body into.
 * MF_OK or MF_E_NOMEM; *out is NULL on failure. Free with mf_checkin_flow__job_free. */
int mf_checkin_flow__job_new(struct mf_checkin_job **out, struct mf_checkin_req **req_out,
                             struct mf_httpd_req *r);

/* After the request is parsed and valid: prepares the job's checkin_begin. MF_OK or
 * MF_E_NOMEM (free the job then). */
int mf_checkin_flow__job_prepare(struct mf_checkin_job *j, struct mf_httpd_req *r);

/* NULL-safe for the job's parts; the job itself must not be NULL. */
void mf_checkin_flow__job_free(struct mf_httpd_req *r, struct mf_checkin_job *j);

/* Runs prepared job `j` inline and frees it. MF_OK with the answer's text in *text_out
 * (mf_alloc(NULL), the caller's; *len_out bytes), or MF_OK with a reply built on `r` (401:
 * the credential was refused; *text_out NULL), or an error with *text_out to be freed. */
int mf_checkin_flow__run(char **text_out, size_t *len_out, struct mf_httpd_req *r,
                         struct mf_checkin_job *j);

/* The check-in stage's: runs `n` (1..MF_STORE_CHECKIN_BATCH_MAX) handed-over check-ins, each
 * prepared job in its request's `stage_data`, as one group, and leaves each one's answer on
 * its request (http_req.h, `suspended`). */
void mf_checkin_flow__group(struct mf_httpd_req **rs, size_t n);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_FLOW_H */
