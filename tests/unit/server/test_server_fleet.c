/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ops surface of mf-server end to end on loopback (ephemeral ports): every role x
 * route pair of the routing table denied without the right credential, admin tokens,
 * device revocation, director directives reaching the check-in, delta precompute served
 * to a device on the old version, /metrics, per-device rate limiting, native TLS checked
 * with `curl --cacert`, and docs/openapi.yaml against the routes the server registers.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, popen */
#include "mf_test.h"
#include "kit_fs.h"
#include "manifest_fixture.h"
#include "director/director.h"
#include "app/server.h"
#include "common/token.h"
#include "handlers/handlers.h"
#include "http/http_req.h"
#include "mf/patch.h"
#include "offload/offload_srv.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MODEL_SIZE (256 * 1024)
#define NONCE "0123456789abcdef0123456789abcdef"

static struct {
    char dir[64], data[96];
    char admin[MF_TOKEN_LEN + 1], enroll[MF_TOKEN_LEN + 1];
    char ops[MF_TOKEN_LEN + 1], datat[MF_TOKEN_LEN + 1], revoked[MF_TOKEN_LEN + 1];
    char device[MF_TOKEN_LEN + 1];
    struct mf_server *srv;
    uint16_t port;
    uint8_t v1[MODEL_SIZE], v2[MODEL_SIZE];
    char sha1[65], sha2[65];
    int released;
} fx;

static struct fx world;
static int log_level = MF_LOG_WARN;

struct resp {
    long status;
    char *body;
    size_t len;
    char retry_after[16];
};

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    struct resp *r = payload;
    char *grown = realloc(r->body, r->len + size * n + 1);

    if (!grown)
        return 0;
    r->body = grown;
    memcpy(r->body + r->len, p, size * n);
    r->len += size * n;
    r->body[r->len] = '\0';
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *payload)
{
    struct resp *r = payload;

    if (size * n > 12 && strncasecmp(p, "Retry-After:", 12) == 0)
        (void)snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)strcspn(p + 13, "\r\n"),
                       p + 13);
    return size * n;
}

/* One request to 127.0.0.1:`port`; `extra` is one more header or NULL. */
static void call_port(struct resp *out, uint16_t port, const char *method, const char *path,
                      const char *token, const char *body, size_t len, const char *extra)
{
    char url[512], auth[128];
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    CURL *c = curl_easy_init();

    memset(out, 0, sizeof(*out));
    assert_non_null(c);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (token) {
        (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    if (extra)
        h = curl_slist_append(h, extra);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (curl_easy_perform(c) != CURLE_OK)
        fail_msg("%s %s failed", method, path);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static long call(struct resp *out, const char *method, const char *path, const char *token,
                 const char *json)
{
    call_port(out, fx.port, method, path, token, json, json ? strlen(json) : 0, NULL);
    return out->status;
}

/* Status of a request whose body is not needed. */
static long status_of(const char *method, const char *path, const char *token, const char *json)
{
    struct resp r;
    long st = call(&r, method, path, token, json);

    free(r.body);
    return st;
}

static void sha256_hex(char out[65], const void *p, size_t n)
{
    uint8_t d[32];
    unsigned int len = 0;

    assert_int_equal(EVP_Digest(p, n, d, &len, EVP_sha256(), NULL), 1);
    mf_hex__encode(out, d, sizeof(d));
}

static void read_token(char *out, const char *name)
{
    mf_kit_fs_read_line(out, MF_TOKEN_LEN + 1, fx.data, name);
}

static void json_str(char *dst, size_t cap, const char *body, const char *key)
{
    cJSON *root = cJSON_Parse(body ? body : "");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, key));

    (void)snprintf(dst, cap, "%s", v ? v : "");
    cJSON_Delete(root);
}

static void enroll(char *cred_out, const char *device_id)
{
    char body[256];
    struct resp r;

    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"%s\"}",
                   fx.enroll, device_id);
    assert_int_equal(call(&r, "POST", "/v1/enroll", NULL, body), 201);
    json_str(cred_out, MF_TOKEN_LEN + 1, r.body, "credential");
    free(r.body);
}

static void make_token(char *out, const char *role, const char *name)
{
    char body[128];
    struct resp r;

    (void)snprintf(body, sizeof(body), "{\"role\":\"%s\",\"name\":\"%s\"}", role, name);
    if (call(&r, "POST", "/v1/admin/tokens", fx.admin, body) != 201)
        fail_msg("token %s: %ld %s", role, r.status, r.body);
    json_str(out, MF_TOKEN_LEN + 1, r.body, "token");
    free(r.body);
    assert_int_equal(mf_token__kind(out, strlen(out)), MF_TOKEN_ADMIN);
}

static void key_file(char *path, size_t cap)
{
    (void)snprintf(path, cap, "%s/dir.pem", fx.dir);
    mf_kit_fs_write(path, world.priv[K_DIR], world.priv_len[K_DIR]);
}

