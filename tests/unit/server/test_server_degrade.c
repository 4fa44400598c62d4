/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The way down, server side, on the in-process server (docs/agent.md, "Runtime
 * degradation"; docs/protocol.md, "Fallback variant", "Degrade switches"): a variant
 * published with `fallback=1` (at most one per version) is offered beside each assignment to
 * a device whose declared storage holds both, its release left out once the device holds it;
 * the degrade switches a check-in reports are stored (one row per seq, the newest 16) and
 * listed by the device route; a bad report is a 400 that stores nothing.
 */
#include "mf_test.h"
#include "kit_case.h"
#include "server_fixture.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TINY_SIZE (200 * 1024)
#define BIG_SIZE (900 * 1024)

static uint8_t tiny[TINY_SIZE], big[BIG_SIZE];
static char sha_tiny[65], sha_big[65];

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 29u + seed) ^ (i >> 9));
}

/* Uploads variant `variant` of det v2 with `query`; releases it (sequence 2) on 201. */
static void put_variant(const char *variant, const char *query, const uint8_t *data, size_t n,
                        long want)
{
    srvfx_put_variant("v2", variant, query, data, n, 2, want, want == 201 ? 201 : 0);
}

static int setup(void **state)
{
    int rc = srvfx_det_setup(state);

    if (rc)
        return rc;
    fill(tiny, TINY_SIZE, 5);
    fill(big, BIG_SIZE, 6);
    srvfx_sha256_hex(sha_tiny, tiny, TINY_SIZE);
    srvfx_sha256_hex(sha_big, big, BIG_SIZE);
    put_variant("int8", "rank=1&int8=1", big, BIG_SIZE, 201);
    put_variant("tiny", "rank=9&fallback=1", tiny, TINY_SIZE, 201);
    return 0;
}

struct offer {
    long status;
    char assigned[65];            /* sha256 of the assignment */
    char variant[16], sha256[65]; /* of the fallback, "" when none */
    int with_release;             /* the fallback carries blob and release */
    char error[256];
};

/* A check-in of cam-a on v2's own bytes with top-level members `top` (each ending in ","),
 * model fields `extra` (starting with ","): what its assignment offers as fallback. */
static void checkin(struct offer *out, const char *top, const char *extra)
{
    char body[2048];
    struct srvfx_resp r;
    cJSON *root, *a, *f;

    memset(out, 0, sizeof(*out));
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1,%s"
                   "\"models\":[{\"name\":\"det\",\"version\":\"v1\",\"sha256\":\"%s\"%s}]}",
                   top, srvfx.sha1, extra);
    out->status = srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body);
    if (out->status >= 400)
        (void)snprintf(out->error, sizeof(out->error), "%s", r.body ? r.body : "");
    root = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    f = cJSON_GetObjectItem(a, "fallback");
    if (a)
        (void)snprintf(out->assigned, sizeof(out->assigned), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(a, "sha256")));
    if (f) {
        (void)snprintf(out->variant, sizeof(out->variant), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(f, "variant")));
        (void)snprintf(out->sha256, sizeof(out->sha256), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(f, "sha256")));
        assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "size")), TINY_SIZE);
        out->with_release = cJSON_IsString(cJSON_GetObjectItem(f, "release")) &&
                            cJSON_IsString(cJSON_GetObjectItem(f, "blob"));
    }
    cJSON_Delete(root);
    free(r.body);
}

#define CLASS(storage, int8)                                                                       \
    "\"device_class\":{\"tag\":\"cam\",\"ram_mb\":512,\"storage_mb\":" storage ",\"int8\":" int8   \
    "},"

