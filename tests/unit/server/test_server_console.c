/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web console's server side (docs/console.md): /ui/ serves the console's files with
 * their MIME types and cache headers, nothing outside its directory (traversal, escapes,
 * hidden files, symbolic links) and 404 for what it does not have; and the admin routes the
 * console reads: whoami, the fleet aggregated, devices a page at a time, one device whole,
 * a model's deltas.
 */
#define _XOPEN_SOURCE 700 /* nanosleep, symlink */
#include "mf_test.h"
#include "server_fixture.h"
#include "handlers/handlers.h"
#include "kit_fs.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct mf_server *ui_srv;
static uint16_t ui_port;
static char ui_dir[200];

struct head {
    char type[96], cache[96], csp[200], location[64];
};

static size_t on_header(char *p, size_t size, size_t n, void *payload)
{
    struct head *h = payload;
    size_t len = size * n;
    static const struct {
        const char *name;
        size_t off;
    } want[] = {{"content-type: ", offsetof(struct head, type)},
                {"cache-control: ", offsetof(struct head, cache)},
                {"content-security-policy: ", offsetof(struct head, csp)},
                {"location: ", offsetof(struct head, location)}};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t k = strlen(want[i].name);

        if (len > k + 2 && strncasecmp(p, want[i].name, k) == 0)
            (void)snprintf((char *)h + want[i].off, 96, "%.*s", (int)(len - k - 2), p + k);
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    size_t *got = payload;

    (void)p;
    *got += size * n;
    return size * n;
}

/* GET `path` from the console server: the status, its headers, the body's length. */
static long ui_get(struct head *h, size_t *len, const char *path)
{
    char url[300];
    long status = 0;
    CURL *c;

    memset(h, 0, sizeof(*h));
    *len = 0;
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)ui_port, path);
    c = srvfx_curl_new(url, on_body, NULL, len);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* send "..": the server must refuse it */
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

static void put(const char *rel, const char *text)
{
    char path[300];

    (void)snprintf(path, sizeof(path), "%s/%s", srvfx.dir, rel);
    mf_kit_fs_write(path, text, strlen(text));
}

