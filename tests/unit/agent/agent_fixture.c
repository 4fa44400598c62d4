/* SPDX-License-Identifier: Apache-2.0 */
/* The fake mf-server and the fixture of the libmf tests (agent_fixture.h). */
#include "agent_fixture.h"
#include "kit_fs.h"

#include <cjson/cJSON.h>
#include <mbedtls/sha256.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void sha256_hex(char *out, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t d[32];

    mbedtls_sha256_ret(p, n, d, 0);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[64] = '\0';
}

/* Small models in 16-byte chunks (several per model), big ones in 1 MiB chunks. */
uint32_t chunk_size_for(size_t len)
{
    return len > 4096 ? 1u << 20 : 16u;
}

/* The chunk hashes of `data` in chunks of `cs` bytes, as the server stores them. */
static void make_chunk_list(struct fake_server *s, const uint8_t *data, size_t len, uint32_t cs)
{
    size_t n = (len + cs - 1) / cs;

    mf_free(NULL, s->chunk_list);
    s->chunk_list = mf_alloc(NULL, n * 32);
    assert_non_null(s->chunk_list);
    for (size_t i = 0; i < n; i++)
        mbedtls_sha256_ret(data + i * cs, i + 1 < n ? cs : len - i * cs, s->chunk_list + 32 * i, 0);
    s->chunk_list_len = n * 32;
    sha256_hex(s->chunk_list_sha, s->chunk_list, s->chunk_list_len);
}

/* A release of `data` signed with the release key (or the director key when forging). */
void sign_release(struct fake_server *s, const char *version, const uint8_t *data, size_t len)
{
    uint32_t cs = s->chunk_size ? s->chunk_size : chunk_size_for(len);

    mf_free(NULL, s->release_env);
    mf_free(NULL, s->chunk_list);
    s->chunk_list = NULL;
    s->chunk_list_len = 0;
    if (s->chunk_tree_only && s->offer_chunk_list)
        make_chunk_list(s, data, len, cs);
    world.chunk_tree_only = s->chunk_tree_only;
    s->release_env =
        fx_release_of(&s->release_len, &world, "detector", version, ++s->release_seq, s->floor,
                      data, len, cs, s->release_by_director ? BY(K_DIR) : BY(K_REL0));
    world.chunk_tree_only = 0;
    fx_digest(s->release_digest, s->release_env, s->release_len);
}

/* Assign `version` with the digest and size of `data`, and serve `served` bytes for it. */
void fake_assign(struct fake_server *s, const char *version, const uint8_t *data, size_t len,
                 const uint8_t *served, size_t served_len)
{
    pthread_mutex_lock(&s->lock);
    (void)snprintf(s->version, sizeof(s->version), "%s", version);
    sha256_hex(s->sha256, data, len);
    s->size = len;
    s->blob = served;
    s->blob_len = served_len;
    sign_release(s, version, data, len);
    pthread_mutex_unlock(&s->lock);
}

static int authorized(const char *head)
{
    return strstr(head, "Authorization: Bearer " CREDENTIAL "\r\n") != NULL;
}

static void handle_enroll(struct fake_server *s, struct mf_kit_http_conn *c, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(doc, "enrollment_token");

    s->n_enroll++;
    if (cJSON_IsString(tok) && strcmp(tok->valuestring, ENROLL_TOKEN) == 0) {
        char ok[160];

        (void)snprintf(ok, sizeof(ok), "{\"device_id\":\"%s\",\"credential\":\"" CREDENTIAL "\"}",
                       s->device_id ? s->device_id : "cam-1");
        mf_kit_http_json(c, 201, ok);
    } else
        mf_kit_http_json(c, 401,
                         "{\"error\":\"unauthorized\",\"message\":\"enrollment token rejected\"}");
    cJSON_Delete(doc);
}

/* Whether the check-in names the current release of "detector" as held (release_sha256). */
/* The detector entry's `key` in the check-in, or NULL. */
static const char *detector_field(const cJSON *doc, const char *key)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name")), "detector") ==
            0)
            return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, key));
    }
    return NULL;
}

