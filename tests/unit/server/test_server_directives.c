/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director end to end: directives reaching the check-in, delta precompute served to a
 * device on the old version, /metrics, and the release left out of the answer of a device
 * that names it as held (docs/protocol.md, "Check-ins that send only what changed").
 */
#include "mf_test.h"
#include "server_fixture.h"
#include "mf_base64.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_target(const char *want, const char *installed, const char *extra,
                          const char *why)
{
    char got[16];

    srvfx_checkin(got, installed, extra, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("%s: assigned '%s', want '%s'", why, got, want);
}

/* Sets the ops pin of "det" in `scope` ("device", "group", "channel") `name` to `version`;
 * the status must be `want`. */
static void pin(const char *scope, const char *name, const char *version, long want)
{
    char path[128], body[64];

    (void)snprintf(path, sizeof(path), "/v1/admin/pins/%s/%s/det", scope, name);
    (void)snprintf(body, sizeof(body), "{\"version\":\"%s\"}", version);
    assert_int_equal(srvfx_status_of("PUT", path, srvfx.ops, body), want);
}

/* Clears that pin; the status must be `want`. */
static void unpin(const char *scope, const char *name, long want)
{
    char path[128];

    (void)snprintf(path, sizeof(path), "/v1/admin/pins/%s/%s/det", scope, name);
    assert_int_equal(srvfx_status_of("DELETE", path, srvfx.ops, NULL), want);
}

static void test_server_directives__directives_reach_the_checkin(void **state)
{
    char rb[128];
    struct srvfx_resp r;

    (void)state;
    srvfx_publish_det();
    expect_target("v2", "v1", NULL, "channel default");
    /* Ops device pin, and back. */
    pin("device", "cam-a", "v1", 200);
    expect_target("v1", "v2", NULL, "ops device pin");
    unpin("device", "cam-a", 204);
    unpin("device", "cam-a", 404);
    expect_target("v2", "v1", NULL, "pin cleared");
    /* Group pin through the device's groups. */
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/devices/cam-a/groups", srvfx.ops,
                                     "{\"groups\":[\"lab\",\"eu\"]}"),
                     204);
    pin("group", "lab", "v1", 200);
    expect_target("v1", "v2", NULL, "group pin");
    srvfx_call(&r, "GET", "/v1/admin/groups", srvfx.ops, NULL);
    assert_non_null(strstr(r.body, "{\"name\":\"lab\",\"devices\":[\"cam-a\"]}"));
    free(r.body);
    unpin("group", "lab", 204);
    /* Fleet rollback. */
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/rollbacks/det", srvfx.ops, "{\"version\":\"v1\"}"), 200);
    expect_target("v1", "v2", NULL, "fleet rollback");
    /* The device's own pin outranks the fleet rollback. */
    expect_target("v2", "v2", "\"pin\":\"v2\"", "device pin");
    assert_int_equal(srvfx_status_of("DELETE", "/v1/admin/rollbacks/det", srvfx.ops, NULL), 204);
    /* A channel with its own default. */
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/devices/cam-a/channel", srvfx.ops,
                                     "{\"channel\":\"beta\"}"),
                     204);
    pin("channel", "beta", "v1", 200);
    expect_target("v1", "v2", NULL, "channel version");
    unpin("channel", "beta", 204);
    /* pending and rolled_back hold the device on what it runs. */
    expect_target("v1", "v1", "\"pending\":true", "pending");
    (void)snprintf(rb, sizeof(rb), "\"rolled_back\":[{\"sha256\":\"%s\",\"reason\":\"x\"}]",
                   srvfx.sha2);
    expect_target("v1", "v1", rb, "rolled back");
    expect_target("v2", "v1", NULL, "back to the channel default");
    /* Directives may only name released versions; bad input changes nothing. */
    pin("device", "cam-a", "v3", 409);
    pin("device", "cam-a", "v9", 404);
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/pins/planet/x/det", srvfx.ops, "{\"version\":\"v1\"}"),
        400);
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/pins/device/cam-a/det", srvfx.ops, "{\"version\":"), 400);
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/pins/device/../det", srvfx.ops, "{\"version\":\"v1\"}"),
        400);
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/devices/nosuch/groups", srvfx.ops, "{\"groups\":[]}"),
        404);
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/devices/cam-a/groups", srvfx.ops,
                                     "{\"groups\":[\"a/b\"]}"),
                     400);
    assert_int_equal(
        srvfx_status_of("PUT", "/v1/admin/pins/device/cam-a/det/extra", srvfx.ops, "{}"), 404);
    {
        char *big = malloc(70 * 1024);

        assert_non_null(big);
        memset(big, ' ', 70 * 1024 - 1);
        big[0] = '{';
        big[70 * 1024 - 2] = '}';
        big[70 * 1024 - 1] = '\0';
        assert_int_equal(srvfx_status_of("PUT", "/v1/admin/pins/device/cam-a/det", srvfx.ops, big),
                         413);
        free(big);
    }
    srvfx_call(&r, "GET", "/v1/admin/pins", srvfx.ops, NULL);
    assert_string_equal(r.body, "{\"pins\":[]}");
    free(r.body);
}

