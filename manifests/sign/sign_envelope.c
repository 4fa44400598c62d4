/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DSSE signing: one ECDSA P-256/SHA-256 signature per key over PAE(type, payload), DER
 * encoded (as `openssl dgst -sha256 -sign` writes it), then the envelope JSON. Every value
 * in the envelope is base64, hex or one of our fixed payload types, so it is written
 * directly without a JSON library.
 */
#include "sign_internal.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"

#include <string.h>

/*
 * The key's EVP_PKEY_CTX is set up once and reused: with OpenSSL 3, EVP_DigestSignInit per
 * signature (fetches, provider locks) was a visible share of a lone assignment's signing
 * time (the figures: bench/server/README.md, "Batch signatures"); each EVP_PKEY_sign still
 * draws a fresh nonce.
 */
int mf_sign__ecdsa(uint8_t *sig, size_t *sig_len, struct mf_ctx *ctx, struct mf_sign_key *k,
                   const char *prefix, size_t prefix_len, const void *payload, size_t len)
{
    const EVP_MD *sha256 = mf_sign__md_sha256();
    uint8_t d[32];
    size_t n = MF_MANIFEST_SIG_MAX;
    EVP_MD_CTX *md;
    int ok;

    if (!sha256)
        return mf_fail(ctx, MF_E_GENERIC, "SHA-256 is not available");
    if (!k->sctx) {
        k->sctx = EVP_PKEY_CTX_new(k->pkey, NULL);
        if (!k->sctx || EVP_PKEY_sign_init(k->sctx) != 1 ||
            EVP_PKEY_CTX_set_signature_md(k->sctx, sha256) != 1) {
            EVP_PKEY_CTX_free(k->sctx);
            k->sctx = NULL;
            return mf_fail(ctx, MF_E_GENERIC, "ECDSA signing setup failed");
        }
    }
    md = EVP_MD_CTX_new();
    ok = md && EVP_DigestInit_ex(md, sha256, NULL) == 1 &&
         EVP_DigestUpdate(md, prefix, prefix_len) == 1 && EVP_DigestUpdate(md, payload, len) == 1 &&
         EVP_DigestFinal_ex(md, d, NULL) == 1 && EVP_PKEY_sign(k->sctx, sig, &n, d, sizeof(d)) == 1;
    EVP_MD_CTX_free(md);
    if (!ok)
        return mf_fail(ctx, MF_E_GENERIC, "ECDSA signing failed");
    *sig_len = n;
    return MF_OK;
}

int mf_sign__append_b64(struct mf_dynbuf *b, struct mf_ctx *ctx, const void *p, size_t n)
{
    size_t enc = mf_base64__encoded_len(n);
    char *tmp = mf_ctx__alloc(ctx, enc + 1);
    int err;

    if (!tmp)
        return MF_E_NOMEM;
    mf_base64__encode(tmp, p, n);
    err = mf_dynbuf__append(b, tmp, enc);
    mf_ctx__free(ctx, tmp);
    return err;
}

static int write_sigs(struct mf_dynbuf *b, struct mf_manifest_signer *s, const char *prefix,
                      size_t prefix_len, const void *payload, size_t len)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        uint8_t sig[MF_MANIFEST_SIG_MAX];
        char id[MF_SHA256_HEX_LEN + 1];
        size_t sig_len = 0;
        int err =
            mf_sign__ecdsa(sig, &sig_len, &s->ctx, &s->keys[i], prefix, prefix_len, payload, len);

        if (err < 0)
            return err;
        mf_hex__encode(id, s->keys[i].id, sizeof(s->keys[i].id));
        err = mf_dynbuf__appendf(b, "%s{\"keyid\":\"%s\",\"sig\":\"", i ? "," : "", id);
        if (err >= 0)
            err = mf_sign__append_b64(b, &s->ctx, sig, sig_len);
        if (err >= 0)
            err = mf_dynbuf__append(b, "\"}", 2);
        if (err < 0)
            return mf_fail(&s->ctx, err, "envelope: cannot append signature %zu", i);
    }
    return MF_OK;
}

int mf_sign__envelope_begin(struct mf_dynbuf *b, struct mf_manifest_signer *s, const char *type,
                            const void *payload, size_t len)
{
    int err;

    mf_dynbuf__init(b, &s->ctx.alloc, MF_SIGN_ENVELOPE_MAX);
    err = mf_dynbuf__appendf(b, "{\"payloadType\":\"%s\",\"payload\":\"", type);
    if (err >= 0)
        err = mf_sign__append_b64(b, &s->ctx, payload, len);
    if (err >= 0)
        err = mf_dynbuf__append(b, "\",\"signatures\":[", 16);
    if (err < 0) {
        mf_dynbuf__free(b);
        return mf_fail(&s->ctx, err, "envelope for a %zu-byte payload cannot be built", len);
    }
    return MF_OK;
}

int mf_manifest_sign_payload(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                             const char *payload_type, const void *payload, size_t payload_len)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    struct mf_dynbuf b;
    size_t prefix_len;
    int err;

    mf_ctx__clear(&s->ctx);
    *env_out = NULL;
    *env_len = 0;
    if (s->nkeys == 0)
        return mf_fail(&s->ctx, MF_E_STATE, "signer has no key");
    prefix_len = mf_manifest__pae_prefix(prefix, payload_type, payload_len);
    if (prefix_len == 0)
        return mf_fail(&s->ctx, MF_E_INVALID, "payload type '%.64s' is empty or too long",
                       payload_type);
    err = mf_sign__envelope_begin(&b, s, payload_type, payload, payload_len);
    if (err < 0)
        return err;
    err = write_sigs(&b, s, prefix, prefix_len, payload, payload_len);
    if (err >= 0 && mf_dynbuf__append(&b, "]}", 2) < 0)
        err = mf_fail(&s->ctx, MF_E_LIMIT, "envelope exceeds %u bytes", MF_SIGN_ENVELOPE_MAX);
    if (err < 0) {
        mf_dynbuf__free(&b);
        return err;
    }
    *env_out = mf_dynbuf__take(&b, env_len);
    return MF_OK;
}

int mf_manifest_signer_payload_digest(uint8_t *digest_out, mf_manifest_signer *s, const void *env,
                                      size_t len)
{
    struct mf_menvelope *e = NULL;
    int err;

    mf_ctx__clear(&s->ctx);
    err = mf_manifest__envelope_parse(&e, &s->ctx, env, len, MF_SIGN_ENVELOPE_MAX);
    if (err < 0)
        return err;
    err = mf_sign__sha256(digest_out, &s->ctx, e->payload, e->payload_len);
    mf_manifest__envelope_free(&s->ctx, e);
    return err;
}