static int console_setup(void **state)
{
    struct mf_server_options o;
    struct mf_ctx ctx;
    char link[300], sub[300];

    assert_int_equal(srvfx_group_setup(state), 0);
    /* srvfx.dir/ui holds the console; srvfx.dir/secret.txt lies beside it. */
    (void)snprintf(ui_dir, sizeof(ui_dir), "%s/ui", srvfx.dir);
    (void)snprintf(sub, sizeof(sub), "%s/assets", ui_dir);
    assert_int_equal(mkdir(ui_dir, 0750), 0);
    assert_int_equal(mkdir(sub, 0750), 0);
    (void)snprintf(sub, sizeof(sub), "%s/adir.js", ui_dir);
    assert_int_equal(mkdir(sub, 0750), 0);
    put("ui/index.html", "<!doctype html><title>console</title>");
    put("ui/assets/index-abc123.js", "console.log(1)");
    put("ui/assets/index-abc123.css", "body{}");
    put("ui/favicon.svg", "<svg/>");
    put("ui/.hidden.txt", "hidden");
    put("ui/notes.exe", "MZ");
    put("secret.txt", "the data dir's secret");
    (void)snprintf(link, sizeof(link), "%s/leak.txt", ui_dir);
    (void)snprintf(sub, sizeof(sub), "%s/secret.txt", srvfx.dir);
    assert_int_equal(symlink(sub, link), 0);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    srvfx_options_init(&o, srvfx.data);
    o.delta_worker = 0;
    o.webhook_sender = 0;
    o.ui_dir = ui_dir;
    if (mf_server__start(&ui_srv, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    ui_port = mf_server__port(ui_srv);
    return 0;
}

static int console_teardown(void **state)
{
    mf_server__stop(ui_srv);
    return srvfx_group_teardown(state);
}

static void test_server_console__files_with_their_types_and_cache(void **state)
{
    struct head h;
    size_t len;

    (void)state;
    assert_int_equal(ui_get(&h, &len, "/ui/"), 200);
    assert_string_equal(h.type, "text/html; charset=utf-8");
    assert_string_equal(h.cache, "no-cache"); /* a new install is seen at the next load */
    assert_int_equal(len, strlen("<!doctype html><title>console</title>"));
    assert_non_null(strstr(h.csp, "default-src 'self'")); /* no outside host */
    assert_int_equal(ui_get(&h, &len, "/ui/index.html"), 200);
    assert_string_equal(h.type, "text/html; charset=utf-8");
    assert_int_equal(ui_get(&h, &len, "/ui/assets/index-abc123.js"), 200);
    assert_string_equal(h.type, "text/javascript; charset=utf-8");
    assert_string_equal(h.cache, "public, max-age=31536000, immutable");
    assert_int_equal(len, strlen("console.log(1)"));
    assert_int_equal(ui_get(&h, &len, "/ui/assets/index-abc123.css"), 200);
    assert_string_equal(h.type, "text/css; charset=utf-8");
    assert_int_equal(ui_get(&h, &len, "/ui/favicon.svg"), 200);
    assert_string_equal(h.type, "image/svg+xml");
    assert_string_equal(h.cache, "no-cache");
    /* /ui without the slash: to the console. */
    assert_int_equal(ui_get(&h, &len, "/ui"), 301);
    assert_string_equal(h.location, "/ui/");
}

static void test_server_console__nothing_outside_and_404_for_unknown(void **state)
{
    static const char *const refused[] = {
        "/ui/../secret.txt",
        "/ui/assets/../../secret.txt",
        "/ui/%2e%2e/secret.txt",
        "/ui/assets/%2e%2e/%2e%2e/secret.txt",
        "/ui/..%2fsecret.txt",
        "/ui/.hidden.txt",
        "/ui/leak.txt",
        "/ui//index.html",
        "/ui/assets/",
        "/ui/adir.js",
        "/ui/notes.exe",
        "/ui/nosuch.js",
        "/ui/index.html%00.js",
        "/ui/assets\\..\\..\\secret.txt",
        "/ui/assets/nosuch-123.css",
    };
    struct head h;
    size_t len;

    (void)state;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        long st = ui_get(&h, &len, refused[i]);

        if (st != 404 || strcmp(h.type, "application/json") != 0)
            fail_msg("%s: %ld %s (want a 404 error body)", refused[i], st, h.type);
    }
    /* The path rule itself. */
    assert_true(mf_handlers__ui_path_ok("index.html"));
    assert_true(mf_handlers__ui_path_ok("assets/index-abc_1.2.js"));
    assert_false(mf_handlers__ui_path_ok(""));
    assert_false(mf_handlers__ui_path_ok(".."));
    assert_false(mf_handlers__ui_path_ok("a/../b"));
    assert_false(mf_handlers__ui_path_ok("a/.b"));
    assert_false(mf_handlers__ui_path_ok("a//b"));
    assert_false(mf_handlers__ui_path_ok("a/"));
    assert_false(mf_handlers__ui_path_ok("/etc/passwd"));
    assert_false(mf_handlers__ui_path_ok("a%2fb"));
}

static void test_server_console__default_is_the_build_beside_the_program(void **state)
{
    struct srvfx_resp r;

    (void)state;
    /* The fixture's server has no --ui-dir: it serves <build>/share/modelferry/ui, the
     * console CMake built beside bin/ (as an install has it beside its bin/). */
    srvfx_call(&r, "GET", "/ui/", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "<title>modelferry console</title>"));
    free(r.body);
}

/* GET `path` with `token`: the status must be `want` and the body hold each of `has`
 * (NULL-terminated). */
static void expect_get(const char *path, const char *token, long want, const char *const *has)
{
    struct srvfx_resp r;

    srvfx_call(&r, "GET", path, token, NULL);
    if (r.status != want)
        fail_msg("GET %s: %ld %s (want %ld)", path, r.status, r.body ? r.body : "", want);
    for (size_t i = 0; has[i]; i++)
        if (!r.body || !strstr(r.body, has[i]))
            fail_msg("GET %s: %s has no %s", path, r.body ? r.body : "", has[i]);
    free(r.body);
}

#define HAS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_server_console__whoami_names_the_role(void **state)
{
    (void)state;
    expect_get("/v1/admin/whoami", srvfx.ops, 200, HAS("\"role\":\"ops\"", "\"name\":\"alice\""));
    expect_get("/v1/admin/whoami", srvfx.datat, 200, HAS("\"role\":\"data\""));
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/whoami", "mfa_nosuchtoken", NULL), 401);
}

