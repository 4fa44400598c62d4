/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to manifests/verify: the layout of mf_trust and helpers shared by its files. */
#ifndef MF_TRUST_INTERNAL_H
#define MF_TRUST_INTERNAL_H

#include "manifest_common.h"
#include "mf/ct.h"

/* Models whose security floor one device remembers. */
#define MF_TRUST_MAX_MODELS 32

/* Highest assignment sequence a device accepts: the largest integer a JSON number carries
 * exactly (the parser refuses more, the signer writes no more). A director key can spend
 * its whole space at once, which is why the space belongs to the key (struct mf_trust). */
#define MF_TRUST_SEQUENCE_MAX ((uint64_t)1 << 53)

/* A set of key ids, e.g. the director keys whose signatures counted for an assignment. */
struct mf_trust_keyids {
    uint8_t id[MF_MANIFEST_MAX_KEYS][MF_MANIFEST_DIGEST_LEN];
    size_t n;
};

struct mf_trust_floor {
    char name[MF_MANIFEST_NAME_MAX + 1];
    uint64_t floor;
};

struct mf_trust {
    struct mf_ctx ctx;
    mf_trust_options opts;
    mf_trust_reason reason; /* of the last failure */
    int has_root;
    struct mf_mkeyset root;
    uint8_t *root_env; /* verified envelope bytes, kept for mf_trust_save() */
    size_t root_env_len;
    int has_keys;
    struct mf_mkeyset keys;
    uint8_t keys_digest[MF_MANIFEST_DIGEST_LEN]; /* SHA-256 of the keys payload */
    uint8_t *keys_env;
    size_t keys_env_len;
    /* The last accepted assignment sequence and the director keys that signed it: the
     * sequence space belongs to those keys, and a keys document that takes one of them
     * out of the director role starts a fresh space (trust.c, rescope_sequence). */
    uint64_t assignment_seq;
    struct mf_trust_keyids seq_keys;
    struct mf_trust_keyids signed_by; /* scratch: the assignment being verified (no big locals) */
    struct mf_trust_floor floors[MF_TRUST_MAX_MODELS];
    size_t nfloors;
};

/* Records reason and message (like mf_fail) and returns code. */
int mf_trust__fail(struct mf_trust *t, mf_trust_reason reason, int code, const char *fmt, ...)
    MF_PRINTF(4, 5);
/* Start of every public call that may fail: clears message and reason. */
void mf_trust__begin(struct mf_trust *t);
/* End of every public call: derives a reason from `err` when no rule set one. */
int mf_trust__end(struct mf_trust *t, int err);

/* Checks that every key id of ks is the SHA-256 of its SPKI and that mbedTLS accepts the
 * key as P-256: after this, a key id names exactly one key. */
int mf_trust__check_keyids(struct mf_trust *t, const struct mf_mkeyset *ks, const char *what);
/* Parses an envelope of at most max bytes and checks its payloadType. */
int mf_trust__open(struct mf_menvelope **out, struct mf_trust *t, const void *buf, size_t len,
                   size_t max, const char *type);
/* Counts distinct keys of ks->role[role] with a valid signature over PAE(env); fails
 * unless the count reaches the role's threshold. `signers` (NULL: not wanted) receives the
 * ids of the keys counted. */
int mf_trust__verify_role(struct mf_trust_keyids *signers, struct mf_trust *t,
                          const struct mf_menvelope *env, const struct mf_mkeyset *ks, int role,
                          const char *what);
/* mf_trust__open, then mf_trust__verify_role against `ks`: on success *out is an envelope
 * of `type` that a threshold of `role` signed; on failure *out is NULL, nothing to free.
 * Every signed document but a first root (trusted by provenance) is opened this way. */
int mf_trust__open_signed(struct mf_menvelope **out, struct mf_trust_keyids *signers,
                          struct mf_trust *t, const void *buf, size_t len, size_t max,
                          const char *type, const struct mf_mkeyset *ks, int role,
                          const char *what);
/* 1 when `id` is one of the keys of ks->role[role]. */
int mf_trust__role_has(const struct mf_mkeyset *ks, int role, const uint8_t *id);
/* The digest a batch signature `b` of env signs (trust_batch.c); -1 when env is not an
 * assignment or the audit path does not lead to a root for (index, size). */
int mf_trust__batch_digest(uint8_t *out, const struct mf_menvelope *env, const struct mf_mbatch *b);
/* Accepts a keys envelope under the current root (shared by update_keys and load). */
int mf_trust__accept_keys(struct mf_trust *t, const void *env, size_t len, uint64_t now);
/* Installs a self-signed root (shared by bootstrap and load). */
int mf_trust__accept_first_root(struct mf_trust *t, const void *env, size_t len);
/* 1 when `now` is a trustworthy time at or after `expires`. */
int mf_trust__expired(uint64_t expires, uint64_t now);
uint64_t mf_trust__floor_of(const struct mf_trust *t, const char *model);

#endif /* MF_TRUST_INTERNAL_H */
