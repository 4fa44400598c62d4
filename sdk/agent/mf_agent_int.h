/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the agent handle and the functions its files share. One file per job:
 *   agent.c          public API and the step loop
 *   agent_rpc.c      JSON requests to the server, JSON string escaping
 *   agent_json.c     typed field readers shared by every JSON parser of the agent
 *   agent_store.c    small durable files over the platform port
 *   agent_state.c    per-model state file (active/previous slot)
 *   agent_enroll.c   credential load and enrollment
 *   agent_checkin.c  check-in request and answer parsing
 *   agent_trust.c    the trust chain: state, root/keys updates, assignment verification
 *   agent_download.c blob download into a .part file, verified chunk by chunk
 *   agent_install.c  slot choice, activation, ready callback
 *   agent_report.c   install reports
 */
#ifndef MF_AGENT_INT_H
#define MF_AGENT_INT_H

#include "mf/agent.h"
#include "mf/ct.h"
#include "mf/manifest.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"
#include "mf_http.h"

/* "mfd_" + 64 hex digits today; room for longer credentials later. */
#define MF_AGENT_CRED_MAX 128
/* Longest blob path accepted from a check-in ("/v1/blobs/" + 64 hex today). */
#define MF_AGENT_BLOB_PATH_MAX 160
/* Longest state file or credential file read back. */
#define MF_AGENT_SMALL_FILE_MAX 4096
/* Longest storage name the agent builds ("models/<64>/slot-a.part" and such). */
#define MF_AGENT_STORE_NAME_MAX 96
/* Root rotations accepted from one check-in (mf_trust's default walk bound). */
#define MF_AGENT_MAX_ROOTS 16
/* Largest trust.state read back: two 32 KiB envelopes, floors, header. */
#define MF_AGENT_TRUST_STATE_MAX (80u * 1024u)
/* Check-in nonce: 16 random bytes in hex. */
#define MF_AGENT_NONCE_LEN 32

/* One installed copy of a model; slot 0 means "none". */
struct mf_agent_slot {
    char slot; /* 'a' or 'b' */
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
};

/* Content of models/<name>/state.json. */
struct mf_agent_model_state {
    struct mf_agent_slot active;
    struct mf_agent_slot previous; /* kept for rollback */
};

/*
 * One assignment of a check-in answer. version/sha256/size start as the answer's unsigned
 * hints (enough to name the model in a failure report) and are replaced by the verified
 * release's values before anything is downloaded.
 */
struct mf_agent_assignment {
    char model[MF_AGENT_NAME_MAX + 1];
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size;
    char blob[MF_AGENT_BLOB_PATH_MAX + 1];
    const char *release_env; /* borrowed from the check-in answer's tree */
    size_t release_len;
    const char *assignment_env; /* borrowed from the check-in answer's tree */
    size_t assignment_len;
    mf_manifest_assignment *verified; /* owned; NULL until mf_agent__trust_verify() */
};

/* The trust documents of a check-in answer, borrowed from its tree. */
struct mf_agent_trust_docs {
    const char *roots[MF_AGENT_MAX_ROOTS];
    size_t root_len[MF_AGENT_MAX_ROOTS];
    size_t n_roots;
    const char *keys; /* NULL: none sent */
    size_t keys_len;
};

struct agent_model {
    char name[MF_AGENT_NAME_MAX + 1];
    struct mf_agent_model_state state;
    int up_to_date;
    int report_pending; /* an "installed" report still has to reach the server */
    int last_error;
    char last_errmsg[MF_ERRMSG_MAX];
    uint64_t release_sequence; /* of the last verified release assigned */
};

struct mf_agent {
    struct mf_ctx ctx;
    mf_platform_ops plat;
    struct mf_http http;
    char *server_url; /* without trailing '/' */
    char *device_id;
    char *enroll_token; /* NULL when none was given; wiped on free */
    char *state_dir;
    char *ca_file;
    char credential[MF_AGENT_CRED_MAX + 1]; /* "" until enrolled; wiped on free */
    struct agent_model *models;
    const char **model_names; /* models[i].name, for the check-in parser */
    size_t n_models;
    struct mf_agent_assignment *assignments; /* n_models entries, filled by check-in */
    size_t n_assignments;
    struct cJSON *checkin_doc;          /* the last check-in answer; assignments borrow from it */
    char nonce[MF_AGENT_NONCE_LEN + 1]; /* sent with the last check-in */
    mf_trust *trust;
    long poll_interval_s;
    mf_agent_ready_fn ready_fn;
    void *ready_payload;
};

