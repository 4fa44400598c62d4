/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server in-process on loopback for the server suites (test_server_auth, _directives,
 * _blobs, _transport): see server_fixture.h.
 */
#define _XOPEN_SOURCE 700 /* nanosleep */
#include "mf_test.h"
#include "kit_fs.h"
#include "server_fixture.h"
#include "director/director.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

struct srvfx srvfx;
struct fx srvfx_world;
static int log_level = MF_LOG_WARN;

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    struct srvfx_resp *r = payload;
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
    struct srvfx_resp *r = payload;

    if (size * n > 12 && strncasecmp(p, "Retry-After:", 12) == 0)
        (void)snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)strcspn(p + 13, "\r\n"),
                       p + 13);
    return size * n;
}

CURL *srvfx_curl_new(const char *url, curl_write_callback body_fn, curl_write_callback header_fn,
                     void *payload)
{
    CURL *c = curl_easy_init();

    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_fn);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, payload);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_fn);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, payload);
    return c;
}

/* One request to 127.0.0.1:`port`; `extra` is one more header or NULL. */
void srvfx_call_port(struct srvfx_resp *out, uint16_t port, const char *method, const char *path,
                     const char *token, const char *body, size_t len, const char *extra)
{
    char url[512], auth[128];
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    CURL *c;

    memset(out, 0, sizeof(*out));
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    c = srvfx_curl_new(url, on_body, on_header, out);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
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

long srvfx_call(struct srvfx_resp *out, const char *method, const char *path, const char *token,
                const char *json)
{
    srvfx_call_port(out, srvfx.port, method, path, token, json, json ? strlen(json) : 0, NULL);
    return out->status;
}

/* Status of a request whose body is not needed. */
long srvfx_status_of(const char *method, const char *path, const char *token, const char *json)
{
    struct srvfx_resp r;
    long st = srvfx_call(&r, method, path, token, json);

    free(r.body);
    return st;
}

void srvfx_expect_statuses(const struct srvfx_expect *t, size_t n, const char *token)
{
    for (size_t i = 0; i < n; i++) {
        long st = srvfx_status_of(t[i].method, t[i].path, token, t[i].body);

        if (st != t[i].want)
            fail_msg("%s %s %s: %ld, want %ld", t[i].method, t[i].path, t[i].body ? t[i].body : "",
                     st, t[i].want);
    }
}

void srvfx_sha256_hex(char out[65], const void *p, size_t n)
{
    uint8_t d[32];
    unsigned int len = 0;

    assert_int_equal(EVP_Digest(p, n, d, &len, EVP_sha256(), NULL), 1);
    mf_hex__encode(out, d, sizeof(d));
}

static void srvfx_read_token(char *out, const char *name)
{
    mf_kit_fs_read_line(out, MF_TOKEN_LEN + 1, srvfx.data, name);
}

void srvfx_json_str(char *dst, size_t cap, const char *body, const char *key)
{
    cJSON *root = cJSON_Parse(body ? body : "");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, key));

    (void)snprintf(dst, cap, "%s", v ? v : "");
    cJSON_Delete(root);
}

void srvfx_enroll(char *cred_out, const char *device_id)
{
    char body[256];
    struct srvfx_resp r;

    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"%s\"}",
                   srvfx.enroll, device_id);
    assert_int_equal(srvfx_call(&r, "POST", "/v1/enroll", NULL, body), 201);
    srvfx_json_str(cred_out, MF_TOKEN_LEN + 1, r.body, "credential");
    free(r.body);
}

void srvfx_make_token(char *out, const char *role, const char *name)
{
    char body[128];
    struct srvfx_resp r;

    (void)snprintf(body, sizeof(body), "{\"role\":\"%s\",\"name\":\"%s\"}", role, name);
    if (srvfx_call(&r, "POST", "/v1/admin/tokens", srvfx.admin, body) != 201)
        fail_msg("token %s: %ld %s", role, r.status, r.body);
    srvfx_json_str(out, MF_TOKEN_LEN + 1, r.body, "token");
    free(r.body);
    assert_int_equal(mf_token__kind(out, strlen(out)), MF_TOKEN_ADMIN);
}

