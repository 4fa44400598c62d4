/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The chunk tree of a release (docs/formats/manifest.md §3 "chunk tree"): a release that
 * names its chunks by their RFC 9162 root is the same few hundred bytes for any model size
 * (here a 64 GiB one, whose flat list would not fit the 1 MiB release cap), and the chunk
 * list checked against the root is refused when a hash is flipped, when it is truncated or
 * padded, or when it is another release's. A release carrying both forms (the transition)
 * verifies only when its flat list hashes to its root.
 */
#include "mf_test.h"
#include "manifest_world.h"
#include "mf_hex.h"
#include "mf_merkle.h"

#include <stdio.h>
#include <string.h>

#define BIG_CHUNK (4u << 20)
#define BIG_COUNT 16384u /* 64 GiB of 4 MiB chunks */

static uint8_t (*big_list(uint8_t salt))[32]
{
    uint8_t(*h)[32] = test_malloc(BIG_COUNT * 32);

    for (size_t i = 0; i < BIG_COUNT; i++)
        for (size_t j = 0; j < 32; j++)
            h[i][j] = (uint8_t)(i * 7 + j * 13 + (i >> 8) + salt);
    return h;
}

static void big_spec(mf_manifest_release_spec *spec, const uint8_t (*chunks)[32], int tree_only)
{
    fx_release_spec(spec, "v64g", 5, 0);
    spec->size = (uint64_t)BIG_COUNT * BIG_CHUNK - 123; /* the last chunk is shorter */
    spec->chunk_size = BIG_CHUNK;
    spec->chunk_count = BIG_COUNT;
    spec->chunks = chunks;
    spec->chunk_tree_only = tree_only;
}

/* A release and the envelope it came from, done with. */
static void release_done(mf_manifest_release *r, uint8_t *env)
{
    mf_manifest_release_free(r);
    mf_free(NULL, env);
}

static mf_manifest_release *verified(mf_trust *t, const uint8_t *env, size_t len)
{
    mf_manifest_release *r = NULL;

    assert_int_equal(mf_trust_verify_release(&r, t, env, len, FX_NOW), MF_OK);
    assert_non_null(r);
    return r;
}

static void test_manifest_chunks__tree_release_is_small_for_a_large_model(void **state)
{
    uint8_t(*h)[32] = big_list(0);
    mf_manifest_release_spec spec;
    mf_manifest_release *r = NULL;
    uint8_t root[32], *tree, *flat;
    size_t tree_len, flat_len;
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    big_spec(&spec, (const uint8_t(*)[32])h, 1);
    tree = fx_release(&tree_len, &world, &spec, BY(K_REL0));
    assert_true(tree_len < 1024); /* the size of the 3-chunk release, for 64 GiB */
    big_spec(&spec, (const uint8_t(*)[32])h, 0);
    flat = fx_release(&flat_len, &world, &spec, BY(K_REL0));
    assert_true(flat_len > (1u << 20)); /* the flat list alone is over the release cap */
    assert_int_equal(mf_trust_verify_release(&r, t, flat, flat_len, FX_NOW), MF_E_LIMIT);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_TOO_LARGE);
    /* The tree release verifies with the default bounds (max_chunks 8192 < 16384 chunks):
     * nothing is sized from the chunk count until the list arrives. */
    r = verified(t, tree, tree_len);
    assert_int_equal(r->chunk_count, BIG_COUNT);
    assert_null(r->chunks);
    assert_true(r->has_chunks_root);
    assert_int_equal(mf_merkle__root_of(root, (const uint8_t(*)[32])h, BIG_COUNT), 0);
    assert_memory_equal(r->chunks_root, root, 32);
    assert_int_equal(mf_trust_check_chunk_list(t, r, h, BIG_COUNT * 32), MF_OK);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_NONE);
    mf_manifest_release_free(r);
    mf_free(NULL, tree);
    mf_free(NULL, flat);
    test_free(h);
    mf_trust_free(t);
}

static void test_manifest_chunks__wrong_truncated_or_foreign_list_refused(void **state)
{
    uint8_t(*h)[32] = big_list(0);
    uint8_t(*other)[32] = big_list(1);
    mf_manifest_release_spec spec;
    mf_manifest_release *r;
    uint8_t *env;
    size_t len;
    mf_trust *t = fx_trust(&world, NULL);
    static const size_t cuts[] = {32, 1, 31};

    (void)state;
    big_spec(&spec, (const uint8_t(*)[32])h, 1);
    env = fx_release(&len, &world, &spec, BY(K_REL0));
    r = verified(t, env, len);
    /* One flipped bit in any hash: the list no longer leads to the signed root. */
    for (size_t at = 0; at < BIG_COUNT; at += BIG_COUNT / 4 - 1) {
        h[at][at % 32] ^= 0x04;
        assert_int_equal(mf_trust_check_chunk_list(t, r, h, BIG_COUNT * 32), MF_E_SIGNATURE);
        assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MISMATCH);
        assert_non_null(strstr(mf_trust_errmsg(t), "does not hash to the signed chunks_root"));
        h[at][at % 32] ^= 0x04;
    }
    /* Two hashes swapped: the same set, another order, another root. */
    {
        uint8_t tmp[32];

        memcpy(tmp, h[3], 32);
        memcpy(h[3], h[4], 32);
        memcpy(h[4], tmp, 32);
        assert_int_equal(mf_trust_check_chunk_list(t, r, h, BIG_COUNT * 32), MF_E_SIGNATURE);
        memcpy(h[4], h[3], 32);
        memcpy(h[3], tmp, 32);
    }
    /* Truncated (a hash short, a byte short, a torn hash) or padded: refused on length. */
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        assert_int_equal(mf_trust_check_chunk_list(t, r, h, BIG_COUNT * 32 - cuts[i]),
                         MF_E_INVALID);
        assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MALFORMED);
        assert_non_null(strstr(mf_trust_errmsg(t), "not 16384 hashes of 32"));
    }
    assert_int_equal(mf_trust_check_chunk_list(t, r, h, 0), MF_E_INVALID);
    /* Another release's list of the right length. */
    assert_int_equal(mf_trust_check_chunk_list(t, r, other, BIG_COUNT * 32), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MISMATCH);
    /* And the right one still passes after all of that. */
    assert_int_equal(mf_trust_check_chunk_list(t, r, h, BIG_COUNT * 32), MF_OK);
    release_done(r, env);
    test_free(h);
    test_free(other);
    mf_trust_free(t);
}

