/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device's signature check, on mbedTLS: SHA-256 over DSSE's PAE and ECDSA P-256
 * verification of DER signatures (a batch signature's digest comes from trust_batch.c).
 * Threshold counting is per distinct key of the role: a key
 * that signs twice, or a signature by a key outside the role, adds nothing.
 */
#include "trust_internal.h"

#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>
#include "mf_sha256.h"
#include <string.h>

static int pae_digest(uint8_t *out, const struct mf_menvelope *env)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    struct mf_sha256 sha;
    size_t n = mf_manifest__pae_prefix(prefix, env->type, env->payload_len);

    if (n == 0)
        return -1;
    mf_sha256__init(&sha);
    mf_sha256__update(&sha, prefix, n);
    mf_sha256__update(&sha, env->payload, env->payload_len);
    mf_sha256__final(&sha, out);
    return 0;
}

/* Loads a DER SPKI that must be an EC key on P-256. 0 on success. */
static int load_p256(mbedtls_pk_context *pk, const uint8_t *der)
{
    int rc = mbedtls_pk_parse_public_key(pk, der, MF_MANIFEST_SPKI_LEN);

    if (rc != 0)
        return rc;
    if (mbedtls_pk_get_type(pk) != MBEDTLS_PK_ECKEY ||
        mbedtls_pk_ec(*pk)->grp.id != MBEDTLS_ECP_DP_SECP256R1)
        return -1;
    return 0;
}

int mf_trust__check_keyids(struct mf_trust *t, const struct mf_mkeyset *ks, const char *what)
{
    for (size_t i = 0; i < ks->nkeys; i++) {
        uint8_t id[MF_MANIFEST_DIGEST_LEN];
        mbedtls_pk_context pk;
        int rc;

        mf_sha256__digest(id, ks->keys[i].der, MF_MANIFEST_SPKI_LEN);
        if (!mf_ct_memeq(id, ks->keys[i].id, sizeof(id)))
            return mf_trust__fail(t, MF_TRUST_R_MALFORMED, MF_E_INVALID,
                                  "%s: key %zu: key id is not the SHA-256 of its public key", what,
                                  i);
        mbedtls_pk_init(&pk);
        rc = load_p256(&pk, ks->keys[i].der);
        mbedtls_pk_free(&pk);
        if (rc != 0)
            return mf_trust__fail(t, MF_TRUST_R_MALFORMED, MF_E_INVALID,
                                  "%s: key %zu is not a valid P-256 public key (%d)", what, i, rc);
    }
    return MF_OK;
}

int mf_trust__open(struct mf_menvelope **out, struct mf_trust *t, const void *buf, size_t len,
                   size_t max, const char *type)
{
    int err = mf_manifest__envelope_parse(out, &t->ctx, buf, len, max);

    if (err < 0)
        return err;
    if (strcmp((*out)->type, type) != 0) {
        err = mf_trust__fail(t, MF_TRUST_R_WRONG_TYPE, MF_E_SIGNATURE,
                             "payloadType '%s' where '%s' is expected", (*out)->type, type);
        mf_manifest__envelope_free(&t->ctx, *out);
        *out = NULL;
    }
    return err;
}

static const struct mf_mkey *find_key(const struct mf_mkeyset *ks, const uint8_t *id)
{
    for (size_t i = 0; i < ks->nkeys; i++) {
        if (memcmp(ks->keys[i].id, id, MF_MANIFEST_DIGEST_LEN) == 0)
            return &ks->keys[i];
    }
    return NULL;
}

