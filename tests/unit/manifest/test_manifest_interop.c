/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interoperability of the trust chain with the `openssl` command line, both directions,
 * and the golden vectors of tests/data/manifest/ (made by make_golden.sh with openssl and
 * coreutils only). CLI tests are skipped when no `openssl` binary is on PATH; the golden
 * vectors always run.
 */
#include "manifest_fixture.h"
#include "manifest_common.h"
#include "kit_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct fx fx;
static char golden_dir[1024];
static char tmp_dir[64];

static int setup(void **state)
{
    (void)state;
    mf_kit_fs_source_path(golden_dir, sizeof(golden_dir), "tests/data/manifest");
    mf_kit_fs_mkdtemp(tmp_dir, sizeof(tmp_dir), "mf_manifest");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_kit_fs_rmtree(tmp_dir);
    return 0;
}

static int have_openssl(void)
{
    return system("openssl version >/dev/null 2>&1") == 0;
}

/* Runs a shell command in tmp_dir; returns its exit status. */
static int sh(const char *body)
{
    char cmd[1024];

    (void)snprintf(cmd, sizeof(cmd), "cd '%s' && { %s; } >/dev/null 2>&1", tmp_dir, body);
    return system(cmd);
}

static char *tmp_path(const char *name)
{
    static char path[128];

    (void)snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
    return path;
}

static void write_file(const char *name, const void *p, size_t n)
{
    FILE *f = fopen(tmp_path(name), "wb");

    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Writes PAE(type, payload) to `name`: the exact bytes DSSE signs. */
static void write_pae(const char *name, const char *type, const uint8_t *payload, size_t n)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    size_t pn = mf_manifest__pae_prefix(prefix, type, n);
    uint8_t *buf = mf_alloc(NULL, pn + n);

    memcpy(buf, prefix, pn);
    memcpy(buf + pn, payload, n);
    write_file(name, buf, pn + n);
    mf_free(NULL, buf);
}

