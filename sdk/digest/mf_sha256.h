/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one SHA-256 every device-side module uses (agent downloads, delta apply,
 * manifest verification, mfctl). FIPS 180-4 in sdk/digest itself: a portable C block
 * function, and the CPU's SHA instructions where they exist (x86 SHA-NI), chosen once at
 * run time (sha256_x86.c). Contexts are plain values: copying one snapshots the digest.
 * Server-only code may use OpenSSL instead.
 */
#ifndef MF_DIGEST_SHA256_H
#define MF_DIGEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define MF_SHA256_DIGEST_LEN 32
#define MF_SHA256_BLOCK_LEN 64

/* Compresses `nblocks` 64-byte blocks into `state`. */
typedef void (*mf_sha256_blocks_fn)(uint32_t state[8], const uint8_t *data, size_t nblocks);

struct mf_sha256 {
    uint32_t state[8];
    uint64_t len; /* bytes fed so far; len % 64 of them wait in buf */
    mf_sha256_blocks_fn blocks;
    uint8_t buf[MF_SHA256_BLOCK_LEN];
};

void mf_sha256__init(struct mf_sha256 *h);
void mf_sha256__update(struct mf_sha256 *h, const void *p, size_t n);
/* Writes the digest and wipes the context; call mf_sha256__init() again to reuse it. */
void mf_sha256__final(struct mf_sha256 *h, uint8_t out[MF_SHA256_DIGEST_LEN]);
/* Releases a context without a digest (error paths). */
void mf_sha256__abort(struct mf_sha256 *h);
/* One-shot digest of `n` bytes. */
void mf_sha256__digest(uint8_t out[MF_SHA256_DIGEST_LEN], const void *p, size_t n);

/* The block functions (tests and benchmarks): the portable one, always there, and the one
 * mf_sha256__init() picks, with its name ("sha-ni" or "portable"). */
void mf_sha256__blocks_portable(uint32_t state[8], const uint8_t *data, size_t nblocks);
mf_sha256_blocks_fn mf_sha256__blocks_best(const char **name);
/* Starts a context on a given block function (tests: the fallback on a CPU that has more). */
void mf_sha256__init_with(struct mf_sha256 *h, mf_sha256_blocks_fn blocks);

#endif /* MF_DIGEST_SHA256_H */