/* "fallback": hints, plus blob and release unless the device holds those bytes. */
static void add_fallback(struct fake_server *s, cJSON *a, const cJSON *doc)
{
    const char *held = detector_field(doc, "fallback_sha256");
    cJSON *f = cJSON_AddObjectToObject(a, "fallback");
    char blob[80];

    cJSON_AddStringToObject(f, "variant", s->fb_variant);
    cJSON_AddStringToObject(f, "sha256", s->fb_sha);
    cJSON_AddNumberToObject(f, "size", (double)s->fb_len);
    if (held && strcmp(held, s->fb_sha) == 0)
        return;
    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", s->fb_sha);
    cJSON_AddStringToObject(f, "blob", blob);
    cJSON_AddStringToObject(f, "release", (const char *)s->fb_env);
    s->n_fb_sent++;
}

static int release_held(const struct fake_server *s, const cJSON *doc)
{
    const cJSON *m;
    char digest[65];

    mf_hex__encode(digest, s->release_digest, sizeof(s->release_digest));
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        const char *held =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "release_sha256"));

        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name")), "detector") ==
            0)
            return held && strcmp(held, digest) == 0 && !s->always_release;
    }
    return 0;
}

/* The detector assignment: plain hints plus the release and a director-signed assignment;
 * only model, version and the assignment when the device holds the release. */
