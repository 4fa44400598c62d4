/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to manifests/: the crypto-free half shared by verify (mbedTLS) and sign
 * (OpenSSL): base64, DSSE envelope and PAE, bounded JSON access, and the document parsers.
 * Nothing here checks a signature; callers parse a document only after its envelope verified
 * (the one exception, a root checked against its own keys, is documented at its caller).
 */
#ifndef MF_MANIFEST_COMMON_H
#define MF_MANIFEST_COMMON_H

#include "mf_base64.h"
#include "mf/trust.h"
#include "mf_ctx.h"

#include <stdint.h>

/* SubjectPublicKeyInfo DER of an uncompressed named-curve P-256 key: always 91 bytes. */
#define MF_MANIFEST_SPKI_LEN 91
#define MF_MANIFEST_MAX_KEYS 16 /* keys per root/keys document and per role */
#define MF_MANIFEST_MAX_SIGS 16 /* signatures per envelope */
#define MF_MANIFEST_SIG_MAX 72  /* DER ECDSA P-256 signature, worst case */
#define MF_MANIFEST_TYPE_MAX 63 /* payloadType characters */
#define MF_MANIFEST_MAX_DELTAS 64
#define MF_MANIFEST_SPEC_VERSION 1
/* JSON nesting allowed in any document: envelope 3, 5 with a batch signature's path
 * (envelope object, "signatures" array, signature object, "batch" object, "path" array);
 * release 3. Checked by the strict reader before cJSON runs. */
#define MF_MANIFEST_MAX_DEPTH 5
/* DSSE PAE prefix "DSSEv1 <n> <type> <n> " for the longest type and 20-digit lengths. */
#define MF_MANIFEST_PAE_PREFIX_MAX (7 + 21 + MF_MANIFEST_TYPE_MAX + 1 + 21 + 1)

struct mf_mkey {
    uint8_t id[MF_MANIFEST_DIGEST_LEN]; /* as claimed by the document; verify checks it */
    uint8_t der[MF_MANIFEST_SPKI_LEN];
};

struct mf_mrole {
    uint8_t ids[MF_MANIFEST_MAX_KEYS][MF_MANIFEST_DIGEST_LEN]; /* distinct, all in keys[] */
    size_t n;
    unsigned int threshold; /* 1 <= threshold <= n */
};

/* A root or keys document: both are a key map plus two roles. */
struct mf_mkeyset {
    uint64_t version;
    uint64_t expires;
    struct mf_mkey keys[MF_MANIFEST_MAX_KEYS];
    size_t nkeys;
    struct mf_mrole role[2]; /* root: {root, keys}; keys: {release, director} */
};

enum { MF_ROLE_ROOT = 0, MF_ROLE_KEYS = 1, MF_ROLE_RELEASE = 0, MF_ROLE_DIRECTOR = 1 };

/* Batch signatures (docs/formats/manifest.md §2.1): one ECDSA signature over the root of an
 * RFC 9162 Merkle tree of up to MF_MANIFEST_BATCH_MAX assignments; each envelope carries its
 * leaf's index, the tree size and its audit path (at most ceil(log2 N) = 8 hashes). */
#define MF_MANIFEST_BATCH_MAX 256
#define MF_MANIFEST_BATCH_DEPTH 8
/* The payload type the batch root is signed under (PAE body: root || uint64_be(size)). */
#define MF_MANIFEST_TYPE_ASSIGNMENT_BATCH "application/vnd.modelferry.assignment-batch"
#define MF_MANIFEST_BATCH_BODY_LEN (MF_MANIFEST_DIGEST_LEN + 8)

struct mf_mbatch {
    uint32_t index; /* 0 <= index < size (checked at parse) */
    uint32_t size;  /* 1..MF_MANIFEST_BATCH_MAX */
    size_t path_len;
    uint8_t path[MF_MANIFEST_BATCH_DEPTH][MF_MANIFEST_DIGEST_LEN];
};

struct mf_msig {
    uint8_t keyid[MF_MANIFEST_DIGEST_LEN];
    uint8_t sig[MF_MANIFEST_SIG_MAX];
    size_t sig_len;
    /* The `batch` member, NULL for a plain signature; the signature covers its root.
     * Allocated only when present, so plain envelopes cost what they did before batching. */
    struct mf_mbatch *batch;
};

/* A parsed envelope. Only the payload bytes are kept: the JSON tree is gone. */
struct mf_menvelope {
    char type[MF_MANIFEST_TYPE_MAX + 1];
    uint8_t *payload; /* decoded; owned, allocated from the ctx allocator */
    size_t payload_len;
    struct mf_msig sigs[MF_MANIFEST_MAX_SIGS];
    size_t nsigs;
};

/* Writes "DSSEv1 <len(type)> <type> <payload_len> " (no NUL) into out; returns its length,
 * or 0 when type is empty or longer than MF_MANIFEST_TYPE_MAX. */
size_t mf_manifest__pae_prefix(char *out, const char *type, size_t payload_len);

/* The batch signature body root || uint64_be(size), MF_MANIFEST_BATCH_BODY_LEN bytes. */
void mf_manifest__batch_body(uint8_t *out, const uint8_t *root, uint32_t size);
/* Parses a signature's `batch` member (object {index, size, path}); see struct mf_mbatch.
 * Path elements must decode to exactly 32 bytes; whether the path length fits (index, size)
 * is left to the verifier's walk (RFC 9162 §2.1.3.2), which refuses both excess and lack. */
int mf_manifest__batch_parse(struct mf_mbatch *out, struct mf_ctx *ctx, const void *json_obj,
                             size_t sig_idx);

/* Envelope parse: len must be <= max_len (MF_E_LIMIT); the JSON must be an object with a
 * string payloadType, string payload and an array of at most MF_MANIFEST_MAX_SIGS
 * signatures {keyid: 64 hex, sig: base64, optional batch}. Unknown members are ignored. */
int mf_manifest__envelope_parse(struct mf_menvelope **out, struct mf_ctx *ctx, const void *buf,
                                size_t len, size_t max_len);
void mf_manifest__envelope_free(struct mf_ctx *ctx, struct mf_menvelope *env);

/* Document parsers; the payload must already be authenticated (see file comment). */
int mf_manifest__parse_root(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                            size_t len);
int mf_manifest__parse_keys(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                            size_t len);
/* Release: digest is left zero (the verifier fills it in). Allocated from ctx's allocator,
 * which the result remembers for mf_manifest_release_free(). */
int mf_manifest__parse_release(mf_manifest_release **out, struct mf_ctx *ctx,
                               const uint8_t *payload, size_t len, size_t max_chunks);
/* Assignment: release is left NULL (the verifier attaches the verified one). */
int mf_manifest__parse_assignment(mf_manifest_assignment **out, struct mf_ctx *ctx,
                                  const uint8_t *payload, size_t len);
/* Hands `r` to `a`, which frees it with itself. */
void mf_manifest__assignment_attach(mf_manifest_assignment *a, mf_manifest_release *r);

/* 1 when s is 1..MF_MANIFEST_NAME_MAX of [A-Za-z0-9._-] (model, version, device id). */
int mf_manifest__name_ok(const char *s);

#endif /* MF_MANIFEST_COMMON_H */
