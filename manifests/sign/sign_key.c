/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signing keys on OpenSSL: P-256 generation, PEM in and out, key ids. Private PEM text that
 * passes through our memory is wiped before it is released (OpenSSL's memory BIOs clear
 * their own buffers on free).
 */
#include "sign_internal.h"
#include "mf_hex.h"

#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <string.h>

int mf_manifest_signer_new(mf_manifest_signer **out, const mf_allocator *alloc)
{
    struct mf_manifest_signer *s;

    *out = NULL;
    s = mf_alloc(alloc, sizeof(*s));
    if (!s)
        return MF_E_NOMEM;
    memset(s, 0, sizeof(*s));
    mf_ctx__init(&s->ctx, alloc, NULL, NULL, "sign");
    *out = s;
    return MF_OK;
}

void mf_manifest_signer_free(mf_manifest_signer *s)
{
    mf_allocator a;

    if (!s)
        return;
    for (size_t i = 0; i < s->nkeys; i++) {
        EVP_PKEY_CTX_free(s->keys[i].sctx);
        EVP_PKEY_free(s->keys[i].pkey); /* OpenSSL clears private key material */
    }
    a = s->ctx.alloc;
    mf_secure_zero(s, sizeof(*s));
    mf_free(&a, s);
}

const char *mf_manifest_signer_errmsg(const mf_manifest_signer *s)
{
    return mf_ctx__errmsg(&s->ctx);
}

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

const EVP_MD *mf_sign__md_sha256(void)
{
    (void)pthread_once(&sha256_once, sha256_fetch);
    return sha256_md;
}

int mf_sign__sha256(uint8_t *out, struct mf_ctx *ctx, const void *p, size_t n)
{
    const EVP_MD *sha256 = mf_sign__md_sha256();

    if (!sha256 || EVP_Digest(p, n, out, NULL, sha256, NULL) != 1)
        return mf_fail(ctx, MF_E_GENERIC, "SHA-256 failed");
    return MF_OK;
}

/* A passphrase callback that refuses: encrypted keys fail instead of prompting a tty. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

static int is_p256(EVP_PKEY *k)
{
    char group[32];
    size_t n = 0;

    if (!EVP_PKEY_is_a(k, "EC"))
        return 0;
    if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), &n) !=
        1)
        return 0;
    return strcmp(group, "prime256v1") == 0;
}

int mf_sign__read_pem(EVP_PKEY **out, struct mf_ctx *ctx, const char *pem, size_t len,
                      int want_private)
{
    BIO *bio;
    EVP_PKEY *k;

    *out = NULL;
    if (len > 16 * 1024)
        return mf_fail(ctx, MF_E_LIMIT, "PEM of %zu bytes is too large for a key", len);
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return mf_fail(ctx, MF_E_NOMEM, "no memory for a PEM reader");
    k = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    if (!k && !want_private) {
        (void)BIO_reset(bio);
        k = PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
    }
    BIO_free(bio);
    if (!k)
        return mf_fail(ctx, MF_E_INVALID, "not an unencrypted PEM %s key",
                       want_private ? "private" : "public or private");
    if (!is_p256(k)) {
        EVP_PKEY_free(k);
        return mf_fail(ctx, MF_E_INVALID, "key is not ECDSA P-256");
    }
    *out = k;
    return MF_OK;
}

int mf_sign__spki(uint8_t *der, uint8_t *id, struct mf_ctx *ctx, EVP_PKEY *k)
{
    unsigned char *p = NULL;
    int n;

    /* Keys read from PEM may use the compressed form; the format has one encoding. */
    if (EVP_PKEY_set_utf8_string_param(k, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                       OSSL_PKEY_EC_POINT_CONVERSION_FORMAT_UNCOMPRESSED) != 1)
        return mf_fail(ctx, MF_E_INVALID, "cannot select the uncompressed point format");
    n = i2d_PUBKEY(k, &p);
    if (n != MF_MANIFEST_SPKI_LEN) {
        OPENSSL_free(p);
        return mf_fail(ctx, MF_E_INVALID, "public key encodes to %d bytes, not %d", n,
                       MF_MANIFEST_SPKI_LEN);
    }
    memcpy(der, p, MF_MANIFEST_SPKI_LEN);
    OPENSSL_free(p);
    return mf_sign__sha256(id, ctx, der, MF_MANIFEST_SPKI_LEN);
}

