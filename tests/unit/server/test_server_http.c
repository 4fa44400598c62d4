/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server end to end over loopback: the real server (in-process, and the mf-server binary
 * as a subprocess) on 127.0.0.1 with an ephemeral port, driven with libcurl. Every case of
 * docs/protocol.md that a client can observe: auth, publish, ranges, limits, routing errors
 * and an upload cut off mid-body.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, kill */
#include "mf_test.h"
#include "server_fixture.h"
#include "kit_fs.h"
#include "manifest_fixture.h"
#include "pg_seed.h"
#include "store_fixture.h"
#include "app/server.h"
#include "common/token.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST_MAX_UPLOAD (1024 * 1024)
#define REPLY_MAX (4 * 1024 * 1024)

struct http_fixture {
    char dir[64];
    char data[96];
    char admin[MF_TOKEN_LEN + 1];
    char enroll[MF_TOKEN_LEN + 1];
    char device[MF_TOKEN_LEN + 1];
    struct mf_server *srv;
    uint16_t port;
    char store_url[MF_PGTEST_URL_MAX]; /* "" on SQLite; else the PostgreSQL store served */
};

static struct http_fixture fx;
/* The offline signers of the trust chain; the server's director key is world's K_DIR. */
static struct fx world;

static int tmp_entries(void);
static int fixture_log_level = MF_LOG_INFO;

struct reply {
    long status;
    char *body;
    size_t len;
    char etag[128];
    char content_range[128];
    char allow[128];
    long long content_length;
};

struct upload_src {
    const char *p;
    size_t left;
};

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    struct reply *r = payload;
    size_t len = size * n;
    char *grown;

    if (r->len + len + 1 > REPLY_MAX)
        return 0;
    grown = realloc(r->body, r->len + len + 1);
    if (!grown)
        return 0;
    r->body = grown;
    memcpy(r->body + r->len, p, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

static void header_value(char *dst, size_t size, const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);

    if (len <= n || strncasecmp(line, name, n) != 0)
        return;
    line += n;
    len -= n;
    while (len && (*line == ' '))
        line++, len--;
    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    (void)snprintf(dst, size, "%.*s", (int)len, line);
}

static size_t on_header(char *p, size_t size, size_t n, void *payload)
{
    struct reply *r = payload;
    char clen[32] = "";

    header_value(r->etag, sizeof(r->etag), p, size * n, "ETag:");
    header_value(r->content_range, sizeof(r->content_range), p, size * n, "Content-Range:");
    header_value(r->allow, sizeof(r->allow), p, size * n, "Allow:");
    header_value(clen, sizeof(clen), p, size * n, "Content-Length:");
    if (clen[0])
        r->content_length = strtoll(clen, NULL, 10);
    return size * n;
}

static size_t on_read(char *buf, size_t size, size_t n, void *payload)
{
    struct upload_src *u = payload;
    size_t len = size * n < u->left ? size * n : u->left;

    /* Small pieces, so a chunked upload really arrives in many chunks. */
    if (len > 4096)
        len = 4096;
    memcpy(buf, u->p, len);
    u->p += len;
    u->left -= len;
    return len;
}

struct req_opts {
    const char *token; /* bearer token or NULL */
    const void *body;  /* request body or NULL */
    size_t body_len;
    int chunked;            /* send the body with Transfer-Encoding: chunked */
    const char *headers[4]; /* extra request headers, NULL-terminated */
    int path_as_is;         /* keep "../" in the path */
    int expect_continue;    /* send Expect: 100-continue (default: no Expect header) */
};

static void free_reply(struct reply *r)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* Sends one request to the fixture's server; fills `out` (free with free_reply). */
static void http_port(struct reply *out, uint16_t port, const char *host, const char *method,
                      const char *path, const struct req_opts *o)
{
    static const struct req_opts none = {0};
    char url[512], auth[128];
    struct curl_slist *hdrs = NULL;
    struct upload_src src = {0};
    CURL *c;
    CURLcode rc;

    if (!o)
        o = &none;
    memset(out, 0, sizeof(*out));
    out->content_length = -1;
    (void)snprintf(url, sizeof(url), "http://%s:%u%s", host, (unsigned)port, path);
    c = srvfx_curl_new(url, on_body, on_header, out);
    if (o->path_as_is)
        curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (o->token) {
        (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    for (int i = 0; i < 4 && o->headers[i]; i++)
        hdrs = curl_slist_append(hdrs, o->headers[i]);
    if (o->chunked) {
        src.p = o->body;
        src.left = o->body_len;
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &src);
    } else if (o->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
    }
    if (!o->expect_continue)
        hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
}

static void http(struct reply *out, const char *method, const char *path, const struct req_opts *o)
{
    http_port(out, fx.port, "127.0.0.1", method, path, o);
}

/* JSON string member of a reply body ("" when absent). */
static void json_string(char *dst, size_t size, const struct reply *r, const char *key)
{
    cJSON *root = cJSON_Parse(r->body ? r->body : "");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, key));

    (void)snprintf(dst, size, "%s", v ? v : "");
    cJSON_Delete(root);
}

static void assert_error_body(const struct reply *r, long status, const char *code)
{
    char got[64];

    if (r->status != status)
        fail_msg("status %ld, want %ld (%s)", r->status, status, r->body ? r->body : "");
    json_string(got, sizeof(got), r, "error");
    assert_string_equal(got, code);
    json_string(got, sizeof(got), r, "message");
    assert_true(got[0] != '\0');
}

static void read_token(char *out, const char *name)
{
    mf_kit_fs_read_line(out, MF_TOKEN_LEN + 1, fx.data, name);
}

static void enroll(char *cred_out, const char *device_id)
{
    char body[256];
    struct reply r;
    struct req_opts o = {0};

    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"%s\"}",
                   fx.enroll, device_id);
    o.body = body;
    o.body_len = strlen(body);
    http(&r, "POST", "/v1/enroll", &o);
    assert_int_equal(r.status, 201);
    json_string(cred_out, MF_TOKEN_LEN + 1, &r, "credential");
    free_reply(&r);
    assert_int_equal(mf_token__kind(cred_out, strlen(cred_out)), MF_TOKEN_DEVICE);
}

