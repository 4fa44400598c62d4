/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's decision for each model of a check-in: every rule's candidate gathered from
 * the check-in cache (the device's and ops' pins, fleet and class rollbacks, the rollout
 * wave, the channel), each made the variant the device's class gets (director_variant.h),
 * and director_policy.h's precedence applied. The flow (checkin_flow.c) writes the answer
 * from the decisions.
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_DECIDE_H
#define MF_SERVER_DIRECTOR_CHECKIN_DECIDE_H

#include "common/req_parse.h"
#include "director/checkin_cache.h"
#include "director/director_policy.h"
#include "http/http_req.h"

/* Sized for the request's models (most check-ins name one or two), in one allocation. */
struct mf_checkin_work {
    struct mf_policy_input in; /* one model at a time */
    /* From checkin_begin: the first of the sequence numbers reserved for the models, and
     * the directives of each model of the request (in its order). */
    uint64_t first;
    struct mf_store_directives *dirs;
    /* The decisions: n targets, each with the request's model entry (what the device runs
     * and holds: deltas, the release it need not be sent) and the variant of the target ("":
     * the version's own blob). */
    struct mf_store_version *v;
    const struct mf_checkin_model **from;
    char (*variant)[MF_STORE_NAME_SIZE];
    size_t n;
};

/* A work area for a check-in of n_models models, on the request's allocator (mf_free with
 * r->ctx.alloc), or NULL when out of memory. */
struct mf_checkin_work *mf_checkin_decide__work_new(struct mf_httpd_req *r, size_t n_models);

/* The director's decision for each tracked model of `req` that has a released version, in
 * w->v/from/variant (w->n of them; w->dirs filled by checkin_begin). MF_OK or the store's
 * error. */
int mf_checkin_decide__collect(struct mf_checkin_work *w, struct mf_httpd_req *r,
                               const struct mf_ccache_view *v, const struct mf_checkin_req *req);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_DECIDE_H */
