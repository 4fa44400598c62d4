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
    /* The fallback variant's bytes the device keeps beside them (docs/protocol.md,
     * "Fallback variant"); NULL: none. The answer then leaves that fallback's release out. */
    const char *fallback_sha256;
    /* "Check-in fields for deltas, pins and rollback" (docs/protocol.md), all optional. */
    const char *pin; /* NULL: not pinned locally */
    int pending;     /* installed version not confirmed healthy yet */
    const char *rolled_back[MF_CHECKIN_MAX_ROLLED_BACK]; /* sha256s, newest first */
    size_t n_rolled_back;
};

/* The device class a check-in declares (docs/protocol.md, "Device class"): what the
 * director's variant rule (director/director_variant.h) weighs. `declared` 0: the check-in
 * carried none, and the device gets each version's own blob, as before variants. */
#define MF_DEVICE_CLASS_MB_MAX (1ull << 40) /* RAM and storage in MiB: an exbibyte */

struct mf_device_class {
    int declared;
    const char *tag;         /* free-form class name ([A-Za-z0-9._-]{1,64}); "" when absent */
    const char *accelerator; /* its name, "" when the device has none */
    uint64_t ram_mb, storage_mb;
    int int8, fp16; /* the runtime runs int8 / fp16 kernels */
};

struct mf_checkin_req {
    const char *nonce;
    struct mf_device_class device_class;
    uint64_t root_version; /* the device's trusted root (0: absent) */
    uint64_t keys_version; /* the device's trusted keys document (0: none) */
    int compressed_full;   /* the device applies deltas from the empty image */
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

/* The first member of object `obj` whose name is not in `known` (NULL-terminated), or NULL. */
const char *mf_reqparse__unknown_key(const cJSON *obj, const char *const *known);
int mf_reqparse__report(struct mf_report_req *out, struct mf_ctx *ctx, const cJSON *root);

#endif /* MF_SERVER_COMMON_REQ_PARSE_H */