static int group_setup(void **state)
{
    struct mf_server_options o;
    struct mf_ctx ctx;

    (void)state;
    srvfx_make_data_dir(fx.dir, fx.data, &world, "mf-http");
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_server__options_init(&o);
    o.data_dir = fx.data;
    o.listen = "127.0.0.1:0";
    o.max_upload = TEST_MAX_UPLOAD;
    o.conn_timeout_s = 10;
    o.log_fn = mf_log_stderr; /* one line per request: context for a failure */
    o.log_payload = &fixture_log_level;
    if (mf_pgtest__enabled()) {
        /* The same suite with the server on PostgreSQL (unit_server_http_pg): a fresh
         * database that gets the tokens init made. */
        mf_pgtest__create_db(fx.store_url, "http");
        if (mf_pgtest__seed(&ctx, fx.store_url, fx.data) < 0)
            fail_msg("seed: %s", mf_ctx__errmsg(&ctx));
        o.store_url = fx.store_url;
    }
    if (mf_server__start(&fx.srv, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    fx.port = mf_server__port(fx.srv);
    assert_true(fx.port > 0);
    read_token(fx.admin, "admin.token");
    read_token(fx.enroll, "enroll.token");
    enroll(fx.device, "dev-1");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    mf_server__stop(fx.srv);
    if (fx.store_url[0])
        mf_pgtest__drop_db(fx.store_url);
    fx_free(&world);
    mf_kit_fs_rmtree(fx.dir);
    curl_global_cleanup();
    return 0;
}

/* A well-formed digest no blob has, for reports. */
#define SHA_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static void fill_pattern(uint8_t *buf, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
}

/* PUTs `data` as model/version with the admin token; returns the reply status. */
static long publish(const char *model, const char *version, const void *data, size_t n,
                    const char *sha_header)
{
    char path[256], hdr[128];
    struct reply r;
    struct req_opts o = {0};
    long status;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s", model, version);
    o.token = fx.admin;
    o.body = data;
    o.body_len = n;
    if (sha_header) {
        (void)snprintf(hdr, sizeof(hdr), "X-MF-Sha256: %s", sha_header);
        o.headers[0] = hdr;
    }
    http(&r, "PUT", path, &o);
    status = r.status;
    free_reply(&r);
    return status;
}

static void test_server_http__healthz(void **state)
{
    struct reply r;
    char status[16];

    (void)state;
    http(&r, "GET", "/healthz", NULL);
    assert_int_equal(r.status, 200);
    json_string(status, sizeof(status), &r, "status");
    assert_string_equal(status, "ok");
    free_reply(&r);
}

static void post_json(struct reply *r, const char *path, const char *token, const char *json)
{
    struct req_opts o = {0};

    o.token = token;
    o.body = json;
    o.body_len = strlen(json);
    http(r, "POST", path, &o);
}

/* POSTs `json` as the admin's promotion of det `version`; fails unless the status is `want`
 * and the body holds `needle` (when not NULL). */
static void promote_det(const char *version, const char *json, long want, const char *needle)
{
    struct reply r;
    char path[96];

    (void)snprintf(path, sizeof(path), "/v1/admin/models/det/versions/%s/promote", version);
    post_json(&r, path, fx.admin, json);
    assert_int_equal(r.status, want);
    if (needle)
        assert_non_null(strstr(r.body, needle));
    free_reply(&r);
}

static void test_server_http__enroll(void **state)
{
    char body[256], cred1[MF_TOKEN_LEN + 1], cred2[MF_TOKEN_LEN + 1], wrong[MF_TOKEN_LEN + 1];
    static const char checkin[] = "{\"nonce\":\"0123456789abcdef0123456789abcdef\","
                                  "\"models\":[]}";
    struct reply r;

    (void)state;
    /* A well-formed enrollment token the server never issued. */
    memcpy(wrong, fx.enroll, sizeof(wrong));
    wrong[10] = wrong[10] == '0' ? '1' : '0';
    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"cam-9\"}",
                   wrong);
    post_json(&r, "/v1/enroll", NULL, body);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    /* The admin token is no enrollment token. */
    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"cam-9\"}",
                   fx.admin);
    post_json(&r, "/v1/enroll", NULL, body);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"a/b\"}",
                   fx.enroll);
    post_json(&r, "/v1/enroll", NULL, body);
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);

    /* Re-enrolment issues a new credential and revokes the old one. */
    enroll(cred1, "cam-9");
    post_json(&r, "/v1/checkin", cred1, checkin);
    assert_int_equal(r.status, 200);
    free_reply(&r);
    enroll(cred2, "cam-9");
    assert_string_not_equal(cred1, cred2);
    post_json(&r, "/v1/checkin", cred1, checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    post_json(&r, "/v1/checkin", cred2, checkin);
    assert_int_equal(r.status, 200);
    free_reply(&r);
}

static void test_server_http__device_auth(void **state)
{
    static const char checkin[] = "{\"nonce\":\"0123456789abcdef0123456789abcdef\","
                                  "\"models\":[]}";
    char unknown[MF_TOKEN_LEN + 1];
    struct reply r;

    (void)state;
    memcpy(unknown, fx.device, sizeof(unknown));
    unknown[20] = unknown[20] == 'a' ? 'b' : 'a';
    post_json(&r, "/v1/checkin", unknown, checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    post_json(&r, "/v1/checkin", NULL, checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    post_json(&r, "/v1/checkin", "garbage", checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    /* Credentials do not cross roles. */
    post_json(&r, "/v1/checkin", fx.admin, checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    http(&r, "GET", "/v1/admin/models", &(struct req_opts){.token = fx.device});
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
}

/* PUT of an envelope (trust document or release) with the admin token; returns the status. */
static long put_env(struct reply *r, const char *path, const uint8_t *env, size_t len)
{
    http(r, "PUT", path,
         &(struct req_opts){.token = fx.admin, .body = (const char *)env, .body_len = len});
    return r->status;
}

static long put_release(const char *model, const char *version, uint8_t *env, size_t len,
                        const char *expect_msg)
{
    char path[160], msg[512];
    struct reply r;
    long status;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s/release", model, version);
    status = put_env(&r, path, env, len);
    json_string(msg, sizeof(msg), &r, "message");
    if (expect_msg && !strstr(msg, expect_msg))
        fail_msg("release %s %s: %ld %s", model, version, status, msg);
    free_reply(&r);
    mf_free(NULL, env);
    return status;
}

/* publish(), then the release of that version (sequence 1: a model of its own), so that
 * devices may download its blob; returns the publish status. */
static long publish_released(const char *model, const char *version, const void *data, size_t n)
{
    size_t len = 0;
    long status = publish(model, version, data, n, NULL);
    uint8_t *env = fx_release_of(&len, &world, model, version, 1, 0, data, n, 1024, BY(K_REL0));

    assert_int_equal(put_release(model, version, env, len, NULL), 201);
    return status;
}

/* `n` pattern bytes of `seed` into `blob`, published and released as `model` v1: the blob's
 * digest into `sha`, its download path into `path` (`cap` bytes). */
static void release_pattern(char sha[65], char *path, size_t cap, uint8_t *blob, size_t n,
                            unsigned seed, const char *model)
{
    fill_pattern(blob, n, seed);
    srvfx_sha256_hex(sha, blob, n);
    assert_int_equal(publish_released(model, "v1", blob, n), 201);
    (void)snprintf(path, cap, "/v1/blobs/%s", sha);
}

/* Verifies a check-in answer as a device would: strict JSON (nothing after the object),
 * trust documents, then each assignment. Returns the assignment's director sequence number. */
static uint64_t device_verify(const char *body, const char *nonce, const char *version)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(body, &end, 1);
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    const char *keys =
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "trust"), "keys"));
    const char *rel = cJSON_GetStringValue(cJSON_GetObjectItem(a, "release"));
    const char *as = cJSON_GetStringValue(cJSON_GetObjectItem(a, "assignment"));
    mf_manifest_assignment *out = NULL;
    uint8_t *root_env;
    size_t root_len;
    mf_trust *t = NULL;
    uint64_t seq;

    if (!root)
        fail_msg("answer is not strict JSON: %s", body);
    assert_non_null(keys);
    assert_non_null(rel);
    assert_non_null(as);
    root_env = fx_root_v1(&root_len, &world);
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root_env, root_len, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, strlen(keys), FX_NOW), MF_OK);
    if (mf_trust_verify_assignment(&out, t, "dev-1", nonce, as, strlen(as), rel, strlen(rel),
                                   FX_NOW) < 0)
        fail_msg("assignment: %s", mf_trust_errmsg(t));
    assert_string_equal(out->release->version, version);
    seq = out->sequence;
    mf_manifest_assignment_free(out);
    mf_trust_free(t);
    mf_free(NULL, root_env);
    cJSON_Delete(root);
    return seq;
}

