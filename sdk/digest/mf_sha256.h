/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one SHA-256 every device-side module uses (agent downloads, delta apply,
 * manifest verification, mfctl). It wraps mbedTLS and hides the 2.x/3.x API split, so no
 * module carries its own compatibility macros. Server-only code may use OpenSSL instead.
 */
#ifndef MF_DIGEST_SHA256_H
#define MF_DIGEST_SHA256_H

#include <mbedtls/sha256.h>
#include <stddef.h>
#include <stdint.h>

#define MF_SHA256_DIGEST_LEN 32

struct mf_sha256 {
    mbedtls_sha256_context c;
};

void mf_sha256__init(struct mf_sha256 *h);
void mf_sha256__update(struct mf_sha256 *h, const void *p, size_t n);
/* Writes the digest and releases the context; call mf_sha256__init() again to reuse it. */
void mf_sha256__final(struct mf_sha256 *h, uint8_t out[MF_SHA256_DIGEST_LEN]);
/* Releases a context without a digest (error paths). */
void mf_sha256__abort(struct mf_sha256 *h);
/* One-shot digest of `n` bytes. */
void mf_sha256__digest(uint8_t out[MF_SHA256_DIGEST_LEN], const void *p, size_t n);

#endif /* MF_DIGEST_SHA256_H */