static void test_manifest_interop__openssl_cli_signs_device_verifies(void **state)
{
    struct mf_ctx ctx;
    mf_manifest_signer *s = NULL;
    mf_trust *t = NULL;
    struct mf_menvelope *env = NULL;
    char keyid[65], cli_keyid[80] = {0}, *pem, *pub;
    uint8_t *ours, *sig, *json;
    size_t pem_len, pub_len, ours_len, sig_len, json_len, n;
    const char *pubs[1];
    mf_manifest_root_spec spec = {.version = 1, .expires = FX_EXPIRES};
    FILE *f;

    (void)state;
    if (!have_openssl())
        MF_SKIP("the openssl command is not installed");
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(sh("openssl ecparam -name prime256v1 -genkey -noout -out k.pem"), 0);
    pem = (char *)fx_read_file(&pem_len, tmp_path("k.pem"));
    assert_non_null(pem);
    /* key id: ours vs. sha256 of the DER SPKI the CLI writes */
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_public_key(&pub, &pub_len, keyid, s, pem, pem_len), MF_OK);
    assert_int_equal(
        sh("openssl pkey -in k.pem -pubout -outform DER | sha256sum | cut -c1-64 > id.txt"), 0);
    f = fopen(tmp_path("id.txt"), "r");
    assert_non_null(f);
    assert_non_null(fgets(cli_keyid, sizeof(cli_keyid), f));
    (void)fclose(f);
    assert_memory_equal(cli_keyid, keyid, 64);

    /* a root naming that key, signed by the CLI over the PAE bytes */
    pubs[0] = pub;
    spec.root = (mf_manifest_role_spec){pubs, 1, 1};
    spec.keys = (mf_manifest_role_spec){pubs, 1, 1};
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, pem, pem_len), MF_OK);
    assert_int_equal(mf_manifest_sign_root(&ours, &ours_len, s, &spec), MF_OK);
    assert_int_equal(mf_manifest__envelope_parse(&env, &ctx, ours, ours_len, 65536), MF_OK);
    write_pae("pae.bin", MF_MANIFEST_TYPE_ROOT, env->payload, env->payload_len);
    assert_int_equal(sh("openssl dgst -sha256 -sign k.pem -out sig.der pae.bin"), 0);
    sig = fx_read_file(&sig_len, tmp_path("sig.der"));
    assert_non_null(sig);
    {
        size_t pl = mf_base64__encoded_len(env->payload_len);
        size_t sl = mf_base64__encoded_len(sig_len);
        char *pb = mf_alloc(NULL, pl + 1), *sb = mf_alloc(NULL, sl + 1);

        mf_base64__encode(pb, env->payload, env->payload_len);
        mf_base64__encode(sb, sig, sig_len);
        json_len = pl + sl + 256;
        json = mf_alloc(NULL, json_len);
        n = (size_t)snprintf((char *)json, json_len,
                             "{\"payloadType\":\"%s\",\"payload\":\"%s\",\"signatures\":"
                             "[{\"keyid\":\"%s\",\"sig\":\"%s\"}]}",
                             MF_MANIFEST_TYPE_ROOT, pb, keyid, sb);
        mf_free(NULL, pb);
        mf_free(NULL, sb);
    }
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, json, n, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_root_version(t), 1);
    /* the same signature over other bytes does not verify */
    write_pae("pae.bin", MF_MANIFEST_TYPE_KEYS, env->payload, env->payload_len);
    assert_int_equal(sh("openssl dgst -sha256 -sign k.pem -out sig2.der pae.bin"), 0);
    mf_free(NULL, sig);
    sig = fx_read_file(&sig_len, tmp_path("sig2.der"));
    {
        char *hit = strstr((char *)json, "\"sig\":\"") + 7;
        char *sb = mf_alloc(NULL, mf_base64__encoded_len(sig_len) + 1);

        mf_base64__encode(sb, sig, sig_len);
        (void)snprintf(hit, json_len - (size_t)(hit - (char *)json), "%s\"}]}", sb);
        n = strlen((char *)json);
        mf_free(NULL, sb);
    }
    assert_int_equal(mf_trust_bootstrap(t, json, n, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_BAD_SIGNATURE);

    mf_trust_free(t);
    mf_manifest__envelope_free(&ctx, env);
    mf_manifest_signer_free(s);
    mf_manifest_secret_free(NULL, pem, pem_len);
    mf_free(NULL, pub);
    mf_free(NULL, ours);
    mf_free(NULL, sig);
    mf_free(NULL, json);
}

static void test_manifest_interop__library_signs_openssl_cli_verifies(void **state)
{
    static const char payload[] = "{\"_type\":\"anything\",\"n\":1}";
    struct mf_ctx ctx;
    mf_manifest_signer *s = NULL;
    struct mf_menvelope *env = NULL;
    uint8_t *out;
    size_t out_len, pub_len;
    char *pub;

    (void)state;
    if (!have_openssl())
        MF_SKIP("the openssl command is not installed");
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, fx.priv[K_REL0], fx.priv_len[K_REL0]),
                     MF_OK);
    assert_int_equal(mf_manifest_signer_public_key(&pub, &pub_len, NULL, s, fx.priv[K_REL0],
                                                   fx.priv_len[K_REL0]),
                     MF_OK);
    write_file("pub.pem", pub, pub_len);
    assert_int_equal(mf_manifest_sign_payload(&out, &out_len, s, MF_MANIFEST_TYPE_RELEASE, payload,
                                              strlen(payload)),
                     MF_OK);
    assert_int_equal(mf_manifest__envelope_parse(&env, &ctx, out, out_len, 65536), MF_OK);
    assert_int_equal(env->nsigs, 1);
    write_file("sig.der", env->sigs[0].sig, env->sigs[0].sig_len);
    write_pae("pae.bin", MF_MANIFEST_TYPE_RELEASE, env->payload, env->payload_len);
    assert_int_equal(sh("openssl dgst -sha256 -verify pub.pem -signature sig.der pae.bin"), 0);
    /* and the CLI refuses it over different bytes */
    write_pae("pae.bin", MF_MANIFEST_TYPE_KEYS, env->payload, env->payload_len);
    assert_int_not_equal(sh("openssl dgst -sha256 -verify pub.pem -signature sig.der pae.bin"), 0);
    mf_manifest__envelope_free(&ctx, env);
    mf_manifest_signer_free(s);
    mf_free(NULL, pub);
    mf_free(NULL, out);
}