/* 1: some signature of env by `key` verifies; 0: none does (*bad set when one failed). */
static int key_signed(const struct mf_mkey *key, const struct mf_menvelope *env,
                      const uint8_t *digest, int *bad)
{
    mbedtls_pk_context pk;
    int ok = 0;

    mbedtls_pk_init(&pk);
    if (load_p256(&pk, key->der) != 0) {
        mbedtls_pk_free(&pk);
        return 0;
    }
    for (size_t s = 0; s < env->nsigs && !ok; s++) {
        const struct mf_msig *sig = &env->sigs[s];
        uint8_t batch_digest[MF_MANIFEST_DIGEST_LEN];
        const uint8_t *d = digest;

        if (memcmp(sig->keyid, key->id, MF_MANIFEST_DIGEST_LEN) != 0)
            continue;
        if (sig->batch) {
            /* A path that leads nowhere is as bad as a signature that does not verify. */
            if (mf_trust__batch_digest(batch_digest, env, sig->batch) != 0) {
                *bad = 1;
                continue;
            }
            d = batch_digest;
        }
        /* mbedtls_pk_verify also refuses valid DER followed by extra bytes. */
        if (mbedtls_pk_verify(&pk, MBEDTLS_MD_SHA256, d, MF_MANIFEST_DIGEST_LEN, sig->sig,
                              sig->sig_len) == 0)
            ok = 1;
        else
            *bad = 1;
    }
    mbedtls_pk_free(&pk);
    return ok;
}

int mf_trust__role_has(const struct mf_mkeyset *ks, int role, const uint8_t *id)
{
    const struct mf_mrole *r = &ks->role[role];

    for (size_t i = 0; i < r->n; i++) {
        if (memcmp(r->ids[i], id, MF_MANIFEST_DIGEST_LEN) == 0)
            return 1;
    }
    return 0;
}

int mf_trust__open_signed(struct mf_menvelope **out, struct mf_trust_keyids *signers,
                          struct mf_trust *t, const void *buf, size_t len, size_t max,
                          const char *type, const struct mf_mkeyset *ks, int role, const char *what)
{
    int err = mf_trust__open(out, t, buf, len, max, type);

    if (err < 0)
        return err;
    err = mf_trust__verify_role(signers, t, *out, ks, role, what);
    if (err < 0) {
        mf_manifest__envelope_free(&t->ctx, *out);
        *out = NULL;
    }
    return err;
}

int mf_trust__verify_role(struct mf_trust_keyids *signers, struct mf_trust *t,
                          const struct mf_menvelope *env, const struct mf_mkeyset *ks, int role,
                          const char *what)
{
    const struct mf_mrole *r = &ks->role[role];
    uint8_t digest[MF_MANIFEST_DIGEST_LEN];
    unsigned int valid = 0;
    int bad = 0, known = 0;

    if (env->nsigs == 0)
        return mf_trust__fail(t, MF_TRUST_R_NO_SIGNATURE, MF_E_SIGNATURE, "%s: not signed", what);
    if (pae_digest(digest, env) != 0)
        return mf_trust__fail(t, MF_TRUST_R_RESOURCE, MF_E_GENERIC, "%s: PAE hashing failed", what);
    for (size_t i = 0; i < r->n; i++) {
        const struct mf_mkey *key = find_key(ks, r->ids[i]);

        for (size_t s = 0; s < env->nsigs; s++)
            known |= memcmp(env->sigs[s].keyid, r->ids[i], MF_MANIFEST_DIGEST_LEN) == 0;
        if (key && key_signed(key, env, digest, &bad)) {
            if (signers)
                memcpy(signers->id[valid], r->ids[i], MF_MANIFEST_DIGEST_LEN);
            valid++;
        }
    }
    if (signers)
        signers->n = valid;
    if (valid >= r->threshold)
        return MF_OK;
    if (bad)
        return mf_trust__fail(t, MF_TRUST_R_BAD_SIGNATURE, MF_E_SIGNATURE,
                              "%s: a signature does not verify (%u of %u valid)", what, valid,
                              r->threshold);
    if (!known)
        return mf_trust__fail(t, MF_TRUST_R_UNKNOWN_KEY, MF_E_SIGNATURE,
                              "%s: no signature by a key of the required role", what);
    return mf_trust__fail(t, MF_TRUST_R_THRESHOLD, MF_E_SIGNATURE,
                          "%s: %u distinct valid signatures, threshold is %u", what, valid,
                          r->threshold);
}
