/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of sdk/digest: SHA-256 against the FIPS 180-2 / NIST CAVS vectors, on the block
 * function init picks (SHA-NI where the CPU has it) and on the portable fallback alike; every
 * length 0..200 against mbedTLS as an independent reference; every way of splitting a message
 * into three updates; both block functions agreeing on a large random input; a copied
 * context going on as the original.
 */
#include "mf_test.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <string.h>

#if MBEDTLS_VERSION_MAJOR < 3
#define mbedtls_sha256 mbedtls_sha256_ret
#endif

static mf_sha256_blocks_fn backend(int i)
{
    return i == 0 ? mf_sha256__blocks_best(NULL) : mf_sha256__blocks_portable;
}

static void digest_with(mf_sha256_blocks_fn fn, uint8_t d[MF_SHA256_DIGEST_LEN], const void *p,
                        size_t n)
{
    struct mf_sha256 h;

    mf_sha256__init_with(&h, fn);
    mf_sha256__update(&h, p, n);
    mf_sha256__final(&h, d);
}

static void assert_digest_hex(const uint8_t d[MF_SHA256_DIGEST_LEN], const char *want)
{
    char hex[MF_SHA256_HEX_LEN + 1];

    mf_hex__encode(hex, d, MF_SHA256_DIGEST_LEN);
    assert_string_equal(hex, want);
}

/* A reproducible pseudo-random buffer (xorshift). */
static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        p[i] = (uint8_t)seed;
    }
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
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
         "mnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    static const struct {
        uint8_t byte;
        size_t len;
        const char *hex;
    } repeated[] = {
        /* NIST CAVS SHA256ShortMsg / byte-oriented vectors */
        {0xbd, 1, "68325720aabd7c82f30f554b313d0570c95accbb7dc4b5aae11204c08ffe732b"},
        {0x00, 55, "02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7"},
        {0x00, 56, "d4817aa5497628e7c77e6b606107042bbba3130888c5f47a375e6179be789fbb"},
        {0x00, 57, "65a16cb7861335d5ace3c60718b5052e44660726da4cd13bb745381b235a1785"},
        {0x00, 64, "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b"},
        {0x00, 1000, "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53"},
        {'A', 1000, "c2e686823489ced2017f6059b8b239318b6364f6dcd835d0a519105a1eadd6e4"},
        {'U', 1005, "f4d62ddec0f3dd90ea1380fa16a5ff8dc4c54b21740650f24afc4120903552b0"},
        {'a', 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    static uint8_t buf[1000000];
    uint8_t d[MF_SHA256_DIGEST_LEN];

    (void)state;
    for (int b = 0; b < 2; b++) {
        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
            digest_with(backend(b), d, vectors[i].msg, strlen(vectors[i].msg));
            assert_digest_hex(d, vectors[i].hex);
        }
        for (size_t i = 0; i < sizeof(repeated) / sizeof(repeated[0]); i++) {
            memset(buf, repeated[i].byte, repeated[i].len);
            digest_with(backend(b), d, buf, repeated[i].len);
            assert_digest_hex(d, repeated[i].hex);
        }
    }
    mf_sha256__digest(d, "abc", 3); /* the one-shot helper, on the default block function */
    assert_digest_hex(d, vectors[1].hex);
}

static void test_digest__every_length_matches_mbedtls(void **state)
{
    uint8_t msg[200], want[MF_SHA256_DIGEST_LEN], got[MF_SHA256_DIGEST_LEN];

    (void)state;
    fill(msg, sizeof(msg), 0x2545f491u);
    for (size_t n = 0; n <= sizeof(msg); n++) {
        assert_int_equal(mbedtls_sha256(msg, n, want, 0), 0);
        for (int b = 0; b < 2; b++) {
            digest_with(backend(b), got, msg, n);
            assert_memory_equal(got, want, sizeof(want));
        }
    }
}