/* ---- golden vectors -------------------------------------------------------------------- */

static uint8_t *golden(size_t *len, const char *name)
{
    char path[1200];
    uint8_t *p;

    (void)snprintf(path, sizeof(path), "%s/%s", golden_dir, name);
    p = fx_read_file(len, path);
    if (!p)
        fail_msg("missing golden file %s", path);
    return p;
}

/* Value of `key=` in expected.txt, as 32 bytes. */
static void expected(uint8_t *out, const char *key)
{
    size_t len;
    char *txt = (char *)golden(&len, "expected.txt"), *hit = strstr(txt, key);

    assert_non_null(hit);
    hit += strlen(key) + 1;
    for (int i = 0; i < 32; i++) {
        unsigned int v;

        assert_int_equal(sscanf(hit + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    mf_free(NULL, txt);
}

/* A trust holding the golden root and keys. */
static mf_trust *golden_trust(void)
{
    uint8_t *root, *keys;
    size_t rl, kl;
    mf_trust *t = NULL;

    root = golden(&rl, "root.json");
    keys = golden(&kl, "keys.json");
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, FX_NOW), MF_OK);
    mf_free(NULL, root);
    mf_free(NULL, keys);
    return t;
}

/* A batch-signed assignment made by make_batch.py (hashlib + openssl: its own Merkle tree,
 * PAE and batch body) verifies on the device; edited, it does not. */
static void test_manifest_interop__golden_batch(void **state)
{
    uint8_t *rel, *asg;
    size_t ll, al;
    mf_manifest_assignment *a = NULL;
    mf_trust *t;
    char *idx;

    (void)state;
    t = golden_trust();
    rel = golden(&ll, "release.json");
    asg = golden(&al, "assignment_batch.json");
    idx = strstr((char *)asg, "\"index\":2");
    assert_non_null(idx);
    idx[8] = '1';
    assert_int_equal(mf_trust_verify_assignment(&a, t, "cam-0001",
                                                "00112233445566778899aabbccddeeff", asg, al, rel,
                                                ll, FX_NOW),
                     MF_E_SIGNATURE);
    idx[8] = '2';
    if (mf_trust_verify_assignment(&a, t, "cam-0001", "00112233445566778899aabbccddeeff", asg, al,
                                   rel, ll, FX_NOW) < 0)
        fail_msg("golden batch assignment: %s", mf_trust_errmsg(t));
    assert_int_equal(a->sequence, 1);
    mf_manifest_assignment_free(a);
    mf_trust_free(t);
    mf_free(NULL, rel);
    mf_free(NULL, asg);
}

static void test_manifest_interop__golden_vectors(void **state)
{
    uint8_t *root, *keys, *rel, *asg, want[32];
    size_t rl, kl, ll, al;
    mf_manifest_assignment *a = NULL;
    mf_trust *t = NULL;

    (void)state;
    root = golden(&rl, "root.json");
    keys = golden(&kl, "keys.json");
    rel = golden(&ll, "release.json");
    asg = golden(&al, "assignment.json");
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, FX_NOW), MF_OK);
    if (mf_trust_verify_assignment(&a, t, "cam-0001", "00112233445566778899aabbccddeeff", asg, al,
                                   rel, ll, FX_NOW) < 0)
        fail_msg("golden assignment: %s", mf_trust_errmsg(t));
    assert_string_equal(a->release->name, "detector");
    assert_string_equal(a->release->version, "v7");
    assert_int_equal(a->release->sequence, 7);
    assert_int_equal(a->release->size, 8292);
    assert_int_equal(a->release->chunk_count, 3);
    assert_int_equal(a->release->security_floor, 2);
    assert_int_equal(a->release->deltas[0].size, 1234);
    assert_string_equal(a->reason, "golden");
    expected(want, "model_sha256");
    assert_memory_equal(a->release->sha256, want, 32);
    expected(want, "chunk1_sha256");
    assert_memory_equal(a->release->chunks[1], want, 32);
    expected(want, "release_digest");
    assert_memory_equal(a->release->digest, want, 32);
    mf_manifest_assignment_free(a);
    /* the same vector with its release byte-edited is refused */
    rel[ll / 2] = rel[ll / 2] == 'A' ? 'B' : 'A';
    assert_int_equal(mf_trust_verify_assignment(&a, t, "cam-0001",
                                                "00112233445566778899aabbccddeeff", asg, al, rel,
                                                ll, FX_NOW),
                     MF_E_SIGNATURE);
    mf_trust_free(t);
    mf_free(NULL, root);
    mf_free(NULL, keys);
    mf_free(NULL, rel);
    mf_free(NULL, asg);
}

