/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch signing of assignments (docs/formats/manifest.md §2.1): the n payloads become the
 * leaves of an RFC 9162 Merkle tree, each key signs the root once, and every envelope
 * carries its own audit path next to that shared signature. One ECDSA signature per key
 * thus serves the whole batch; manifests/verify/trust_batch.c is the device half.
 *
 * The tree is built once, by recursion on RFC 9162's split (the largest power of two below
 * the subtree's size): once both halves of a subtree are hashed, each leaf of the left half
 * gets the right half's hash appended to its path and vice versa, so paths grow from the
 * leaf upwards, the order §2.1.3.2 consumes them in. n - 1 node hashes in all.
 */
#include "sign_internal.h"
#include "mf_hex.h"
#include "mf_merkle.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <string.h>

struct batch_tree {
    uint8_t (*leaf)[MF_MANIFEST_DIGEST_LEN];
    uint8_t (*path)[MF_MANIFEST_BATCH_DEPTH][MF_MANIFEST_DIGEST_LEN];
    size_t *path_len;
};

static void path_push(struct batch_tree *t, size_t from, size_t to, const uint8_t *h)
{
    for (size_t i = from; i < to; i++) {
        assert(t->path_len[i] < MF_MANIFEST_BATCH_DEPTH);
        memcpy(t->path[i][t->path_len[i]++], h, MF_MANIFEST_DIGEST_LEN);
    }
}

/* Merkle Tree Hash of leaves [lo, hi) into out (RFC 9162 §2.1.1, the hashes of mf_merkle.h),
 * recording audit paths. */
static int tree_hash(uint8_t *out, struct batch_tree *t, size_t lo, size_t hi)
{
    uint8_t left[MF_MANIFEST_DIGEST_LEN], right[MF_MANIFEST_DIGEST_LEN];
    size_t k = 1;

    if (hi - lo == 1) {
        memcpy(out, t->leaf[lo], MF_MANIFEST_DIGEST_LEN);
        return 0;
    }
    while (k * 2 < hi - lo)
        k *= 2;
    if (tree_hash(left, t, lo, lo + k) != 0 || tree_hash(right, t, lo + k, hi) != 0)
        return -1;
    path_push(t, lo, lo + k, right);
    path_push(t, lo + k, hi, left);
    mf_merkle__node(out, left, right);
    return 0;
}

/* Leaf i = SHA-256(0x00 || PAE(assignment type, payload i)). */
static int leaf_hash(uint8_t *out, const char *payload)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    size_t len = strlen(payload);
    size_t n = mf_manifest__pae_prefix(prefix, MF_MANIFEST_TYPE_ASSIGNMENT, len);

    if (n == 0)
        return -1;
    mf_merkle__leaf(out, prefix, n, payload, len);
    return 0;
}

/* The `batch` member's JSON for leaf i: {"index":i,"size":n,"path":["b64",...]}. */
static int append_batch(struct mf_dynbuf *b, struct mf_ctx *ctx, const struct batch_tree *t,
                        size_t i, size_t n)
{
    int err = mf_dynbuf__appendf(b, ",\"batch\":{\"index\":%zu,\"size\":%zu,\"path\":[", i, n);

    for (size_t p = 0; err >= 0 && p < t->path_len[i]; p++) {
        err = mf_dynbuf__append(b, p ? ",\"" : "\"", p ? 2 : 1);
        if (err >= 0)
            err = mf_sign__append_b64(b, ctx, t->path[i][p], MF_MANIFEST_DIGEST_LEN);
        if (err >= 0)
            err = mf_dynbuf__append(b, "\"", 1);
    }
    if (err >= 0)
        err = mf_dynbuf__append(b, "]}", 2);
    return err;
}

/* Envelope i: its payload, then one signature object per key, each with the batch member. */
static int write_envelope(uint8_t **env_out, size_t *len_out, struct mf_manifest_signer *s,
                          const struct batch_tree *t, const char *payload, size_t i, size_t n,
                          uint8_t (*sigs)[MF_MANIFEST_SIG_MAX], const size_t *sig_lens)
{
    struct mf_dynbuf b;
    int err = mf_sign__envelope_begin(&b, s, MF_MANIFEST_TYPE_ASSIGNMENT, payload, strlen(payload));

    for (size_t k = 0; err >= 0 && k < s->nkeys; k++) {
        char id[MF_SHA256_HEX_LEN + 1];

        mf_hex__encode(id, s->keys[k].id, sizeof(s->keys[k].id));
        err = mf_dynbuf__appendf(&b, "%s{\"keyid\":\"%s\",\"sig\":\"", k ? "," : "", id);
        if (err >= 0)
            err = mf_sign__append_b64(&b, &s->ctx, sigs[k], sig_lens[k]);
        if (err >= 0)
            err = mf_dynbuf__append(&b, "\"", 1);
        if (err >= 0)
            err = append_batch(&b, &s->ctx, t, i, n);
        if (err >= 0)
            err = mf_dynbuf__append(&b, "}", 1);
        if (err < 0) {
            mf_dynbuf__free(&b);
            return mf_fail(&s->ctx, err, "batch envelope %zu cannot be built", i);
        }
    }
    if (err < 0)
        return err; /* envelope_begin released b and set the message */
    if (mf_dynbuf__append(&b, "]}", 2) < 0) {
        mf_dynbuf__free(&b);
        return mf_fail(&s->ctx, MF_E_LIMIT, "batch envelope %zu is too large", i);
    }
    *env_out = mf_dynbuf__take(&b, len_out);
    return MF_OK;
}

