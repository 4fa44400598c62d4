/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 9162 Merkle trees (mf_merkle.h): the leaf and node hashes every tree of the project
 * uses, and the root of a chunk tree.
 */
#include "mf_merkle.h"

#include <string.h>

void mf_merkle__leaf(uint8_t out[MF_SHA256_DIGEST_LEN], const void *a, size_t an, const void *b,
                     size_t bn)
{
    static const uint8_t leaf_tag = 0x00;
    struct mf_sha256 sha;

    mf_sha256__init(&sha);
    mf_sha256__update(&sha, &leaf_tag, 1);
    mf_sha256__update(&sha, a, an);
    if (bn)
        mf_sha256__update(&sha, b, bn);
    mf_sha256__final(&sha, out);
}

void mf_merkle__node(uint8_t out[MF_SHA256_DIGEST_LEN], const uint8_t *left, const uint8_t *right)
{
    static const uint8_t node_tag = 0x01;
    struct mf_sha256 sha;

    mf_sha256__init(&sha);
    mf_sha256__update(&sha, &node_tag, 1);
    mf_sha256__update(&sha, left, MF_SHA256_DIGEST_LEN);
    mf_sha256__update(&sha, right, MF_SHA256_DIGEST_LEN);
    mf_sha256__final(&sha, out);
}

/* Merkle Tree Hash of leaves [0, n), n >= 1 (RFC 9162 §2.1.1). */
static void tree_root(uint8_t out[MF_SHA256_DIGEST_LEN], const uint8_t (*h)[32], size_t n)
{
    uint8_t right[MF_SHA256_DIGEST_LEN];
    size_t k = 1;

    if (n == 1) {
        mf_merkle__leaf(out, h[0], MF_SHA256_DIGEST_LEN, NULL, 0);
        return;
    }
    while (k < n - k) /* the largest power of two below n */
        k *= 2;
    tree_root(out, h, k);
    tree_root(right, h + k, n - k);
    mf_merkle__node(out, out, right);
}

int mf_merkle__root_of(uint8_t out[MF_SHA256_DIGEST_LEN], const uint8_t (*hashes)[32], size_t n)
{
    if (n == 0)
        return -1;
    tree_root(out, hashes, n);
    return 0;
}
