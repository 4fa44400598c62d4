/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mfctl keys` end to end, in-process: generate keys, sign root/keys/release documents, and
 * check the results with the device verifier and an independent SHA-256 of the model.
 */
#include "mf_test.h"
#include "mfctl.h"
#include "kit_fs.h"

#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    mf_kit_fs_mkdtemp(dir, sizeof(dir), "mf_keys");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_kit_fs_rmtree(dir);
    return 0;
}

static const char *path(const char *name)
{
    static char buf[4][128];
    static int slot;

    slot = (slot + 1) % 4;
    (void)snprintf(buf[slot], sizeof(buf[slot]), "%s/%s", dir, name);
    return buf[slot];
}

/* Runs mfctl with a NULL-terminated argument list; returns its exit code. */
static int run(const char *first, ...)
{
    char *argv[40];
    int argc = 0, rc;
    va_list ap;
    FILE *out = tmpfile(), *err = tmpfile();

    argv[argc++] = (char *)"mfctl";
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    rc = mfctl__main(argc, argv, out, err);
    (void)fclose(out);
    (void)fclose(err);
    return rc;
}

static uint8_t *slurp(size_t *len, const char *p)
{
    FILE *f = fopen(p, "rb");
    uint8_t *buf = mf_alloc(NULL, 1 << 20);

    assert_non_null(f);
    *len = fread(buf, 1, 1 << 20, f);
    (void)fclose(f);
    return buf;
}

static void test_manifest_mfctl__keys_flow(void **state)
{
    static uint8_t model[150000];
    uint8_t want[32], *root, *keys, *rel, *rel2;
    size_t rl, kl, ll, l2;
    mf_manifest_release *r = NULL;
    mf_trust *t = NULL;
    struct stat st;
    FILE *f;

    (void)state;
    for (size_t i = 0; i < sizeof(model); i++)
        model[i] = (uint8_t)(i * 7 + 3);
    f = fopen(path("model.bin"), "wb");
    assert_int_equal(fwrite(model, 1, sizeof(model), f), sizeof(model));
    assert_int_equal(fclose(f), 0);

    assert_int_equal(run("keys", "gen", path("root.pem"), NULL), 0);
    assert_int_equal(stat(path("root.pem"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(run("keys", "gen", path("root.pem"), NULL), 1); /* never overwrites */
    assert_int_equal(run("keys", "gen", path("keys.pem"), NULL), 0);
    assert_int_equal(run("keys", "gen", path("rel.pem"), NULL), 0);
    assert_int_equal(run("keys", "gen", path("dir.pem"), NULL), 0);
    assert_int_equal(run("keys", "root-init", path("root.json"), "--root", path("root.pem"),
                         "--keys", path("keys.pem"), NULL),
                     0);
    assert_int_equal(run("keys", "sign-keys", path("keys.json"), "--release", path("rel.pem"),
                         "--director", path("dir.pem"), "--sign", path("keys.pem"), NULL),
                     0);
    assert_int_equal(run("keys", "sign-release", path("rel.json"), "--name", "detector",
                         "--release-version", "v3", "--sequence", "3", "--floor", "2",
                         "--chunk-size", "65536", "--file", path("model.bin"), "--sign",
                         path("rel.pem"), NULL),
                     0);
    assert_int_equal(
        run("keys", "verify", path("root.json"), path("keys.json"), path("rel.json"), NULL), 0);

    root = slurp(&rl, path("root.json"));
    keys = slurp(&kl, path("keys.json"));
    rel = slurp(&ll, path("rel.json"));
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, (uint64_t)time(NULL)), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, (uint64_t)time(NULL)), MF_OK);
    assert_int_equal(mf_trust_verify_release(&r, t, rel, ll, (uint64_t)time(NULL)), MF_OK);
    assert_string_equal(r->version, "v3");
    assert_int_equal(r->security_floor, 2);
    assert_int_equal(r->size, sizeof(model));
    assert_int_equal(r->chunk_count, 3);
    assert_int_equal(mbedtls_sha256_ret(model, sizeof(model), want, 0), 0);
    assert_memory_equal(r->sha256, want, 32);
    assert_int_equal(mbedtls_sha256_ret(model + 131072, sizeof(model) - 131072, want, 0), 0);
    assert_memory_equal(r->chunks[2], want, 32);
    mf_manifest_release_free(r);

    /* a release signed with the director key is refused by verify */
    assert_int_equal(run("keys", "sign-release", path("rel2.json"), "--name", "detector",
                         "--release-version", "v4", "--sequence", "4", "--file", path("model.bin"),
                         "--sign", path("dir.pem"), NULL),
                     0);
    rel2 = slurp(&l2, path("rel2.json"));
    assert_int_equal(mf_trust_verify_release(&r, t, rel2, l2, MF_TRUST_TIME_UNKNOWN),
                     MF_E_SIGNATURE);
    assert_int_equal(
        run("keys", "verify", path("root.json"), path("keys.json"), path("rel2.json"), NULL), 1);
    mf_trust_free(t);
    mf_free(NULL, root);
    mf_free(NULL, keys);
    mf_free(NULL, rel);
    mf_free(NULL, rel2);
}

static void test_manifest_mfctl__usage_errors(void **state)
{
    (void)state;
    assert_int_equal(run("keys", NULL), 2);
    assert_int_equal(run("keys", "--help", NULL), 0);
    assert_int_equal(run("keys", "frobnicate", path("x"), NULL), 2);
    assert_int_equal(run("keys", "root-init", NULL), 2);
    assert_int_equal(run("keys", "root-init", path("x"), "--version", "-1", NULL), 2);
    assert_int_equal(run("keys", "root-init", path("x"), "--version", "7x", NULL), 2);
    assert_int_equal(run("keys", "root-init", path("x"), "--bogus", "1", NULL), 2);
    assert_int_equal(run("keys", "sign-release", path("x"), "--name", "m", NULL), 2);
    /* a missing key file is a runtime failure, and nothing is written */
    assert_int_equal(run("keys", "root-init", path("x"), "--root", path("nope.pem"), "--keys",
                         path("nope.pem"), NULL),
                     1);
    assert_int_not_equal(access(path("x"), F_OK), 0);
    /* a role with a threshold above its size is refused by the document check */
    assert_int_equal(run("keys", "gen", path("k.pem"), NULL), 0);
    assert_int_equal(run("keys", "root-init", path("x"), "--root", path("k.pem"),
                         "--root-threshold", "2", "--keys", path("k.pem"), NULL),
                     1);
    assert_int_not_equal(access(path("x"), F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_mfctl__keys_flow),
        cmocka_unit_test(test_manifest_mfctl__usage_errors),
    };
    return cmocka_run_group_tests_name("manifest_mfctl", tests, setup, teardown);
}