static void add_detector(struct fake_server *s, cJSON *list, const char *nonce, int held,
                         const cJSON *doc)
{
    char blob[80];
    cJSON *a = cJSON_CreateObject();
    uint8_t *env;
    size_t len;

    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", s->sha256);
    cJSON_AddStringToObject(a, "model", "detector");
    cJSON_AddStringToObject(a, "version", s->version);
    if (held) {
        s->n_release_held++;
    } else {
        cJSON_AddStringToObject(a, "sha256", s->sha256);
        cJSON_AddNumberToObject(a, "size", (double)s->size);
        cJSON_AddStringToObject(a, "blob", blob);
    }
    if (s->checkin_mode != CHECKIN_NO_RELEASE && !held) {
        cJSON_AddStringToObject(a, "release", (const char *)s->release_env);
        s->n_release_sent++;
    }
    env = fx_assignment(&len, &world, s->device_id ? s->device_id : "cam-1", "detector",
                        s->release_digest, s->checkin_mode == CHECKIN_REPLAY ? FX_NONCE : nonce,
                        ++s->assign_seq, BY(s->director));
    cJSON_AddStringToObject(a, "assignment", (const char *)env);
    mf_free(NULL, env);
    if (s->chunk_list && !held) {
        cJSON *cl = cJSON_AddObjectToObject(a, "chunk_list");

        (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", s->chunk_list_sha);
        cJSON_AddStringToObject(cl, "blob", blob);
        cJSON_AddStringToObject(cl, "sha256", s->chunk_list_sha);
    }
    if (s->delta) {
        cJSON *deltas = cJSON_AddArrayToObject(a, "deltas");
        cJSON *d = cJSON_CreateObject();

        (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", s->delta_sha);
        cJSON_AddStringToObject(d, "from_sha256", s->delta_from);
        cJSON_AddStringToObject(d, "blob", blob);
        cJSON_AddStringToObject(d, "sha256", s->delta_sha);
        cJSON_AddNumberToObject(d, "size", (double)s->delta_len);
        cJSON_AddStringToObject(d, "format", "mfdelta");
        cJSON_AddItemToArray(deltas, d);
    }
    if (s->fb)
        add_fallback(s, a, doc);
    cJSON_AddItemToArray(list, a);
}

static void handle_checkin(struct fake_server *s, struct mf_kit_http_conn *c, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(doc, "nonce");
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(doc, "keys_version");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(doc, "root_version");
    cJSON *out, *list, *other;
    char *text;

    s->n_checkin++;
    (void)snprintf(s->checkin_body, sizeof(s->checkin_body), "%s", body);
    if (s->checkin_mode == CHECKIN_MALFORMED) {
        mf_kit_http_json(c, 200, "{\"nonce\": [unterminated");
        cJSON_Delete(doc);
        return;
    }
    if (!cJSON_IsString(nonce)) {
        mf_kit_http_json(c, 400, "{\"error\":\"bad_request\",\"message\":\"no nonce\"}");
        cJSON_Delete(doc);
        return;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "nonce",
                            s->checkin_mode == CHECKIN_BAD_NONCE ? "00" : nonce->valuestring);
    cJSON_AddNumberToObject(out, "poll_interval_s",
                            s->poll_interval_s ? (double)s->poll_interval_s : 5.0);
    if (s->poll_jitter_pct)
        cJSON_AddNumberToObject(out, "poll_jitter_pct", s->poll_jitter_pct);
    if (s->poll_group)
        cJSON_AddStringToObject(out, "poll_group", s->poll_group);
    if (s->install_window)
        cJSON_AddItemToObject(out, "install_window", cJSON_Parse(s->install_window));
    if (cJSON_GetNumberValue(kv) != (double)s->keys_version ||
        (s->root_env && cJSON_GetNumberValue(rv) < (double)s->root_version)) {
        cJSON *trust = cJSON_AddObjectToObject(out, "trust");
        cJSON *roots = cJSON_AddArrayToObject(trust, "roots");

        if (s->root_env && cJSON_GetNumberValue(rv) < (double)s->root_version)
            cJSON_AddItemToArray(roots, cJSON_CreateString((const char *)s->root_env));
        cJSON_AddStringToObject(trust, "keys", (const char *)s->keys_env);
    }
    if (s->offload_policy)
        cJSON_AddItemToObject(cJSON_AddObjectToObject(out, "offload"), "detector",
                              cJSON_Parse(s->offload_policy));
    list = cJSON_AddArrayToObject(out, "assignments");
    if (s->version[0]) {
        /* An untracked model first: the agent skips it. */
        other = cJSON_CreateObject();
        cJSON_AddStringToObject(other, "model", "other");
        cJSON_AddItemToArray(list, other);
        add_detector(s, list, nonce->valuestring,
                     s->checkin_mode == CHECKIN_HELD_OTHER || release_held(s, doc), doc);
    }
    text = cJSON_PrintUnformatted(out);
    mf_kit_http_json(c, 200, text);
    cJSON_free(text);
    cJSON_Delete(out);
    cJSON_Delete(doc);
}

/* The silent second half of a stalled response, sent later from its own thread so the
 * server keeps answering other requests (the client's resume) meanwhile. */
static void *stall_main(void *arg)
{
    struct fake_server *s = arg;
    struct timespec ts = {s->stall_ms / 1000, (long)(s->stall_ms % 1000) * 1000000L};

    (void)nanosleep(&ts, NULL);
    mf_kit_http_send_fd(s->stall_fd, s->stall_data, (size_t)s->stall_len);
    (void)close(s->stall_fd);
    return NULL;
}

/* Answers with `r`, whose body is `data` from `from` on (`n` of its bytes sent, the rest
 * announced), applying the cut/corrupt/stall faults (offsets in the served object). */
static void send_body(struct fake_server *s, struct mf_kit_http_conn *c,
                      struct mf_kit_http_reply *r, const uint8_t *data, uint64_t from, uint64_t n)
{
    uint64_t end = from + n;

    r->body = (const char *)data + from;
    if (s->cut_at > from && s->cut_at < end && s->cuts_left > 0) {
        end = s->cut_at;
        s->cuts_left--;
        s->cut_at += s->cut_step;
    }
    if (s->blob_mode == BLOB_STALL && s->stall_left > 0 && end - from > 1 && !s->stalling) {
        uint64_t half = (end - from) / 2;

        s->stall_left--;
        r->cut_at = half;
        mf_kit_http_reply(c, r);
        s->bytes_served += half;
        s->stall_fd = mf_kit_http_detach(c);
        s->stall_data = data + from + half;
        s->stall_len = end - from - half;
        s->stalling = 1;
        assert_int_equal(pthread_create(&s->stall_thread, NULL, stall_main, s), 0);
        return;
    }
    if (s->corrupt_left > 0 && s->corrupt_at >= from && s->corrupt_at < end) {
        r->corrupt = 1;
        r->corrupt_at = s->corrupt_at - from;
        s->corrupt_left--;
    }
    if (end < from + r->body_len)
        r->cut_at = end - from;
    mf_kit_http_reply(c, r);
    s->bytes_served += end - from;
}

/* GET /v1/blobs/<chunk list sha>: the list, served as list_mode says. */
static void handle_list(struct fake_server *s, struct mf_kit_http_conn *c)
{
    struct mf_kit_http_reply r = {.status = 200,
                                  .content_type = "application/octet-stream",
                                  .body = (const char *)s->chunk_list,
                                  .body_len = s->chunk_list_len};
    uint8_t *served = NULL;

    s->n_list++;
    if (s->list_mode == LIST_404) {
        mf_kit_http_json(c, 404, "{\"error\":\"not_found\",\"message\":\"no such blob\"}");
        return;
    }
    if (s->list_mode == LIST_FLIPPED || s->list_mode == LIST_LONG) {
        served = mf_alloc(NULL, s->chunk_list_len + 32);
        assert_non_null(served);
        memcpy(served, s->chunk_list, s->chunk_list_len);
        memcpy(served + s->chunk_list_len, s->chunk_list, 32);
        if (s->list_mode == LIST_FLIPPED)
            served[s->chunk_list_len - 1] ^= 1; /* the last hash */
        else
            r.body_len += 32;
        r.body = (const char *)served;
    }
    if (s->list_mode == LIST_SHORT)
        r.body_len -= 10;
    if (s->list_mode == LIST_206)
        r.status = 206;
    mf_kit_http_reply(c, &r);
    mf_free(NULL, served);
}

/* GET /v1/blobs/<sha>: the model or the delta, with Range/If-Range (docs/protocol.md). */
static void handle_blob(struct fake_server *s, struct mf_kit_http_conn *c, const char *req)
{
    const char *range = strstr(req, "\r\nRange: bytes=");
    const char *if_range = strstr(req, "\r\nIf-Range: ");
    const uint8_t *data = s->blob;
    uint64_t len = s->blob_len, from = 0;
    struct mf_kit_http_reply r = {.status = 200, .content_type = "application/octet-stream"};
    char headers[512], etag[80];

    if (s->chunk_list && strstr(req, s->chunk_list_sha)) {
        handle_list(s, c);
        return;
    }
    if (s->delta && strstr(req, s->delta_sha)) {
        s->n_delta_blob++;
        data = s->delta;
        len = s->delta_len;
        (void)snprintf(etag, sizeof(etag), "\"%s\"", s->delta_sha);
    } else if (s->fb && strstr(req, s->fb_sha)) {
        s->n_fb_blob++;
        data = s->fb;
        len = s->fb_len;
        (void)snprintf(etag, sizeof(etag), "\"%s\"", s->fb_sha);
    } else {
        s->n_blob++;
        (void)snprintf(etag, sizeof(etag), "\"%s\"", s->sha256);
    }
    if (s->blob_mode == BLOB_404) {
        mf_kit_http_json(c, 404, "{\"error\":\"not_found\",\"message\":\"no such blob\"}");
        return;
    }
    if (s->blob_mode == BLOB_CHUNKED) {
        r.chunked = 1;
        r.body = (const char *)data;
        r.body_len = (size_t)len;
        mf_kit_http_reply(c, &r);
        return;
    }
    if (range) {
        from = strtoull(range + 15, NULL, 10);
        s->n_ranged++;
        s->last_range_from = from;
    }
    if (if_range && strncmp(if_range + 12, etag, strlen(etag)) != 0)
        from = 0; /* another representation: the whole thing */
    r.headers = headers;
    if (from > 0 && from < len && s->blob_mode != BLOB_NO_RANGE) {
        (void)snprintf(headers, sizeof(headers),
                       "ETag: %s\r\nContent-Range: bytes %llu-%llu/%llu\r\n",
                       s->blob_mode == BLOB_NEW_ETAG ? "\"republished\"" : etag,
                       s->blob_mode == BLOB_WRONG_RANGE ? 0ull : (unsigned long long)from,
                       (unsigned long long)len - 1, (unsigned long long)len);
        r.status = 206;
        r.body_len = (size_t)(len - from);
        send_body(s, c, &r, data, from,
                  s->blob_mode == BLOB_TRUNCATE ? (len - from) / 2 : len - from);
        return;
    }
    (void)snprintf(headers, sizeof(headers), "ETag: %s\r\n", etag);
    r.body_len = (size_t)len;
    send_body(s, c, &r, data, 0, s->blob_mode == BLOB_TRUNCATE ? len / 2 : len);
}

static void handle_report(struct fake_server *s, struct mf_kit_http_conn *c, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *detail = cJSON_GetObjectItemCaseSensitive(doc, "detail");

    s->n_report++;
    (void)snprintf(s->report_status, sizeof(s->report_status), "%s",
                   cJSON_IsString(st) ? st->valuestring : "?");
    (void)snprintf(s->report_detail, sizeof(s->report_detail), "%s",
                   cJSON_IsString(detail) ? detail->valuestring : "?");
    mf_kit_http_json(c, 204, "");
    cJSON_Delete(doc);
}

static void serve_one(void *payload, struct mf_kit_http_conn *c,
                      const struct mf_kit_http_request *q)
{
    struct fake_server *s = payload;

    pthread_mutex_lock(&s->lock);
    if (strncmp(q->line, "POST /v1/enroll ", 16) == 0)
        handle_enroll(s, c, q->body);
    else if (!authorized(q->head))
        mf_kit_http_json(c, 401, "{\"error\":\"unauthorized\",\"message\":\"unknown credential\"}");
    else if (strncmp(q->line, "POST /v1/checkin ", 17) == 0)
        handle_checkin(s, c, q->body);
    else if (strncmp(q->line, "GET /v1/blobs/", 14) == 0)
        handle_blob(s, c, q->head);
    else if (strncmp(q->line, "POST /v1/report ", 16) == 0)
        handle_report(s, c, q->body);
    else
        mf_kit_http_json(c, 404, "{\"error\":\"not_found\",\"message\":\"no route\"}");
    pthread_mutex_unlock(&s->lock);
}

void fake_start(struct fake_server *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->keys_env = fx_keys_v1(&s->keys_len, &world);
    s->keys_version = 1;
    s->director = K_DIR;
    mf_kit_http_start(&s->http, serve_one, s);
}

void fake_settle(struct fake_server *s)
{
    if (s->stalling)
        pthread_join(s->stall_thread, NULL);
    s->stalling = 0;
}

/* The documents and lists the fake server owns. */
static void fake_free_docs(struct fake_server *s)
{
    mf_free(NULL, s->keys_env);
    mf_free(NULL, s->release_env);
    mf_free(NULL, s->root_env);
    mf_free(NULL, s->fb_env);
    mf_free(NULL, s->chunk_list);
}

void fake_reset(struct fake_server *s)
{
    fake_settle(s);
    pthread_mutex_lock(&s->lock);
    fake_free_docs(s);
    /* Everything after the running kit server and the (held) lock goes back to zero: the
     * server keeps its socket and thread, the lock stays the same held mutex. */
    memset(&s->blob, 0, sizeof(*s) - offsetof(struct fake_server, blob));
    s->keys_env = fx_keys_v1(&s->keys_len, &world);
    s->keys_version = 1;
    s->director = K_DIR;
    pthread_mutex_unlock(&s->lock);
}

void fake_stop(struct fake_server *s)
{
    mf_kit_http_stop(&s->http);
    fake_settle(s);
    pthread_mutex_destroy(&s->lock);
    fake_free_docs(s);
}

/* ---- test fixture: a fake server, a state dir and the POSIX port ---- */

void on_ready(void *payload, const char *model, const char *version, const char *path)
{
    struct fixture *fx = payload;

    assert_string_equal(model, "detector");
    fx->ready_calls++;
    (void)snprintf(fx->ready_path, sizeof(fx->ready_path), "%s", path);
    (void)snprintf(fx->ready_version, sizeof(fx->ready_version), "%s", version);
}

void fresh_state_dir(struct fixture *fx)
{
    mf_platform_posix_close(&fx->posix);
    mf_kit_fs_rmtree(fx->dir);
    assert_int_equal(mf_platform_posix_init(&fx->ops, &fx->posix, fx->dir), MF_OK);
}

int setup(void **state)
{
    struct fixture *fx = test_calloc(1, sizeof(*fx));

    fake_start(&fx->srv);
    mf_kit_fs_mkdtemp(fx->dir, sizeof(fx->dir), "mf-agent");
    (void)snprintf(fx->url, sizeof(fx->url), "%s/", fx->srv.http.url);
    assert_int_equal(mf_platform_posix_init(&fx->ops, &fx->posix, fx->dir), MF_OK);
    assert_int_equal(mf_agent_options_init(&fx->opts, MF_AGENT_OPTIONS_VERSION), MF_OK);
    fx->models[0] = "detector";
    fx->models[1] = "classifier";
    fx->opts.server_url = fx->url;
    fx->opts.device_id = "cam-1";
    fx->opts.enrollment_token = ENROLL_TOKEN;
    fx->opts.state_dir = fx->dir;
    fx->opts.models = fx->models;
    fx->opts.n_models = 2;
    fx->opts.platform = &fx->ops;
    fx->opts.request_timeout_ms = 5000;
    fx->opts.connect_timeout_ms = 2000;
    fx->opts.stall_timeout_s = 5;
    fx->opts.retry_base_ms = 0; /* steps follow each other at once; backoff has its own test */
    fx->opts.ready_fn = on_ready;
    fx->opts.ready_payload = fx;
    fx->root_env = fx_root_v1(&fx->root_len, &world);
    fx->opts.trust_root = fx->root_env;
    fx->opts.trust_root_len = fx->root_len;
    *state = fx;
    return 0;
}

int teardown(void **state)
{
    struct fixture *fx = *state;

    fake_stop(&fx->srv);
    mf_platform_posix_close(&fx->posix);
    mf_kit_fs_rmtree(fx->dir);
    mf_free(NULL, fx->root_env);
    test_free(fx);
    return 0;
}

/* Reads a file of the state dir into a test_malloc'd buffer. */
uint8_t *slurp(const struct fixture *fx, const char *name, size_t *len)
{
    return mf_kit_fs_slurp(fx->dir, name, len);
}

int exists(const struct fixture *fx, const char *name)
{
    return mf_kit_fs_exists(fx->dir, name);
}

void assert_file_equals(const struct fixture *fx, const char *name, const uint8_t *data, size_t len)
{
    size_t got = 0;
    uint8_t *buf = slurp(fx, name, &got);

    assert_non_null(buf);
    assert_int_equal(got, len);
    assert_memory_equal(buf, data, len);
    test_free(buf);
}

/* A model of `n` bytes that differs per `seed` in a few places only (deltas stay small). */
uint8_t *make_model(size_t n, unsigned int seed)
{
    uint8_t *m = test_malloc(n);

    for (size_t i = 0; i < n; i++)
        m[i] = (uint8_t)((i * 2654435761u) >> 13);
    for (size_t i = 0; i < n; i += 65536)
        m[i] = (uint8_t)(m[i] + seed);
    return m;
}

const uint8_t model_v1[] = "detector weights, version one\n";
const uint8_t model_v2[] = "detector weights, version two: a little longer than one\n";

/* Runs one step and checks its result, showing the agent's message when it differs. */
void step_expect(mf_agent *agent, int expect)
{
    int err = mf_agent_step(agent);

    if (err != expect)
        print_error("step returned %d: %s\n", err, mf_agent_errmsg(agent));
    assert_int_equal(err, expect);
}

void assert_active(mf_agent *agent, const char *version, char slot)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_true(st.installed);
    assert_string_equal(st.version, version);
    assert_int_equal(st.slot, slot);
}

/* Installs v1 through one step; used as the starting point of failure tests. */
mf_agent *agent_with_v1(struct fixture *fx)
{
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    return agent;
}

void assert_v2_refused_in_mode(struct fixture *fx, mf_agent *agent, enum checkin_mode mode,
                               int code, const char *why)
{
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.checkin_mode = mode;
    step_expect(agent, code);
    assert_non_null(strstr(mf_agent_errmsg(agent), why));
    assert_int_equal(fx->srv.n_blob, 1);
    assert_active(agent, "v1", 'a');
}

void fake_offer_fallback(struct fake_server *s, const char *variant, const char *version,
                         const uint8_t *data, size_t len)
{
    pthread_mutex_lock(&s->lock);
    mf_free(NULL, s->fb_env);
    s->fb_env = NULL;
    s->fb = data;
    s->fb_len = len;
    if (data) {
        (void)snprintf(s->fb_variant, sizeof(s->fb_variant), "%s", variant);
        sha256_hex(s->fb_sha, data, len);
        /* The version's own sequence and floor: the same release in other bytes. */
        s->fb_env = fx_release_of(&s->fb_env_len, &world, "detector", version, s->release_seq,
                                  s->floor, data, len, chunk_size_for(len), BY(K_REL0));
    }
    pthread_mutex_unlock(&s->lock);
}

void fake_offer_delta(struct fake_server *s, const uint8_t *delta, size_t delta_len,
                      const uint8_t *from, size_t from_len)
{
    pthread_mutex_lock(&s->lock);
    s->delta = delta;
    s->delta_len = delta_len;
    if (delta) {
        sha256_hex(s->delta_sha, delta, delta_len);
        sha256_hex(s->delta_from, from, from_len);
    }
    pthread_mutex_unlock(&s->lock);
}