static void test_server_http__publish_list_assign(void **state)
{
    static uint8_t v1[3000], v2[5000];
    char sha1[65], sha2[65], body[512], got[65];
    struct reply r;
    cJSON *root, *models, *versions, *a;

    (void)state;
    fill_pattern(v1, sizeof(v1), 1);
    fill_pattern(v2, sizeof(v2), 2);
    srvfx_sha256_hex(sha1, v1, sizeof(v1));
    srvfx_sha256_hex(sha2, v2, sizeof(v2));
    assert_int_equal(publish("det", "v1", v1, sizeof(v1), sha1), 201);
    assert_int_equal(publish("det", "v1", v1, sizeof(v1), NULL), 200);  /* idempotent */
    assert_int_equal(publish("det", "v1", v2, sizeof(v2), NULL), 409);  /* other bytes */
    assert_int_equal(publish("det", "v2", v2, sizeof(v2), sha1), 400);  /* header mismatch */
    assert_int_equal(publish("det", "v2", v2, sizeof(v2), "XYZ"), 400); /* malformed header */
    assert_int_equal(publish("det", "bad%20name", v2, sizeof(v2), NULL), 400);
    /* Same bytes under another version: a new row over the one existing blob file. */
    assert_int_equal(publish("det-copy", "v1", v1, sizeof(v1), sha1), 201);
    assert_int_equal(tmp_entries(), 0);
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"0123456789ABCDEF0123456789abcdef\",\"models\":"
                   "[{\"name\":\"det\",\"version\":null,\"sha256\":null},"
                   "{\"name\":\"unpublished\",\"version\":null,\"sha256\":null}]}");
    /* Without trust configured an upload is staged and nothing is ever assigned. */
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_int_equal(r.status, 200);
    root = cJSON_Parse(r.body);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "assignments")), 0);
    assert_null(cJSON_GetObjectItem(root, "trust"));
    cJSON_Delete(root);
    free_reply(&r);
    {
        size_t len;
        uint8_t *env =
            fx_release_of(&len, &world, "det", "v1", 1, 0, v1, sizeof(v1), 1024, BY(K_REL0));

        assert_int_equal(put_release("det", "v1", env, len, "no trust configured"), 409);
        env = fx_keys_v1(&len, &world);
        assert_int_equal(put_env(&r, "/v1/admin/trust/keys", env, len), 409); /* no root */
        free_reply(&r);
        mf_free(NULL, env);
        /* A root not signed by its own threshold is refused; the real one installs. */
        env = fx_root(&len, &world, 1, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                      BY(K_ROOT0));
        assert_int_equal(put_env(&r, "/v1/admin/trust/root", env, len), 400);
        assert_non_null(strstr(r.body, "below threshold"));
        free_reply(&r);
        mf_free(NULL, env);
        env = fx_root_v1(&len, &world);
        assert_int_equal(put_env(&r, "/v1/admin/trust/root", env, len), 201);
        free_reply(&r);
        assert_int_equal(put_env(&r, "/v1/admin/trust/root", env, len), 200); /* idempotent */
        free_reply(&r);
        mf_free(NULL, env);
        /* A keys document signed by a key outside the root's keys role is refused. */
        env = fx_keys(&len, &world, 1, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_EVIL));
        assert_int_equal(put_env(&r, "/v1/admin/trust/keys", env, len), 400);
        free_reply(&r);
        mf_free(NULL, env);
        env = fx_keys_v1(&len, &world);
        assert_int_equal(put_env(&r, "/v1/admin/trust/keys", env, len), 201);
        free_reply(&r);
        mf_free(NULL, env);
        http(&r, "GET", "/v1/admin/trust", &(struct req_opts){.token = fx.admin});
        assert_non_null(strstr(r.body, "\"root_version\":1,\"keys_version\":1"));
        assert_non_null(strstr(r.body, world.id[K_DIR])); /* the imported director key */
        free_reply(&r);
        /* Releases: the release role only, describing exactly the uploaded blob. */
        env = fx_release_of(&len, &world, "det", "v1", 1, 0, v1, sizeof(v1), 1024, BY(K_DIR));
        assert_int_equal(put_release("det", "v1", env, len, "unknown or revoked key"), 400);
        env = fx_release_of(&len, &world, "det", "v1", 1, 0, v2, sizeof(v2), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v1", env, len, "the uploaded blob is"), 400);
        env = fx_release_of(&len, &world, "det", "v2", 1, 0, v1, sizeof(v1), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v1", env, len, "release names det v2"), 400);
        env = fx_release_of(&len, &world, "det", "v1", 1, 0, v1, sizeof(v1), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v9", env, len, "upload it first"), 404);
        env = fx_release_of(&len, &world, "det", "v1", 1, 0, v1, sizeof(v1), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v1", env, len, NULL), 201);
        env = fx_release_of(&len, &world, "det", "v1", 1, 0, v1, sizeof(v1), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v1", env, len, NULL), 200); /* same: idempotent */
        env = fx_release_of(&len, &world, "det", "v1", 7, 0, v1, sizeof(v1), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v1", env, len, "another release"), 409);
    }
    /* Nothing of the refused v2 is visible: the device still gets v1. */
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_int_equal(r.status, 200);
    json_string(got, sizeof(got), &r, "nonce");
    assert_string_equal(got, "0123456789ABCDEF0123456789abcdef");
    root = cJSON_Parse(r.body);
    a = cJSON_GetObjectItem(root, "assignments");
    assert_int_equal(cJSON_GetArraySize(a), 1); /* no assignment for an unpublished model */
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "sha256")), sha1);
    cJSON_Delete(root);
    device_verify(r.body, "0123456789ABCDEF0123456789abcdef", "v1");
    free_reply(&r);

    assert_int_equal(publish("det", "v2", v2, sizeof(v2), sha2), 201);
    {
        size_t len;
        uint8_t *env;

        /* Staged v2 is not assigned; a release must carry a higher sequence. */
        post_json(&r, "/v1/checkin", fx.device, body);
        assert_non_null(strstr(r.body, "\"version\":\"v1\""));
        free_reply(&r);
        env = fx_release_of(&len, &world, "det", "v2", 1, 0, v2, sizeof(v2), 1024, BY(K_REL0));
        assert_int_equal(put_release("det", "v2", env, len, "not above the released 1"), 409);
        env = fx_release_of(&len, &world, "det", "v2", 2, 1, v2, sizeof(v2), 1024, BY(K_REL1));
        assert_int_equal(put_release("det", "v2", env, len, NULL), 201);
    }
    /* Published is not deployed: with no rollout the fleet stays on the promoted v1 ... */
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_non_null(strstr(r.body, "\"version\":\"v1\""));
    assert_null(strstr(r.body, "\"version\":\"v2\""));
    free_reply(&r);
    /* ... a promotion must say --force, name a release, and know no other key ... */
    promote_det("v2", "{}", 400, "'force' must be true");
    promote_det("v2", "{\"force\": true, \"forse\": true}", 400, "unknown key 'forse'");
    promote_det("v9", "{\"force\": true}", 404, NULL);
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_null(strstr(r.body, "\"version\":\"v2\""));
    free_reply(&r);
    /* ... until ops promote it by hand: then the channel default is v2. */
    promote_det("v2", "{\"force\": true}", 200, "\"promoted\":true");
    post_json(&r, "/v1/checkin", fx.device, body);
    root = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "assignments"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(a, "version")), "v2");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "size")), sizeof(v2));
    (void)snprintf(body, sizeof(body), "/v1/blobs/%s", sha2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(a, "blob")), body);
    cJSON_Delete(root);
    device_verify(r.body, "0123456789ABCDEF0123456789abcdef", "v2");
    free_reply(&r);

    http(&r, "GET", "/v1/admin/models", &(struct req_opts){.token = fx.admin});
    assert_int_equal(r.status, 200);
    root = cJSON_Parse(r.body);
    models = cJSON_GetObjectItem(root, "models");
    assert_int_equal(cJSON_GetArraySize(models), 2); /* by name: det, det-copy */
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(models, 0), "name")), "det");
    versions = cJSON_GetObjectItem(cJSON_GetArrayItem(models, 0), "versions");
    assert_int_equal(cJSON_GetArraySize(versions), 2); /* oldest first */
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(versions, 0), "version")),
        "v1");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(versions, 1), "sha256")), sha2);
    assert_int_equal(
        cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(versions, 1), "sequence")), 2);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(versions, 1), "released")));
    cJSON_Delete(root);
    free_reply(&r);
}