struct mem_src {
    const uint8_t *p;
    size_t n;
};

/* cam-a's check-in answer holds every one of `want` (NULL-terminated) and none of `absent`. */
static void expect_answer(const char *const *want, const char *const *absent, const char *why)
{
    char got[16];
    struct srvfx_resp r;

    srvfx_checkin(got, "v1", NULL, &r);
    for (size_t i = 0; want[i]; i++) {
        if (!strstr(r.body, want[i]))
            fail_msg("%s: no %s in %s", why, want[i], r.body);
    }
    for (size_t i = 0; absent && absent[i]; i++) {
        if (strstr(r.body, absent[i]))
            fail_msg("%s: %s in %s", why, absent[i], r.body);
    }
    free(r.body);
}

/* One admin request of a table: status `want` and, when `msg`, that text in the answer. */
struct group_req {
    const char *method, *path, *body;
    long want;
    const char *msg;
    int data_role; /* with the data team's token instead of ops' */
};

#define GP "/v1/admin/groups/lab/poll"
#define GW "/v1/admin/groups/lab/install-window"
#define GE "/v1/admin/groups/eu/"

static void run_requests(const struct group_req *q, size_t n)
{
    struct srvfx_resp r;

    for (size_t i = 0; i < n; i++) {
        srvfx_call(&r, q[i].method, q[i].path, q[i].data_role ? srvfx.datat : srvfx.ops, q[i].body);
        if (r.status != q[i].want || (q[i].msg && !strstr(r.body, q[i].msg)))
            fail_msg("%s %s %s: %ld %s", q[i].method, q[i].path, q[i].body ? q[i].body : "",
                     r.status, r.body);
        free(r.body);
    }
}

/* A group's poll interval and install window reach its devices' check-ins (the device's
 * first group by name that has each), bad bodies are 400 naming the key, unknown groups and
 * unset settings 404, the data role 403. */
