/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model variants end to end on the in-process server (docs/rollouts.md, "Model variants"):
 * variants of det v1 and v2 uploaded and released by the data team through the admin routes,
 * then check-ins that declare device classes get the variant the rule picks (its own bytes,
 * release envelope and "variant" hint), those that declare none get the version's own blob,
 * and bad class declarations, variant names and parameters are refused with 400.
 */
#define _XOPEN_SOURCE 700 /* nanosleep */
#include "mf_test.h"
#include "kit_case.h"
#include "server_fixture.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VARIANT_SIZE (64 * 1024)

static uint8_t int8_v1[VARIANT_SIZE], int8_v2[VARIANT_SIZE], npu_v2[VARIANT_SIZE];
static char sha_int8_v1[65], sha_int8_v2[65], sha_npu_v2[65];

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 31u + seed) ^ (i >> 7));
}

/* Uploads variant bytes with `query`, then their release (sequence seq): each status. */
static void put_variant(const char *version, const char *variant, const char *query,
                        const uint8_t *data, uint64_t seq, long want_upload, long want_release)
{
    srvfx_put_variant(version, variant, query, data, VARIANT_SIZE, seq, want_upload, want_release);
}

static int setup(void **state)
{
    int rc = srvfx_det_setup(state);

    if (rc)
        return rc;
    fill(int8_v1, VARIANT_SIZE, 1);
    memcpy(int8_v2, int8_v1, VARIANT_SIZE); /* 1 % of the bytes changed: a delta pays */
    for (size_t i = 0; i < VARIANT_SIZE; i += 100)
        int8_v2[i] ^= 0x5a;
    fill(npu_v2, VARIANT_SIZE, 3);
    srvfx_sha256_hex(sha_int8_v1, int8_v1, VARIANT_SIZE);
    srvfx_sha256_hex(sha_int8_v2, int8_v2, VARIANT_SIZE);
    srvfx_sha256_hex(sha_npu_v2, npu_v2, VARIANT_SIZE);
    put_variant("v1", "int8", "rank=2&min_ram_mb=128&int8=1", int8_v1, 1, 201, 201);
    put_variant("v2", "int8", "rank=2&min_ram_mb=128&int8=1", int8_v2, 2, 201, 201);
    put_variant("v2", "npu", "rank=1&accelerator=npu&int8=true", npu_v2, 2, 201, 201);
    return 0;
}

struct got {
    long status;
    char version[16], variant[16], sha256[65], release_sha[65];
    char error[256]; /* the body of a refusal (status 400 and above), cut to fit */
};

/* A check-in of cam-a with top-level `cls` (a "device_class" member, or "") running `installed`
 * (bytes `sha`) with `extra` model fields; what it is assigned. */
static void checkin(struct got *out, const char *cls, const char *installed, const char *sha,
                    const char *extra)
{
    char body[1024];
    struct srvfx_resp r;
    cJSON *root, *a;

    memset(out, 0, sizeof(*out));
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1%s%s,"
                   "\"models\":[{\"name\":\"det\",\"version\":\"%s\",\"sha256\":\"%s\"%s%s}]}",
                   cls[0] ? "," : "", cls, installed, sha, extra ? "," : "", extra ? extra : "");
    out->status = srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body);
    if (out->status >= 400)
        (void)snprintf(out->error, sizeof(out->error), "%s", r.body ? r.body : "");
    root = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    if (a) {
        const char *variant = cJSON_GetStringValue(cJSON_GetObjectItem(a, "variant"));
        uint8_t digest[32];
        const char *env = cJSON_GetStringValue(cJSON_GetObjectItem(a, "release"));

        (void)snprintf(out->version, sizeof(out->version), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(a, "version")));
        (void)snprintf(out->variant, sizeof(out->variant), "%s", variant ? variant : "");
        (void)snprintf(out->sha256, sizeof(out->sha256), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(a, "sha256")));
        assert_non_null(env);
        fx_digest(digest, (const uint8_t *)env, strlen(env));
        for (int i = 0; i < 32; i++)
            (void)snprintf(out->release_sha + 2 * i, 3, "%02x", digest[i]);
    }
    cJSON_Delete(root);
    free(r.body);
}

#define LOWRAM                                                                                     \
    "\"device_class\":{\"tag\":\"cam-lite\",\"ram_mb\":256,\"storage_mb\":512,\"int8\":true}"
#define ACCEL                                                                                      \
    "\"device_class\":{\"tag\":\"cam-pro\",\"ram_mb\":2048,\"storage_mb\":8192,"                   \
    "\"accelerator\":\"npu\",\"int8\":true,\"fp16\":true}"
#define BARE "\"device_class\":{\"ram_mb\":64,\"storage_mb\":512}"

/* No class: the version's own blob and release, exactly as before variants. */
static void test_server_variants__no_class_gets_the_own_blob(void **state)
{
    struct got g;

    (void)state;
    checkin(&g, "", "v1", srvfx.sha1, NULL);
    assert_int_equal(g.status, 200);
    assert_string_equal(g.version, "v2");
    assert_string_equal(g.variant, "");
    assert_string_equal(g.sha256, srvfx.sha2);
}