static void start_server_timeout(struct mf_server **out, const char *cert, const char *key,
                                 double rate, int worker, unsigned timeout_s)
{
    struct mf_server_options o;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_server__options_init(&o);
    o.data_dir = fx.data;
    o.listen = "127.0.0.1:0";
    o.conn_timeout_s = timeout_s;
    o.log_fn = mf_log_stderr;
    o.log_payload = &log_level;
    o.tls_cert = cert;
    o.tls_key = key;
    o.device_rate = rate;
    o.device_burst = 2;
    o.delta_worker = worker;
    if (mf_server__start(out, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
}

static void start_server(struct mf_server **out, const char *cert, const char *key, double rate,
                         int worker)
{
    start_server_timeout(out, cert, key, rate, worker, 10);
}

static int group_setup(void **state)
{
    char key[160];
    struct mf_ctx ctx;
    int changed = 0;
    uint32_t x = 7;

    (void)state;
    (void)signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    mf_kit_fs_mkdtemp(fx.dir, sizeof(fx.dir), "mf-fleet");
    (void)snprintf(fx.data, sizeof(fx.data), "%s/data", fx.dir);
    assert_int_equal(mkdir(fx.data, 0750), 0);
    fx_init(&world);
    key_file(key, sizeof(key));
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_director__init_key(&changed, &ctx, fx.data, key), MF_OK);
    assert_int_equal(mf_server__init_data_dir(&changed, &ctx, fx.data, NULL), MF_OK);
    start_server(&fx.srv, NULL, NULL, 0, 1);
    fx.port = mf_server__port(fx.srv);
    read_token(fx.admin, "admin.token");
    read_token(fx.enroll, "enroll.token");
    make_token(fx.ops, "ops", "alice");
    make_token(fx.datat, "data", "bob");
    make_token(fx.revoked, "admin", "gone");
    enroll(fx.device, "cam-a");
    /* v2 is v1 with 1% of its bytes changed: a fine-tune, where a delta pays off. */
    for (size_t i = 0; i < MODEL_SIZE; i++) {
        x = x * 1103515245u + 12345u;
        fx.v1[i] = (uint8_t)(x >> 16);
    }
    memcpy(fx.v2, fx.v1, MODEL_SIZE);
    for (size_t i = 0; i < MODEL_SIZE; i += 100)
        fx.v2[i] ^= 0x5a;
    sha256_hex(fx.sha1, fx.v1, MODEL_SIZE);
    sha256_hex(fx.sha2, fx.v2, MODEL_SIZE);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    mf_server__stop(fx.srv);
    fx_free(&world);
    mf_kit_fs_rmtree(fx.dir);
    curl_global_cleanup();
    return 0;
}

/* Revokes the token "gone" by its listed id. */
static void revoke_gone(void)
{
    struct resp r;
    cJSON *root, *t;
    char path[96] = "";

    assert_int_equal(call(&r, "GET", "/v1/admin/tokens", fx.admin, NULL), 200);
    assert_null(strstr(r.body, "mfa_")); /* never a secret in a listing */
    root = cJSON_Parse(r.body);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(root, "tokens"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")), "gone") == 0)
            (void)snprintf(path, sizeof(path), "/v1/admin/tokens/%s",
                           cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")));
    }
    cJSON_Delete(root);
    free(r.body);
    assert_true(path[0] != '\0');
    assert_int_equal(status_of("DELETE", path, fx.admin, NULL), 204);
    assert_int_equal(status_of("DELETE", path, fx.admin, NULL), 404);
}

/* A concrete path for a route pattern; names that exist nowhere, so nothing changes. */
static void concrete(char *out, size_t cap, const char *pattern)
{
    size_t n = 0;

    for (const char *p = pattern; *p && n + 70 < cap;) {
        if (strncmp(p, "{*}", 3) == 0) {
            memset(out + n, 'e', 64);
            n += 64;
            p += 3;
        } else if (strncmp(p, "{}", 2) == 0) {
            memcpy(out + n, "zz", 2);
            n += 2;
            p += 2;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
}

static void test_server_fleet__every_role_route_pair_is_checked(void **state)
{
    /* The credentials a request may carry, and the role bit each holds (0: none). */
    const struct {
        const char *name, *token;
        int is_device, role;
    } creds[] = {
        {"none", NULL, 0, 0},
        {"garbage", "mfa_nonsense", 0, 0},
        {"enrollment token", fx.enroll, 0, 0},
        {"revoked admin token", fx.revoked, 0, 0},
        {"device credential", fx.device, 1, 0},
        {"ops token", fx.ops, 0, MF_ROLE_OPS},
        {"data token", fx.datat, 0, MF_ROLE_DATA},
        {"admin token", fx.admin, 0, MF_ROLE_ADMIN},
    };
    const char *no_store = "X-MF-Sha256: "
                           "0000000000000000000000000000000000000000000000000000000000000000";
    int checked = 0;

    (void)state;
    revoke_gone();
    /* The walk is over the table the server routes with: a new route is in it. */
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        const struct mf_httpd_route *rt = &mf_handlers__routes[i];
        char path[256];

        concrete(path, sizeof(path), rt->pattern);
        for (size_t k = 0; k < sizeof(creds) / sizeof(creds[0]); k++) {
            int allowed;
            struct resp r;

            switch (rt->auth) {
            case MF_HTTPD_AUTH_NONE:
                allowed = 1;
                break;
            case MF_HTTPD_AUTH_DEVICE:
                allowed = creds[k].is_device;
                break;
            case MF_HTTPD_AUTH_ADMIN:
                allowed = (rt->roles & (unsigned)creds[k].role) != 0;
                break;
            case MF_HTTPD_AUTH_DEVICE_OR_ADMIN:
            default:
                allowed = creds[k].is_device || (rt->roles & (unsigned)creds[k].role) != 0;
                break;
            }
            /* A mismatching X-MF-Sha256 keeps an allowed upload from storing anything. */
            call_port(&r, fx.port, rt->method, path, creds[k].token, NULL, 0, no_store);
            if (!allowed && r.status != 401 && r.status != 403)
                fail_msg("%s %s with %s: %ld, want 401/403", rt->method, path, creds[k].name,
                         r.status);
            if (!allowed && creds[k].role && rt->auth != MF_HTTPD_AUTH_DEVICE && r.status != 403)
                fail_msg("%s %s with %s: %ld, want 403", rt->method, path, creds[k].name, r.status);
            if (allowed && (r.status == 401 || r.status == 403))
                fail_msg("%s %s with %s: %ld, want it allowed", rt->method, path, creds[k].name,
                         r.status);
            free(r.body);
            checked++;
        }
    }
    assert_true(checked >= 8 * 20);
    /* Nothing above changed the registry. */
    {
        struct resp r;

        assert_int_equal(call(&r, "GET", "/v1/admin/models", fx.admin, NULL), 200);
        assert_string_equal(r.body, "{\"models\":[]}");
        free(r.body);
    }
}

static void test_server_fleet__tokens_bad_input(void **state)
{
    (void)state;
    assert_int_equal(status_of("POST", "/v1/admin/tokens", fx.admin,
                               "{\"role\":\"root\","
                               "\"name\":\"x\"}"),
                     400);
    assert_int_equal(status_of("POST", "/v1/admin/tokens", fx.admin,
                               "{\"role\":\"ops\","
                               "\"name\":\"../x\"}"),
                     400);
    assert_int_equal(status_of("POST", "/v1/admin/tokens", fx.admin, "{\"role\":"), 400);
    assert_int_equal(status_of("DELETE", "/v1/admin/tokens/nothex", fx.admin, NULL), 400);
    assert_int_equal(status_of("DELETE", "/v1/admin/tokens/0123456789abcdef", fx.admin, NULL), 404);
    /* The ops token still works: none of that revoked anything. */
    assert_int_equal(status_of("GET", "/v1/admin/pins", fx.ops, NULL), 200);
}

static void put_env(const char *path, uint8_t *env, size_t len, const char *token, long want)
{
    struct resp r;

    call_port(&r, fx.port, "PUT", path, token, (const char *)env, len, NULL);
    if (r.status != want)
        fail_msg("PUT %s: %ld %s", path, r.status, r.body);
    free(r.body);
    mf_free(NULL, env);
}

/* Trust, then v1 and v2 of "det" published and released by the data team. */
static void publish_det(void)
{
    const uint8_t *data[2] = {fx.v1, fx.v2};
    size_t len = 0;

    if (fx.released)
        return;
    uint8_t *env;

    env = fx_root_v1(&len, &world);
    put_env("/v1/admin/trust/root", env, len, fx.admin, 201);
    env = fx_keys_v1(&len, &world);
    put_env("/v1/admin/trust/keys", env, len, fx.admin, 201);
    for (int i = 0; i < 2; i++) {
        char path[128], ver[8];
        struct resp r;

        (void)snprintf(ver, sizeof(ver), "v%d", i + 1);
        (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/%s", ver);
        call_port(&r, fx.port, "PUT", path, fx.datat, (const char *)data[i], MODEL_SIZE, NULL);
        assert_int_equal(r.status, 201);
        free(r.body);
        (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/%s/release", ver);
        env = fx_release_of(&len, &world, "det", ver, (uint64_t)i + 1, 0, data[i], MODEL_SIZE,
                            64 * 1024, BY(K_REL0));
        put_env(path, env, len, fx.datat, 201);
    }
    /* A staged (unreleased) v3 that directives may not name. */
    assert_int_equal(status_of("PUT", "/v1/admin/models/det/versions/v3", fx.datat, "x"), 201);
    fx.released = 1;
}

/* Checks in as cam-a running `installed` with `extra` model fields; returns the assigned
 * version ("" for none) and, when `reply` is non-NULL, the whole answer. */
static void checkin(char *version_out, const char *installed, const char *extra, struct resp *reply)
{
    char body[768];
    struct resp r;
    cJSON *root, *a;

    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1,"
                   "\"models\":[{\"name\":\"det\",\"version\":\"%s\",\"sha256\":\"%s\"%s%s}]}",
                   installed, strcmp(installed, "v1") == 0 ? fx.sha1 : fx.sha2, extra ? "," : "",
                   extra ? extra : "");
    if (call(&r, "POST", "/v1/checkin", fx.device, body) != 200)
        fail_msg("checkin: %ld %s", r.status, r.body);
    root = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    (void)snprintf(version_out, 16, "%s",
                   a ? cJSON_GetStringValue(cJSON_GetObjectItem(a, "version")) : "");
    cJSON_Delete(root);
    if (reply)
        *reply = r;
    else
        free(r.body);
}

static void expect_target(const char *want, const char *installed, const char *extra,
                          const char *why)
{
    char got[16];

    checkin(got, installed, extra, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("%s: assigned '%s', want '%s'", why, got, want);
}

static void test_server_fleet__directives_reach_the_checkin(void **state)
{
    char rb[128];
    struct resp r;

    (void)state;
    publish_det();
    expect_target("v2", "v1", NULL, "channel default");
    /* Ops device pin, and back. */
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/device/cam-a/det", fx.ops, "{\"version\":\"v1\"}"), 200);
    expect_target("v1", "v2", NULL, "ops device pin");
    assert_int_equal(status_of("DELETE", "/v1/admin/pins/device/cam-a/det", fx.ops, NULL), 204);
    assert_int_equal(status_of("DELETE", "/v1/admin/pins/device/cam-a/det", fx.ops, NULL), 404);
    expect_target("v2", "v1", NULL, "pin cleared");
    /* Group pin through the device's groups. */
    assert_int_equal(
        status_of("PUT", "/v1/admin/devices/cam-a/groups", fx.ops, "{\"groups\":[\"lab\",\"eu\"]}"),
        204);
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/group/lab/det", fx.ops, "{\"version\":\"v1\"}"), 200);
    expect_target("v1", "v2", NULL, "group pin");
    call(&r, "GET", "/v1/admin/groups", fx.ops, NULL);
    assert_non_null(strstr(r.body, "{\"name\":\"lab\",\"devices\":[\"cam-a\"]}"));
    free(r.body);
    assert_int_equal(status_of("DELETE", "/v1/admin/pins/group/lab/det", fx.ops, NULL), 204);
    /* Fleet rollback. */
    assert_int_equal(status_of("PUT", "/v1/admin/rollbacks/det", fx.ops, "{\"version\":\"v1\"}"),
                     200);
    expect_target("v1", "v2", NULL, "fleet rollback");
    /* The device's own pin outranks the fleet rollback. */
    expect_target("v2", "v2", "\"pin\":\"v2\"", "device pin");
    assert_int_equal(status_of("DELETE", "/v1/admin/rollbacks/det", fx.ops, NULL), 204);
    /* A channel with its own default. */
    assert_int_equal(
        status_of("PUT", "/v1/admin/devices/cam-a/channel", fx.ops, "{\"channel\":\"beta\"}"), 204);
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/channel/beta/det", fx.ops, "{\"version\":\"v1\"}"), 200);
    expect_target("v1", "v2", NULL, "channel version");
    assert_int_equal(status_of("DELETE", "/v1/admin/pins/channel/beta/det", fx.ops, NULL), 204);
    /* pending and rolled_back hold the device on what it runs. */
    expect_target("v1", "v1", "\"pending\":true", "pending");
    (void)snprintf(rb, sizeof(rb), "\"rolled_back\":[{\"sha256\":\"%s\",\"reason\":\"x\"}]",
                   fx.sha2);
    expect_target("v1", "v1", rb, "rolled back");
    expect_target("v2", "v1", NULL, "back to the channel default");
    /* Directives may only name released versions; bad input changes nothing. */
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/device/cam-a/det", fx.ops, "{\"version\":\"v3\"}"), 409);
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/device/cam-a/det", fx.ops, "{\"version\":\"v9\"}"), 404);
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/planet/x/det", fx.ops, "{\"version\":\"v1\"}"), 400);
    assert_int_equal(status_of("PUT", "/v1/admin/pins/device/cam-a/det", fx.ops, "{\"version\":"),
                     400);
    assert_int_equal(
        status_of("PUT", "/v1/admin/pins/device/../det", fx.ops, "{\"version\":\"v1\"}"), 400);
    assert_int_equal(status_of("PUT", "/v1/admin/devices/nosuch/groups", fx.ops, "{\"groups\":[]}"),
                     404);
    assert_int_equal(
        status_of("PUT", "/v1/admin/devices/cam-a/groups", fx.ops, "{\"groups\":[\"a/b\"]}"), 400);
    assert_int_equal(status_of("PUT", "/v1/admin/pins/device/cam-a/det/extra", fx.ops, "{}"), 404);
    {
        char *big = malloc(70 * 1024);

        assert_non_null(big);
        memset(big, ' ', 70 * 1024 - 1);
        big[0] = '{';
        big[70 * 1024 - 2] = '}';
        big[70 * 1024 - 1] = '\0';
        assert_int_equal(status_of("PUT", "/v1/admin/pins/device/cam-a/det", fx.ops, big), 413);
        free(big);
    }
    call(&r, "GET", "/v1/admin/pins", fx.ops, NULL);
    assert_string_equal(r.body, "{\"pins\":[]}");
    free(r.body);
}

