/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to manifests/sign: the signer layout and OpenSSL helpers shared by its files. */
#ifndef MF_SIGN_INTERNAL_H
#define MF_SIGN_INTERNAL_H

#include "manifest_common.h"
#include "mf/sign.h"
#include "mf/ct.h"
#include "mf_dynbuf.h"

#include <openssl/evp.h>

struct mf_sign_key {
    EVP_PKEY *pkey; /* private key */
    /* Kept ready by the first signature (mf_sign__ecdsa), NULL until then. Signing thus
     * changes the key: a signer serves one thread at a time (its message buffer already
     * required that). */
    EVP_PKEY_CTX *sctx;
    uint8_t id[MF_MANIFEST_DIGEST_LEN];
};

struct mf_manifest_signer {
    struct mf_ctx ctx;
    struct mf_sign_key keys[MF_MANIFEST_MAX_KEYS];
    size_t nkeys;
};

/* Reads a PEM key; want_private: only a private key is accepted. Checks it is P-256. */
int mf_sign__read_pem(EVP_PKEY **out, struct mf_ctx *ctx, const char *pem, size_t len,
                      int want_private);
/* Uncompressed P-256 SubjectPublicKeyInfo DER of k and its key id (SHA-256 of it). */
int mf_sign__spki(uint8_t *der, uint8_t *id, struct mf_ctx *ctx, EVP_PKEY *k);
int mf_sign__sha256(uint8_t *out, struct mf_ctx *ctx, const void *p, size_t n);
/* SHA-256, fetched once per process: OpenSSL 3 looks an algorithm up again on every implicit
 * fetch (EVP_sha256()), which cost a few per cent of signing a batch. NULL if unavailable. */
const EVP_MD *mf_sign__md_sha256(void);

/* Envelopes we write are bounded like the ones devices read (largest default + slack). */
#define MF_SIGN_ENVELOPE_MAX (16u * 1024 * 1024)

/* DER ECDSA P-256/SHA-256 signature by k over prefix || payload (a PAE), at most
 * MF_MANIFEST_SIG_MAX bytes. */
int mf_sign__ecdsa(uint8_t *sig, size_t *sig_len, struct mf_ctx *ctx, struct mf_sign_key *k,
                   const char *prefix, size_t prefix_len, const void *payload, size_t len);
int mf_sign__append_b64(struct mf_dynbuf *b, struct mf_ctx *ctx, const void *p, size_t n);
/* Initialises b and writes an envelope up to its signatures array ("signatures":[); the
 * caller appends the signature objects and "]}". On failure b is already released. */
int mf_sign__envelope_begin(struct mf_dynbuf *b, struct mf_manifest_signer *s, const char *type,
                            const void *payload, size_t len);
/* Builds an assignment payload and checks it with the device parser (sign_docs.c).
 * Ownership: release *json_out with cJSON_free(). */
int mf_sign__assignment_payload(char **json_out, struct mf_manifest_signer *s,
                                const mf_manifest_assignment_spec *spec);

#endif /* MF_SIGN_INTERNAL_H */
