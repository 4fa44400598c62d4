/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 over mbedTLS (see mf_sha256.h). With the built-in software implementation these
 * calls cannot fail, so the 2.x `_ret` results are asserted rather than propagated. */
#include "mf_sha256.h"

#include <assert.h>
#include <mbedtls/version.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#define sha256_starts mbedtls_sha256_starts
#define sha256_update mbedtls_sha256_update
#define sha256_finish mbedtls_sha256_finish
#else
#define sha256_starts mbedtls_sha256_starts_ret
#define sha256_update mbedtls_sha256_update_ret
#define sha256_finish mbedtls_sha256_finish_ret
#endif

void mf_sha256__init(struct mf_sha256 *h)
{
    int rc;

    mbedtls_sha256_init(&h->c);
    rc = sha256_starts(&h->c, 0);
    assert(rc == 0);
    (void)rc;
}

void mf_sha256__update(struct mf_sha256 *h, const void *p, size_t n)
{
    int rc;

    if (n == 0)
        return;
    rc = sha256_update(&h->c, p, n);
    assert(rc == 0);
    (void)rc;
}

void mf_sha256__final(struct mf_sha256 *h, uint8_t out[MF_SHA256_DIGEST_LEN])
{
    int rc = sha256_finish(&h->c, out);

    assert(rc == 0);
    (void)rc;
    mbedtls_sha256_free(&h->c);
}

void mf_sha256__abort(struct mf_sha256 *h)
{
    mbedtls_sha256_free(&h->c);
}

void mf_sha256__digest(uint8_t out[MF_SHA256_DIGEST_LEN], const void *p, size_t n)
{
    struct mf_sha256 h;

    mf_sha256__init(&h);
    mf_sha256__update(&h, p, n);
    mf_sha256__final(&h, out);
}