struct mem_src {
    const uint8_t *p;
    size_t n;
};

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

/* Waits (bounded) for the delta the worker makes from v1 to v2 after publish_det: the
 * blob path, source and format a device on v1 is offered, and its size. */
static void wait_delta(char blob[160], char from[65], char fmt[16], double *size)
{
    char got[16];
    struct resp r;

    blob[0] = '\0';
    /* The worker runs in the background; wait for it, bounded (it takes well under 1 s). */
    for (int i = 0; i < 200 && !blob[0]; i++) {
        cJSON *root, *d;

        checkin(got, "v1", NULL, &r);
        assert_string_equal(got, "v2");
        root = cJSON_Parse(r.body);
        d = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0),
                                "deltas"),
            0);
        if (d) {
            (void)snprintf(blob, 160, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(d, "blob")));
            (void)snprintf(from, 65, "%s",
                           cJSON_GetStringValue(cJSON_GetObjectItem(d, "from_sha256")));
            (void)snprintf(fmt, 16, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(d, "format")));
            *size = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "size"));
        }
        cJSON_Delete(root);
        free(r.body);
        if (!blob[0])
            (void)nanosleep(&(struct timespec){0, 50000000L}, NULL);
    }
    if (!blob[0])
        fail_msg("no delta listed after 10 s");
}

