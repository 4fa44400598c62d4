/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the server side of the way down on the device (docs/agent.md, "Runtime
 * degradation"; docs/protocol.md, "Fallback variant", "Degrade switches"): the fallback
 * variant a check-in answer offers beside each assignment, and the degrade switches a
 * check-in reports (validated in the worker, stored after checkin_begin).
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_DEGRADE_H
#define MF_SERVER_DIRECTOR_CHECKIN_DEGRADE_H

#include "common/req_parse.h"
#include "director/checkin_answer.h"
#include "director/checkin_cache.h"
#include "store/store.h"

#include <cjson/cJSON.h>

/* Switches one check-in may report (the device keeps as many: MF_DEGRADE_EVENTS). */
#define MF_CHECKIN_MAX_SWITCHES 8

/*
 * "fallback" of the assignment of `v` (its bytes the ones of variant `variant`, "" for the
 * version's own) to a device of class `req->device_class`, when the version has a released
 * fallback variant of other bytes that the class may run (director_variant.h) and whose bytes
 * fit beside the assigned ones: fallback size + assigned size <= storage_mb MiB. A device
 * that declared no class gets none. Its release and blob are left out when the device said it
 * holds those bytes (`m->fallback_sha256`).
 */
int mf_checkin_degrade__fallback(struct mf_answer *ans, const struct mf_ccache_view *cv,
                                 const struct mf_checkin_req *req, const struct mf_checkin_model *m,
                                 const struct mf_store_version *v, const char *variant);

/* The check-in's optional "degrade" member, every key and value checked (MF_E_INVALID, a
 * 400, naming the first bad one); `out` (room for MF_CHECKIN_MAX_SWITCHES) and *n_out get
 * its switches, stamped `now`. */
int mf_checkin_degrade__parse(struct mf_store_switch *out, size_t *n_out, struct mf_ctx *ctx,
                              const cJSON *root, int64_t now);

/* mf_checkin_degrade__parse for the handler's validation (nothing kept). */
int mf_checkin_degrade__check(struct mf_ctx *ctx, const cJSON *root);

/* Stores the switches of a check-in that mf_checkin_degrade__parse accepted. */
int mf_checkin_degrade__store(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                              const cJSON *root, int64_t now);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_DEGRADE_H */
