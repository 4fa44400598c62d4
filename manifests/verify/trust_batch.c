/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device side of batch signatures (docs/formats/manifest.md §2.1). From the envelope's
 * own PAE and its audit path this recomputes the Merkle root the director signed, then the
 * digest ECDSA is checked against:
 *   leaf = SHA-256(0x00 || PAE(type, payload))
 *   node = SHA-256(0x01 || left || right)
 *   signed digest = SHA-256(PAE(assignment-batch type, root || uint64_be(size)))
 * The walk is RFC 9162 §2.1.3.2 verbatim; it consumes exactly as many path hashes as the
 * tree of `size` leaves has above leaf `index`, and refuses a path with one more or one
 * fewer. The leaf and node hashes are sdk/digest/mf_merkle.h's. Memory is a few fixed buffers; no
 * comparison needs to be constant-time because nothing secret is compared (the root is public and
 * the signature check decides).
 */
#include "trust_internal.h"
#include "mf_merkle.h"
#include "mf_sha256.h"

#include <string.h>

/* RFC 9162 §2.1.3.2 from leaf hash r to the root (in r); 0 when the path fits exactly. */
static int walk(uint8_t *r, const struct mf_mbatch *b)
{
    uint32_t fn, sn;

    if (b->size == 0 || b->index >= b->size)
        return -1;
    fn = b->index;
    sn = b->size - 1;
    for (size_t i = 0; i < b->path_len; i++) {
        if (sn == 0)
            return -1; /* path longer than the tree is deep here */
        if ((fn & 1u) || fn == sn) {
            mf_merkle__node(r, b->path[i], r);
            while (!(fn & 1u) && fn != 0) {
                fn >>= 1;
                sn >>= 1;
            }
        } else {
            mf_merkle__node(r, r, b->path[i]);
        }
        fn >>= 1;
        sn >>= 1;
    }
    return sn == 0 ? 0 : -1; /* sn > 0: the path stopped short of the root */
}

int mf_trust__batch_digest(uint8_t *out, const struct mf_menvelope *env, const struct mf_mbatch *b)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    uint8_t body[MF_MANIFEST_BATCH_BODY_LEN];
    uint8_t r[MF_MANIFEST_DIGEST_LEN];
    struct mf_sha256 sha;
    size_t n;

    /* Only assignments are ever batch-signed; root, keys and release signatures cover their
     * own PAE directly, so a batch member there makes the signature worthless. */
    if (strcmp(env->type, MF_MANIFEST_TYPE_ASSIGNMENT) != 0)
        return -1;
    n = mf_manifest__pae_prefix(prefix, env->type, env->payload_len);
    if (n == 0)
        return -1;
    mf_merkle__leaf(r, prefix, n, env->payload, env->payload_len);
    if (walk(r, b) != 0)
        return -1;
    mf_manifest__batch_body(body, r, b->size);
    n = mf_manifest__pae_prefix(prefix, MF_MANIFEST_TYPE_ASSIGNMENT_BATCH, sizeof(body));
    if (n == 0)
        return -1;
    mf_sha256__init(&sha);
    mf_sha256__update(&sha, prefix, n);
    mf_sha256__update(&sha, body, sizeof(body));
    mf_sha256__final(&sha, out);
    return 0;
}