static void test_server_fleet__delta_precompute_serves_the_old_version(void **state)
{
    char got[16], blob[160] = "", from[65] = "", fmt[16] = "";
    struct resp r;
    double size = 0;

    (void)state;
    publish_det();
    wait_delta(blob, from, fmt, &size);
    assert_string_equal(from, fx.sha1);
    assert_string_equal(fmt, "mfdelta");
    assert_true(size > 0 && size < MODEL_SIZE / 4);
    /* A device on v2 already gets no delta; the delta rebuilds v2 exactly from v1. */
    checkin(got, "v2", NULL, &r);
    assert_null(strstr(r.body, "\"deltas\""));
    free(r.body);
    assert_int_equal(call(&r, "GET", blob, fx.device, NULL), 200);
    assert_int_equal((double)r.len, size);
    {
        size_t n = 0;
        uint8_t *img = apply_delta(&n, fx.v1, MODEL_SIZE, (const uint8_t *)r.body, r.len);

        assert_int_equal(n, MODEL_SIZE);
        assert_memory_equal(img, fx.v2, MODEL_SIZE);
        free(img);
    }
    free(r.body);
    /* /metrics shows the work (any role may scrape; devices may not). */
    assert_int_equal(call(&r, "GET", "/metrics", fx.ops, NULL), 200);
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
    assert_int_equal(status_of("GET", "/metrics", fx.device, NULL), 401);
}