/* The storage budget: fallback + assigned bytes within storage_mb; none without a class. */
static void test_server_degrade__fallback_offered_within_the_budget(void **state)
{
    struct offer o;
    char path[128];

    (void)state;
    checkin(&o, "", "");
    assert_int_equal(o.status, 200);
    assert_string_equal(o.variant, ""); /* no class: nothing to budget against */
    /* 256 KiB own blob + 200 KiB tiny in 1 MiB: offered, with its release and blob. */
    checkin(&o, CLASS("1", "false"), "");
    assert_string_equal(o.assigned, srvfx.sha2);
    assert_string_equal(o.variant, "tiny");
    assert_string_equal(o.sha256, sha_tiny);
    assert_true(o.with_release);
    /* The int8 class gets the 900 KiB int8 variant: with the tiny one 1.1 MiB > 1 MiB. */
    checkin(&o, CLASS("1", "true"), "");
    assert_string_equal(o.assigned, sha_big);
    assert_string_equal(o.variant, "");
    checkin(&o, CLASS("2", "true"), "");
    assert_string_equal(o.assigned, sha_big);
    assert_string_equal(o.variant, "tiny");
    /* Held already: the hints only. */
    {
        char extra[128];

        (void)snprintf(extra, sizeof(extra), ",\"fallback_sha256\":\"%s\"", sha_tiny);
        checkin(&o, CLASS("2", "true"), extra);
        assert_string_equal(o.variant, "tiny");
        assert_false(o.with_release);
    }
    checkin(&o, CLASS("2", "true"), ",\"fallback_sha256\":\"xyz\"");
    assert_int_equal(o.status, 400);
    assert_non_null(strstr(o.error, "fallback_sha256"));
    /* Its blob is a released one: devices may download it. */
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s", sha_tiny);
    assert_int_equal(srvfx_status_of("GET", path, srvfx.device, NULL), 200);
}

/* One fallback per version; a bad flag is a 400. */
static void test_server_degrade__one_fallback_per_version(void **state)
{
    uint8_t other[1024];
    struct srvfx_resp r;

    (void)state;
    fill(other, sizeof(other), 7);
    put_variant("tiny2", "rank=8&fallback=1", other, sizeof(other), 409);
    put_variant("tiny2", "rank=8&fallback=maybe", other, sizeof(other), 400);
    /* The same upload again: 200 showing the flag; without the flag it is another variant. */
    srvfx_call_port(&r, srvfx.port, "PUT",
                    "/v1/admin/models/det/versions/v2/variants/tiny?rank=9&fallback=1", srvfx.datat,
                    (const char *)tiny, TINY_SIZE, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"fallback\":true"));
    free(r.body);
    put_variant("tiny", "rank=9", tiny, TINY_SIZE, 409);
}

static cJSON *device_doc(void)
{
    struct srvfx_resp r;
    cJSON *doc;

    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/devices/cam-a", srvfx.admin, NULL), 200);
    doc = cJSON_Parse(r.body);
    free(r.body);
    assert_non_null(doc);
    return doc;
}

#define SWITCH(seq, degraded, reason)                                                              \
    "{\"seq\":" #seq ",\"at\":1700000000,\"degraded\":" #degraded ",\"reason\":\"" reason "\"}"

/* Switches arrive with their reasons, newest first; one sent again is one row. */
static void test_server_degrade__switches_stored_and_listed(void **state)
{
    struct offer o;
    cJSON *doc, *list, *first;

    (void)state;
    checkin(&o,
            "\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":[" SWITCH(
                1, true, "memory") "," SWITCH(2, false, "recovered") "," SWITCH(3, true,
                                                                                "thermal") "]},",
            "");
    assert_int_equal(o.status, 200);
    checkin(&o,
            "\"degrade\":{\"degraded\":true,\"reason\":\"thermal\",\"switches\":[" SWITCH(
                3, true, "thermal") "]},",
            "");
    assert_int_equal(o.status, 200);
    doc = device_doc();
    list = cJSON_GetObjectItem(doc, "switches");
    assert_int_equal(cJSON_GetArraySize(list), 3);
    first = cJSON_GetArrayItem(list, 0);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(first, "seq")), 3);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(first, "reason")), "thermal");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(first, "degraded")));
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(first, "received_at")) > 0);
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 2), "reason")), "memory");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "degraded")));
    cJSON_Delete(doc);
    /* Bounded: 20 more switches over three check-ins, the newest 16 kept. */
    for (int c = 0; c < 3; c++) {
        char top[1024];
        size_t at = 0;

        at += (size_t)snprintf(top, sizeof(top),
                               "\"degrade\":{\"degraded\":false,\"reason\":\"recovered\","
                               "\"switches\":[");
        for (int i = 0; i < (c < 2 ? 8 : 4); i++)
            at += (size_t)snprintf(top + at, sizeof(top) - at,
                                   "%s{\"seq\":%d,\"at\":0,\"degraded\":%s,\"reason\":\"%s\"}",
                                   i ? "," : "", 4 + c * 8 + i, i % 2 ? "false" : "true",
                                   i % 2 ? "recovered" : "battery");
        (void)snprintf(top + at, sizeof(top) - at, "]},");
        checkin(&o, top, "");
        assert_int_equal(o.status, 200);
    }
    doc = device_doc();
    list = cJSON_GetObjectItem(doc, "switches");
    assert_int_equal(cJSON_GetArraySize(list), 16);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "seq")),
                     23);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 15), "seq")),
                     8);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(doc, "degraded")));
    cJSON_Delete(doc);
}