static void test_server_directives__group_settings_reach_the_checkin(void **state)
{
    static const char *const defaults[] = {"\"poll_interval_s\":60,", "\"poll_jitter_pct\":10",
                                           NULL};
    static const char *const no_group[] = {"poll_group", "install_window", NULL};
    static const struct group_req set[] = {
        {"PUT", "/v1/admin/devices/cam-a/groups", "{\"groups\":[\"lab\",\"eu\"]}", 204, NULL, 0},
        {"PUT", GP, "{\"interval_s\":0}", 400, "field 'interval_s' must be an integer in 1..86400",
         0},
        {"PUT", GP, "{\"interval_s\":86401}", 400, "'interval_s'", 0},
        {"PUT", GP, "{\"interval_s\":\"30\"}", 400, "'interval_s'", 0},
        {"PUT", GP, "{\"interval_s\":1.5}", 400, "'interval_s'", 0},
        {"PUT", GP, "{}", 400, "'interval_s'", 0},
        {"PUT", GP, "{\"interval_s\":30,\"jitter_pct\":51}", 400,
         "field 'jitter_pct' must be an integer in 0..50", 0},
        {"PUT", GP, "{\"interval_s\":30,\"jiter_pct\":5}", 400, "unknown field 'jiter_pct'", 0},
        {"PUT", GW, "{\"start\":\"2:00\",\"end\":\"05:00\"}", 400, "field 'start' must be a time",
         0},
        {"PUT", GW, "{\"start\":\"02:00\",\"end\":\"24:00\"}", 400, "field 'end'", 0},
        {"PUT", GW, "{\"start\":\"02:60\",\"end\":\"05:00\"}", 400, "field 'start'", 0},
        {"PUT", GW, "{\"start\":\"02:00\",\"end\":\"02:00\"}", 400, "must differ", 0},
        {"PUT", GW, "{\"start\":\"02:00\",\"end\":\"05:00\",\"utc_offset_min\":900}", 400,
         "field 'utc_offset_min' must be an integer in -720..840", 0},
        {"PUT", GW, "{\"start\":\"02:00\",\"end\":\"05:00\",\"tz\":\"CET\"}", 400,
         "unknown field 'tz'", 0},
        {"PUT", "/v1/admin/groups/nobody/poll", "{\"interval_s\":30}", 404,
         "unknown group 'nobody'", 0},
        {"DELETE", GP, NULL, 404, "group 'lab' has no poll interval set", 0},
        {"PUT", GP, "{\"interval_s\":30}", 403, NULL, 1}, /* ops runs the fleet */
        {"PUT", GP, "{\"interval_s\":30}", 204, NULL, 0},
        {"PUT", GE "poll", "{\"interval_s\":900,\"jitter_pct\":0}", 204, NULL, 0},
        {"PUT", GE "install-window",
         "{\"start\":\"02:00\",\"end\":\"05:00\",\"utc_offset_min\":60}", 204, NULL, 0},
        {"GET", "/v1/admin/group-settings", NULL, 200,
         "{\"group\":\"eu\",\"poll_interval_s\":900,\"poll_jitter_pct\":0,\"install_window\":{"
         "\"start\":\"02:00\",\"end\":\"05:00\",\"utc_offset_min\":60},",
         0},
        {"GET", "/v1/admin/group-settings", NULL, 200,
         "{\"group\":\"lab\",\"poll_interval_s\":30,\"poll_jitter_pct\":10,"
         "\"install_window\":null,",
         0},
    };
    static const struct group_req clear_eu[] = {
        {"DELETE", GE "poll", NULL, 204, NULL, 0},
        {"DELETE", GE "install-window", NULL, 204, NULL, 0},
        {"DELETE", GE "install-window", NULL, 404, "group 'eu' has no install window set", 0},
    };
    static const struct group_req clear_lab[] = {
        {"DELETE", GP, NULL, 204, NULL, 0},
        {"PUT", "/v1/admin/devices/cam-a/groups", "{\"groups\":[]}", 204, NULL, 0},
    };

    (void)state;
    srvfx_publish_det();
    expect_answer(defaults, no_group, "server defaults");
    run_requests(set, MF_TEST_COUNT(set));
    /* Poll from "eu" (first by name), its window in UTC minutes (02:00 at UTC+1 = 01:00). */
    expect_answer((const char *const[]){"\"poll_interval_s\":900,", "\"poll_jitter_pct\":0,",
                                        "\"poll_group\":\"eu\"",
                                        "\"install_window\":{\"start_min\":60,\"end_min\":240}",
                                        NULL},
                  NULL, "group settings");
    /* Cleared: "lab"'s interval applies, then the server's defaults again. */
    run_requests(clear_eu, MF_TEST_COUNT(clear_eu));
    expect_answer((const char *const[]){"\"poll_interval_s\":30,", "\"poll_group\":\"lab\"", NULL},
                  (const char *const[]){"install_window", NULL}, "lab's interval");
    run_requests(clear_lab, MF_TEST_COUNT(clear_lab));
    expect_answer(defaults, no_group, "cleared");
}

#undef GP
#undef GW
#undef GE