/* Check-ins sent at once by CONC_THREADS clients, CONC_EACH each, all for device dev-1:
 * the check-in stage runs them in groups (one store call and one signature per group). */
#define CONC_THREADS 16
#define CONC_EACH 20

struct conc_client {
    pthread_t thread;
    uint16_t port;
    unsigned id;
    int stop_on_error; /* the shutdown case: a refused connection ends the client */
    volatile int *stop;
    long status[CONC_EACH];
    char *body[CONC_EACH];
    int transport_errors;
};

/* One check-in with nonce (client, i); no cmocka assertions here (not the main thread). */
static void conc_checkin(struct conc_client *c, unsigned i)
{
    char body[256], auth[128], url[64];
    struct reply r = {0};
    struct curl_slist *hdrs = NULL;
    CURL *h = curl_easy_init();

    if (!h) {
        c->transport_errors++;
        return;
    }
    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"%08x%08x0123456789abcdef\",\"models\":"
                   "[{\"name\":\"det\",\"version\":null,\"sha256\":null}]}",
                   c->id, i);
    (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", fx.device);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/checkin", (unsigned)c->port);
    hdrs = curl_slist_append(hdrs, auth);
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (curl_easy_perform(h) == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status[i % CONC_EACH]);
        free(c->body[i % CONC_EACH]);
        c->body[i % CONC_EACH] = r.body;
    } else {
        c->transport_errors++;
        free(r.body);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
}

static void *conc_main(void *arg)
{
    struct conc_client *c = arg;

    for (unsigned i = 0; c->stop_on_error ? !*c->stop : i < CONC_EACH; i++)
        conc_checkin(c, i);
    return NULL;
}

/* A second server on the fixture's data, without the per-device rate limit (the clients
 * here are all dev-1); stage 0: check-ins run in the MHD workers (--checkin-stage 0). */