static void test_server_console__fleet_summary_aggregates(void **state)
{
    struct srvfx_resp r;
    char version[64], cred[MF_TOKEN_LEN + 1];

    (void)state;
    srvfx_publish_det();
    srvfx_checkin(version, "v1", NULL, NULL); /* cam-a is seen now */
    srvfx_enroll(cred, "cam-never");          /* enrolled, never checked in: stale */
    /* Any role: counts, no device row. */
    expect_get("/v1/admin/fleet/summary", srvfx.datat, 200,
               HAS("\"online\":1", "\"stale\":1", "\"offline\":0", "\"total\":2",
                   "\"channels\":{\"stable\":2}"));
    srvfx_call(&r, "GET", "/v1/admin/fleet/summary", srvfx.datat, NULL);
    assert_null(strstr(r.body, "cam-a"));
    free(r.body);
    expect_get("/v1/admin/fleet/summary?online_s=5&stale_s=3", srvfx.ops, 400,
               HAS("'stale_s' (3) must be above 'online_s' (5)"));
    expect_get("/v1/admin/fleet/summary?onlin=5", srvfx.ops, 400,
               HAS("unknown query key 'onlin' (online_s, stale_s)"));
}

static void test_server_console__fleet_devices_page_by_page(void **state)
{
    struct srvfx_resp r;
    char cred[MF_TOKEN_LEN + 1], id[32], next[64];
    int seen = 0;

    (void)state;
    for (int i = 0; i < 5; i++) {
        (void)snprintf(id, sizeof(id), "page-%d", i);
        srvfx_enroll(cred, id);
    }
    /* Pages of 2 of the five page-* devices: the cursor walks them all, once each. */
    next[0] = '\0';
    for (int page = 0; page < 5; page++) {
        char path[200];

        (void)snprintf(path, sizeof(path), "/v1/admin/fleet/devices?q=page-&limit=2%s%s",
                       next[0] ? "&after=" : "", next);
        srvfx_call(&r, "GET", path, srvfx.ops, NULL);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, "\"matched\":5"));
        for (int i = 0; i < 5; i++) {
            (void)snprintf(id, sizeof(id), "\"device_id\":\"page-%d\"", i);
            seen += strstr(r.body, id) != NULL;
        }
        assert_null(strstr(r.body, "cam-a"));
        srvfx_json_str(next, sizeof(next), r.body, "next");
        free(r.body);
        if (!next[0])
            break;
    }
    assert_int_equal(seen, 5);
    /* The state filter. */
    expect_get("/v1/admin/fleet/devices?state=stale&q=page-3", srvfx.ops, 200,
               HAS("\"state\":\"stale\"", "\"matched\":1", "\"next\":null"));
    expect_get("/v1/admin/fleet/devices?state=online&q=page-", srvfx.ops, 200,
               HAS("\"matched\":0"));
    expect_get("/v1/admin/fleet/devices?state=lost", srvfx.ops, 400,
               HAS("'state' must be online, offline or stale, not 'lost'"));
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/fleet/devices?limit=501", srvfx.ops, NULL),
                     400);
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/fleet/devices?page=2", srvfx.ops, NULL),
                     400);
    /* Device rows are for ops: the data role is refused by the server. */
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/fleet/devices", srvfx.datat, NULL), 403);
}

static void test_server_console__one_device_whole(void **state)
{
    char version[64], report[256];

    (void)state;
    srvfx_publish_det();
    /* cam-a's runtime report of v1: its scorecard on the device page. */
    srvfx_checkin(version, "v1",
                  "\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\","
                  "\"inferences\":10,\"latency_us\":[[40,10]],\"peak_memory\":4096}]}",
                  NULL);
    /* cam-a went to v2, which failed its health check: it runs v1 again. */
    (void)snprintf(report, sizeof(report),
                   "{\"model\":\"det\",\"version\":\"v1\",\"sha256\":\"%s\","
                   "\"status\":\"installed\"}",
                   srvfx.sha1);
    assert_int_equal(srvfx_status_of("POST", "/v1/report", srvfx.device, report), 204);
    (void)snprintf(report, sizeof(report),
                   "{\"model\":\"det\",\"version\":\"v2\",\"sha256\":\"%s\","
                   "\"status\":\"failed\",\"detail\":\"rolled back: health check failed\"}",
                   srvfx.sha2);
    assert_int_equal(srvfx_status_of("POST", "/v1/report", srvfx.device, report), 204);
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/devices/cam-a/groups", srvfx.ops,
                                     "{\"groups\":[\"lab\",\"roof\"]}"),
                     204);
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/pins/device/cam-a/det", srvfx.ops,
                                     "{\"version\":\"v1\"}"),
                     200);
    expect_get("/v1/admin/devices/cam-a", srvfx.ops, 200,
               HAS("\"device_id\":\"cam-a\"", "\"state\":\"online\"",
                   "\"groups\":[\"lab\",\"roof\"]",
                   "\"pins\":[{\"model\":\"det\",\"version\":\"v1\"", "\"channel\":\"stable\"",
                   "\"version\":\"v2\"", "\"status\":\"failed\"",
                   "\"detail\":\"rolled back: health check failed\"", "\"running_version\":\"v1\"",
                   "\"failures\":[{\"model\":\"det\",\"version\":\"v2\",\"detail\":\"rolled back: "
                   "health check failed\",\"rolled_back\":true,\"at\":",
                   "\"scorecard\":[{\"version\":\"v1\",\"devices_reporting\":1,",
                   "\"peak_memory\":4096,", "\"p99_us\":", "\"model\":\"det\"}]"));
    assert_int_equal(srvfx_status_of("DELETE", "/v1/admin/pins/device/cam-a/det", srvfx.ops, NULL),
                     204);
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/devices/cam-a", srvfx.datat, NULL), 403);
}