/* Signs root || uint64_be(n) under the batch payload type, once per key. */
static int sign_root(struct mf_manifest_signer *s, const uint8_t *root, size_t n,
                     uint8_t (*sigs)[MF_MANIFEST_SIG_MAX], size_t *sig_lens)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    uint8_t body[MF_MANIFEST_BATCH_BODY_LEN];
    size_t plen = mf_manifest__pae_prefix(prefix, MF_MANIFEST_TYPE_ASSIGNMENT_BATCH, sizeof(body));

    assert(plen > 0);
    mf_manifest__batch_body(body, root, (uint32_t)n);
    for (size_t k = 0; k < s->nkeys; k++) {
        int err = mf_sign__ecdsa(sigs[k], &sig_lens[k], &s->ctx, &s->keys[k], prefix, plen, body,
                                 sizeof(body));

        if (err < 0)
            return err;
    }
    return MF_OK;
}

struct batch_work {
    struct batch_tree tree;
    char **payloads;
    uint8_t sigs[MF_MANIFEST_MAX_KEYS][MF_MANIFEST_SIG_MAX];
    size_t sig_lens[MF_MANIFEST_MAX_KEYS];
};

static struct batch_work *work_new(struct mf_manifest_signer *s, size_t n)
{
    struct batch_work *w = mf_ctx__alloc(&s->ctx, sizeof(*w));

    if (!w)
        return NULL;
    memset(w, 0, sizeof(*w));
    w->tree.leaf = mf_ctx__alloc(&s->ctx, n * sizeof(*w->tree.leaf));
    w->tree.path = mf_ctx__alloc(&s->ctx, n * sizeof(*w->tree.path));
    w->tree.path_len = mf_ctx__alloc(&s->ctx, n * sizeof(*w->tree.path_len));
    w->payloads = mf_ctx__alloc(&s->ctx, n * sizeof(*w->payloads));
    if (w->tree.path_len)
        memset(w->tree.path_len, 0, n * sizeof(*w->tree.path_len));
    if (w->payloads)
        memset(w->payloads, 0, n * sizeof(*w->payloads));
    return w;
}

static void work_free(struct mf_manifest_signer *s, struct batch_work *w, size_t n)
{
    if (!w)
        return;
    for (size_t i = 0; w->payloads && i < n; i++)
        cJSON_free(w->payloads[i]);
    mf_ctx__free(&s->ctx, w->payloads);
    mf_ctx__free(&s->ctx, w->tree.leaf);
    mf_ctx__free(&s->ctx, w->tree.path);
    mf_ctx__free(&s->ctx, w->tree.path_len);
    mf_ctx__free(&s->ctx, w);
}

static int sign_batch(uint8_t **envs_out, size_t *lens_out, struct mf_manifest_signer *s,
                      struct batch_work *w, const mf_manifest_assignment_spec *specs, size_t n)
{
    uint8_t root[MF_MANIFEST_DIGEST_LEN];
    int err;

    if (!w->tree.leaf || !w->tree.path || !w->tree.path_len || !w->payloads)
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory for a batch of %zu assignments", n);
    for (size_t i = 0; i < n; i++) {
        err = mf_sign__assignment_payload(&w->payloads[i], s, &specs[i]);
        if (err < 0)
            return err;
        if (leaf_hash(w->tree.leaf[i], w->payloads[i]) != 0)
            return mf_fail(&s->ctx, MF_E_GENERIC, "hashing assignment %zu failed", i);
    }
    if (tree_hash(root, &w->tree, 0, n) != 0)
        return mf_fail(&s->ctx, MF_E_GENERIC, "hashing the batch tree failed");
    err = sign_root(s, root, n, w->sigs, w->sig_lens);
    for (size_t i = 0; err >= 0 && i < n; i++)
        err = write_envelope(&envs_out[i], &lens_out[i], s, &w->tree, w->payloads[i], i, n, w->sigs,
                             w->sig_lens);
    return err;
}

int mf_manifest_sign_assignment_batch(uint8_t **envs_out, size_t *lens_out, mf_manifest_signer *s,
                                      const mf_manifest_assignment_spec *specs, size_t n)
{
    struct batch_work *w;
    int err;

    mf_ctx__clear(&s->ctx);
    if (n == 0 || n > MF_MANIFEST_SIGN_BATCH_MAX)
        return mf_fail(&s->ctx, MF_E_INVALID, "batch of %zu assignments (1..%d)", n,
                       MF_MANIFEST_SIGN_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        envs_out[i] = NULL;
        lens_out[i] = 0;
    }
    if (s->nkeys == 0)
        return mf_fail(&s->ctx, MF_E_STATE, "signer has no key");
    /* A batch of one is a plain signature, byte for byte: agents older than batch signing
     * verify every answer of a server that is not busy. */
    if (n == 1)
        return mf_manifest_sign_assignment(&envs_out[0], &lens_out[0], s, &specs[0]);
    w = work_new(s, n);
    if (!w)
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory for a batch of %zu assignments", n);
    err = sign_batch(envs_out, lens_out, s, w, specs, n);
    work_free(s, w, n);
    if (err < 0) {
        for (size_t i = 0; i < n; i++) {
            mf_free(&s->ctx.alloc, envs_out[i]);
            envs_out[i] = NULL;
            lens_out[i] = 0;
        }
    }
    return err;
}