static struct mf_server *start_unlimited(int stage)
{
    struct mf_server_options o;
    struct mf_server *srv = NULL;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_server__options_init(&o);
    o.data_dir = fx.data;
    o.store_url = fx.store_url[0] ? fx.store_url : NULL;
    o.listen = "127.0.0.1:0";
    o.device_rate = 1e6;
    o.device_burst = 1e6;
    o.checkin_stage = stage;
    if (mf_server__start(&srv, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    return srv;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Concurrent check-ins all get 200 and assignments that verify on a device, each with its
 * own nonce and a sequence number no other answer carries, on the check-in stage or in the
 * MHD workers. After publish_list_assign. */
static void concurrent_checkins(int stage)
{
    static struct conc_client c[CONC_THREADS];
    static uint64_t seqs[CONC_THREADS * CONC_EACH];
    struct mf_server *srv = start_unlimited(stage);
    volatile int stop = 0;
    size_t k = 0;

    for (unsigned t = 0; t < CONC_THREADS; t++) {
        c[t] = (struct conc_client){.port = mf_server__port(srv), .id = t, .stop = &stop};
        assert_int_equal(pthread_create(&c[t].thread, NULL, conc_main, &c[t]), 0);
    }
    for (unsigned t = 0; t < CONC_THREADS; t++)
        assert_int_equal(pthread_join(c[t].thread, NULL), 0);
    mf_server__stop(srv);
    for (unsigned t = 0; t < CONC_THREADS; t++) {
        assert_int_equal(c[t].transport_errors, 0);
        for (unsigned i = 0; i < CONC_EACH; i++) {
            char nonce[33];

            if (c[t].status[i] != 200)
                fail_msg("check-in %u/%u: %ld %s", t, i, c[t].status[i],
                         c[t].body[i] ? c[t].body[i] : "");
            (void)snprintf(nonce, sizeof(nonce), "%08x%08x0123456789abcdef", t, i);
            seqs[k++] = device_verify(c[t].body[i], nonce, "v2");
            free(c[t].body[i]);
        }
    }
    qsort(seqs, k, sizeof(seqs[0]), cmp_u64);
    for (size_t i = 1; i < k; i++)
        if (seqs[i] == seqs[i - 1])
            fail_msg("sequence %llu assigned twice", (unsigned long long)seqs[i]);
}

static void test_server_http__concurrent_checkins(void **state)
{
    (void)state;
    concurrent_checkins(1);
}

static void test_server_http__concurrent_checkins_inline(void **state)
{
    (void)state;
    concurrent_checkins(0);
}

static double now_s(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stopping a server while check-ins are in flight answers or drops each (no hang) and
 * returns promptly: the stage hands back every suspended connection before MHD stops. */
static void test_server_http__stop_with_checkins_in_flight(void **state)
{
    static struct conc_client c[CONC_THREADS];
    struct mf_server *srv = start_unlimited(1);
    volatile int stop = 0;
    double t0;
    int answered = 0;

    (void)state;
    for (unsigned t = 0; t < CONC_THREADS; t++) {
        c[t] = (struct conc_client){
            .port = mf_server__port(srv), .id = 100 + t, .stop_on_error = 1, .stop = &stop};
        assert_int_equal(pthread_create(&c[t].thread, NULL, conc_main, &c[t]), 0);
    }
    (void)nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
    t0 = now_s();
    mf_server__stop(srv);
    assert_true(now_s() - t0 < 5.0);
    stop = 1;
    for (unsigned t = 0; t < CONC_THREADS; t++) {
        assert_int_equal(pthread_join(c[t].thread, NULL), 0);
        for (unsigned i = 0; i < CONC_EACH; i++) {
            if (c[t].status[i] == 200)
                answered++;
            else if (c[t].status[i] != 0)
                fail_msg("check-in during shutdown: %ld %s", c[t].status[i], c[t].body[i]);
            free(c[t].body[i]);
        }
    }
    assert_true(answered > 0);
}

/* A failing store answers the check-in 500, as without the stage. SQLite only: a trigger
 * makes checkin_begin's UPDATE of the device row fail. */
static void test_server_http__checkin_store_failure(void **state)
{
    static const char body[] = "{\"nonce\":\"00112233445566778899aabbccddeeff\",\"models\":"
                               "[{\"name\":\"det\",\"version\":null,\"sha256\":null}]}";
    char path[160];
    struct reply r;
    sqlite3 *db = NULL;

    (void)state;
    assert_int_equal(fx.store_url[0], '\0'); /* joins the SQLite run only, see main() */
    (void)snprintf(path, sizeof(path), "%s/store.db", fx.data);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_busy_timeout(db, 5000), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER test_fail BEFORE UPDATE ON devices BEGIN "
                                  "SELECT RAISE(ABORT, 'injected by the test'); END;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_error_body(&r, 500, "internal");
    free_reply(&r);
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER test_fail", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    post_json(&r, "/v1/checkin", fx.device, body);
    assert_int_equal(r.status, 200);
    free_reply(&r);
}

/* Devices download only what a release names (docs/security.md): a staged blob answers a
 * device 404 like a blob that does not exist (never 403: its existence stays hidden), an
 * admin token still gets it, and once its version is released the device does too. */
static void test_server_http__staged_blob_hidden_from_devices(void **state)
{
    static uint8_t blob[5000];
    char sha[65], path[128];
    struct req_opts o = {0};
    struct reply r;
    size_t len = 0;
    uint8_t *env;

    (void)state;
    fill_pattern(blob, sizeof(blob), 21);
    srvfx_sha256_hex(sha, blob, sizeof(blob));
    assert_int_equal(publish("stg", "v1", blob, sizeof(blob), NULL), 201);
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s", sha);
    o.token = fx.device;
    http(&r, "GET", path, &o);
    assert_error_body(&r, 404, "not_found");
    free_reply(&r);
    o.headers[0] = "Range: bytes=0-99"; /* nor a part of it */
    http(&r, "GET", path, &o);
    assert_error_body(&r, 404, "not_found");
    free_reply(&r);
    o.headers[0] = NULL;
    http(&r, "HEAD", path, &o);
    assert_int_equal(r.status, 404);
    free_reply(&r);
    o.token = fx.admin;
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, sizeof(blob));
    assert_memory_equal(r.body, blob, sizeof(blob));
    free_reply(&r);
    env = fx_release_of(&len, &world, "stg", "v1", 1, 0, blob, sizeof(blob), 1024, BY(K_REL0));
    assert_int_equal(put_release("stg", "v1", env, len, NULL), 201);
    o.token = fx.device;
    o.headers[0] = "Range: bytes=100-199";
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, 100);
    assert_memory_equal(r.body, blob + 100, 100);
    free_reply(&r);
}

static void test_server_http__download(void **state)
{
    static uint8_t blob[10000];
    char sha[65], path[128], hdr[128], etag[80];
    struct req_opts o = {0};
    struct reply r;

    (void)state;
    release_pattern(sha, path, sizeof(path), blob, sizeof(blob), 3, "dl");
    (void)snprintf(etag, sizeof(etag), "\"%s\"", sha);
    o.token = fx.device;

    http(&r, "GET", path, &o); /* full */
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, sizeof(blob));
    assert_memory_equal(r.body, blob, sizeof(blob));
    assert_string_equal(r.etag, etag);
    free_reply(&r);

    o.headers[0] = "Range: bytes=100-199";
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, 100);
    assert_memory_equal(r.body, blob + 100, 100);
    assert_string_equal(r.content_range, "bytes 100-199/10000");
    free_reply(&r);

    o.headers[0] = "Range: bytes=-10"; /* suffix */
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 206);
    assert_memory_equal(r.body, blob + sizeof(blob) - 10, 10);
    assert_string_equal(r.content_range, "bytes 9990-9999/10000");
    free_reply(&r);

    o.headers[0] = "Range: bytes=9000-"; /* open-ended, resumed by the admin too */
    o.token = fx.admin;
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, 1000);
    free_reply(&r);
    o.token = fx.device;

    o.headers[0] = "Range: bytes=10000-";
    http(&r, "GET", path, &o);
    assert_error_body(&r, 416, "range_not_satisfiable");
    assert_string_equal(r.content_range, "bytes */10000");
    free_reply(&r);

    o.headers[0] = "Range: bytes=0-9,20-29"; /* multi-range: the whole blob */
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, sizeof(blob));
    free_reply(&r);

    o.headers[0] = "Range: bytes=0-9";
    o.headers[1] = "If-Range: \"0000\""; /* stale validator: the whole blob */
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, sizeof(blob));
    free_reply(&r);
    (void)snprintf(hdr, sizeof(hdr), "If-Range: %s", etag);
    o.headers[1] = hdr;
    http(&r, "GET", path, &o);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, 10);
    free_reply(&r);
    o.headers[0] = NULL;
    o.headers[1] = NULL;

    http(&r, "HEAD", path, &o);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    assert_int_equal(r.content_length, sizeof(blob));
    assert_string_equal(r.etag, etag);
    free_reply(&r);

    http(&r, "GET", path, NULL); /* no credential */
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);

    (void)snprintf(path, sizeof(path), "/v1/blobs/%.63s0", sha[63] == '0' ? "1" : sha);
    memset(path + 10, 'e', 64);
    http(&r, "GET", path, &o);
    assert_error_body(&r, 404, "not_found");
    free_reply(&r);
    memset(path + 10, 'E', 64); /* upper case */
    http(&r, "GET", path, &o);
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
    o.path_as_is = 1;
    http(&r, "GET", "/v1/blobs/../../store.db", &o);
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
    http(&r, "GET", "/v1/blobs/%2e%2e%2fstore.db", &o);
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
}

/* An orphan as a crash between a deletion's commit and its file removal leaves it: a blob
 * file no row names, committed `age_s` seconds ago. Its name into sha. */
static void plant_orphan(char sha[MF_SHA256_HEX_LEN + 1], unsigned seed, time_t age_s)
{
    char dir[160], path[256];
    struct timespec t[2];
    uint8_t bytes[300];
    FILE *f;

    fill_pattern(bytes, sizeof(bytes), seed);
    srvfx_sha256_hex(sha, bytes, sizeof(bytes));
    (void)snprintf(dir, sizeof(dir), "%s/blobs/%.2s", fx.data, sha);
    (void)mkdir(dir, 0750);
    (void)snprintf(path, sizeof(path), "%s/%s", dir, sha);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, sizeof(bytes), f), sizeof(bytes));
    (void)fclose(f);
    t[0].tv_sec = t[1].tv_sec = time(NULL) - age_s;
    t[0].tv_nsec = t[1].tv_nsec = 0;
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static int blob_on_disk(const char *sha)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", fx.data, sha, sha);
    return stat(path, &st) == 0;
}