/* The deltas of a model (the Models view): the one the worker made from v1 to v2, with
 * its size and format, to any role. */
static void test_server_console__model_deltas(void **state)
{
    char blob[160] = "", from[65] = "", fmt[16] = "", want_from[100], want_to[100], want_size[64];
    struct srvfx_resp r;
    double size = 0;

    (void)state;
    srvfx_publish_det();
    srvfx_wait_delta(blob, from, fmt, &size);
    (void)snprintf(want_from, sizeof(want_from), "\"from_sha256\":\"%s\"", srvfx.sha1);
    (void)snprintf(want_to, sizeof(want_to), "\"to_sha256\":\"%s\"", srvfx.sha2);
    (void)snprintf(want_size, sizeof(want_size), "\"size\":%.0f,", size);
    expect_get("/v1/admin/models/det/deltas", srvfx.datat, 200,
               HAS(want_from, want_to, want_size, "\"format\":\"mfdelta\"", "\"delta_sha256\":\""));
    /* When it was made (the worker once stored 0: its lookup cleared the time it had set). */
    srvfx_call(&r, "GET", "/v1/admin/models/det/deltas", srvfx.ops, NULL);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "\"created_at\":0"));
    assert_non_null(strstr(r.body, "\"created_at\":1"));
    free(r.body);
    expect_get("/v1/admin/models/nosuchmodel/deltas", srvfx.ops, 404, HAS("'nosuchmodel'"));
    expect_get("/v1/admin/models/b@d/deltas", srvfx.ops, 400, HAS("[A-Za-z0-9._-]"));
}

/* Polls (bounded: 20 s) GET `path` until its body holds `want`; the last body in `r`. */
static void poll_for(struct srvfx_resp *r, const char *path, const char *want)
{
    for (int i = 0; i < 200; i++) {
        srvfx_call(r, "GET", path, srvfx.datat, NULL);
        assert_int_equal(r->status, 200);
        if (strstr(r->body, want))
            return;
        free(r->body);
        (void)nanosleep(&(struct timespec){0, 100000000L}, NULL); /* the worker writes it */
    }
    fail_msg("GET %s never held %s", path, want);
}

/* Device classes (the class tag a check-in declares, kept with its runtime reports): the
 * fleet's counts per class, the device list filtered by class, Model health per class. */