/* A bad switch report is a 400 naming what is wrong, and stores nothing. */
static void test_server_degrade__bad_switch_report_is_400(void **state)
{
    static const struct mf_kit_case bad[] = {
        {"\"degrade\":[],", "field 'degrade' must be an object"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":[],"
         "\"x\":1},",
         "degrade: unknown key 'x'"},
        {"\"degrade\":{\"degraded\":1,\"reason\":\"memory\",\"switches\":[]},",
         "'degraded' must be a boolean"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"hungry\",\"switches\":[]},",
         "'reason' must be one of none, manual"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\"},", "'switches' must be an array"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":"
         "[" SWITCH(0, true, "memory") "]},",
         "'seq' must be an integer in 1..2^53"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":"
         "[" SWITCH(99, true, "none") "]},",
         "'reason' must be one of"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":["
         "{\"seq\":99,\"at\":-1,\"degraded\":true,\"reason\":\"memory\"}]},",
         "'at' must be Unix seconds"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":["
         "{\"seq\":99,\"at\":0,\"degraded\":true,\"reason\":\"memory\",\"why\":1}]}"
         ",",
         "degrade.switches: unknown key 'why'"},
        {"\"degrade\":{\"degraded\":true,\"reason\":\"memory\",\"switches\":"
         "[" SWITCH(91, true, "memory") "," SWITCH(92, true, "memory") "," SWITCH(93, true, "memory") "," SWITCH(
             94, true,
             "memory") "," SWITCH(95, true,
                                  "memory") "," SWITCH(96, true,
                                                       "memory") "," SWITCH(97, true,
                                                                            "memor"
                                                                            "y") "," SWITCH(98,
                                                                                            true,
                                                                                            "memor"
                                                                                            "y") "," SWITCH(99,
                                                                                                            true,
                                                                                                            "memory") "]},",
         "an array of at most 8"},
    };
    struct offer o;
    cJSON *doc;
    char *before, *after;

    (void)state;
    doc = device_doc();
    before = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "switches"));
    cJSON_Delete(doc);
    for (size_t i = 0; i < MF_TEST_COUNT(bad); i++) {
        checkin(&o, bad[i].in, "");
        if (o.status != 400 || !strstr(o.error, bad[i].want))
            fail_msg("%s: %ld %s, want 400 naming '%s'", bad[i].in, o.status, o.error, bad[i].want);
    }
    doc = device_doc();
    after = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "switches"));
    cJSON_Delete(doc);
    assert_string_equal(before, after);
    cJSON_free(before);
    cJSON_free(after);
}

int main(void)
{
    return MF_TEST_RUN("tests", setup, srvfx_group_teardown,
                       cmocka_unit_test(test_server_degrade__fallback_offered_within_the_budget),
                       cmocka_unit_test(test_server_degrade__one_fallback_per_version),
                       cmocka_unit_test(test_server_degrade__switches_stored_and_listed),
                       cmocka_unit_test(test_server_degrade__bad_switch_report_is_400));
}