/* POST /v1/admin/blobs/sweep: a dry run lists the old orphan and removes nothing; the sweep
 * removes it and leaves the young orphan (an upload whose row may be on its way) and every
 * blob a row names (the versions published above, released or staged). */
static void test_server_http__blob_sweep(void **state)
{
    static uint8_t model[2000];
    char old[65], young[65], kept[65];
    struct req_opts o = {.token = fx.admin};
    struct reply r;

    (void)state;
    fill_pattern(model, sizeof(model), 31);
    srvfx_sha256_hex(kept, model, sizeof(model));
    assert_int_equal(publish("swp", "v1", model, sizeof(model), NULL), 201);
    plant_orphan(old, 32, 7200);
    plant_orphan(young, 33, 60);
    http(&r, "POST", "/v1/admin/blobs/sweep?dry_run=1", &o);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"would_remove\":[{\"sha256\":\""));
    assert_non_null(strstr(r.body, old));
    assert_null(strstr(r.body, young));
    assert_non_null(strstr(r.body, "\"orphans\":1,"));
    free_reply(&r);
    assert_true(blob_on_disk(old));
    http(&r, "POST", "/v1/admin/blobs/sweep?dry_run=yes", &o);
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
    http(&r, "POST", "/v1/admin/blobs/sweep", &(struct req_opts){.token = fx.device});
    assert_int_equal(r.status, 401); /* an admin route */
    free_reply(&r);
    http(&r, "POST", "/v1/admin/blobs/sweep", &o);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"removed\":[{\"sha256\":\""));
    assert_non_null(strstr(r.body, old));
    free_reply(&r);
    assert_false(blob_on_disk(old));
    assert_true(blob_on_disk(young));
    assert_true(blob_on_disk(kept));
}

/* GET `path` with `token`: answered `status`, and for an error `code` in its body. */
static void expect_get(const char *path, const char *token, long status, const char *code)
{
    struct reply r;

    http(&r, "GET", path, &(struct req_opts){.token = token});
    if (code)
        assert_error_body(&r, status, code);
    else
        assert_int_equal(r.status, status);
    free_reply(&r);
}

/* Range requests take a recently verified credential from the node's cache (no store round
 * trip each): a credential revoked since keeps downloading for at most MF_CREDCACHE_RECENT_S
 * seconds, unless a check-in with it was refused first, which ends it at once; one the node
 * never verified is asked of the store. */
static void test_server_http__download_after_revoke(void **state)
{
    static const char checkin[] = "{\"nonce\":\"0123456789abcdef0123456789abcdef\","
                                  "\"models\":[]}";
    static uint8_t blob[3000];
    char sha[65], path[128], cred1[MF_TOKEN_LEN + 1], cred2[MF_TOKEN_LEN + 1];
    char cred3[MF_TOKEN_LEN + 1], cred4[MF_TOKEN_LEN + 1];
    struct reply r;

    (void)state;
    release_pattern(sha, path, sizeof(path), blob, sizeof(blob), 9, "dlr");
    enroll(cred1, "cam-dl1");
    expect_get(path, cred1, 200, NULL);
    enroll(cred2, "cam-dl1");           /* revokes cred1 */
    expect_get(path, cred1, 200, NULL); /* verified a moment ago */
    post_json(&r, "/v1/checkin", cred1, checkin);
    assert_error_body(&r, 401, "unauthorized");
    free_reply(&r);
    expect_get(path, cred1, 401, "unauthorized");
    expect_get(path, cred2, 200, NULL);

    enroll(cred3, "cam-dl2");
    enroll(cred4, "cam-dl2");
    expect_get(path, cred3, 401, "unauthorized");
    expect_get(path, cred4, 200, NULL);
}

static long get_on(CURL *c, const char *path, const char *range)
{
    char url[512], auth[128];
    struct curl_slist *hdrs = NULL;
    struct reply r = {0};
    long connects = -1, status = 0;

    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)fx.port, path);
    (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", fx.device);
    hdrs = curl_slist_append(hdrs, auth);
    if (range)
        hdrs = curl_slist_append(hdrs, range);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
    assert_true(status == 200 || status == 206);
    curl_slist_free_all(hdrs);
    free_reply(&r);
    return connects;
}

/* Connections are kept alive across requests on any route a device uses repeatedly (a
 * download is a run of range requests): libcurl reuses the connection, making no new one. */
static void test_server_http__keep_alive(void **state)
{
    static uint8_t blob[4096];
    char sha[65], path[128];
    CURL *c = curl_easy_init();

    (void)state;
    assert_non_null(c);
    release_pattern(sha, path, sizeof(path), blob, sizeof(blob), 9, "ka");
    assert_int_equal(get_on(c, path, "Range: bytes=0-1023"), 1);
    assert_int_equal(get_on(c, path, "Range: bytes=1024-2047"), 0); /* the same connection */
    assert_int_equal(get_on(c, path, NULL), 0);
    assert_int_equal(get_on(c, "/healthz", NULL), 0);
    curl_easy_cleanup(c);
}

static void test_server_http__json_limits_and_syntax(void **state)
{
    static char big[70 * 1024];
    /* Cut JSON, not an object, empty, and a nonce too short. */
    static const char *const bad[] = {"{\"nonce\": ", "[1,2]", "",
                                      "{\"nonce\":\"00\",\"models\":[]}"};
    struct req_opts o = {0};
    struct reply r;

    (void)state;
    memset(big, ' ', sizeof(big) - 2);
    big[0] = '{';
    big[sizeof(big) - 2] = '}';
    o.token = fx.device;
    o.body = big;
    o.body_len = strlen(big);
    http(&r, "POST", "/v1/checkin", &o); /* refused by Content-Length */
    assert_error_body(&r, 413, "too_large");
    free_reply(&r);
    o.chunked = 1; /* no length: refused once the cap is crossed */
    http(&r, "POST", "/v1/checkin", &o);
    assert_error_body(&r, 413, "too_large");
    free_reply(&r);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        post_json(&r, "/v1/checkin", fx.device, bad[i]);
        assert_error_body(&r, 400, "bad_request");
        free_reply(&r);
    }
}

/* Reviewer cases of the JSON and NUL defects: each was accepted under a truncated name. */
static void test_server_http__nul_and_strict_json_refused(void **state)
{
    static uint8_t blob[4096];
    char body[512], sha[65], path[160], msg[256];
    struct reply r;

    (void)state;
    (void)snprintf(body, sizeof(body),
                   "{\"enrollment_token\":\"%s\",\"device_id\":\"cam\\u0000evil\"}", fx.enroll);
    post_json(&r, "/v1/enroll", NULL, body); /* enrolled as "cam" before */
    assert_error_body(&r, 400, "bad_request");
    json_string(msg, sizeof(msg), &r, "message");
    assert_non_null(strstr(msg, "request body: line 1: not valid JSON at byte"));
    assert_non_null(strstr(msg, "\\u0000 (NUL) in a string"));
    free_reply(&r);

    post_json(&r, "/v1/report", fx.device, /* recorded as "detector" before */
              "{\"model\":\"detector\\u0000/../x\",\"version\":\"v2\",\"sha256\":\"" SHA_C
              "\",\"status\":\"failed\"}");
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);

    post_json(&r, "/v1/checkin", fx.device,
              "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":[]} x");
    assert_error_body(&r, 400, "bad_request");
    json_string(msg, sizeof(msg), &r, "message");
    assert_non_null(strstr(msg, "trailing bytes after the JSON value"));
    free_reply(&r);
    post_json(&r, "/v1/checkin", fx.device,
              "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":[],"
              "\"nonce\":\"ffffffffffffffffffffffffffffffff\"}");
    assert_error_body(&r, 400, "bad_request");
    json_string(msg, sizeof(msg), &r, "message");
    assert_non_null(strstr(msg, "duplicate member name 'nonce'"));
    free_reply(&r);

    release_pattern(sha, path, sizeof(path), blob, sizeof(blob), 11, "nulblob");
    http(&r, "GET", path, &(struct req_opts){.token = fx.device});
    assert_int_equal(r.status, 200); /* the blob is there */
    free_reply(&r);
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s%%00x", sha);
    http(&r, "GET", path, &(struct req_opts){.token = fx.device}); /* 200 before */
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
    (void)snprintf(path, sizeof(path), "/v1/blobs/%s%%00", sha);
    http(&r, "GET", path, &(struct req_opts){.token = fx.device});
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);
}

