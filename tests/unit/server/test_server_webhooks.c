/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhooks end to end (docs/operations.md, "Webhooks"): mf-server in-process on loopback, on
 * SQLite one node, on PostgreSQL (ctest unit_server_webhooks_pg) two nodes sharing the store,
 * both running the delivery thread. Rollout events are recorded as the engine records them
 * (mf_rollout__emit, on a store handle of the test's own); a receiver on loopback (kit_http)
 * fails its first two requests and then checks each signature: every event must arrive
 * exactly once with a valid signature. Bad registrations are 400 naming the field.
 */
#include "mf_test.h"
#include "kit_case.h"
#include "kit_fs.h"
#include "kit_http.h"
#include "pg_seed.h"
#include "server_fixture.h"
#include "store_fixture.h"
#include "rollout/rollout_events.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SECRET "0123456789abcdef-webhook-secret"
#define N_EVENTS 6
#define N_FAILS 2 /* the receiver's first answers: 500 */

struct hooks_fixture {
    char dir[64], data[96];
    char url[MF_PGTEST_URL_MAX]; /* the store both nodes serve */
    char admin[MF_TOKEN_LEN + 1];
    struct mf_server *node[2];
    uint16_t port[2];
    int n_nodes;
    struct fx world;
    struct mf_store *engine; /* the test's own handle: what records the events */
    struct mf_ctx ctx;
};

static struct hooks_fixture hf;

static void start_node(int i)
{
    struct mf_server_options o;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    srvfx_options_init(&o, hf.data);
    o.store_url = hf.url;
    o.delta_worker = 0;    /* nothing here needs deltas or rollout evaluations */
    o.webhook_retry_s = 1; /* the failures are retried within seconds */
    if (mf_server__start(&hf.node[i], &ctx, &o) < 0)
        fail_msg("start node %d: %s", i, mf_ctx__errmsg(&ctx));
    hf.port[i] = mf_server__port(hf.node[i]);
}

static int hooks_setup(void **state)
{
    (void)state;
    memset(&hf, 0, sizeof(hf));
    srvfx_make_data_dir(hf.dir, hf.data, &hf.world, "mf-hooks");
    mf_ctx__init(&hf.ctx, NULL, NULL, NULL, "test");
    if (mf_pgtest__enabled()) {
        mf_pgtest__create_db(hf.url, "hooks");
        if (mf_pgtest__seed(&hf.ctx, hf.url, hf.data) < 0)
            fail_msg("seed: %s", mf_ctx__errmsg(&hf.ctx));
        hf.n_nodes = 2;
    } else {
        (void)snprintf(hf.url, sizeof(hf.url), "%s/store.db", hf.data);
        hf.n_nodes = 1; /* SQLite: one node */
    }
    for (int i = 0; i < hf.n_nodes; i++)
        start_node(i);
    mf_kit_fs_read_line(hf.admin, sizeof(hf.admin), hf.data, "admin.token");
    assert_int_equal(mf_store__open(&hf.engine, &hf.ctx, hf.url, 0), MF_OK);
    return 0;
}

static int hooks_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < hf.n_nodes; i++)
        mf_server__stop(hf.node[i]);
    mf_store__close(hf.engine);
    if (mf_pgtest__enabled())
        mf_pgtest__drop_db(hf.url);
    fx_free(&hf.world);
    mf_kit_fs_rmtree(hf.dir);
    curl_global_cleanup();
    return 0;
}

static long call(struct srvfx_resp *r, int node, const char *method, const char *path,
                 const char *json)
{
    srvfx_call_port(r, hf.port[node], method, path, hf.admin, json, json ? strlen(json) : 0, NULL);
    return r->status;
}

static long status_of(int node, const char *method, const char *path, const char *json)
{
    struct srvfx_resp r;
    long st = call(&r, node, method, path, json);

    free(r.body);
    return st;
}