void srvfx_options_init(struct mf_server_options *o, const char *data_dir)
{
    mf_server__options_init(o);
    o->data_dir = data_dir;
    o->listen = "127.0.0.1:0";
    o->log_fn = mf_log_stderr;
    o->log_payload = &log_level;
}

void srvfx_start_server_timeout(struct mf_server **out, const char *cert, const char *key,
                                double rate, int worker, unsigned timeout_s)
{
    struct mf_server_options o;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    srvfx_options_init(&o, srvfx.data);
    o.conn_timeout_s = timeout_s;
    o.tls_cert = cert;
    o.tls_key = key;
    o.device_rate = rate;
    o.device_burst = 2;
    o.delta_worker = worker;
    if (mf_server__start(out, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
}

void srvfx_start_server(struct mf_server **out, const char *cert, const char *key, double rate,
                        int worker)
{
    srvfx_start_server_timeout(out, cert, key, rate, worker, 10);
}

void srvfx_make_data_dir(char dir[64], char data[96], struct fx *world, const char *tag)
{
    char key[160];
    struct mf_ctx ctx;
    int changed = 0;

    (void)signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    mf_kit_fs_mkdtemp(dir, 64, tag);
    (void)snprintf(data, 96, "%s/data", dir);
    assert_int_equal(mkdir(data, 0750), 0);
    fx_init(world);
    /* Ops hand the server a director key (init --director-key): world's K_DIR. */
    (void)snprintf(key, sizeof(key), "%s/dir.pem", dir);
    mf_kit_fs_write(key, world->priv[K_DIR], world->priv_len[K_DIR]);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_director__init_key(&changed, &ctx, data, key), MF_OK);
    assert_int_equal(mf_director__init_key(&changed, &ctx, data, key), MF_E_STATE);
    assert_int_equal(mf_server__init_data_dir(&changed, &ctx, data, NULL), MF_OK);
}

int srvfx_group_setup(void **state)
{
    uint32_t x = 7;

    (void)state;
    srvfx_make_data_dir(srvfx.dir, srvfx.data, &srvfx_world, "mf-srvfx");
    srvfx_start_server(&srvfx.srv, NULL, NULL, 0, 1);
    srvfx.port = mf_server__port(srvfx.srv);
    srvfx_read_token(srvfx.admin, "admin.token");
    srvfx_read_token(srvfx.enroll, "enroll.token");
    srvfx_make_token(srvfx.ops, "ops", "alice");
    srvfx_make_token(srvfx.datat, "data", "bob");
    srvfx_make_token(srvfx.revoked, "admin", "gone");
    srvfx_enroll(srvfx.device, "cam-a");
    /* v2 is v1 with 1% of its bytes changed: a fine-tune, where a delta pays off. */
    for (size_t i = 0; i < MODEL_SIZE; i++) {
        x = x * 1103515245u + 12345u;
        srvfx.v1[i] = (uint8_t)(x >> 16);
    }
    memcpy(srvfx.v2, srvfx.v1, MODEL_SIZE);
    for (size_t i = 0; i < MODEL_SIZE; i += 100)
        srvfx.v2[i] ^= 0x5a;
    srvfx_sha256_hex(srvfx.sha1, srvfx.v1, MODEL_SIZE);
    srvfx_sha256_hex(srvfx.sha2, srvfx.v2, MODEL_SIZE);
    return 0;
}

int srvfx_det_setup(void **state)
{
    int rc = srvfx_group_setup(state);

    if (rc == 0)
        srvfx_publish_det();
    return rc;
}

int srvfx_group_teardown(void **state)
{
    (void)state;
    mf_server__stop(srvfx.srv);
    fx_free(&srvfx_world);
    mf_kit_fs_rmtree(srvfx.dir);
    curl_global_cleanup();
    return 0;
}

void srvfx_put_variant(const char *version, const char *variant, const char *query,
                       const uint8_t *data, size_t n, uint64_t seq, long want_upload,
                       long want_release)
{
    char path[256];
    struct srvfx_resp r;
    uint8_t *env;
    size_t len = 0;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/%s/variants/%s?%s", version,
                   variant, query);
    srvfx_call_port(&r, srvfx.port, "PUT", path, srvfx.datat, (const char *)data, n, NULL);
    if (r.status != want_upload)
        fail_msg("PUT %s: %ld %s", path, r.status, r.body);
    free(r.body);
    if (!want_release)
        return;
    (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/%s/variants/%s/release",
                   version, variant);
    env = fx_release_of(&len, &srvfx_world, "det", version, seq, 0, data, n, 16 * 1024, BY(K_REL0));
    srvfx_put_env(path, env, len, srvfx.datat, want_release);
}