/* One offload batch of cam-a with a single hard sample whose input is `input`. */
static void post_sample(int id, const uint8_t *input, size_t n)
{
    size_t enc_len = 4 * ((n + 2) / 3) + 1;
    char *enc = malloc(enc_len), *body = malloc(enc_len + 512);
    struct resp r;

    assert_non_null(enc);
    assert_non_null(body);
    (void)EVP_EncodeBlock((unsigned char *)enc, input, (int)n);
    (void)snprintf(body, enc_len + 512,
                   "{\"batch_id\":\"%032x\",\"model\":\"det\",\"samples\":[{\"id\":\"%032x\","
                   "\"kind\":\"hard\",\"model\":\"det\",\"model_version\":\"v1\","
                   "\"method\":\"max_softmax\",\"score\":0.41,\"created_at\":1764500000,"
                   "\"output_kind\":\"logits\",\"output\":[1.0,0.6,-1.0],\"input\":\"%s\"}]}",
                   id, id, enc);
    if (call(&r, "POST", "/v1/offload/batch", fx.device, body) != 200)
        fail_msg("batch: %ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "\"accepted\":1"));
    free(r.body);
    free(body);
    free(enc);
}

/* A device downloads `path` whole (200) and resumed (206), with the bytes of `data`. */
static void expect_download(const char *path, const uint8_t *data, size_t n)
{
    struct resp r;

    assert_int_equal(call(&r, "GET", path, fx.device, NULL), 200);
    assert_int_equal(r.len, n);
    assert_memory_equal(r.body, data, n);
    free(r.body);
    call_port(&r, fx.port, "GET", path, fx.device, NULL, 0, "Range: bytes=10-");
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, n - 10);
    assert_memory_equal(r.body, data + 10, n - 10);
    free(r.body);
}