static void test_server_webhooks__bad_registrations_are_400(void **state)
{
    char long_url[600], body[800];
    static const struct mf_kit_case bad[] = {
        {"{\"url\":\"ftp://example.com/hook\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"file:///etc/passwd\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"javascript:alert(1)\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"http://\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"http:///path\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"http://a b/\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"127.0.0.1:9/hook\",\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":7,\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"secret\":\"" SECRET "\"}", "'url'"},
        {"{\"url\":\"http://127.0.0.1:9/\"}", "'secret'"},
        {"{\"url\":\"http://127.0.0.1:9/\",\"secret\":\"short\"}", "'secret'"},
        {"{\"url\":\"http://127.0.0.1:9/\",\"secret\":\"" SECRET "\",\"retries\":3}", "'retries'"},
    };
    struct srvfx_resp r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (call(&r, 0, "POST", "/v1/admin/webhooks", bad[i].in) != 400 ||
            !strstr(r.body, bad[i].want))
            fail_msg("%s: %ld %s, want 400 naming %s", bad[i].in, r.status, r.body, bad[i].want);
        free(r.body);
    }
    memset(long_url, 'a', sizeof(long_url) - 1);
    memcpy(long_url, "http://", 7);
    long_url[sizeof(long_url) - 1] = '\0';
    (void)snprintf(body, sizeof(body), "{\"url\":\"%s\",\"secret\":\"%s\"}", long_url, SECRET);
    assert_int_equal(status_of(0, "POST", "/v1/admin/webhooks", body), 400);
    /* Nothing of that was registered; a good one is, once, and its secret is never shown. */
    assert_int_equal(call(&r, 0, "GET", "/v1/admin/webhooks", NULL), 200);
    assert_string_equal(r.body, "{\"webhooks\":[]}");
    free(r.body);
    (void)snprintf(body, sizeof(body),
                   "{\"url\":\"https://hooks.example/x?a=1\",\"secret\":\"%s\"}", SECRET);
    assert_int_equal(status_of(0, "POST", "/v1/admin/webhooks", body), 201);
    assert_int_equal(status_of(0, "POST", "/v1/admin/webhooks", body), 409);
    assert_int_equal(call(&r, 0, "GET", "/v1/admin/webhooks", NULL), 200);
    assert_non_null(strstr(r.body, "https://hooks.example/x?a=1"));
    assert_null(strstr(r.body, SECRET));
    free(r.body);
    assert_int_equal(status_of(0, "DELETE", "/v1/admin/webhooks/abc", NULL), 400);
    assert_int_equal(status_of(0, "DELETE", "/v1/admin/webhooks/99", NULL), 404);
    assert_int_equal(status_of(0, "DELETE", "/v1/admin/webhooks/1", NULL), 204);
    assert_int_equal(status_of(0, "DELETE", "/v1/admin/webhooks/1", NULL), 404);
}

/* What the receiver saw, under its lock (it answers on its own thread). */
struct receiver {
    pthread_mutex_t lock;
    int requests, failed, bad; /* bad: a signature, id or header that did not hold */
    char ids[N_EVENTS][40];
    int accepted[N_EVENTS]; /* 2xx answers per event id */
    int n_ids;
};

/* The value of header `name` in `head` into `out` ("" when absent). */
static void header(char *out, size_t cap, const char *head, const char *name)
{
    size_t n = strlen(name);

    out[0] = '\0';
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
            const char *v = p + 3 + n;

            while (*v == ' ')
                v++;
            (void)snprintf(out, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
            return;
        }
    }
}

/* Checks the request as a receiver must: the signature over the body, and the event id of
 * the header the same as the body's. Returns the event id's slot, or -1. */
static int check_delivery(struct receiver *rc, const struct mf_kit_http_request *req)
{
    char sig[128], event[64], want[80];
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    cJSON *body = cJSON_Parse(req->body);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(body, "id"));
    int slot = -1;

    header(sig, sizeof(sig), req->head, "X-Modelferry-Signature");
    header(event, sizeof(event), req->head, "X-Modelferry-Event");
    HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), (const unsigned char *)req->body, req->body_len,
         mac, &n);
    memcpy(want, "sha256=", 7);
    for (unsigned int i = 0; i < n; i++)
        (void)snprintf(want + 7 + 2 * i, 3, "%02x", mac[i]);
    if (n == 32 && strcmp(sig, want) == 0 && id && strcmp(id, event) == 0 &&
        strcmp(req->method, "POST") == 0) {
        for (slot = 0; slot < rc->n_ids && strcmp(rc->ids[slot], id) != 0; slot++)
            ;
        if (slot == rc->n_ids && rc->n_ids < N_EVENTS)
            (void)snprintf(rc->ids[rc->n_ids++], sizeof(rc->ids[0]), "%s", id);
        else if (slot == rc->n_ids)
            slot = -1; /* more distinct events than were made */
    }
    cJSON_Delete(body);
    return slot;
}

static void on_delivery(void *payload, struct mf_kit_http_conn *c,
                        const struct mf_kit_http_request *req)
{
    struct receiver *rc = payload;
    int fail, slot = -1;

    (void)pthread_mutex_lock(&rc->lock);
    rc->requests++;
    fail = rc->failed < N_FAILS;
    if (fail)
        rc->failed++;
    else
        slot = check_delivery(rc, req);
    if (!fail && slot < 0)
        rc->bad++;
    else if (!fail)
        rc->accepted[slot]++;
    (void)pthread_mutex_unlock(&rc->lock);
    mf_kit_http_json(c, fail ? 500 : 200, fail ? "{\"error\":\"down\"}" : "{}");
}

