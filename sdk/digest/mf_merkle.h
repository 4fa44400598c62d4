/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one RFC 9162 Merkle tree of the project (§2.1.1), on mf_sha256:
 *   leaf = SHA-256(0x00 || data)      node = SHA-256(0x01 || left || right)
 * and the Merkle Tree Hash splits n leaves at the largest power of two below n. Batch
 * signatures (docs/formats/manifest.md §2.1: manifests/sign/sign_batch.c builds, and
 * manifests/verify/trust_batch.c walks, audit paths) and the chunk tree of a release
 * (§3 "chunk tree": the root over the chunk hashes) both hash with these functions.
 *
 * The root recurses on RFC 9162's split: log2(n) + 1 frames of about a hundred bytes, no
 * allocation, for any n.
 */
#ifndef MF_DIGEST_MERKLE_H
#define MF_DIGEST_MERKLE_H

#include "mf_sha256.h"

#include <stddef.h>
#include <stdint.h>

/* leaf = SHA-256(0x00 || a || b); b may be NULL with bn 0. */
void mf_merkle__leaf(uint8_t out[MF_SHA256_DIGEST_LEN], const void *a, size_t an, const void *b,
                     size_t bn);
/* node = SHA-256(0x01 || left || right); out may alias either input. */
void mf_merkle__node(uint8_t out[MF_SHA256_DIGEST_LEN], const uint8_t *left, const uint8_t *right);

/* The root of a tree whose leaves' data are the `n` 32-byte hashes at `hashes` (for a chunk
 * tree: the chunk hashes); -1 (out untouched) for n == 0. */
int mf_merkle__root_of(uint8_t out[MF_SHA256_DIGEST_LEN], const uint8_t (*hashes)[32], size_t n);

#endif /* MF_DIGEST_MERKLE_H */