static int blob_file_exists(const char *sha)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", fx.data, sha, sha);
    return stat(path, &st) == 0;
}

/* A released model small enough to be a sample's input (MF_OFFLOAD_INPUT_MAX): "small" v1,
 * the first SMALL_SIZE bytes of v1. */
#define SMALL_SIZE 4096

static void publish_small(void)
{
    size_t len = 0;
    struct resp r;
    uint8_t *env;

    call_port(&r, fx.port, "PUT", "/v1/admin/models/small/versions/v1", fx.datat,
              (const char *)fx.v1, SMALL_SIZE, NULL);
    assert_int_equal(r.status, 201);
    free(r.body);
    env = fx_release_of(&len, &world, "small", "v1", 1, 0, fx.v1, SMALL_SIZE, 1024, BY(K_REL0));
    put_env("/v1/admin/models/small/versions/v1/release", env, len, fx.datat, 201);
}

/* Uploads the attack's samples (inputs: the released "small" model, the v1->v2 delta, bytes
 * of the device's own), then lets `delete_samples` delete them all, then checks the fleet
 * still downloads the model and the delta while the device's own input is gone. */
static void attack_then_delete(const char *delta_path, const uint8_t *delta, size_t delta_len,
                               int first_id, void (*delete_samples)(void))
{
    char model_path[128], small_sha[65], own_sha[65];
    uint8_t own[100];

    memset(own, 0x30 + first_id, sizeof(own));
    sha256_hex(own_sha, own, sizeof(own));
    sha256_hex(small_sha, fx.v1, SMALL_SIZE);
    post_sample(first_id, fx.v1, SMALL_SIZE);
    post_sample(first_id + 1, delta, delta_len);
    post_sample(first_id + 2, own, sizeof(own));
    assert_true(blob_file_exists(own_sha));
    /* The deletion keeps what was committed from its start on (blob/blob_gc.h): begin it a
     * clock tick after the uploads. */
    (void)nanosleep(&(struct timespec){0, 30000000L}, NULL);
    delete_samples();
    (void)snprintf(model_path, sizeof(model_path), "/v1/blobs/%s", small_sha);
    expect_download(model_path, fx.v1, SMALL_SIZE);
    expect_download(delta_path, delta, delta_len);
    assert_false(blob_file_exists(own_sha)); /* no leak: nothing else named it */
}

static void delete_by_device(void)
{
    struct resp r;

    assert_int_equal(call(&r, "DELETE", "/v1/admin/devices/cam-a/samples", fx.ops, NULL), 200);
    assert_non_null(strstr(r.body, "\"deleted\":3"));
    free(r.body);
}

/* The retention job's call (offload_jobs.c), on the store the server serves. */
static void delete_by_retention(void)
{
    char url[160], root[128];
    struct mf_store *s = NULL;
    struct mf_ctx ctx;
    int64_t deleted = 0;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    (void)snprintf(url, sizeof(url), "sqlite:%s/store.db", fx.data);
    (void)snprintf(root, sizeof(root), "%s/blobs", fx.data);
    assert_int_equal(mf_store__open(&s, &ctx, url, 0), MF_OK);
    if (mf_offsrv__delete(&deleted, s, &ctx, root, "", (int64_t)time(NULL) + 60) < 0)
        fail_msg("retention: %s", mf_ctx__errmsg(&ctx));
    assert_int_equal(deleted, 3);
    mf_store__close(s);
}

/* Blobs are content-addressed and shared: a device that uploads samples whose inputs are the
 * bytes of a released model and of a delta must not get them deleted with its samples (a
 * privacy deletion, or retention), which would leave the release naming a missing blob. */
static void test_server_fleet__sample_delete_keeps_released_blobs(void **state)
{
    char blob[160], from[65], fmt[16];
    double size = 0;
    struct resp d;

    (void)state;
    publish_det();
    publish_small();
    wait_delta(blob, from, fmt, &size);
    assert_int_equal(call(&d, "GET", blob, fx.device, NULL), 200);
    assert_true(d.len > 10 && d.len <= MODEL_SIZE);
    attack_then_delete(blob, (const uint8_t *)d.body, d.len, 1, delete_by_device);
    attack_then_delete(blob, (const uint8_t *)d.body, d.len, 4, delete_by_retention);
    free(d.body);
}