static int mem_read(void *payload, uint64_t off, void *buf, size_t len)
{
    const struct mem_src *s = payload;

    if (off >= s->n)
        return 0;
    if (len > s->n - off)
        len = s->n - (size_t)off;
    memcpy(buf, s->p + off, len);
    return (int)len;
}

/* Applies an mf delta to `old` in memory, as a device would; returns the image (free()). */
static uint8_t *apply_delta(size_t *len_out, const uint8_t *old, size_t old_len,
                            const uint8_t *patch, size_t patch_len)
{
    struct mem_src s = {old, old_len};
    mf_patch_options o;
    mf_patch *p = NULL;
    uint8_t *out = malloc(MODEL_SIZE + 1);
    mf_inbuf in = {patch, patch_len, 0};
    mf_outbuf ob = {out, MODEL_SIZE + 1, 0};
    int rc, rounds = 0;

    assert_non_null(out);
    assert_int_equal(mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION), MF_OK);
    o.source_read = mem_read;
    o.source_payload = &s;
    assert_int_equal(mf_patch_new(&p, &o, NULL), MF_OK);
    do {
        rc = mf_patch_apply(p, &ob, &in);
    } while (rc == MF_AGAIN && ++rounds < 100000);
    assert_int_equal(rc, MF_OK);
    mf_patch_free(p);
    *len_out = ob.pos;
    return out;
}

static void test_server_directives__delta_precompute_serves_the_old_version(void **state)
{
    char got[16], blob[160] = "", from[65] = "", fmt[16] = "";
    struct srvfx_resp r;
    double size = 0;

    (void)state;
    srvfx_publish_det();
    srvfx_wait_delta(blob, from, fmt, &size);
    assert_string_equal(from, srvfx.sha1);
    assert_string_equal(fmt, "mfdelta");
    assert_true(size > 0 && size < MODEL_SIZE / 4);
    /* A device on v2 already gets no delta; the delta rebuilds v2 exactly from v1. */
    srvfx_checkin(got, "v2", NULL, &r);
    assert_null(strstr(r.body, "\"deltas\""));
    free(r.body);
    assert_int_equal(srvfx_call(&r, "GET", blob, srvfx.device, NULL), 200);
    assert_int_equal((double)r.len, size);
    {
        size_t n = 0;
        uint8_t *img = apply_delta(&n, srvfx.v1, MODEL_SIZE, (const uint8_t *)r.body, r.len);

        assert_int_equal(n, MODEL_SIZE);
        assert_memory_equal(img, srvfx.v2, MODEL_SIZE);
        free(img);
    }
    free(r.body);
    /* /metrics shows the work (any role may scrape; devices may not). */
    assert_int_equal(srvfx_call(&r, "GET", "/metrics", srvfx.ops, NULL), 200);
    assert_non_null(strstr(r.body, "mf_deltas_computed_total 1\n"));
    assert_non_null(strstr(r.body, "mf_deltas_stored 1\n"));
    assert_non_null(strstr(r.body, "mf_jobs{state=\"queued\"} 0\n"));
    assert_non_null(strstr(
        r.body, "mf_http_requests_total{method=\"POST\",route=\"/v1/checkin\",status=\"200\"}"));
    assert_null(strstr(r.body, "mf_checkins_total 0\n"));
    /* Check-ins' store work is counted in groups: at least one, never more than check-ins. */
    {
        const char *g = strstr(r.body, "\nmf_checkin_store_groups_total ");
        const char *c = strstr(r.body, "\nmf_checkin_store_grouped_total ");

        assert_non_null(g);
        assert_non_null(c);
        assert_true(strtoull(g + 31, NULL, 10) >= 1);
        assert_true(strtoull(c + 32, NULL, 10) >= strtoull(g + 31, NULL, 10));
    }
    /* The director counted what it signed (one check-in at a time here: no batching). */
    assert_non_null(strstr(r.body, "# TYPE mf_director_signatures_total counter\n"));
    assert_null(strstr(r.body, "mf_director_signatures_total 0\n"));
    assert_null(strstr(r.body, "mf_director_assignments_signed_total 0\n"));
    free(r.body);
    assert_int_equal(srvfx_status_of("GET", "/metrics", srvfx.device, NULL), 401);
}

