/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Type-checked views of the device request bodies of docs/protocol.md. Parsing is separate
 * from the handlers so that the fuzz target and the unit tests drive exactly the code that
 * faces the network. Every string field is borrowed from the cJSON tree passed in.
 * Each parser returns MF_OK or MF_E_INVALID with a message naming the field.
 */
#ifndef MF_SERVER_COMMON_REQ_PARSE_H
#define MF_SERVER_COMMON_REQ_PARSE_H

#include "mf_ctx.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define MF_CHECKIN_MAX_MODELS 64

struct mf_enroll_req {
    const char *enrollment_token; /* any string; its syntax is an auth matter (401) */
    const char *device_id;
};

#define MF_CHECKIN_MAX_ROLLED_BACK 8

struct mf_checkin_model {
    const char *name;
    const char *version; /* NULL: nothing installed */
    const char *sha256;  /* NULL: nothing installed */
    /* The release digest of what the device runs and holds the verified release envelope
     * of (docs/protocol.md, "Check-ins that send only what changed"); NULL: not said (an
     * older agent), every assignment then carries its release. */
    const char *release_sha256;
    /* "Check-in fields for deltas, pins and rollback" (docs/protocol.md), all optional. */
    const char *pin; /* NULL: not pinned locally */
    int pending;     /* installed version not confirmed healthy yet */
    const char *rolled_back[MF_CHECKIN_MAX_ROLLED_BACK]; /* sha256s, newest first */
    size_t n_rolled_back;
};

struct mf_checkin_req {
    const char *nonce;
    uint64_t root_version; /* the device's trusted root (0: absent) */
    uint64_t keys_version; /* the device's trusted keys document (0: none) */
    size_t n_models;
    struct mf_checkin_model models[MF_CHECKIN_MAX_MODELS];
};

struct mf_report_req {
    const char *model;
    const char *version;
    const char *sha256;
    const char *status; /* "installed" or "failed" */
    const char *detail; /* "" when absent */
};

int mf_reqparse__enroll(struct mf_enroll_req *out, struct mf_ctx *ctx, const cJSON *root);
int mf_reqparse__checkin(struct mf_checkin_req *out, struct mf_ctx *ctx, const cJSON *root);
int mf_reqparse__report(struct mf_report_req *out, struct mf_ctx *ctx, const cJSON *root);

#endif /* MF_SERVER_COMMON_REQ_PARSE_H */