static void test_server_console__device_classes(void **state)
{
    char body[1024];
    struct srvfx_resp r;

    (void)state;
    srvfx_publish_det();
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1,"
                   "\"device_class\":{\"tag\":\"cam-pro\",\"ram_mb\":2048,\"storage_mb\":8192},"
                   "\"models\":[{\"name\":\"det\",\"version\":\"v1\",\"sha256\":\"%s\","
                   "\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"v1\","
                   "\"inferences\":10,\"latency_us\":[[40,10]],\"peak_memory\":8192,"
                   "\"activations\":2,\"cold_us\":[[48,2]],\"energy_uj\":5000,"
                   "\"energy_inferences\":10,\"errors\":1}]}}]}",
                   srvfx.sha1);
    srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body);
    assert_int_equal(r.status, 200);
    free(r.body);
    expect_get("/v1/admin/fleet/summary", srvfx.datat, 200, HAS("\"classes\":{\"cam-pro\":1}"));
    expect_get("/v1/admin/fleet/devices?class=cam-pro", srvfx.ops, 200,
               HAS("\"device_id\":\"cam-a\"", "\"matched\":1"));
    expect_get("/v1/admin/fleet/devices?class=cam-lite", srvfx.ops, 200,
               HAS("\"devices\":[]", "\"matched\":0"));
    expect_get("/v1/admin/fleet/devices?class=b@d", srvfx.ops, 400,
               HAS("'class' must match [A-Za-z0-9._-]{1,64}"));
    expect_get("/v1/admin/models/det/stats", srvfx.datat, 200,
               HAS("\"classes\":[{\"class\":\"cam-pro\",\"versions\":[{\"version\":\"v1\","
                   "\"devices_reporting\":1,",
                   "\"peak_memory\":8192"));
    /* Every dimension the reports carry, the fleet's and the class's: energy per inference
     * (5000 uJ over 10), the cold P99 (bucket 48's upper bound), the error rate (1 of 11
     * attempts); figures without data (accuracy: no labelled sample) are absent, not 0. */
    expect_get("/v1/admin/models/det/stats", srvfx.datat, 200,
               HAS("\"figures\":{", "\"energy_uj\":{\"value\":500,",
                   "\"cold_p99_us\":{\"value\":", "\"error_rate\":{\"value\":"));
    srvfx_call(&r, "GET", "/v1/admin/models/det/stats", srvfx.datat, NULL);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "\"accuracy\":{"));
    assert_null(strstr(r.body, "\"sustained_p99_us@"));
    free(r.body);
}

/* A rollout's red lines over its evaluations (the worker's ticks), as columns for a chart:
 * one "at" per evaluation and per line an array of each series as long; any role reads it,
 * bad ids and unknown keys are 400. */
static void test_server_console__rollout_history(void **state)
{
    static const char plan[] =
        "{\"model\":\"det\",\"version\":\"v1\",\"previous\":\"v2\",\"soak_s\":600,"
        "\"waves\":[{\"percent\":10}],\"red_lines\":[{\"metric\":\"p99_latency_us\","
        "\"relative\":1.5},{\"metric\":\"health_rollback_rate\",\"max\":0.1}]}";
    struct srvfx_resp r;
    char id[32], path[96], since[128];
    cJSON *doc, *at, *line;

    (void)state;
    srvfx_publish_det();
    srvfx_call(&r, "POST", "/v1/admin/rollouts", srvfx.ops, plan);
    assert_int_equal(r.status, 201);
    doc = cJSON_Parse(r.body);
    free(r.body);
    (void)snprintf(id, sizeof(id), "%.0f",
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "id")));
    cJSON_Delete(doc);
    (void)snprintf(path, sizeof(path), "/v1/admin/rollouts/%s/history", id);
    /* No device reports v1 yet: each evaluation keeps its lines, waiting. */
    poll_for(&r, path, "\"state\":[\"waiting\"");
    doc = cJSON_Parse(r.body);
    free(r.body);
    assert_non_null(doc);
    at = cJSON_GetObjectItemCaseSensitive(doc, "at");
    assert_true(cJSON_GetArraySize(at) >= 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "lines")), 2);
    line = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "lines"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "metric")),
                        "p99_latency_us");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "kind")),
                        "relative");
    /* Every series is as long as the axis; a waiting line has no value yet (null, not 0). */
    for (const char *const *k =
             (const char *const[]){"state", "value", "bound", "control", "devices", NULL};
         *k; k++)
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(line, *k)),
                         cJSON_GetArraySize(at));
    assert_true(
        cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(line, "value"), 0)));
    line = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "lines"), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "metric")),
                        "health_rollback_rate");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "kind")),
                        "absolute");
    /* ?since= after the last evaluation: the axis is empty (the lines with it). */
    (void)snprintf(since, sizeof(since), "%s?since=%.0f", path,
                   cJSON_GetNumberValue(cJSON_GetArrayItem(at, cJSON_GetArraySize(at) - 1)) + 3600);
    cJSON_Delete(doc);
    expect_get(since, srvfx.ops, 200, HAS("\"at\":[]", "\"lines\":[]", "\"max_ticks\":512"));
    (void)snprintf(since, sizeof(since), "%s?from=1", path);
    expect_get(since, srvfx.ops, 400, HAS("unknown query key 'from' (since)"));
    (void)snprintf(since, sizeof(since), "%s?since=soon", path);
    expect_get(since, srvfx.ops, 400, HAS("'since'"));
    expect_get("/v1/admin/rollouts/x1/history", srvfx.ops, 400, HAS("'x1' is not a rollout id"));
    expect_get("/v1/admin/rollouts/0/history", srvfx.ops, 400, HAS("not a rollout id"));
    expect_get("/v1/admin/rollouts/424242/history", srvfx.ops, 404, HAS("424242"));
    assert_int_equal(srvfx_status_of("GET", path, "mfa_nosuchtoken", NULL), 401);
    /* Reading is every role's; acting stays ops'. */
    assert_int_equal(srvfx_status_of("GET", path, srvfx.admin, NULL), 200);
    /* The status answers each device class's own scorecard beside the fleet's (none here:
     * no device reported in the rollout's window; the class figures are tested in
     * unit_rollout_engine, their printing in unit_rollout_mfctl). */
    {
        char status_path[64];

        (void)snprintf(status_path, sizeof(status_path), "/v1/admin/rollouts/%s", id);
        expect_get(status_path, srvfx.datat, 200, HAS("\"classes\":[]", "\"events\":[{"));
    }
    (void)snprintf(path, sizeof(path), "/v1/admin/rollouts/%s/abort", id);
    assert_int_equal(srvfx_status_of("POST", path, srvfx.datat, "{}"), 403);
    assert_int_equal(srvfx_status_of("POST", path, srvfx.ops, "{}"), 200);
}