/* Writes the PEM of k (private or public) into memory from the signer's allocator. */
static int write_pem(char **pem_out, size_t *pem_len, struct mf_ctx *ctx, EVP_PKEY *k,
                     int private_key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL, *copy;
    long n;
    int ok;

    if (!bio)
        return mf_fail(ctx, MF_E_NOMEM, "no memory for a PEM writer");
    ok = private_key ? PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL)
                     : PEM_write_bio_PUBKEY(bio, k);
    n = BIO_get_mem_data(bio, &data);
    if (ok != 1 || n <= 0) {
        BIO_free(bio);
        return mf_fail(ctx, MF_E_GENERIC, "PEM encoding failed");
    }
    copy = mf_ctx__alloc(ctx, (size_t)n + 1);
    if (!copy) {
        BIO_free(bio);
        return mf_fail(ctx, MF_E_NOMEM, "no memory for a %ld-byte PEM", n);
    }
    memcpy(copy, data, (size_t)n);
    copy[n] = '\0';
    BIO_free(bio);
    *pem_out = copy;
    *pem_len = (size_t)n;
    return MF_OK;
}

static int id_of(char *keyid_out, struct mf_ctx *ctx, EVP_PKEY *k)
{
    uint8_t der[MF_MANIFEST_SPKI_LEN], id[MF_MANIFEST_DIGEST_LEN];
    int err = mf_sign__spki(der, id, ctx, k);

    if (err >= 0 && keyid_out)
        mf_hex__encode(keyid_out, id, sizeof(id));
    return err;
}

int mf_manifest_signer_generate_key(char **pem_out, size_t *pem_len, char *keyid_out,
                                    mf_manifest_signer *s)
{
    EVP_PKEY *k;
    int err;

    mf_ctx__clear(&s->ctx);
    *pem_out = NULL;
    *pem_len = 0;
    k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!k)
        return mf_fail(&s->ctx, MF_E_GENERIC, "P-256 key generation failed");
    err = id_of(keyid_out, &s->ctx, k);
    if (err >= 0)
        err = write_pem(pem_out, pem_len, &s->ctx, k, 1);
    EVP_PKEY_free(k);
    return err;
}

int mf_manifest_signer_public_key(char **pem_out, size_t *pem_len, char *keyid_out,
                                  mf_manifest_signer *s, const char *pem, size_t len)
{
    EVP_PKEY *k;
    int err;

    mf_ctx__clear(&s->ctx);
    *pem_out = NULL;
    *pem_len = 0;
    err = mf_sign__read_pem(&k, &s->ctx, pem, len, 0);
    if (err < 0)
        return err;
    err = id_of(keyid_out, &s->ctx, k);
    if (err >= 0)
        err = write_pem(pem_out, pem_len, &s->ctx, k, 0);
    EVP_PKEY_free(k);
    return err;
}

int mf_manifest_signer_add_key(char *keyid_out, mf_manifest_signer *s, const char *pem, size_t len)
{
    uint8_t der[MF_MANIFEST_SPKI_LEN];
    struct mf_sign_key *key;
    EVP_PKEY *k;
    int err;

    mf_ctx__clear(&s->ctx);
    if (s->nkeys == MF_MANIFEST_MAX_KEYS)
        return mf_fail(&s->ctx, MF_E_LIMIT, "signer already holds %d keys", MF_MANIFEST_MAX_KEYS);
    err = mf_sign__read_pem(&k, &s->ctx, pem, len, 1);
    if (err < 0)
        return err;
    key = &s->keys[s->nkeys];
    err = mf_sign__spki(der, key->id, &s->ctx, k);
    if (err < 0) {
        EVP_PKEY_free(k);
        return err;
    }
    key->pkey = k;
    s->nkeys++;
    if (keyid_out)
        mf_hex__encode(keyid_out, key->id, sizeof(key->id));
    return MF_OK;
}