/* Keys v`version` under the golden root (signed by keys.key.pem), release role: the golden
 * release key, director role: the key of `director_pem`. */
static uint8_t *golden_keys_doc(size_t *len, uint64_t version, const char *director_pem)
{
    size_t n, rn, dn;
    char *keys_pem = (char *)golden(&n, "keys.key.pem");
    char *rel_pem = (char *)golden(&rn, "release.pub.pem");
    char *dir_pem = (char *)golden(&dn, director_pem);
    const char *rel[] = {rel_pem}, *dir[] = {dir_pem};
    mf_manifest_keys_spec spec = {
        .version = version, .expires = 2080000000, .release = {rel, 1, 1}, .director = {dir, 1, 1}};
    mf_manifest_signer *s = NULL;
    uint8_t *env = NULL;

    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, keys_pem, n), MF_OK);
    assert_int_equal(mf_manifest_sign_keys(&env, len, s, &spec), MF_OK);
    mf_manifest_signer_free(s);
    mf_free(NULL, keys_pem);
    mf_free(NULL, rel_pem);
    mf_free(NULL, dir_pem);
    return env;
}

/* trust_state_v1.bin was written by mf_trust_save() in format 1 (before sequences were
 * scoped to their director key, commit ec23789) from root.json, keys.json and the golden
 * assignment (sequence 1, floor 2). It still loads, is saved again as format 2, and its
 * sequence belongs to the golden director key: kept while that key stays, reset once a
 * keys document drops it. */