/* Each class its variant: int8 on low RAM, npu on the accelerator, the own blob when none
 * fits; the release envelope is the variant's own (it names the variant's bytes). */
static void test_server_variants__each_class_its_variant(void **state)
{
    struct got lo, hi, bare, own;

    (void)state;
    checkin(&own, "", "v1", srvfx.sha1, NULL);
    checkin(&lo, LOWRAM, "v1", srvfx.sha1, NULL);
    assert_int_equal(lo.status, 200);
    assert_string_equal(lo.version, "v2");
    assert_string_equal(lo.variant, "int8");
    assert_string_equal(lo.sha256, sha_int8_v2);
    assert_string_not_equal(lo.release_sha, own.release_sha);
    checkin(&hi, ACCEL, "v1", srvfx.sha1, NULL);
    assert_string_equal(hi.variant, "npu");
    assert_string_equal(hi.sha256, sha_npu_v2);
    checkin(&bare, BARE, "v1", srvfx.sha1, NULL);
    assert_string_equal(bare.variant, "");
    assert_string_equal(bare.sha256, srvfx.sha2);
}

/* A device running a variant is recognised as running that release: no move while pending,
 * and a pin picks the variant of the pinned version. */
static void test_server_variants__installed_variant_and_pins(void **state)
{
    struct got g;

    (void)state;
    /* Pending on v1's int8 bytes: held there (the hold needs the installed release known). */
    checkin(&g, LOWRAM, "v1", sha_int8_v1, "\"pending\":true");
    assert_string_equal(g.version, "v1");
    assert_string_equal(g.variant, "int8");
    assert_string_equal(g.sha256, sha_int8_v1);
    /* Pinned to v1 on the device: v1's int8 variant for this class, v1's own blob without. */
    checkin(&g, LOWRAM, "v2", sha_int8_v2, "\"pin\":\"v1\"");
    assert_string_equal(g.version, "v1");
    assert_string_equal(g.sha256, sha_int8_v1);
    checkin(&g, "", "v2", srvfx.sha2, "\"pin\":\"v1\"");
    assert_string_equal(g.version, "v1");
    assert_string_equal(g.sha256, srvfx.sha1);
}

/* The worker makes the delta from v1's int8 to v2's int8 (the same variant of the earlier
 * release), and a low-RAM device on v1's int8 is offered it. */
static void test_server_variants__deltas_from_the_same_variant(void **state)
{
    char body[1024];
    const char *from = NULL;
    int found = 0;

    (void)state;
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1," LOWRAM ","
                   "\"models\":[{\"name\":\"det\",\"version\":\"v1\",\"sha256\":\"%s\"}]}",
                   sha_int8_v1);
    /* The worker runs in the background; bounded wait (it takes well under 1 s). */
    for (int i = 0; i < 200 && !found; i++) {
        struct srvfx_resp r;
        cJSON *root, *a, *d;

        assert_int_equal(srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body), 200);
        root = cJSON_Parse(r.body);
        a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(a, "variant")), "int8");
        d = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "deltas"), 0);
        from = d ? cJSON_GetStringValue(cJSON_GetObjectItem(d, "from_sha256")) : NULL;
        found = from && strcmp(from, sha_int8_v1) == 0;
        assert_true(!d || found);
        cJSON_Delete(root);
        free(r.body);
        if (!found)
            (void)nanosleep(&(struct timespec){0, 25000000L}, NULL);
    }
    assert_true(found);
}

/* The released variant's blob is downloadable; a staged one is not. */
static void test_server_variants__blobs(void **state)
{
    char path[128];
    uint8_t staged[VARIANT_SIZE];
    char sha_staged[65];

    (void)state;
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s", sha_int8_v2);
    assert_int_equal(srvfx_status_of("GET", path, srvfx.device, NULL), 200);
    fill(staged, VARIANT_SIZE, 9);
    srvfx_sha256_hex(sha_staged, staged, VARIANT_SIZE);
    put_variant("v2", "staged", "rank=1", staged, 0, 201, 0);
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s", sha_staged);
    assert_int_equal(srvfx_status_of("GET", path, srvfx.device, NULL), 404);
}