/* 1 when `s` matches [A-Za-z0-9._-]{1,64} and is not "." or ".." (names, versions, ids). */
int mf_agent__name_ok(const char *s);

/* agent_rpc.c */
int mf_agent__json_str(struct mf_dynbuf *b, const char *s);
/*
 * POSTs `body` (JSON) to server_url + `path` with the credential when `auth` is 1; any
 * status but 2xx is an error (`what` names the call in messages). On MF_OK the answer is
 * in resp->body.
 */
int mf_agent__post_json(struct mf_agent *a, struct mf_http_response *resp, const char *path,
                        const struct mf_dynbuf *body, int auth, const char *what);
int mf_agent__url(struct mf_agent *a, struct mf_dynbuf *url, const char *path);

/* agent_json.c: each reads `key` of object `obj`, validates it and fails naming `what`.key */
struct cJSON;
int mf_agent__json_name(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                        const char *what);
int mf_agent__json_sha256(struct mf_ctx *ctx, char *out, const struct cJSON *obj, const char *key,
                          const char *what);
int mf_agent__json_u64(struct mf_ctx *ctx, uint64_t *out, const struct cJSON *obj, const char *key,
                       uint64_t max, const char *what);

/* agent_store.c: whole small files, written atomically (temp + sync + durable rename). */
int mf_agent__store_write(struct mf_agent *a, const char *name, const void *data, size_t len,
                          int secret);
/* Reads `name` into `out` (at most `max` - 1 bytes); MF_E_NOTFOUND if absent. */
int mf_agent__store_read(struct mf_agent *a, struct mf_dynbuf *out, const char *name, size_t max);
int mf_agent__store_name(struct mf_agent *a, char *out, const char *model, const char *leaf);

/* agent_state.c */
int mf_agent__state_parse(struct mf_ctx *ctx, struct mf_agent_model_state *out, const char *json,
                          size_t len);
int mf_agent__state_format(struct mf_dynbuf *out, const struct mf_agent_model_state *st);
int mf_agent__state_load(struct mf_agent *a, struct agent_model *m);
int mf_agent__state_save(struct mf_agent *a, struct agent_model *m,
                         const struct mf_agent_model_state *st);

/* agent_enroll.c */
int mf_agent__credential_load(struct mf_agent *a);
int mf_agent__enroll(struct mf_agent *a);
void mf_agent__credential_drop(struct mf_agent *a);

/* agent_checkin.c: check in, then bring the trust state up to date (roots, keys). */
int mf_agent__checkin(struct mf_agent *a, size_t *n_out);
/* Releases the last answer and the verified assignments that borrow from it. */
void mf_agent__checkin_drop(struct mf_agent *a);
/*
 * Parses a check-in answer into `out` (room for n_models entries, one per tracked model)
 * and `trust`; assignments for models not in `models` are skipped. Strings in `out` and
 * `trust` borrow from `*doc_out`, which the caller releases with cJSON_Delete() (NULL on
 * failure). MF_E_INVALID for malformed JSON, a wrong nonce or bad fields.
 */
int mf_agent__checkin_parse(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                            long *poll_interval_out, struct mf_agent_trust_docs *trust,
                            struct cJSON **doc_out, const char *json, size_t len, const char *nonce,
                            const char *const *models, size_t n_models);

/* agent_trust.c */
/* Loads trust.state, or bootstraps from the provisioned root and saves it. */
int mf_agent__trust_open(struct mf_agent *a, const void *root, size_t root_len);
/* Applies the answer's root rotations and keys document, saving the state if it changed. */
int mf_agent__trust_update(struct mf_agent *a, const struct mf_agent_trust_docs *docs);
/* Verifies `as` (assignment + release envelopes) for this device and a->nonce; on success
 * as->verified is set, version/sha256/size are the release's and the state is saved. */
int mf_agent__trust_verify(struct mf_agent *a, struct mf_agent_assignment *as);
/* Raises the model's floor to the installed release's and saves the state (idempotent). */
int mf_agent__trust_commit(struct mf_agent *a, const mf_manifest_release *r);

/* agent_download.c: full fetch of the verified release of `as` into the storage object
 * `part`, every chunk checked against its signed hash as it arrives. */
int mf_agent__download(struct mf_agent *a, const char *part, const struct mf_agent_assignment *as);

/* agent_install.c */
int mf_agent__install(struct mf_agent *a, struct agent_model *m,
                      const struct mf_agent_assignment *as);

/* agent_report.c */
int mf_agent__report(struct mf_agent *a, const struct mf_agent_assignment *as, const char *status,
                     const char *detail);

#endif /* MF_AGENT_INT_H */