static void test_server_http__routing_errors(void **state)
{
    struct reply r;

    (void)state;
    http(&r, "GET", "/v1/nope", NULL);
    assert_error_body(&r, 404, "not_found");
    free_reply(&r);
    http(&r, "GET", "/v1/enroll", NULL);
    assert_error_body(&r, 405, "method_not_allowed");
    assert_string_equal(r.allow, "POST");
    free_reply(&r);
    http(&r, "DELETE", "/v1/admin/models", &(struct req_opts){.token = fx.admin});
    assert_error_body(&r, 405, "method_not_allowed");
    assert_string_equal(r.allow, "GET, HEAD");
    free_reply(&r);
}

/* Number of entries in <data>/blobs/tmp (uploads in flight or leaked). */
static int tmp_entries(void)
{
    char path[160];
    struct dirent *e;
    DIR *d;
    int n = 0;

    (void)snprintf(path, sizeof(path), "%s/blobs/tmp", fx.data);
    d = opendir(path);
    assert_non_null(d);
    for (e = readdir(d); e; e = readdir(d))
        n += e->d_name[0] != '.';
    (void)closedir(d);
    return n;
}

static int version_listed(const char *model)
{
    struct reply r;
    int found;

    http(&r, "GET", "/v1/admin/models", &(struct req_opts){.token = fx.admin});
    assert_int_equal(r.status, 200);
    found = strstr(r.body, model) != NULL;
    free_reply(&r);
    return found;
}

static void test_server_http__upload_limit(void **state)
{
    static uint8_t data[TEST_MAX_UPLOAD + 1];
    struct req_opts o = {0};
    struct reply r;

    (void)state;
    o.token = fx.admin;
    o.body = data;
    o.body_len = sizeof(data);
    /*
     * By Content-Length: the server refuses before reading the body. A client that sends the
     * body without waiting may see the connection close before it reads the 413 (that is HTTP,
     * not the server), so this request waits for the verdict with Expect: 100-continue, as
     * curl and mfctl do for large uploads.
     */
    o.expect_continue = 1;
    http(&r, "PUT", "/v1/admin/models/huge/versions/v1", &o);
    assert_error_body(&r, 413, "too_large");
    free_reply(&r);
    o.expect_continue = 0;
    o.chunked = 1; /* by counting */
    http(&r, "PUT", "/v1/admin/models/huge/versions/v1", &o);
    assert_error_body(&r, 413, "too_large");
    free_reply(&r);
    assert_false(version_listed("huge"));
    assert_int_equal(tmp_entries(), 0);
    /* Exactly at the limit is fine. */
    assert_int_equal(publish("huge", "v1", data, TEST_MAX_UPLOAD, NULL), 201);
}

static int connect_loopback(uint16_t port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    (void)nanosleep(&ts, NULL);
}

static void test_server_http__interrupted_upload(void **state)
{
    static char chunk[32 * 1024];
    char head[512];
    int fd, n, tries;

    (void)state;
    fd = connect_loopback(fx.port);
    n = snprintf(head, sizeof(head),
                 "PUT /v1/admin/models/cut/versions/v1 HTTP/1.1\r\nHost: x\r\n"
                 "Authorization: Bearer %s\r\nContent-Length: 500000\r\n\r\n",
                 fx.admin);
    assert_int_equal(write(fd, head, (size_t)n), n);
    memset(chunk, 'x', sizeof(chunk));
    assert_int_equal(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
    /* Wait until the server holds the partial upload in blobs/tmp, then cut it. */
    for (tries = 0; tries < 500 && tmp_entries() == 0; tries++)
        sleep_ms(10);
    assert_int_equal(tmp_entries(), 1);
    (void)close(fd);
    for (tries = 0; tries < 500 && tmp_entries() != 0; tries++)
        sleep_ms(10);
    assert_int_equal(tmp_entries(), 0);
    assert_false(version_listed("cut"));
}

/* The audit log on this run's store: a token made here acts, and its row names it. */
static void test_server_http__audit_log(void **state)
{
    static const char *const bad[] = {
        "/v1/admin/audit?limit=0",      "/v1/admin/audit?limit=1001",
        "/v1/admin/audit?since=yester", "/v1/admin/audit?until=2026-02-30T00:00:00Z",
        "/v1/admin/audit?bogus=1",      "/v1/admin/audit?before=-4",
    };
    char token[MF_TOKEN_LEN + 1], id[32];
    struct reply r;
    cJSON *root, *row;
    const char *at;

    (void)state;
    post_json(&r, "/v1/admin/tokens", fx.admin, "{\"role\":\"ops\",\"name\":\"carol\"}");
    assert_int_equal(r.status, 201);
    json_string(token, sizeof(token), &r, "token");
    json_string(id, sizeof(id), &r, "id");
    free_reply(&r);
    http(&r, "PUT", "/v1/admin/devices/dev-1/channel",
         &(struct req_opts){.token = token, .body = "{\"channel\":\"beta\"}", .body_len = 18});
    assert_int_equal(r.status, 204);
    free_reply(&r);
    http(&r, "GET", "/v1/admin/audit?token=carol&action=PUT%20",
         &(struct req_opts){.token = fx.admin});
    assert_int_equal(r.status, 200);
    root = cJSON_Parse(r.body);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "audit")), 1);
    row = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "audit"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(row, "actor")), "carol");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(row, "token_id")), id);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(row, "action")),
                        "PUT /v1/admin/devices/{}/channel");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(row, "target")), "dev-1");
    assert_int_equal((long)cJSON_GetNumberValue(cJSON_GetObjectItem(row, "status")), 204);
    /* ISO 8601 UTC: "YYYY-MM-DDTHH:MM:SSZ". */
    at = cJSON_GetStringValue(cJSON_GetObjectItem(row, "at"));
    assert_non_null(at);
    assert_int_equal(strlen(at), 20);
    assert_true(at[10] == 'T' && at[19] == 'Z');
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "next")), 0);
    cJSON_Delete(root);
    free_reply(&r);
    /* The admin token that made carol has its row too, on this store as on the other. */
    http(&r, "GET", "/v1/admin/audit?action=POST%20/v1/admin/tokens",
         &(struct req_opts){.token = fx.admin});
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"status\":201"));
    free_reply(&r);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        http(&r, "GET", bad[i], &(struct req_opts){.token = fx.admin});
        assert_error_body(&r, 400, "bad_request");
        free_reply(&r);
    }
    http(&r, "GET", "/v1/admin/audit?bogus=1", &(struct req_opts){.token = fx.admin});
    assert_non_null(strstr(r.body, "'bogus'"));
    free_reply(&r);
    /* Channel back, for the cases after this one. */
    http(&r, "PUT", "/v1/admin/devices/dev-1/channel",
         &(struct req_opts){.token = fx.admin, .body = "{\"channel\":\"stable\"}", .body_len = 20});
    assert_int_equal(r.status, 204);
    free_reply(&r);
}

