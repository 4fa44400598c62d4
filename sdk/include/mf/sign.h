/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/sign.h
 * @brief Keys and signing of the trust documents of mf/trust.h: server and tools side
 * (library mf_manifest_sign, OpenSSL). Device builds MUST NOT link it (the build graph
 * refuses); a device app includes mf/trust.h only.
 */
#ifndef MF_SIGN_H
#define MF_SIGN_H

#include "mf/trust.h"

MF_BEGIN_DECLS

typedef struct mf_manifest_signer mf_manifest_signer;

/** A role in a root or keys document: public keys (PEM) and how many must sign. */
typedef struct mf_manifest_role_spec {
    const char *const *public_pems; /**< "PUBLIC KEY" (or private) PEM strings, NUL-ended */
    size_t count;
    unsigned int threshold; /**< 1 <= threshold <= count */
} mf_manifest_role_spec;

typedef struct mf_manifest_root_spec {
    uint64_t version; /**< 1 for the first root; N+1 for a rotation */
    uint64_t expires; /**< Unix seconds */
    mf_manifest_role_spec root;
    mf_manifest_role_spec keys; /**< who may sign the keys document */
} mf_manifest_root_spec;

typedef struct mf_manifest_keys_spec {
    uint64_t version;
    uint64_t expires;
    mf_manifest_role_spec release;
    mf_manifest_role_spec director;
} mf_manifest_keys_spec;

typedef struct mf_manifest_release_spec {
    const char *name;
    const char *version;
    uint64_t sequence;
    uint8_t sha256[MF_MANIFEST_DIGEST_LEN];
    uint64_t size;
    uint32_t chunk_size;
    size_t chunk_count;                              /**< MUST be ceil(size / chunk_size) */
    const uint8_t (*chunks)[MF_MANIFEST_DIGEST_LEN]; /**< always given: the root is over them */
    /** 1: the release carries only `chunks_root` (the chunk tree, the same few hundred bytes
     *  for any model size); 0: also the flat `chunks` list that agents of format 1 read. */
    int chunk_tree_only;
    size_t delta_count;
    const mf_manifest_delta *deltas;
    uint64_t security_floor;
    uint64_t created;
    uint64_t expires;
} mf_manifest_release_spec;

typedef struct mf_manifest_assignment_spec {
    const char *device_id;
    const char *model;
    uint8_t release_sha256[MF_MANIFEST_DIGEST_LEN]; /**< digest of the release payload */
    const char *nonce;                              /**< as sent in the check-in */
    uint64_t sequence;
    int pin;
    const char *reason; /**< NULL: none */
} mf_manifest_assignment_spec;

/**
 * @brief Creates a signer with no keys.
 * @return MF_OK or MF_E_NOMEM. Ownership: release with mf_manifest_signer_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_signer_new(mf_manifest_signer **out,
                                                           const mf_allocator *alloc);
/** Releases `s` and its keys (wiped). NULL is a no-op. */
MF_EXTERN void mf_manifest_signer_free(mf_manifest_signer *s);
/** @return the last failure's message. Borrowed from `s`. */
MF_EXTERN const char *mf_manifest_signer_errmsg(const mf_manifest_signer *s);

/**
 * @brief Generates a P-256 key as unencrypted PKCS#8 PEM. Write it with mode 0600.
 * @param keyid_out 65 bytes: lower-case hex key id plus NUL.
 * @return MF_OK, MF_E_NOMEM, MF_E_GENERIC (crypto failure).
 * Ownership: `*pem_out` (NUL-terminated, `*pem_len` without the NUL) belongs to the caller:
 * wipe and release it with mf_manifest_secret_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_signer_generate_key(char **pem_out, size_t *pem_len,
                                                                    char *keyid_out,
                                                                    mf_manifest_signer *s);

/**
 * @brief Derives the "PUBLIC KEY" PEM and key id of a PEM key (private or public).
 * @return MF_OK, MF_E_INVALID (not a P-256 key), MF_E_NOMEM.
 * Ownership: `*pem_out` belongs to the caller; release with mf_free(alloc, p).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_signer_public_key(char **pem_out, size_t *pem_len,
                                                                  char *keyid_out,
                                                                  mf_manifest_signer *s,
                                                                  const char *pem, size_t len);

/**
 * @brief Adds a private key (PEM) to the set `s` signs with; every envelope gets one
 * signature per added key.
 * @param keyid_out NULL, or 65 bytes for the key id.
 * @return MF_OK, MF_E_INVALID (not a P-256 private key), MF_E_LIMIT (16 keys).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_manifest_signer_add_key(char *keyid_out, mf_manifest_signer *s, const char *pem, size_t len);

/**
 * @brief Wraps `payload` in a DSSE envelope signed by every key of `s`.
 * @return MF_OK, MF_E_STATE (no key added), MF_E_NOMEM, MF_E_GENERIC.
 * Ownership: `*env_out` (NUL-terminated JSON) belongs to the caller; release with
 * mf_free(alloc, p) on the allocator given to mf_manifest_signer_new().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_manifest_sign_payload(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                         const char *payload_type, const void *payload, size_t payload_len);

/**
 * @brief Builds and signs a document. Payloads follow docs/formats/manifest.md.
 * @return MF_OK, MF_E_INVALID (a spec field out of range: the message names it),
 * MF_E_STATE (no key), MF_E_NOMEM. Ownership: as mf_manifest_sign_payload().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_sign_root(uint8_t **env_out, size_t *env_len,
                                                          mf_manifest_signer *s,
                                                          const mf_manifest_root_spec *spec);
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_sign_keys(uint8_t **env_out, size_t *env_len,
                                                          mf_manifest_signer *s,
                                                          const mf_manifest_keys_spec *spec);
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_sign_release(uint8_t **env_out, size_t *env_len,
                                                             mf_manifest_signer *s,
                                                             const mf_manifest_release_spec *spec);
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_manifest_sign_assignment(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                            const mf_manifest_assignment_spec *spec);

/** Most assignments mf_manifest_sign_assignment_batch() signs at once. */
#define MF_MANIFEST_SIGN_BATCH_MAX 256

/**
 * @brief Builds `n` assignments and signs them as one batch (docs/formats/manifest.md,
 * "Batch signatures"): one ECDSA signature per key over the root of a Merkle tree of the
 * `n` payloads, every envelope carrying that signature plus its own audit path. Each
 * envelope verifies on its own, like a plain one, with mf_trust_verify_assignment(). A
 * batch of 1 is exactly what mf_manifest_sign_assignment() writes (no `batch` member).
 * @param envs_out, lens_out arrays of `n` entries; all NULL/0 on failure (untouched when
 * `n` itself is out of range).
 * @return MF_OK, MF_E_INVALID (n outside 1..#MF_MANIFEST_SIGN_BATCH_MAX or a spec field out
 * of range), MF_E_STATE (no key), MF_E_NOMEM. Ownership: each `envs_out[i]` as
 * mf_manifest_sign_payload().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_manifest_sign_assignment_batch(uint8_t **envs_out, size_t *lens_out, mf_manifest_signer *s,
                                  const mf_manifest_assignment_spec *specs, size_t n);

/**
 * @brief SHA-256 of an envelope's payload: the `release_sha256` an assignment names.
 * Does not verify signatures.
 * @return MF_OK, MF_E_INVALID, MF_E_LIMIT (envelope over 16 MiB).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_manifest_signer_payload_digest(uint8_t *digest_out,
                                                                      mf_manifest_signer *s,
                                                                      const void *env, size_t len);

MF_END_DECLS

#endif /* MF_SIGN_H */