/* Bad declarations are a 400 naming what is wrong, and change nothing. */
static void test_server_variants__bad_class_is_400(void **state)
{
    static const struct mf_kit_case bad[] = {
        {"\"device_class\":[]", "field 'device_class' must be an object"},
        {"\"device_class\":{\"storage_mb\":512}",
         "device_class.ram_mb must be an integer in 0..2^40"},
        {"\"device_class\":{\"ram_mb\":-1,\"storage_mb\":512}",
         "device_class.ram_mb must be an integer in 0..2^40"},
        {"\"device_class\":{\"ram_mb\":1.5,\"storage_mb\":512}",
         "device_class.ram_mb must be an integer in 0..2^40"},
        {"\"device_class\":{\"ram_mb\":1099511627777,\"storage_mb\":512}",
         "device_class.ram_mb must be an integer in 0..2^40"},
        {"\"device_class\":{\"ram_mb\":64,\"storage_mb\":512,\"gpu\":true}",
         "device_class: unknown key 'gpu'"},
        {"\"device_class\":{\"ram_mb\":64,\"storage_mb\":512,\"tag\":\"lab/1\"}",
         "device_class.tag must match"},
        {"\"device_class\":{\"ram_mb\":64,\"storage_mb\":512,\"accelerator\":7}",
         "device_class.accelerator must be a string or null"},
        {"\"device_class\":{\"ram_mb\":64,\"storage_mb\":512,\"int8\":1}",
         "device_class.int8 must be a boolean"},
    };
    struct got g;

    (void)state;
    for (size_t i = 0; i < MF_TEST_COUNT(bad); i++) {
        checkin(&g, bad[i].in, "v1", srvfx.sha1, NULL);
        if (g.status != 400 || !strstr(g.error, bad[i].want))
            fail_msg("%s: %ld %s, want 400 naming '%s'", bad[i].in, g.status, g.error, bad[i].want);
    }
}

/* Bad variant names, parameters and releases of the admin routes. */
static void test_server_variants__bad_variants_are_refused(void **state)
{
    char long_name[70];
    uint8_t data[VARIANT_SIZE];
    char path[256];
    uint8_t *env;
    size_t len = 0;

    (void)state;
    fill(data, VARIANT_SIZE, 11);
    memset(long_name, 'x', 65);
    long_name[65] = '\0';
    put_variant("v2", long_name, "rank=1", data, 0, 400, 0);
    put_variant("v2", "q", "", data, 0, 400, 0);                 /* no rank */
    put_variant("v2", "q", "rank=0", data, 0, 400, 0);           /* 1 is the best */
    put_variant("v2", "q", "rank=1&min_ram=5", data, 0, 400, 0); /* unknown key */
    put_variant("v2", "q", "rank=1&int8=yes", data, 0, 400, 0);
    put_variant("v2", "q", "rank=1&accelerator=a/b", data, 0, 400, 0);
    put_variant("v9", "q", "rank=1", data, 0, 404, 0);
    /* Same bytes and needs again: 200; other needs: 409. */
    put_variant("v2", "int8", "rank=2&min_ram_mb=128&int8=1", int8_v2, 0, 200, 0);
    put_variant("v2", "int8", "rank=3&min_ram_mb=128&int8=1", int8_v2, 0, 409, 0);
    /* A variant's release must carry the version's sequence and describe its bytes. */
    put_variant("v2", "q", "rank=5", data, 0, 201, 0);
    env = fx_release_of(&len, &srvfx_world, "det", "v2", 3, 0, data, VARIANT_SIZE, 16 * 1024,
                        BY(K_REL0));
    srvfx_put_env("/v1/admin/models/det/versions/v2/variants/q/release", env, len, srvfx.datat,
                  400);
    env = fx_release_of(&len, &srvfx_world, "det", "v2", 2, 0, int8_v2, VARIANT_SIZE, 16 * 1024,
                        BY(K_REL0));
    srvfx_put_env("/v1/admin/models/det/versions/v2/variants/q/release", env, len, srvfx.datat,
                  400);
    /* The staged v3 has no release: its variants cannot have one either. */
    put_variant("v3", "q", "rank=1", data, 0, 201, 0);
    (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/v3/variants/q/release");
    env = fx_release_of(&len, &srvfx_world, "det", "v3", 3, 0, data, VARIANT_SIZE, 16 * 1024,
                        BY(K_REL0));
    srvfx_put_env(path, env, len, srvfx.datat, 409);
    /* At most 8 variants per version: int8, npu, staged, q so far. */
    for (int i = 0; i < 4; i++) {
        char name[8];

        (void)snprintf(name, sizeof(name), "m%d", i);
        fill(data, VARIANT_SIZE, 20u + (unsigned)i);
        put_variant("v2", name, "rank=9", data, 0, 201, 0);
    }
    fill(data, VARIANT_SIZE, 30);
    put_variant("v2", "ninth", "rank=9", data, 0, 409, 0);
    /* ops may not publish variants (role data or admin). */
    (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/v2/variants/r?rank=1");
    assert_int_equal(srvfx_status_of("PUT", path, srvfx.ops, "x"), 403);
}

int main(void)
{
    return MF_TEST_RUN("tests", setup, srvfx_group_teardown,
                       cmocka_unit_test(test_server_variants__no_class_gets_the_own_blob),
                       cmocka_unit_test(test_server_variants__each_class_its_variant),
                       cmocka_unit_test(test_server_variants__installed_variant_and_pins),
                       cmocka_unit_test(test_server_variants__deltas_from_the_same_variant),
                       cmocka_unit_test(test_server_variants__blobs),
                       cmocka_unit_test(test_server_variants__bad_class_is_400),
                       cmocka_unit_test(test_server_variants__bad_variants_are_refused));
}
