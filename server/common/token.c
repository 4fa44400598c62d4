/* SPDX-License-Identifier: Apache-2.0 */
/* Token generation, syntax check and hashing (see token.h). */
#include "common/token.h"

#include "mf/ct.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>

static const char *const token_prefix[] = {"mfa_", "mfe_", "mfd_"};

int mf_token__generate(char *out, struct mf_ctx *ctx, enum mf_token_kind kind)
{
    uint8_t raw[MF_TOKEN_RANDOM_LEN];

    if (RAND_bytes(raw, (int)sizeof(raw)) != 1)
        return mf_fail(ctx, MF_E_GENERIC, "RAND_bytes failed generating a %s token",
                       mf_token__kind_name(kind));
    memcpy(out, token_prefix[kind], MF_TOKEN_PREFIX_LEN);
    mf_hex__encode(out + MF_TOKEN_PREFIX_LEN, raw, sizeof(raw));
    mf_secure_zero(raw, sizeof(raw));
    return MF_OK;
}

int mf_token__kind(const char *s, size_t len)
{
    if (len != MF_TOKEN_LEN)
        return -1;
    for (size_t i = MF_TOKEN_PREFIX_LEN; i < len; i++) {
        char c = s[i];

        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
    }
    for (int k = 0; k < (int)(sizeof(token_prefix) / sizeof(token_prefix[0])); k++) {
        if (memcmp(s, token_prefix[k], MF_TOKEN_PREFIX_LEN) == 0)
            return k;
    }
    return -1;
}

/* Fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up on every digest, which
 * was a third of hashing a credential, once per request. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void mf_token__hash(uint8_t out[MF_SHA256_LEN], const char *token, size_t len)
{
    unsigned int n = 0;

    (void)pthread_once(&sha256_once, sha256_fetch);
    /* EVP_Digest with SHA-256 cannot fail short of memory corruption; a zero digest
     * would then match nothing the store holds, since stored hashes come from here too
     * only after a successful generate. */
    if (!sha256_md || EVP_Digest(token, len, out, &n, sha256_md, NULL) != 1 || n != MF_SHA256_LEN)
        memset(out, 0, MF_SHA256_LEN);
}

const char *mf_token__kind_name(enum mf_token_kind kind)
{
    switch (kind) {
    case MF_TOKEN_ADMIN:
        return "admin";
    case MF_TOKEN_ENROLL:
        return "enroll";
    case MF_TOKEN_DEVICE:
        return "device";
    }
    return "?";
}