/* A model's installed versions per time bin, from the worker's snapshots: counts only, so
 * any role; unknown keys, bad windows and bad names are 400, an unknown model 404. */
static void test_server_console__model_installed(void **state)
{
    struct srvfx_resp r;
    char report[256];
    cJSON *doc, *at, *versions, *v;

    (void)state;
    srvfx_publish_det();
    (void)snprintf(report, sizeof(report),
                   "{\"model\":\"det\",\"version\":\"v1\",\"sha256\":\"%s\","
                   "\"status\":\"installed\"}",
                   srvfx.sha1);
    assert_int_equal(srvfx_status_of("POST", "/v1/report", srvfx.device, report), 204);
    poll_for(&r, "/v1/admin/models/det/installed", "\"version\":\"v1\"");
    doc = cJSON_Parse(r.body);
    free(r.body);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "bin_s")), 60);
    at = cJSON_GetObjectItemCaseSensitive(doc, "at");
    versions = cJSON_GetObjectItemCaseSensitive(doc, "versions");
    assert_true(cJSON_GetArraySize(at) >= 1);
    assert_int_equal((int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(at, 0)) % 60, 0);
    cJSON_ArrayForEach(v, versions)
    {
        cJSON *devices = cJSON_GetObjectItemCaseSensitive(v, "devices");

        assert_int_equal(cJSON_GetArraySize(devices), cJSON_GetArraySize(at));
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version")), "v1") == 0)
            assert_int_equal(cJSON_GetNumberValue(cJSON_GetArrayItem(devices, 0)), 1);
    }
    cJSON_Delete(doc);
    expect_get("/v1/admin/models/det/installed?window_s=60", srvfx.ops, 200,
               HAS("\"model\":\"det\"", "\"versions\":["));
    expect_get("/v1/admin/models/det/installed?window_s=0", srvfx.ops, 400, HAS("'window_s'"));
    expect_get("/v1/admin/models/det/installed?window_s=604801", srvfx.ops, 400, HAS("'window_s'"));
    expect_get("/v1/admin/models/det/installed?bins=3", srvfx.ops, 400,
               HAS("unknown query key 'bins' (window_s)"));
    expect_get("/v1/admin/models/b@d/installed", srvfx.ops, 400, HAS("[A-Za-z0-9._-]"));
    expect_get("/v1/admin/models/nosuchmodel/installed", srvfx.datat, 404, HAS("'nosuchmodel'"));
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/models/det/installed", srvfx.admin, NULL),
                     200);
}

int main(void)
{
    return MF_TEST_RUN(
        "tests", console_setup, console_teardown,
        cmocka_unit_test(test_server_console__files_with_their_types_and_cache),
        cmocka_unit_test(test_server_console__nothing_outside_and_404_for_unknown),
        cmocka_unit_test(test_server_console__default_is_the_build_beside_the_program),
        cmocka_unit_test(test_server_console__whoami_names_the_role),
        cmocka_unit_test(test_server_console__fleet_summary_aggregates),
        cmocka_unit_test(test_server_console__fleet_devices_page_by_page),
        cmocka_unit_test(test_server_console__one_device_whole),
        cmocka_unit_test(test_server_console__model_deltas),
        cmocka_unit_test(test_server_console__model_installed),
        cmocka_unit_test(test_server_console__device_classes),
        cmocka_unit_test(test_server_console__rollout_history));
}