/* The release digest the assignment of answer `body` names (its signed payload). */
static void assigned_release(char out[65], const char *body)
{
    cJSON *root = cJSON_Parse(body), *payload;
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    cJSON *env = cJSON_Parse(cJSON_GetStringValue(cJSON_GetObjectItem(a, "assignment")));
    const char *b64 = cJSON_GetStringValue(cJSON_GetObjectItem(env, "payload"));
    uint8_t raw[1024];
    size_t n = 0;

    assert_non_null(b64);
    assert_int_equal(mf_base64__decode(raw, sizeof(raw) - 1, &n, b64, strlen(b64)), MF_OK);
    raw[n] = 0;
    payload = cJSON_Parse((const char *)raw);
    (void)snprintf(out, 65, "%s",
                   cJSON_GetStringValue(cJSON_GetObjectItem(payload, "release_sha256")));
    assert_int_equal(strlen(out), 64);
    cJSON_Delete(payload);
    cJSON_Delete(env);
    cJSON_Delete(root);
}

static void test_server_directives__held_release_is_left_out(void **state)
{
    char got[16], digest[65], again[65], field[100], other[100];
    struct srvfx_resp r;
    cJSON *root;
    const cJSON *a;

    (void)state;
    srvfx_publish_det();
    /* An older agent (no release_sha256): the release and its hints, as always. */
    srvfx_checkin(got, "v2", NULL, &r);
    assert_string_equal(got, "v2");
    assert_non_null(strstr(r.body, "\"release\":"));
    assigned_release(digest, r.body);
    free(r.body);
    /* The device names v2's release: only model, version and the signed assignment. */
    (void)snprintf(field, sizeof(field), "\"release_sha256\":\"%s\"", digest);
    srvfx_checkin(got, "v2", field, &r);
    assert_string_equal(got, "v2");
    root = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(a, "assignment")));
    assert_null(cJSON_GetObjectItem(a, "release"));
    assert_null(cJSON_GetObjectItem(a, "blob"));
    assert_null(cJSON_GetObjectItem(a, "sha256"));
    assert_null(cJSON_GetObjectItem(a, "deltas"));
    assert_true(r.len <= 1024);
    cJSON_Delete(root);
    assigned_release(again, r.body); /* still signed for v2's release */
    assert_string_equal(again, digest);
    free(r.body);
    /* Another release held (the device runs v1 and names its release): sent whole. */
    (void)snprintf(other, sizeof(other), "\"release_sha256\":\"%064d\"", 0);
    srvfx_checkin(got, "v1", other, &r);
    assert_string_equal(got, "v2");
    assert_non_null(strstr(r.body, "\"release\":"));
    assert_non_null(strstr(r.body, "\"blob\":"));
    free(r.body);
    /* Malformed: not 64 lower-case hex, or beside no installed sha256. */
    assert_int_equal(srvfx_call(&r, "POST", "/v1/checkin", srvfx.device,
                                "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":"
                                "[{\"name\":\"det\",\"version\":\"v2\",\"sha256\":\""
                                "0000000000000000000000000000000000000000000000000000000000000000"
                                "\",\"release_sha256\":\"ABC\"}]}"),
                     400);
    assert_non_null(strstr(r.body, "release_sha256"));
    free(r.body);
    {
        char body[300];

        (void)snprintf(body, sizeof(body),
                       "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":[{\"name\":"
                       "\"det\",\"version\":null,\"sha256\":null,\"release_sha256\":\"%s\"}]}",
                       digest);
        assert_int_equal(srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body), 400);
        free(r.body);
    }
}

int main(void)
{
    return MF_TEST_RUN(
        "tests", srvfx_group_setup, srvfx_group_teardown,
        cmocka_unit_test(test_server_directives__directives_reach_the_checkin),
        cmocka_unit_test(test_server_directives__group_settings_reach_the_checkin),
        cmocka_unit_test(test_server_directives__delta_precompute_serves_the_old_version),
        cmocka_unit_test(test_server_directives__held_release_is_left_out));
}