void srvfx_put_env(const char *path, uint8_t *env, size_t len, const char *token, long want)
{
    struct srvfx_resp r;

    srvfx_call_port(&r, srvfx.port, "PUT", path, token, (const char *)env, len, NULL);
    if (r.status != want)
        fail_msg("PUT %s: %ld %s", path, r.status, r.body);
    free(r.body);
    mf_free(NULL, env);
}

/* Trust, then v1 and v2 of "det" published and released by the data team, and v2 promoted
 * by hand (published is not deployed: the fixture's fleet is meant to run v2). */
void srvfx_release(const char *model, const char *ver, uint64_t seq, const uint8_t *data, size_t n)
{
    char path[160];
    struct srvfx_resp r;
    size_t len = 0;
    uint8_t *env;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s", model, ver);
    srvfx_call_port(&r, srvfx.port, "PUT", path, srvfx.datat, (const char *)data, n, NULL);
    assert_int_equal(r.status, 201);
    free(r.body);
    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s/release", model, ver);
    env = fx_release_of(&len, &srvfx_world, model, ver, seq, 0, data, n, 64 * 1024, BY(K_REL0));
    srvfx_put_env(path, env, len, srvfx.datat, 201);
}

void srvfx_publish_det(void)
{
    size_t len = 0;

    if (srvfx.released)
        return;
    uint8_t *env;

    env = fx_root_v1(&len, &srvfx_world);
    srvfx_put_env("/v1/admin/trust/root", env, len, srvfx.admin, 201);
    env = fx_keys_v1(&len, &srvfx_world);
    srvfx_put_env("/v1/admin/trust/keys", env, len, srvfx.admin, 201);
    srvfx_release("det", "v1", 1, srvfx.v1, MODEL_SIZE);
    srvfx_release("det", "v2", 2, srvfx.v2, MODEL_SIZE);
    assert_int_equal(srvfx_status_of("POST", "/v1/admin/models/det/versions/v2/promote",
                                     srvfx.admin, "{\"force\": true}"),
                     200);
    /* A staged (unreleased) v3 that directives may not name. */
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/models/det/versions/v3", srvfx.datat, "x"),
                     201);
    srvfx.released = 1;
}

/* Checks in as cam-a running `installed` with `extra` model fields; returns the assigned
 * version ("" for none) and, when `reply` is non-NULL, the whole answer. */
void srvfx_checkin(char *version_out, const char *installed, const char *extra,
                   struct srvfx_resp *reply)
{
    char body[768];
    struct srvfx_resp r;
    cJSON *root, *a;

    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1,"
                   "\"models\":[{\"name\":\"det\",\"version\":\"%s\",\"sha256\":\"%s\"%s%s}]}",
                   installed, strcmp(installed, "v1") == 0 ? srvfx.sha1 : srvfx.sha2,
                   extra ? "," : "", extra ? extra : "");
    if (srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body) != 200)
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

/* Waits (bounded) for the delta the worker makes from v1 to v2 after publish_det: the
 * blob path, source and format a device on v1 is offered, and its size. */
void srvfx_wait_delta(char blob[160], char from[65], char fmt[16], double *size)
{
    char got[16];
    struct srvfx_resp r;

    blob[0] = '\0';
    /* The worker runs in the background; wait for it, bounded (it takes well under 1 s). */
    for (int i = 0; i < 200 && !blob[0]; i++) {
        cJSON *root, *d;

        srvfx_checkin(got, "v1", NULL, &r);
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
