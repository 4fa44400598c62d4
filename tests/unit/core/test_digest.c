/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of sdk/digest: SHA-256 against the FIPS 180-2 / NIST CAVS vectors, on the block
 * function init picks (SHA-NI where the CPU has it) and on the portable fallback alike; every
 * length 0..200 against mbedTLS as an independent reference; every way of splitting a message
 * into three updates; both block functions agreeing on a large random input; a copied
 * context going on as the original. The RFC 9162 Merkle tree (mf_merkle.h) against the
 * Certificate Transparency test vectors and, for every size to 300, against the recursive
 * definition computed here with mbedTLS.
 */
#include "mf_test.h"
#include "mf_hex.h"
#include "mf_merkle.h"
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

/* The eight leaves of the Certificate Transparency reference tests (RFC 6962 / 9162 trees). */
static const char *const ct_leaves[] = {"",
                                        "00",
                                        "10",
                                        "2021",
                                        "3031",
                                        "40414243",
                                        "5051525354555657",
                                        "606162636465666768696a6b6c6d6e6f"};
static const char *const ct_roots[] = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"};

static void test_digest__merkle_known_vectors(void **state)
{
    uint8_t root[32], want[32], leaf[16], h[8][32];

    (void)state;
    for (size_t n = 0; n < 8; n++) {
        size_t len = strlen(ct_leaves[n]) / 2;

        assert_int_equal(mf_hex__decode(leaf, len, ct_leaves[n], len * 2), MF_OK);
        /* One leaf: its hash is the root; the leaf hash of the data is mf_merkle__leaf's. */
        mf_merkle__leaf(h[n], leaf, len, NULL, 0);
    }
    /* The CT vectors hash arbitrary leaf data; a chunk tree's leaves are 32-byte hashes,
     * so n leaves of the reference are checked through the node function on their hashes. */
    assert_int_equal(mf_hex__decode(want, sizeof(want), ct_roots[0], 64), MF_OK);
    assert_memory_equal(h[0], want, 32);
    mf_merkle__node(root, h[0], h[1]);
    assert_int_equal(mf_hex__decode(want, sizeof(want), ct_roots[1], 64), MF_OK);
    assert_memory_equal(root, want, 32);
    mf_merkle__node(root, root, h[2]); /* 3 leaves: node(node(0,1), 2) */
    assert_int_equal(mf_hex__decode(want, sizeof(want), ct_roots[2], 64), MF_OK);
    assert_memory_equal(root, want, 32);
}

/* Chunk trees (docs/formats/manifest.md §3): the chunks are the eight CT leaves above, the
 * tree's leaves their SHA-256 (the chunk hashes); roots of the first n, from an independent
 * implementation (Python hashlib, the recursion of RFC 9162 §2.1.1). */
static const char *const chunk_roots[] = {
    "4e59bf27372b1304bc0b137d1be9d566ad58b154b6a6b5778af7f414b1d4b84c",
    "95ea2d406f2975d40fda869ef2f166c8a85e8a7a82b4a2b11b1bb49d146806a0",
    "ea904a0b001f578785da21e25c60a46d2e8b1d0b2dc51281cc15df91c1418dca",
    "b34782c1b63b1e393588795bc2a5e39196ddfc5222293407e6b6d521bcb81810",
    "4bee540115a9d016dc590f6f33688dbe5f688793e93923c0ae8875c8d51bd857",
    "1db7b7b0c4d889eaf59b5eb7117dfc5833eb4dcfed661d09389b8d95a0a558c4",
    "65d11c29a6e4c63016715f8089fbb886206a6a93181d1884625f6a9b3a19e031",
    "6c0337e5f6ceea8a7dc89c1257f17a8db81e139d8d5329388365d0b008352ef6"};

static void test_digest__chunk_tree_known_vectors(void **state)
{
    uint8_t chunks[8][32], root[32], want[32], data[16];

    (void)state;
    for (size_t n = 0; n < 8; n++) {
        size_t len = strlen(ct_leaves[n]) / 2;

        assert_int_equal(mf_hex__decode(data, len, ct_leaves[n], len * 2), MF_OK);
        mf_sha256__digest(chunks[n], data, len);
    }
    for (size_t n = 1; n <= 8; n++) {
        assert_int_equal(mf_merkle__root_of(root, (const uint8_t(*)[32])chunks, n), 0);
        assert_int_equal(mf_hex__decode(want, sizeof(want), chunk_roots[n - 1], 64), MF_OK);
        assert_memory_equal(root, want, 32);
    }
}

/* RFC 9162 §2.1.1 as written: split at the largest power of two below n (the oracle). */
static void reference_root(uint8_t out[32], const uint8_t (*h)[32], size_t n)
{
    uint8_t buf[65], l[32], r[32];
    size_t k = 1;

    if (n == 1) {
        buf[0] = 0;
        memcpy(buf + 1, h[0], 32);
        assert_int_equal(mbedtls_sha256(buf, 33, out, 0), 0);
        return;
    }
    while (k * 2 < n)
        k *= 2;
    reference_root(l, h, k);
    reference_root(r, h + k, n - k);
    buf[0] = 1;
    memcpy(buf + 1, l, 32);
    memcpy(buf + 33, r, 32);
    assert_int_equal(mbedtls_sha256(buf, 65, out, 0), 0);
}

static void test_digest__merkle_root_of_every_size_matches_the_definition(void **state)
{
    static uint8_t h[300][32];
    uint8_t got[32], want[32];

    (void)state;
    for (size_t i = 0; i < 300; i++)
        for (size_t j = 0; j < 32; j++)
            h[i][j] = (uint8_t)(i * 31 + j * 7 + 1);
    assert_int_equal(mf_merkle__root_of(got, (const uint8_t(*)[32])h, 0), -1);
    for (size_t n = 1; n <= 300; n++) {
        assert_int_equal(mf_merkle__root_of(got, (const uint8_t(*)[32])h, n), 0);
        reference_root(want, (const uint8_t(*)[32])h, n);
        assert_memory_equal(got, want, 32);
    }
    /* One flipped bit anywhere in the list moves the root. */
    h[123][5] ^= 0x10;
    assert_int_equal(mf_merkle__root_of(got, (const uint8_t(*)[32])h, 300), 0);
    h[123][5] ^= 0x10;
    reference_root(want, (const uint8_t(*)[32])h, 300);
    assert_memory_not_equal(got, want, 32);
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
        cmocka_unit_test(test_digest__merkle_known_vectors),
        cmocka_unit_test(test_digest__chunk_tree_known_vectors),
        cmocka_unit_test(test_digest__merkle_root_of_every_size_matches_the_definition),
    };
    return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