static void test_server_fleet__device_revocation(void **state)
{
    char cred[MF_TOKEN_LEN + 1];
    const char *body = "{\"nonce\":\"" NONCE "\",\"models\":[]}";

    (void)state;
    enroll(cred, "cam-r");
    assert_int_equal(status_of("POST", "/v1/checkin", cred, body), 200);
    assert_int_equal(status_of("DELETE", "/v1/admin/devices/cam-r/credential", fx.ops, NULL), 204);
    assert_int_equal(status_of("POST", "/v1/checkin", cred, body), 401);
    assert_int_equal(status_of("DELETE", "/v1/admin/devices/nosuch/credential", fx.ops, NULL), 404);
    /* The device comes back only through enrolment, with a new credential. */
    enroll(cred, "cam-r");
    assert_int_equal(status_of("POST", "/v1/checkin", cred, body), 200);
}

static void test_server_fleet__rate_limit_per_device(void **state)
{
    struct mf_server *limited = NULL;
    char other[MF_TOKEN_LEN + 1];
    const char *body = "{\"nonce\":\"" NONCE "\",\"models\":[]}";
    struct resp r;
    uint16_t port;

    (void)state;
    /* A second node on the same data directory, limited to a burst of 2 per device. */
    start_server(&limited, NULL, NULL, 0.01, 0);
    port = mf_server__port(limited);
    enroll(other, "cam-other");
    for (int i = 0; i < 2; i++) {
        call_port(&r, port, "POST", "/v1/checkin", fx.device, body, strlen(body), NULL);
        assert_int_equal(r.status, 200);
        free(r.body);
    }
    call_port(&r, port, "POST", "/v1/checkin", fx.device, body, strlen(body), NULL);
    assert_int_equal(r.status, 429);
    assert_non_null(strstr(r.body, "\"too_many_requests\""));
    assert_true(strtol(r.retry_after, NULL, 10) >= 1);
    free(r.body);
    /* Blob downloads (file reads, resumed in ranges) do not spend the device's tokens. */
    call_port(&r, port, "GET",
              "/v1/blobs/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
              fx.device, NULL, 0, NULL);
    assert_int_equal(r.status, 404);
    free(r.body);
    /* Another device has its own bucket. */
    call_port(&r, port, "POST", "/v1/checkin", other, body, strlen(body), NULL);
    assert_int_equal(r.status, 200);
    free(r.body);
    mf_server__stop(limited);
}

/* A client that sends half a request and stalls is cut off at the idle timeout, and the
 * half request changes nothing. */
static void test_server_fleet__slow_client_times_out(void **state)
{
    struct mf_server *srv = NULL;
    struct sockaddr_in a = {.sin_family = AF_INET};
    char head[512], buf[256];
    struct resp r;
    int fd, closed = 0;

    (void)state;
    start_server_timeout(&srv, NULL, NULL, 0, 0, 1);
    a.sin_port = htons(mf_server__port(srv));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    (void)snprintf(head, sizeof(head),
                   "POST /v1/admin/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: 40\r\n\r\n"
                   "{\"role\":\"admin\",\"name\":\"slow",
                   fx.admin);
    assert_int_equal(send(fd, head, strlen(head), 0), (ssize_t)strlen(head));
    /* Bounded wait: the server closes within its 1 s timeout (plus scheduling slack). */
    for (int i = 0; i < 100 && !closed; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (poll(&p, 1, 100) > 0)
            closed = recv(fd, buf, sizeof(buf), 0) <= 0;
    }
    (void)close(fd);
    assert_true(closed);
    mf_server__stop(srv);
    assert_int_equal(call(&r, "GET", "/v1/admin/tokens", fx.admin, NULL), 200);
    assert_null(strstr(r.body, "\"slow"));
    free(r.body);
}

/* Runs `cmd` and returns its first output line in `out`. */
static void run_line(char *out, size_t cap, const char *cmd)
{
    FILE *p = popen(cmd, "r");

    assert_non_null(p);
    out[0] = '\0';
    if (!fgets(out, (int)cap, p))
        out[0] = '\0';
    (void)pclose(p);
    out[strcspn(out, "\r\n")] = '\0';
}