static void test_digest__every_three_way_split(void **state)
{
    uint8_t msg[160], want[MF_SHA256_DIGEST_LEN], got[MF_SHA256_DIGEST_LEN];

    (void)state;
    fill(msg, sizeof(msg), 0x9e3779b9u);
    assert_int_equal(mbedtls_sha256(msg, sizeof(msg), want, 0), 0);
    for (int b = 0; b < 2; b++) {
        for (size_t i = 0; i <= sizeof(msg); i++) {
            for (size_t j = i; j <= sizeof(msg); j++) {
                struct mf_sha256 h;

                mf_sha256__init_with(&h, backend(b));
                mf_sha256__update(&h, msg, i);
                mf_sha256__update(&h, msg + i, j - i);
                mf_sha256__update(&h, msg + j, sizeof(msg) - j);
                mf_sha256__final(&h, got);
                assert_memory_equal(got, want, sizeof(want));
            }
        }
    }
}

static void test_digest__backends_agree_on_large_input(void **state)
{
    /* 4 MiB in uneven pieces through both block functions, and the pieces reassembled into
     * one update against mbedTLS. */
    enum { SIZE = 4 << 20 };
    static uint8_t big[SIZE];
    static const size_t pieces[] = {0, 1, 63, 64, 65, 4096, 999, 16384, 131072, 7};
    uint8_t d[2][MF_SHA256_DIGEST_LEN], want[MF_SHA256_DIGEST_LEN];

    (void)state;
    fill(big, sizeof(big), 0x12345678u);
    for (int b = 0; b < 2; b++) {
        struct mf_sha256 h;
        size_t off = 0, k = 0;

        mf_sha256__init_with(&h, backend(b));
        while (off < sizeof(big)) {
            size_t n = pieces[k++ % (sizeof(pieces) / sizeof(pieces[0]))];

            if (n > sizeof(big) - off)
                n = sizeof(big) - off;
            mf_sha256__update(&h, big + off, n);
            off += n;
        }
        mf_sha256__final(&h, d[b]);
    }
    assert_int_equal(mbedtls_sha256(big, sizeof(big), want, 0), 0);
    assert_memory_equal(d[0], want, sizeof(want));
    assert_memory_equal(d[1], want, sizeof(want));
}

static void test_digest__copied_context_continues(void **state)
{
    uint8_t msg[300], a[MF_SHA256_DIGEST_LEN], b[MF_SHA256_DIGEST_LEN];
    struct mf_sha256 h, snap;

    (void)state;
    fill(msg, sizeof(msg), 77u);
    mf_sha256__init(&h);
    mf_sha256__update(&h, msg, 100);
    snap = h; /* the agent's verifier snapshots a digest this way */
    mf_sha256__update(&h, msg + 100, 200);
    mf_sha256__final(&h, a);
    mf_sha256__update(&snap, msg + 100, 200);
    mf_sha256__final(&snap, b);
    assert_memory_equal(a, b, sizeof(a));
    mf_sha256__digest(b, msg, sizeof(msg));
    assert_memory_equal(a, b, sizeof(a));
    mf_sha256__init(&h);
    mf_sha256__update(&h, "x", 1);
    mf_sha256__abort(&h); /* releasing without a digest is allowed */
}

static void test_digest__cpu_instructions_used_when_present(void **state)
{
    const char *name = NULL;
    mf_sha256_blocks_fn fn = mf_sha256__blocks_best(&name);

    (void)state;
    assert_non_null(name);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (__builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")) {
        assert_string_equal(name, "sha-ni");
        assert_true(fn != mf_sha256__blocks_portable);
        return;
    }
#endif
    assert_string_equal(name, "portable");
    assert_true(fn == mf_sha256__blocks_portable);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest__known_vectors),
        cmocka_unit_test(test_digest__every_length_matches_mbedtls),
        cmocka_unit_test(test_digest__every_three_way_split),
        cmocka_unit_test(test_digest__backends_agree_on_large_input),
        cmocka_unit_test(test_digest__copied_context_continues),
        cmocka_unit_test(test_digest__cpu_instructions_used_when_present),
    };
    return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