static void test_manifest_interop__state_format_1_loads_and_migrates(void **state)
{
    uint8_t *old, *buf, *same, *rotated;
    size_t ol, n, w, sl, rl;
    mf_trust *t = NULL, *u = NULL;

    (void)state;
    old = golden(&ol, "trust_state_v1.bin");
    assert_int_equal(old[4], 1);
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    if (mf_trust_load(t, old, ol) < 0)
        fail_msg("format-1 state: %s", mf_trust_errmsg(t));
    assert_int_equal(mf_trust_root_version(t), 1);
    assert_int_equal(mf_trust_keys_version(t), 1);
    assert_int_equal(mf_trust_assignment_sequence(t), 1);
    assert_int_equal(mf_trust_floor(t, "detector"), 2);
    n = mf_trust_state_size(t);
    buf = mf_alloc(NULL, n);
    assert_int_equal(mf_trust_save(buf, n, &w, t), MF_OK);
    assert_int_equal(buf[4], 2);
    assert_int_equal(mf_trust_new(&u, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_load(u, buf, w), MF_OK);
    same = golden_keys_doc(&sl, 2, "director.pub.pem");
    rotated = golden_keys_doc(&rl, 3, "release.pub.pem");
    assert_int_equal(mf_trust_update_keys(t, same, sl, MF_TRUST_TIME_UNKNOWN), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 1);
    assert_int_equal(mf_trust_update_keys(t, rotated, rl, MF_TRUST_TIME_UNKNOWN), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 0);
    /* the migrated state, saved and loaded again, behaves the same */
    assert_int_equal(mf_trust_update_keys(u, rotated, rl, MF_TRUST_TIME_UNKNOWN), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(u), 0);
    assert_int_equal(mf_trust_floor(u, "detector"), 2);
    mf_trust_free(t);
    mf_trust_free(u);
    mf_free(NULL, old);
    mf_free(NULL, buf);
    mf_free(NULL, same);
    mf_free(NULL, rotated);
}

static void test_manifest_interop__golden_key_ids(void **state)
{
    static const char *const names[][2] = {{"root.key.pem", "root_keyid"},
                                           {"release.key.pem", "release_keyid"}};
    mf_manifest_signer *s = NULL;

    (void)state;
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    for (size_t i = 0; i < 2; i++) {
        uint8_t want[32], got[32];
        char keyid[65];
        size_t len;
        char *pem = (char *)golden(&len, names[i][0]);

        /* SEC1 "EC PRIVATE KEY" PEM, as `openssl ecparam -genkey` writes it */
        assert_int_equal(mf_manifest_signer_add_key(keyid, s, pem, len), MF_OK);
        expected(want, names[i][1]);
        for (int j = 0; j < 32; j++) {
            unsigned int v;

            assert_int_equal(sscanf(keyid + 2 * j, "%2x", &v), 1);
            got[j] = (uint8_t)v;
        }
        assert_memory_equal(got, want, 32);
        mf_manifest_secret_free(NULL, pem, len);
    }
    mf_manifest_signer_free(s);
}

static void test_manifest_interop__signer_rejects_bad_keys(void **state)
{
    static const char garbage[] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    mf_manifest_signer *s = NULL;
    uint8_t *env;
    size_t len;

    (void)state;
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_sign_payload(&env, &len, s, MF_MANIFEST_TYPE_ROOT, "{}", 2),
                     MF_E_STATE);
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, garbage, sizeof(garbage) - 1),
                     MF_E_INVALID);
    /* a public key cannot sign */
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, fx.pub[K_REL0], strlen(fx.pub[K_REL0])),
                     MF_E_INVALID);
    if (have_openssl()) {
        size_t n;
        char *pem;

        assert_int_equal(sh("openssl genpkey -algorithm ed25519 -out ed.pem"), 0);
        pem = (char *)fx_read_file(&n, tmp_path("ed.pem"));
        assert_int_equal(mf_manifest_signer_add_key(NULL, s, pem, n), MF_E_INVALID);
        assert_non_null(strstr(mf_manifest_signer_errmsg(s), "P-256"));
        mf_manifest_secret_free(NULL, pem, n);
    }
    mf_manifest_signer_free(s);
    mf_manifest_signer_free(NULL);
}

static int group_setup(void **state)
{
    fx_init(&fx);
    return setup(state);
}

static int group_teardown(void **state)
{
    fx_free(&fx);
    return teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_interop__openssl_cli_signs_device_verifies),
        cmocka_unit_test(test_manifest_interop__library_signs_openssl_cli_verifies),
        cmocka_unit_test(test_manifest_interop__golden_vectors),
        cmocka_unit_test(test_manifest_interop__golden_batch),
        cmocka_unit_test(test_manifest_interop__state_format_1_loads_and_migrates),
        cmocka_unit_test(test_manifest_interop__golden_key_ids),
        cmocka_unit_test(test_manifest_interop__signer_rejects_bad_keys),
    };
    return cmocka_run_group_tests_name("manifest_interop", tests, group_setup, group_teardown);
}