static void test_server_fleet__tls_with_curl_cacert(void **state)
{
    struct mf_server *tls = NULL;
    char cert[160], key[160], cmd[1024], line[64];
    uint16_t port;

    (void)state;
    if (system("command -v openssl >/dev/null && command -v curl >/dev/null") != 0)
        MF_SKIP("openssl or curl command not installed");
    (void)snprintf(cert, sizeof(cert), "%s/cert.pem", fx.dir);
    (void)snprintf(key, sizeof(key), "%s/key.pem", fx.dir);
    (void)snprintf(cmd, sizeof(cmd),
                   "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                   "-keyout %s -out %s -days 1 -subj /CN=127.0.0.1 "
                   "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
                   key, cert);
    assert_int_equal(system(cmd), 0);
    start_server(&tls, cert, key, 0, 0);
    port = mf_server__port(tls);
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 --cacert %s -o /dev/null -w '%%{http_code}' "
                   "https://127.0.0.1:%u/healthz",
                   cert, (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_equal(line, "200");
    /* Without the CA the certificate is refused; plain HTTP is not served. */
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 -o /dev/null -w '%%{http_code}' https://127.0.0.1:%u/healthz",
                   (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_equal(line, "000");
    (void)snprintf(cmd, sizeof(cmd),
                   "curl -s -m 10 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%u/healthz",
                   (unsigned)port);
    run_line(line, sizeof(line), cmd);
    assert_string_not_equal(line, "200");
    mf_server__stop(tls);
    /* A key without a certificate is a clear error, not a plain-HTTP server. */
    {
        struct mf_server_options o;
        struct mf_ctx ctx;
        struct mf_server *bad = NULL;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        mf_server__options_init(&o);
        o.data_dir = fx.data;
        o.listen = "127.0.0.1:0";
        o.tls_key = key;
        assert_int_equal(mf_server__start(&bad, &ctx, &o), MF_E_INVALID);
        assert_null(bad);
    }
}

/* docs/openapi.yaml of the source tree. */
static char *read_openapi(void)
{
    char path[1024];
    size_t len = 0;
    uint8_t *text;

    mf_kit_fs_source_path(path, sizeof(path), "docs/openapi.yaml");
    text = fx_read_file(&len, path);
    if (!text)
        fail_msg("cannot read %s", path);
    return (char *)text;
}

/* The pattern of an OpenAPI path: every "{name}" becomes "{}". */
static void normalise(char *out, size_t cap, const char *p, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 3 < cap; i++) {
        if (p[i] == '{') {
            while (i < n && p[i] != '}')
                i++;
            out[o++] = '{';
            out[o++] = '}';
        } else {
            out[o++] = p[i];
        }
    }
    out[o] = '\0';
}

static void test_server_fleet__openapi_matches_the_route_table(void **state)
{
    char *doc = read_openapi();
    char cur[256] = "", line_buf[512];
    int documented = 0;
    char seen[64] = {0};

    (void)state;
    /* Every "  /path:" + "    method:" pair must be a route, with the same auth. */
    for (char *line = doc; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);

        (void)snprintf(line_buf, sizeof(line_buf), "%.*s", (int)n, line);
        if (strncmp(line_buf, "  /", 3) == 0 && line_buf[n - 1] == ':') {
            normalise(cur, sizeof(cur), line_buf + 2, n - 3);
        } else if (cur[0] && strncmp(line_buf, "    ", 4) == 0 && line_buf[4] != ' ' &&
                   line_buf[n - 1] == ':') {
            char method[16];
            int found = 0;

            (void)snprintf(method, sizeof(method), "%.*s", (int)(n - 5), line_buf + 4);
            for (char *m = method; *m; m++)
                *m = (char)(*m - ('a' <= *m && *m <= 'z' ? 32 : 0));
            for (size_t i = 0; i < mf_handlers__route_count; i++) {
                char pat[256];

                normalise(pat, sizeof(pat), mf_handlers__routes[i].pattern,
                          strlen(mf_handlers__routes[i].pattern));
                if (strcmp(pat, cur) == 0 && strcmp(mf_handlers__routes[i].method, method) == 0) {
                    found = 1;
                    seen[i] = 1;
                }
            }
            if (!found && strcmp(method, "PARAMETERS") != 0)
                fail_msg("docs/openapi.yaml documents %s %s, which the server does not route",
                         method, cur);
            documented += found;
        } else if (strncmp(line_buf, "  ", 2) != 0) {
            cur[0] = '\0'; /* left the paths section */
        }
        line = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        if (!seen[i])
            fail_msg("route %s %s is missing from docs/openapi.yaml", mf_handlers__routes[i].method,
                     mf_handlers__routes[i].pattern);
    }
    assert_int_equal(documented, (int)mf_handlers__route_count);
    mf_free(NULL, doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_fleet__every_role_route_pair_is_checked),
        cmocka_unit_test(test_server_fleet__tokens_bad_input),
        cmocka_unit_test(test_server_fleet__directives_reach_the_checkin),
        cmocka_unit_test(test_server_fleet__delta_precompute_serves_the_old_version),
        cmocka_unit_test(test_server_fleet__sample_delete_keeps_released_blobs),
        cmocka_unit_test(test_server_fleet__device_revocation),
        cmocka_unit_test(test_server_fleet__rate_limit_per_device),
        cmocka_unit_test(test_server_fleet__tls_with_curl_cacert),
        cmocka_unit_test(test_server_fleet__slow_client_times_out),
        cmocka_unit_test(test_server_fleet__openapi_matches_the_route_table),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