/* A release payload of FX_MODEL with `members` (the chunk members) spliced in, signed. */
static uint8_t *raw_release(size_t *len, const char *members)
{
    char p[2048];

    (void)snprintf(p, sizeof(p),
                   "{\"_type\":\"release\",\"spec_version\":1,\"name\":\"" FX_MODEL "\","
                   "\"version\":\"v9\",\"sequence\":9,\"sha256\":\"%064d\",\"size\":8292,"
                   "\"chunk_size\":4096,%s\"deltas\":[],\"security_floor\":0,\"created\":1,"
                   "\"expires\":%u}",
                   0, members, FX_EXPIRES);
    return fx_sign_raw(len, &world, MF_MANIFEST_TYPE_RELEASE, p, BY(K_REL0));
}

/* The release of `members` is refused as malformed, `why` in the message. */
static void expect_malformed(mf_trust *t, const char *members, const char *why)
{
    mf_manifest_release *r = NULL;
    size_t len;
    uint8_t *env = raw_release(&len, members);

    assert_int_equal(mf_trust_verify_release(&r, t, env, len, FX_NOW), MF_E_INVALID);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MALFORMED);
    assert_non_null(strstr(mf_trust_errmsg(t), why));
    assert_null(r);
    mf_free(NULL, env);
}

static void test_manifest_chunks__both_forms_must_agree(void **state)
{
    static const uint8_t c[3][32] = {{1}, {2}, {3}};
    char hex[3][65], rhex[65], members[600];
    uint8_t root[32], *env;
    mf_manifest_release *r = NULL;
    size_t len;
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    for (int i = 0; i < 3; i++)
        mf_hex__encode(hex[i], c[i], 32);
    assert_int_equal(mf_merkle__root_of(root, c, 3), 0);
    mf_hex__encode(rhex, root, 32);
    /* The transition form (what mfctl publishes by default): list and root, agreeing. */
    (void)snprintf(members, sizeof(members),
                   "\"chunks_root\":\"%s\",\"chunks\":[\"%s\",\"%s\",\"%s\"],", rhex, hex[0],
                   hex[1], hex[2]);
    env = raw_release(&len, members);
    r = verified(t, env, len);
    assert_non_null(r->chunks);
    assert_true(r->has_chunks_root);
    assert_int_equal(mf_trust_check_chunk_list(t, r, c, sizeof(c)), MF_OK);
    release_done(r, env);
    /* The list of another order under the same root: refused before anything is trusted;
     * so are a root that is not 64 hex digits and a release with neither form. */
    (void)snprintf(members, sizeof(members),
                   "\"chunks_root\":\"%s\",\"chunks\":[\"%s\",\"%s\",\"%s\"],", rhex, hex[1],
                   hex[0], hex[2]);
    expect_malformed(t, members, "chunks do not hash to chunks_root");
    expect_malformed(t, "\"chunks_root\":\"abc\",", "chunks_root");
    expect_malformed(t, "", "chunks");
    /* Format 1 (the flat list alone) still verifies; it has no root to check a list by. */
    (void)snprintf(members, sizeof(members), "\"chunks\":[\"%s\",\"%s\",\"%s\"],", hex[0], hex[1],
                   hex[2]);
    env = raw_release(&len, members);
    r = verified(t, env, len);
    assert_false(r->has_chunks_root);
    assert_int_equal(mf_trust_check_chunk_list(t, r, c, sizeof(c)), MF_E_INVALID);
    assert_non_null(strstr(mf_trust_errmsg(t), "names no chunks_root"));
    release_done(r, env);
    mf_trust_free(t);
}

static void test_manifest_chunks__signer_needs_the_hashes(void **state)
{
    mf_manifest_release_spec spec;
    mf_manifest_signer *s = NULL;
    uint8_t *env = NULL;
    size_t len = 0;

    (void)state;
    fx_release_spec(&spec, "v2", 2, 0);
    spec.chunks = NULL;
    spec.chunk_tree_only = 1;
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(
        mf_manifest_signer_add_key(NULL, s, world.priv[K_REL0], world.priv_len[K_REL0]), MF_OK);
    assert_int_equal(mf_manifest_sign_release(&env, &len, s, &spec), MF_E_INVALID);
    assert_null(env);
    assert_non_null(strstr(mf_manifest_signer_errmsg(s), "without chunk hashes"));
    mf_manifest_signer_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_chunks__tree_release_is_small_for_a_large_model),
        cmocka_unit_test(test_manifest_chunks__wrong_truncated_or_foreign_list_refused),
        cmocka_unit_test(test_manifest_chunks__both_forms_must_agree),
        cmocka_unit_test(test_manifest_chunks__signer_needs_the_hashes),
    };

    return cmocka_run_group_tests_name("manifest_chunks", tests, world_setup, world_teardown);
}
