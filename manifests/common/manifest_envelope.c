/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol.md):
 *   {"payloadType": T, "payload": base64(P), "signatures": [{"keyid": K, "sig": base64(S)}]}
 * where S signs PAE(T, P) (or, for a signature with a `batch` member, a Merkle root over
 * PAE(T, P) and the other assignments of its batch: manifest_batch.c) = "DSSEv1" SP len(T) SP T SP
 * len(P) SP P, lengths in ASCII decimal. This is the only JSON read before a signature is checked,
 * so it extracts the few bounded fields it needs and drops the tree before the caller verifies
 * anything.
 */
#include "manifest_json.h"
#include "mf_hex.h"

#include <stdio.h>
#include <string.h>

size_t mf_manifest__pae_prefix(char *out, const char *type, size_t payload_len)
{
    size_t tlen = strlen(type);
    int n;

    if (tlen == 0 || tlen > MF_MANIFEST_TYPE_MAX)
        return 0;
    n = snprintf(out, MF_MANIFEST_PAE_PREFIX_MAX + 1, "DSSEv1 %zu %s %zu ", tlen, type,
                 payload_len);
    if (n < 0 || (size_t)n > MF_MANIFEST_PAE_PREFIX_MAX)
        return 0;
    return (size_t)n;
}

static int parse_sig(struct mf_msig *sig, struct mf_ctx *ctx, const cJSON *item, size_t idx)
{
    const cJSON *batch;
    const char *s;
    int err;

    if (!cJSON_IsObject(item))
        return mf_fail(ctx, MF_E_INVALID, "envelope: signature %zu is not an object", idx);
    err = mf_manifest__json_hex32(sig->keyid, ctx, item, "keyid");
    if (err < 0)
        return err;
    /* base64 of MF_MANIFEST_SIG_MAX bytes is 96 characters. */
    err = mf_manifest__json_str(&s, ctx, item, "sig", 96);
    if (err < 0)
        return err;
    err = mf_base64__decode(sig->sig, sizeof(sig->sig), &sig->sig_len, s, strlen(s));
    if (err < 0 || sig->sig_len == 0)
        return mf_fail(ctx, MF_E_INVALID, "envelope: signature %zu is not valid base64", idx);
    /* Parsed whatever the payload type: a batch member where none is allowed must make the
     * signature count for nothing (trust_crypto.c), not vanish as an unknown member. */
    batch = cJSON_GetObjectItemCaseSensitive(item, "batch");
    if (!batch)
        return MF_OK;
    sig->batch = mf_ctx__alloc(ctx, sizeof(*sig->batch));
    if (!sig->batch)
        return mf_fail(ctx, MF_E_NOMEM, "envelope: no memory for batch member %zu", idx);
    return mf_manifest__batch_parse(sig->batch, ctx, batch, idx);
}

static int parse_fields(struct mf_menvelope *env, struct mf_ctx *ctx, const cJSON *root)
{
    const cJSON *sigs, *item;
    const char *s;
    size_t n, cap, i = 0;
    int err;

    err = mf_manifest__json_str(&s, ctx, root, "payloadType", MF_MANIFEST_TYPE_MAX);
    if (err < 0)
        return err;
    memcpy(env->type, s, strlen(s) + 1);
    err = mf_manifest__json_array(&sigs, &n, ctx, root, "signatures", MF_MANIFEST_MAX_SIGS);
    if (err < 0)
        return err;
    cJSON_ArrayForEach(item, sigs)
    {
        err = parse_sig(&env->sigs[i], ctx, item, i);
        if (err < 0)
            return err;
        i++;
    }
    env->nsigs = n;
    err = mf_manifest__json_str(&s, ctx, root, "payload", SIZE_MAX);
    if (err < 0)
        return err;
    n = strlen(s);
    cap = n / 4 * 3 + 3;
    env->payload = mf_ctx__alloc(ctx, cap);
    if (!env->payload)
        return mf_fail(ctx, MF_E_NOMEM, "envelope: no memory for a %zu-byte payload", cap);
    err = mf_base64__decode(env->payload, cap, &env->payload_len, s, n);
    if (err < 0)
        return mf_fail(ctx, MF_E_INVALID, "envelope: payload is not valid base64");
    if (env->payload_len == 0)
        return mf_fail(ctx, MF_E_INVALID, "envelope: payload is empty");
    return MF_OK;
}

int mf_manifest__envelope_parse(struct mf_menvelope **out, struct mf_ctx *ctx, const void *buf,
                                size_t len, size_t max_len)
{
    struct mf_menvelope *env;
    cJSON *root = NULL;
    int err;

    *out = NULL;
    if (len > max_len)
        return mf_fail(ctx, MF_E_LIMIT, "envelope of %zu bytes exceeds the %zu-byte limit", len,
                       max_len);
    env = mf_ctx__alloc(ctx, sizeof(*env));
    if (!env)
        return mf_fail(ctx, MF_E_NOMEM, "no memory for an envelope");
    memset(env, 0, sizeof(*env));
    err = mf_manifest__json_parse(&root, ctx, buf, len, "envelope");
    if (err < 0)
        goto fail;
    err = parse_fields(env, ctx, root);
    if (err < 0)
        goto fail;
    cJSON_Delete(root);
    *out = env;
    return MF_OK;
fail:
    cJSON_Delete(root);
    mf_manifest__envelope_free(ctx, env);
    return err;
}

void mf_manifest__envelope_free(struct mf_ctx *ctx, struct mf_menvelope *env)
{
    if (!env)
        return;
    for (size_t i = 0; i < MF_MANIFEST_MAX_SIGS; i++)
        mf_ctx__free(ctx, env->sigs[i].batch);
    mf_ctx__free(ctx, env->payload);
    mf_ctx__free(ctx, env);
}