/* Records `N_EVENTS` events of one rollout as the engine does. */
static void emit_events(void)
{
    static const char *const kinds[N_EVENTS] = {"created", "advanced", "paused",
                                                "running", "halted",   "rolled_back"};
    struct mf_store_rollout r = {.id = 41, .wave = 1};

    (void)snprintf(r.model, sizeof(r.model), "det");
    (void)snprintf(r.version, sizeof(r.version), "v2");
    (void)snprintf(r.prev_version, sizeof(r.prev_version), "v1");
    (void)snprintf(r.state, sizeof(r.state), "running");
    for (int i = 0; i < N_EVENTS; i++)
        assert_int_equal(mf_rollout__emit(hf.engine, &hf.ctx, &r, kinds[i], "p99 2047 > 1500",
                                          (int64_t)time(NULL)),
                         MF_OK);
}

static int all_accepted(struct receiver *rc)
{
    int done;

    (void)pthread_mutex_lock(&rc->lock);
    done = rc->n_ids == N_EVENTS;
    for (int i = 0; done && i < N_EVENTS; i++)
        done = rc->accepted[i] >= 1;
    (void)pthread_mutex_unlock(&rc->lock);
    return done;
}

static void test_server_webhooks__each_event_once_signed(void **state)
{
    struct receiver rc = {.requests = 0};
    struct mf_kit_http s;
    struct srvfx_resp r;
    char body[256];
    cJSON *list, *w;

    (void)state;
    assert_int_equal(pthread_mutex_init(&rc.lock, NULL), 0);
    mf_kit_http_start(&s, on_delivery, &rc);
    (void)snprintf(body, sizeof(body), "{\"url\":\"%s/hook\",\"secret\":\"%s\"}", s.url, SECRET);
    assert_int_equal(status_of(0, "POST", "/v1/admin/webhooks", body), 201);
    emit_events();
    /* Bounded: the nodes poll the outbox every second and retry after 1 s, then 2 s. */
    for (int i = 0; i < 600 && !all_accepted(&rc); i++) {
        struct timespec ts = {0, 100 * 1000000L};

        (void)nanosleep(&ts, NULL);
    }
    if (!all_accepted(&rc))
        fail_msg("not every event delivered: %d of %d ids, %d requests", rc.n_ids, N_EVENTS,
                 rc.requests);
    /* Every node has seen its deliveries done: the outbox (read through the other node)
     * says so, with nothing left to send; then a duplicate would have had its chance. */
    for (int i = 0; i < 100; i++) {
        struct timespec ts = {0, 100 * 1000000L};
        int settled;

        assert_int_equal(call(&r, hf.n_nodes - 1, "GET", "/v1/admin/webhooks", NULL), 200);
        list = cJSON_Parse(r.body);
        free(r.body);
        w = cJSON_GetArrayItem(cJSON_GetObjectItem(list, "webhooks"), 0);
        settled = cJSON_GetNumberValue(cJSON_GetObjectItem(w, "delivered")) == N_EVENTS &&
                  cJSON_GetNumberValue(cJSON_GetObjectItem(w, "pending")) == 0;
        assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(w, "failed")), 0);
        cJSON_Delete(list);
        if (settled)
            break;
        (void)nanosleep(&ts, NULL);
    }
    {
        struct timespec ts = {2, 0}; /* two more polls of each node's outbox */

        (void)nanosleep(&ts, NULL);
    }
    mf_kit_http_stop(&s);
    assert_int_equal(rc.bad, 0);
    assert_int_equal(rc.failed, N_FAILS);
    assert_int_equal(rc.n_ids, N_EVENTS);
    for (int i = 0; i < N_EVENTS; i++) {
        if (rc.accepted[i] != 1)
            fail_msg("event %s accepted %d times", rc.ids[i], rc.accepted[i]);
    }
    assert_int_equal(rc.requests, N_EVENTS + N_FAILS);
    (void)pthread_mutex_destroy(&rc.lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_server_webhooks__bad_registrations_are_400,
                                        hooks_setup, hooks_teardown),
        cmocka_unit_test_setup_teardown(test_server_webhooks__each_event_once_signed, hooks_setup,
                                        hooks_teardown),
    };

    return cmocka_run_group_tests_name("server_webhooks", tests, NULL, NULL);
}
