/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of sdk/digest: SHA-256 against the FIPS 180-2 vectors, streaming == one-shot. */
#include "mf_test.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include <string.h>

static void assert_digest_hex(const uint8_t d[MF_SHA256_DIGEST_LEN], const char *want)
{
    char hex[MF_SHA256_HEX_LEN + 1];

    mf_hex__encode(hex, d, MF_SHA256_DIGEST_LEN);
    assert_string_equal(hex, want);
}

static void test_digest__known_vectors(void **state)
{
    static const struct {
        const char *msg;
        const char *hex;
    } vectors[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    uint8_t d[MF_SHA256_DIGEST_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        mf_sha256__digest(d, vectors[i].msg, strlen(vectors[i].msg));
        assert_digest_hex(d, vectors[i].hex);
    }
}

static void test_digest__streaming_matches_one_shot(void **state)
{
    /* One million 'a': the FIPS long-message vector, fed in uneven pieces. */
    static uint8_t a[1000000];
    static const size_t pieces[] = {0, 1, 63, 64, 65, 4096, 999};
    struct mf_sha256 h;
    uint8_t d[MF_SHA256_DIGEST_LEN];
    size_t off = 0, k = 0;

    (void)state;
    memset(a, 'a', sizeof(a));
    mf_sha256__init(&h);
    while (off < sizeof(a)) {
        size_t n = pieces[k++ % (sizeof(pieces) / sizeof(pieces[0]))];

        if (n > sizeof(a) - off)
            n = sizeof(a) - off;
        mf_sha256__update(&h, a + off, n);
        off += n;
    }
    mf_sha256__final(&h, d);
    assert_digest_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    mf_sha256__init(&h);
    mf_sha256__update(&h, "x", 1);
    mf_sha256__abort(&h); /* releasing without a digest is allowed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest__known_vectors),
        cmocka_unit_test(test_digest__streaming_matches_one_shot),
    };
    return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
