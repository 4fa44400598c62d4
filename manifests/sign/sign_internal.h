/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to manifests/sign: the signer layout and OpenSSL helpers shared by its files. */
#ifndef MF_SIGN_INTERNAL_H
#define MF_SIGN_INTERNAL_H

#include "manifest_common.h"
#include "mf/ct.h"

#include <openssl/evp.h>

struct mf_sign_key {
    EVP_PKEY *pkey; /* private key */
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

#endif /* MF_SIGN_INTERNAL_H */