static void test_server_http__report_and_devices(void **state)
{
    struct reply r;
    cJSON *root, *dev = NULL, *it, *m;

    (void)state;
    post_json(&r, "/v1/report", fx.device,
              "{\"model\":\"det\",\"version\":\"v2\",\"sha256\":\"" SHA_C
              "\",\"status\":\"failed\",\"detail\":\"sha256 mismatch\"}");
    assert_int_equal(r.status, 204);
    free_reply(&r);
    post_json(&r, "/v1/report", fx.device, "{\"model\":\"det\",\"status\":\"weird\"}");
    assert_error_body(&r, 400, "bad_request");
    free_reply(&r);

    http(&r, "GET", "/v1/admin/devices", &(struct req_opts){.token = fx.admin});
    assert_int_equal(r.status, 200);
    root = cJSON_Parse(r.body);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "devices"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "device_id")), "dev-1") == 0)
            dev = it;
    }
    assert_non_null(dev);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(dev, "last_seen")) > 0);
    m = cJSON_GetArrayItem(cJSON_GetObjectItem(dev, "models"), 0);
    assert_non_null(m);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "status")), "failed");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "detail")), "sha256 mismatch");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "sha256")), SHA_C);
    cJSON_Delete(root);
    free_reply(&r);
}

static void test_server_http__ipv6(void **state)
{
    struct mf_server_options o;
    struct mf_server *srv = NULL;
    struct mf_ctx ctx;
    struct reply r;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_server__options_init(&o);
    o.data_dir = fx.data;
    o.store_url = fx.store_url[0] ? fx.store_url : NULL;
    o.listen = "[::1]:0";
    if (mf_server__start(&srv, &ctx, &o) < 0) {
        (void)fprintf(stderr, "no IPv6 loopback here (%s); skipping\n", mf_ctx__errmsg(&ctx));
        MF_SKIP("no IPv6 loopback");
    }
    http_port(&r, mf_server__port(srv), "[::1]", "GET", "/healthz", NULL);
    assert_int_equal(r.status, 200);
    free_reply(&r);
    mf_server__stop(srv);
    assert_int_equal(
        mf_server__start(&srv, &ctx,
                         &(struct mf_server_options){.data_dir = fx.data, .listen = "[::1]"}),
        MF_E_INVALID);
    assert_int_equal(
        mf_server__start(
            &srv, &ctx, &(struct mf_server_options){.data_dir = fx.data, .listen = "localhost:80"}),
        MF_E_INVALID);
}

/* Path of mf-server: it is built next to this test binary. */
static void server_binary(char *out, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", out, size - 16);
    char *slash;

    assert_true(n > 0);
    out[n] = '\0';
    slash = strrchr(out, '/');
    assert_non_null(slash);
    (void)snprintf(slash + 1, 16, "mf-server");
    assert_int_equal(access(out, X_OK), 0);
}

static int run_wait(const char *const argv[], const char *out_file)
{
    int status = -1;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd >= 0) {
            (void)dup2(fd, 1);
            (void)dup2(fd, 2);
        }
        execv(argv[0], (char *const *)argv); /* execv never writes to them */
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int file_contains(const char *path, const char *needle)
{
    char buf[2048];
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    (void)fclose(f);
    return strstr(buf, needle) != NULL;
}

static void test_server_http__binary_init_serve_sigterm(void **state)
{
    char bin[512], data[128], out[160], port_file[160], buf[32];
    const char *init_argv[] = {bin, "init", "--data-dir", data, NULL};
    const char *serve_argv[] = {bin,           "serve",       "--data-dir",  data,
                                "--listen",    "127.0.0.1:0", "--port-file", port_file,
                                "--log-level", "warn",        NULL};
    struct reply r;
    int status = -1, tries;
    pid_t pid;
    FILE *f;

    (void)state;
    server_binary(bin, sizeof(bin));
    (void)snprintf(data, sizeof(data), "%s/bin-data", fx.dir);
    (void)snprintf(out, sizeof(out), "%s/bin.out", fx.dir);
    (void)snprintf(port_file, sizeof(port_file), "%s/port", fx.dir);
    assert_int_equal(run_wait(init_argv, out), 0);
    assert_true(file_contains(out, "initialized"));
    assert_int_equal(run_wait(init_argv, out), 0);
    assert_true(file_contains(out, "nothing changed"));

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv(bin, (char *const *)serve_argv);
        _exit(127);
    }
    f = NULL;
    for (tries = 0; tries < 500 && !f; tries++) {
        f = fopen(port_file, "r");
        if (!f)
            sleep_ms(10);
    }
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    (void)fclose(f);
    http_port(&r, (uint16_t)strtoul(buf, NULL, 10), "127.0.0.1", "GET", "/healthz", NULL);
    assert_int_equal(r.status, 200);
    free_reply(&r);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_http__healthz),
        cmocka_unit_test(test_server_http__enroll),
        cmocka_unit_test(test_server_http__device_auth),
        cmocka_unit_test(test_server_http__publish_list_assign),
        cmocka_unit_test(test_server_http__concurrent_checkins),
        cmocka_unit_test(test_server_http__concurrent_checkins_inline),
        cmocka_unit_test(test_server_http__stop_with_checkins_in_flight),
        cmocka_unit_test(test_server_http__staged_blob_hidden_from_devices),
        cmocka_unit_test(test_server_http__download),
        cmocka_unit_test(test_server_http__download_after_revoke),
        cmocka_unit_test(test_server_http__blob_sweep),
        cmocka_unit_test(test_server_http__keep_alive),
        cmocka_unit_test(test_server_http__json_limits_and_syntax),
        cmocka_unit_test(test_server_http__nul_and_strict_json_refused),
        cmocka_unit_test(test_server_http__routing_errors),
        cmocka_unit_test(test_server_http__upload_limit),
        cmocka_unit_test(test_server_http__interrupted_upload),
        cmocka_unit_test(test_server_http__report_and_devices),
        cmocka_unit_test(test_server_http__audit_log),
        cmocka_unit_test(test_server_http__ipv6),
        cmocka_unit_test(test_server_http__binary_init_serve_sigterm),
    };

    const struct CMUnitTest sqlite_only[] = {
        cmocka_unit_test(test_server_http__checkin_store_failure),
    };

    return mf_test__run_group("server_http", tests, MF_TEST_COUNT(tests), sqlite_only,
                              MF_TEST_COUNT(sqlite_only), !mf_pgtest__enabled(), group_setup,
                              group_teardown);
}
