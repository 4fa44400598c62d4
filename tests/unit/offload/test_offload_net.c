/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf_offload against a fake server (the kit's, kit_http.h, with a handler written here) that
 * follows docs/protocol-offload.md and misbehaves on demand: a slow teacher, malformed answers,
 * error statuses, a lost ack. It records every batch id and sample id it stores, so tests can prove
 * "each sample once".
 */
#include "offload_fixture.h"
#include "kit_http.h"
#include "kit_log.h"
#include "mf_offload_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CRED "mfd_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MAX_IDS 2048

enum ask_mode { ASK_OK, ASK_SLOW, ASK_NOT_JSON, ASK_WRONG_ID, ASK_SHORT_OUTPUT, ASK_503 };
enum batch_mode { BATCH_OK, BATCH_DROP_ACK, BATCH_500 };

struct fake {
    struct mf_kit_http http;
    pthread_mutex_t lock;
    enum ask_mode ask_mode;
    enum batch_mode batch_mode;
    int drop_acks; /* BATCH_DROP_ACK applies to this many batches, then OK */
    int n_ask, n_batch, n_dup_batch, n_unauth;
    char last_ask[64 * 1024];
    char batch_ids[64][33];
    int n_batch_ids;
    char ids[MAX_IDS][33];
    int id_count[MAX_IDS];
    int n_ids;
};

static int note_id(struct fake *s, const char *id)
{
    for (int i = 0; i < s->n_ids; i++) {
        if (strcmp(s->ids[i], id) == 0)
            return ++s->id_count[i];
    }
    assert_true(s->n_ids < MAX_IDS);
    (void)snprintf(s->ids[s->n_ids], 33, "%s", id);
    s->id_count[s->n_ids++] = 1;
    return 1;
}

static void handle_ask(struct fake *s, struct mf_kit_http_conn *c, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(doc, "request_id");
    char reply[512];
    enum ask_mode mode;

    pthread_mutex_lock(&s->lock);
    s->n_ask++;
    (void)snprintf(s->last_ask, sizeof(s->last_ask), "%s", body);
    mode = s->ask_mode;
    pthread_mutex_unlock(&s->lock);
    if (mode == ASK_SLOW)
        mf_kit_http_sleep(&s->http, 1500); /* well past any test deadline */
    (void)snprintf(reply, sizeof(reply),
                   "{\"request_id\":\"%s\",\"teacher_version\":\"t-7\",\"output\":%s,"
                   "\"stored\":true}",
                   mode == ASK_WRONG_ID  ? "00"
                   : cJSON_IsString(rid) ? rid->valuestring
                                         : "",
                   mode == ASK_SHORT_OUTPUT ? "[1]" : "[0.05,0.9,0.05]");
    if (mode == ASK_NOT_JSON)
        mf_kit_http_json(c, 200, "teacher says hi");
    else if (mode == ASK_503)
        mf_kit_http_json(c, 503,
                         "{\"error\":\"unavailable\",\"message\":\"teacher circuit open\"}");
    else
        mf_kit_http_json(c, 200, reply);
    cJSON_Delete(doc);
}

static void handle_batch(struct fake *s, struct mf_kit_http_conn *c, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *bid = cJSON_GetObjectItemCaseSensitive(doc, "batch_id");
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(doc, "samples");
    const cJSON *it;
    char reply[128];
    int dup = 0, drop;

    assert_true(cJSON_IsString(bid) && cJSON_IsArray(samples));
    pthread_mutex_lock(&s->lock);
    s->n_batch++;
    if (s->batch_mode == BATCH_500) {
        pthread_mutex_unlock(&s->lock);
        mf_kit_http_json(c, 500, "{\"error\":\"internal\",\"message\":\"disk full\"}");
        cJSON_Delete(doc);
        return;
    }
    /* Idempotency by batch id: a repeat is acknowledged without storing anything. */
    for (int i = 0; i < s->n_batch_ids; i++)
        dup |= strcmp(s->batch_ids[i], bid->valuestring) == 0;
    if (dup) {
        s->n_dup_batch++;
    } else {
        assert_true(s->n_batch_ids < 64);
        (void)snprintf(s->batch_ids[s->n_batch_ids++], 33, "%s", bid->valuestring);
        cJSON_ArrayForEach(it, samples)
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");

            assert_true(cJSON_IsString(id));
            (void)note_id(s, id->valuestring);
        }
    }
    drop = s->batch_mode == BATCH_DROP_ACK && s->drop_acks > 0;
    if (drop && --s->drop_acks == 0)
        s->batch_mode = BATCH_OK;
    pthread_mutex_unlock(&s->lock);
    (void)snprintf(reply, sizeof(reply), "{\"batch_id\":\"%s\",\"accepted\":%d}", bid->valuestring,
                   cJSON_GetArraySize(samples));
    if (!drop) /* a dropped ack: stored, then the connection dies before the answer */
        mf_kit_http_json(c, 200, reply);
    cJSON_Delete(doc);
}

static void serve(void *payload, struct mf_kit_http_conn *c, const struct mf_kit_http_request *q)
{
    struct fake *s = payload;

    if (!strstr(q->head, "Authorization: Bearer " CRED)) {
        s->n_unauth++;
        mf_kit_http_json(c, 401, "{\"error\":\"unauthorized\",\"message\":\"bad credential\"}");
    } else if (strncmp(q->line, "POST /v1/offload/ask ", 21) == 0) {
        handle_ask(s, c, q->body);
    } else if (strncmp(q->line, "POST /v1/offload/batch ", 23) == 0) {
        handle_batch(s, c, q->body);
    } else {
        mf_kit_http_json(c, 404, "{\"error\":\"not_found\",\"message\":\"no route\"}");
    }
}

static void fake_start(struct fake *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    mf_kit_http_start(&s->http, serve, s);
}

static void fake_stop(struct fake *s)
{
    mf_kit_http_stop(&s->http);
    pthread_mutex_destroy(&s->lock);
}

/* ---- fixture ---- */

struct fx {
    struct fake srv;
    struct tplat t;
    struct mf_kit_alloc ta;
    char url[64];
    mf_offload_options opts;
};

static int setup(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    fake_start(&f->srv);
    tplat_init(&f->t);
    (void)mf_kit_alloc_init(&f->ta, -1, MF_KIT_ALLOC_FAIL_ONE);
    (void)snprintf(f->url, sizeof(f->url), "%s/", f->srv.http.url);
    assert_int_equal(mf_offload_options_init(&f->opts, MF_OFFLOAD_OPTIONS_VERSION), MF_OK);
    f->opts.model = "digits";
    f->opts.model_version = "v1";
    f->opts.server_url = f->url;
    f->opts.credential = CRED;
    f->opts.platform = &f->t.ops;
    f->opts.allocator = &f->ta.a;
    f->opts.max_input_bytes = 1024;
    f->opts.queue_max_bytes = 256 * 1024;
    f->opts.batch_max_samples = 8;
    f->opts.backoff_min_ms = 100;
    f->opts.backoff_max_ms = 1000;
    f->opts.request_timeout_ms = 3000;
    f->opts.connect_timeout_ms = 1000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    fake_stop(&f->srv);
    tplat_done(&f->t);
    test_free(f);
    return 0;
}

static mf_offload *new_handle(struct fx *f, const char *policy)
{
    mf_offload *o = NULL;

    assert_int_equal(mf_offload_new(&o, &f->opts), MF_OK);
    if (policy)
        assert_int_equal(mf_offload_set_policy_json(o, policy, strlen(policy)), MF_OK);
    return o;
}

/* A binary input (NUL, 0xff, quote, backslash) and logits whose max-softmax is ~0.58. */
static uint8_t g_input[100];
static const float uncertain_logits[3] = {1.0f, 0.6f, -1.0f};
static const float confident_logits[3] = {9.0f, 0.0f, 0.0f};

static mf_offload_sample sample(const float *logits, int variant)
{
    mf_offload_sample s = {g_input, sizeof(g_input), logits, 3, MF_OFFLOAD_LOGITS};

    for (size_t i = 0; i < sizeof(g_input); i++)
        g_input[i] = (uint8_t)(i * 37 + (size_t)variant);
    g_input[0] = 0;
    g_input[1] = 0xff;
    g_input[2] = '"';
    g_input[3] = '\\';
    return s;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define SYNC_POLICY(deadline)                                                                      \
    "{\"enabled\":true,\"threshold\":0.8,\"deadline_ms\":" deadline ",\"metered\":\"allow\"}"
#define ASYNC_POLICY "{\"enabled\":true,\"threshold\":0.8,\"mode\":\"async\",\"metered\":\"allow\"}"

static size_t b64_decode(uint8_t *out, const char *in)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;

    for (; *in && *in != '='; in++) {
        const char *p = strchr(tab, *in);

        assert_non_null(p);
        acc = acc << 6 | (uint32_t)(p - tab);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    return n;
}

/* ---- sync ask ---- */

static void test_offload_net__fast_teacher_answers(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, SYNC_POLICY("2000"));
    mf_offload_sample s = sample(uncertain_logits, 0);
    mf_offload_answer a;
    float probs[3] = {0};
    uint8_t got[200];
    cJSON *doc;
    const cJSON *smp;

    assert_int_equal(mf_offload_ask(&a, probs, o, &s), MF_OK);
    assert_int_equal(a.route, MF_OFFLOAD_ROUTE_SYNC);
    assert_int_equal(a.reason, MF_OFFLOAD_REASON_TEACHER);
    assert_int_equal(a.by_teacher, 1);
    assert_int_equal(a.queued, 0);
    assert_int_equal(a.label, 1); /* the teacher's argmax, not the student's 0 */
    assert_true(fabsf(a.confidence - 0.9f) < 1e-6f);
    assert_true(fabsf(probs[1] - 0.9f) < 1e-6f);
    assert_string_equal(a.teacher_version, "t-7");
    assert_string_equal(a.model_version, "v1");
    assert_true(a.score < 0.8f && a.score > 0.5f);
    /* What the server got: the sample, binary input intact through base64. */
    doc = cJSON_Parse(f->srv.last_ask);
    smp = cJSON_GetObjectItemCaseSensitive(doc, "sample");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(smp, "model")->valuestring, "digits");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(smp, "kind")->valuestring, "hard");
    assert_int_equal(b64_decode(got, cJSON_GetObjectItemCaseSensitive(smp, "input")->valuestring),
                     sizeof(g_input));
    assert_memory_equal(got, g_input, sizeof(g_input));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(smp, "output")), 3);
    cJSON_Delete(doc);
    /* A confident sample never touches the network. */
    s = sample(confident_logits, 1);
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    assert_int_equal(a.route, MF_OFFLOAD_ROUTE_LOCAL);
    assert_int_equal(a.reason, MF_OFFLOAD_REASON_CONFIDENT);
    assert_int_equal(a.label, 0);
    assert_int_equal(f->srv.n_ask, 1);
    assert_int_equal(mf_offload_telemetry_get(o)->teacher, 1);
    assert_int_equal(mf_offload_telemetry_get(o)->asked, 2);
    mf_offload_free(o);
}

static void expect_fallback(struct fx *f, mf_offload *o, mf_offload_reason reason, uint64_t max_ms)
{
    mf_offload_sample s = sample(uncertain_logits, f->srv.n_ask + 100);
    mf_offload_answer a;
    uint64_t t0 = now_ms(), took;

    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    took = now_ms() - t0;
    if (a.reason != reason)
        fail_msg("reason %s, want %s (%s)", mf_offload_reason_name(a.reason),
                 mf_offload_reason_name(reason), mf_offload_errmsg(o));
    assert_int_equal(a.by_teacher, 0);
    assert_int_equal(a.label, 0);  /* the student's answer */
    assert_int_equal(a.queued, 1); /* kept as a hard sample for later uplink */
    assert_string_equal(a.teacher_version, "");
    if (took > max_ms)
        fail_msg("fallback took %llu ms, limit %llu", (unsigned long long)took,
                 (unsigned long long)max_ms);
}

static void test_offload_net__slow_teacher_falls_back_within_deadline(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, SYNC_POLICY("200"));

    f->srv.ask_mode = ASK_SLOW;
    expect_fallback(f, o, MF_OFFLOAD_REASON_TIMEOUT, 200 + 150);
    assert_non_null(strstr(mf_offload_errmsg(o), "timeout"));
    assert_int_equal(mf_offload_telemetry_get(o)->fell_back, 1);
    assert_int_equal(mf_offload_queue_count(o), 1);
    mf_offload_free(o);
}

static void test_offload_net__server_down_falls_back(void **state)
{
    struct fx *f = *state;
    mf_offload *o;

    /* A port that was just free: nothing listens there. */
    (void)snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", mf_kit_http_free_port());
    o = new_handle(f, SYNC_POLICY("500"));
    expect_fallback(f, o, MF_OFFLOAD_REASON_SERVER_ERROR, 500);
    mf_offload_free(o);
}

static void test_offload_net__malformed_answers_fall_back(void **state)
{
    static const struct {
        enum ask_mode mode;
        const char *needle;
    } cases[] = {
        {ASK_NOT_JSON, "offload answer: line 1: not valid JSON at byte 0: unexpected byte (0x74)"},
        {ASK_WRONG_ID, "does not echo"},
        {ASK_SHORT_OUTPUT, "\"output\""},
        {ASK_503, "HTTP 503: teacher circuit open"},
    };
    struct fx *f = *state;
    mf_offload *o = new_handle(f, SYNC_POLICY("2000"));

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        f->srv.ask_mode = cases[i].mode;
        expect_fallback(f, o, MF_OFFLOAD_REASON_SERVER_ERROR, 2000);
        if (!strstr(mf_offload_errmsg(o), cases[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, mf_offload_errmsg(o), cases[i].needle);
    }
    mf_offload_free(o);
}

static void test_offload_net__offline_edge_only_and_caps(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, NULL);
    mf_offload_sample s = sample(uncertain_logits, 0);
    mf_offload_answer a;

    /* No policy yet: edge-only, nothing queued or sent. */
    assert_null(mf_offload_policy_get(o));
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    assert_int_equal(a.reason, MF_OFFLOAD_REASON_NO_POLICY);
    assert_int_equal(a.queued, 0);
    /* Offline: queued without trying the network. */
    assert_int_equal(
        mf_offload_set_policy_json(o, SYNC_POLICY("2000"), strlen(SYNC_POLICY("2000"))), MF_OK);
    mf_offload_set_link(o, MF_OFFLOAD_LINK_OFFLINE);
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    assert_int_equal(a.reason, MF_OFFLOAD_REASON_OFFLINE);
    assert_int_equal(a.queued, 1);
    assert_int_equal(mf_offload_drain(o, 4), MF_AGAIN);
    assert_int_equal(f->srv.n_ask + f->srv.n_batch, 0);
    /* A policy for another model version stops offloading. */
    mf_offload_set_link(o, MF_OFFLOAD_LINK_UNMETERED);
    {
        static const char p[] = "{\"enabled\":true,\"threshold\":0.8,\"model_version\":\"v2\"}";

        assert_int_equal(mf_offload_set_policy_json(o, p, strlen(p)), MF_OK);
    }
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    assert_int_equal(a.reason, MF_OFFLOAD_REASON_POLICY_STALE);
    assert_int_equal(mf_offload_set_model_version(o, "v2"), MF_OK);
    assert_int_equal(mf_offload_set_model_version(o, "../x"), MF_E_INVALID);
    {
        static const char p[] = "{\"enabled\":true,\"threshold\":0.8,\"mode\":\"async\","
                                "\"rate_caps\":{\"per_minute\":2}}";

        assert_int_equal(mf_offload_set_policy_json(o, p, strlen(p)), MF_OK);
    }
    /* Per-minute cap of 2 under a burst of distinct uncertain samples. */
    for (int i = 0; i < 5; i++) {
        s = sample(uncertain_logits, 50 + i);
        assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
        assert_int_equal(a.reason,
                         i < 2 ? MF_OFFLOAD_REASON_UNCERTAIN : MF_OFFLOAD_REASON_RATE_CAP);
        assert_int_equal(a.queued, i < 2);
    }
    assert_int_equal(mf_offload_telemetry_get(o)->capped, 3);
    assert_string_equal(mf_offload_telemetry_get(o)->model_version, "v2");
    mf_offload_free(o);
}

/* ---- async uplink ---- */

static void queue_samples(mf_offload *o, int n, int base)
{
    for (int i = 0; i < n; i++) {
        mf_offload_sample s = sample(uncertain_logits, base + i);
        mf_offload_answer a;

        assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
        assert_int_equal(a.route, MF_OFFLOAD_ROUTE_QUEUE);
        assert_int_equal(a.queued, 1);
    }
}

static void assert_each_once(const struct fake *s, int n)
{
    assert_int_equal(s->n_ids, n);
    for (int i = 0; i < s->n_ids; i++) {
        if (s->id_count[i] != 1)
            fail_msg("sample %s stored %d times", s->ids[i], s->id_count[i]);
    }
}

static void test_offload_net__drain_uplinks_each_sample_once(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, ASYNC_POLICY);
    mf_offload_sample s = sample(uncertain_logits, 0);
    mf_offload_answer a;

    queue_samples(o, 30, 0);
    /* Identical input again: de-duplicated, not queued twice. */
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
    assert_int_equal(a.queued, 0);
    assert_int_equal(mf_offload_queue_count(o), 30);
    assert_int_equal(mf_offload_drain(o, 2), MF_AGAIN); /* 2 batches of 8 */
    assert_int_equal(mf_offload_queue_count(o), 14);
    assert_int_equal(mf_offload_drain(o, 100), MF_OK);
    assert_int_equal(mf_offload_queue_count(o), 0);
    assert_int_equal(f->srv.n_batch, 4);
    assert_each_once(&f->srv, 30);
    /* Restart: nothing is sent again. */
    mf_offload_free(o);
    o = new_handle(f, NULL);
    assert_int_equal(mf_offload_queue_count(o), 0);
    assert_int_equal(mf_offload_drain(o, 100), MF_OK);
    assert_int_equal(f->srv.n_batch, 4);
    mf_offload_free(o);
}

/*
 * The server stores a batch but the ack is lost and the device dies before it learns of
 * it. After a restart the same records go out under the same batch id, the server drops
 * the repeat, and every sample is stored exactly once.
 */
static void test_offload_net__crash_after_send_before_ack(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, ASYNC_POLICY);
    char first_id[33];

    queue_samples(o, 20, 0);
    f->srv.batch_mode = BATCH_DROP_ACK;
    f->srv.drop_acks = 1;
    assert_true(mf_offload_drain(o, 100) < 0);
    assert_int_equal(f->srv.n_batch_ids, 1);
    (void)snprintf(first_id, sizeof(first_id), "%s", f->srv.batch_ids[0]);
    mf_offload_free(o); /* the "crash": nothing more happens on this handle */
    tplat_reopen(&f->t);
    o = new_handle(f, NULL);
    assert_int_equal(mf_offload_queue_count(o), 20);
    assert_int_equal(mf_offload_drain(o, 100), MF_OK);
    assert_int_equal(f->srv.n_dup_batch, 1); /* the resend carried the same id */
    assert_string_equal(f->srv.batch_ids[0], first_id);
    assert_each_once(&f->srv, 20);
    mf_offload_free(o);
}

/*
 * Storage dies at every call index during an upload (a kill at every point of the
 * sequence). After a restart on healthy storage the queue drains fully and the server holds
 * each sample exactly once: nothing lost, nothing duplicated.
 */
static void test_offload_net__kill_at_every_point_of_upload(void **state)
{
    struct fx *f = *state;
    int done = 0, killed = 0;

    for (long n = 0; !done && n < 300; n++) {
        mf_offload *o;

        f->srv.n_ids = 0;
        f->srv.n_batch_ids = 0;
        tplat_done(&f->t);
        tplat_init(&f->t);
        o = new_handle(f, ASYNC_POLICY);
        queue_samples(o, 12, 0);
        f->t.io_calls = 0;
        f->t.fail_at = n;
        if (mf_offload_drain(o, 100) < 0)
            assert_true(mf_offload_errmsg(o)[0] != '\0');
        done = f->t.io_calls <= n;
        killed += !done;
        mf_offload_free(o);
        tplat_reopen(&f->t);
        o = new_handle(f, NULL);
        assert_int_equal(mf_offload_drain(o, 100), MF_OK);
        assert_int_equal(mf_offload_queue_count(o), 0);
        assert_each_once(&f->srv, 12);
        mf_offload_free(o);
    }
    assert_true(done);
    assert_true(killed > 10);
}

static void test_offload_net__backoff_with_jitter(void **state)
{
    struct fx *f = *state;
    mf_offload *o;
    uint64_t prev = 0;

    f->t.fake_clock = 1;
    f->t.mono_ms = 1000;
    f->t.wall_s = 5000;
    o = new_handle(f, ASYNC_POLICY);
    queue_samples(o, 3, 0);
    f->srv.batch_mode = BATCH_500;
    for (int k = 0; k < 6; k++) {
        uint64_t d = 100u << k, wait;

        if (d > 1000)
            d = 1000;
        assert_int_equal(mf_offload_drain(o, 4), MF_E_NET);
        assert_non_null(strstr(mf_offload_errmsg(o), "HTTP 500: disk full"));
        wait = mf_offload_next_drain_ms(o) - f->t.mono_ms;
        if (wait < d / 2 || wait > d)
            fail_msg("attempt %d: waits %llu ms, want [%llu, %llu]", k, (unsigned long long)wait,
                     (unsigned long long)d / 2, (unsigned long long)d);
        /* Before the time comes, drain does not touch the network. */
        prev = (uint64_t)f->srv.n_batch;
        f->t.mono_ms += wait - 1;
        assert_int_equal(mf_offload_drain(o, 4), MF_AGAIN);
        assert_int_equal(f->srv.n_batch, prev);
        f->t.mono_ms += 1;
    }
    f->srv.batch_mode = BATCH_OK;
    assert_int_equal(mf_offload_drain(o, 4), MF_OK);
    assert_each_once(&f->srv, 3);
    /* TTL: samples older than queue_ttl_s are dropped, not sent. */
    queue_samples(o, 2, 10);
    f->t.wall_s += (int64_t)f->opts.queue_ttl_s + 1;
    assert_int_equal(mf_offload_drain(o, 4), MF_OK);
    assert_int_equal(mf_offload_queue_count(o), 0);
    assert_each_once(&f->srv, 3);
    mf_offload_free(o);
}

/* ---- policy cache, telemetry, options, allocation failures ---- */

static void test_offload_net__policy_is_cached_and_bad_policy_rejected(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, SYNC_POLICY("300"));
    static const char bad[] = "{\"enabled\":true,\"threshold\":7}";

    assert_int_equal(mf_offload_set_policy_json(o, bad, strlen(bad)), MF_E_INVALID);
    assert_non_null(strstr(mf_offload_errmsg(o), "\"threshold\""));
    assert_int_equal(mf_offload_policy_get(o)->deadline_ms, 300); /* old one still active */
    mf_offload_free(o);
    tplat_reopen(&f->t);
    o = new_handle(f, NULL);
    assert_non_null(mf_offload_policy_get(o));
    assert_int_equal(mf_offload_policy_get(o)->deadline_ms, 300);
    assert_true(mf_offload_policy_get(o)->threshold == 0.8f);
    mf_offload_free(o);
    /* App limits: the cached server policy is restricted on load too. */
    {
        mf_offload_policy lim;

        assert_int_equal(mf_offload_policy_init(&lim, MF_OFFLOAD_POLICY_VERSION), MF_OK);
        lim.enabled = 0;
        f->opts.app_limits = &lim;
        o = new_handle(f, NULL);
        assert_int_equal(mf_offload_policy_get(o)->enabled, 0);
        mf_offload_free(o);
    }
}

static void test_offload_net__telemetry_json(void **state)
{
    struct fx *f = *state;
    mf_offload *o = new_handle(f, ASYNC_POLICY);
    static char buf[8192];
    const cJSON *v;
    cJSON *doc;
    size_t len;
    double sum = 0;

    queue_samples(o, 4, 0);
    assert_int_equal(mf_offload_set_model_version(o, "v2"), MF_OK);
    queue_samples(o, 2, 10);
    assert_int_equal(mf_offload_telemetry_json(&len, buf, sizeof(buf), o), MF_OK);
    assert_int_equal(len, strlen(buf));
    doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(doc, "policy_version")->valueint, 1);
    v = cJSON_GetObjectItemCaseSensitive(doc, "versions");
    assert_int_equal(cJSON_GetArraySize(v), 2);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 0), "model_version")->valuestring,
        "v2");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "asked")->valueint,
                     4);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "queued")->valueint,
                     4);
    {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "hist");
        const cJSON *it;

        assert_int_equal(cJSON_GetArraySize(h), MF_OFFLOAD_HIST_BINS);
        cJSON_ArrayForEach(it, h)
        {
            sum += it->valuedouble;
        }
    }
    assert_true(sum == 4.0);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "queue"), "count")
            ->valueint,
        6);
    cJSON_Delete(doc);
    assert_int_equal(mf_offload_telemetry_json(&len, buf, 100, o), MF_E_LIMIT);
    mf_offload_telemetry_reset(o);
    assert_int_equal(mf_offload_telemetry_get(o)->asked, 0);
    assert_string_equal(mf_offload_telemetry_get(o)->model_version, "v2");
    mf_offload_free(o);
}

/* What the library under test logged at ERROR (its options point here). */
static struct mf_kit_log errlog;

static void test_offload_net__bad_options_and_samples(void **state)
{
    struct fx *f = *state;
    mf_offload *o = NULL;
    mf_offload_sample s;
    mf_offload_answer a;
    const float nan3[3] = {0, NAN, 1};

    f->opts.log_fn = mf_kit_log_errors;
    f->opts.log_payload = &errlog;
    f->opts.model = "../etc";
    assert_int_equal(mf_offload_new(&o, &f->opts), MF_E_INVALID);
    assert_null(o);
    assert_non_null(strstr(errlog.last, "model name"));
    f->opts.model = "digits";
    f->opts.queue_max_bytes = 1000;
    assert_int_equal(mf_offload_new(&o, &f->opts), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "fewer than two samples"));
    f->opts.queue_max_bytes = 256 * 1024;
    assert_int_equal(mf_offload_options_init(&f->opts, 7), MF_E_INVALID);
    o = new_handle(f, ASYNC_POLICY);
    s = sample(nan3, 0);
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_E_INVALID);
    assert_non_null(strstr(mf_offload_errmsg(o), "finite logits"));
    s = sample(uncertain_logits, 0);
    s.input_len = 5000;
    assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_E_INVALID);
    assert_non_null(strstr(mf_offload_errmsg(o), "5000 bytes"));
    mf_offload_free(o);
    mf_offload_free(NULL);
}

/*
 * mf_offload_new() has no handle to fail into: options version 2 carry an error buffer that
 * receives the message (no log_fn needed). A version-1 struct (an app of the older header)
 * ends before that buffer: the library reads and writes nothing past it.
 */
static void test_offload_net__new_failure_fills_the_error_buffer(void **state)
{
    struct fx *f = *state;
    mf_offload *o = (mf_offload *)1;
    char errbuf[256];
    struct {
        mf_offload_options v1; /* only offsetof(errbuf) bytes of it are the app's */
    } old;
    unsigned char *tail = (unsigned char *)&old.v1 + offsetof(mf_offload_options, errbuf);

    f->opts.log_fn = NULL;
    f->opts.model = "../etc";
    f->opts.errbuf = errbuf;
    f->opts.errbuf_size = sizeof(errbuf);
    assert_int_equal(mf_offload_new(&o, &f->opts), MF_E_INVALID);
    assert_null(o);
    assert_non_null(strstr(errbuf, "model name"));
    /* Version 1: whatever lies where errbuf would be is never used as a buffer. */
    memcpy(&old.v1, &f->opts, sizeof(old.v1));
    old.v1.version = 1;
    memset(tail, 0xa5, sizeof(old.v1) - offsetof(mf_offload_options, errbuf));
    assert_int_equal(mf_offload_new(&o, &old.v1), MF_E_INVALID);
    assert_null(o);
    /* ... and a valid version-1 struct makes a handle. */
    old.v1.model = "digits";
    assert_int_equal(mf_offload_new(&o, &old.v1), MF_OK);
    mf_offload_free(o);
    assert_int_equal(mf_offload_options_init(&old.v1, 1), MF_OK);
    assert_int_equal(tail[0], 0xa5); /* init of version 1 stops before errbuf too */
}

static void test_offload_net__every_allocation_failure_is_clean(void **state)
{
    struct fx *f = *state;
    int done = 0, failures = 0;

    for (long n = 0; !done && n < 200; n++) {
        mf_offload *o = NULL;
        int err;

        f->ta.calls = 0;
        f->ta.fail_at = n;
        err = mf_offload_new(&o, &f->opts);
        if (err == MF_OK) {
            mf_offload_sample s = sample(uncertain_logits, (int)n);
            mf_offload_answer a;

            err = mf_offload_set_policy_json(o, ASYNC_POLICY, strlen(ASYNC_POLICY));
            assert_int_equal(mf_offload_ask(&a, NULL, o, &s), MF_OK);
            if (err == MF_OK)
                err = mf_offload_drain(o, 4);
            if (err < 0)
                assert_true(mf_offload_errmsg(o)[0] != '\0');
            mf_offload_free(o);
        } else {
            assert_int_equal(err, MF_E_NOMEM);
            assert_null(o);
        }
        done = f->ta.calls <= n;
        failures += !done;
    }
    assert_true(done);
    assert_true(failures > 5);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_offload_net__fast_teacher_answers),
        T(test_offload_net__slow_teacher_falls_back_within_deadline),
        T(test_offload_net__server_down_falls_back),
        T(test_offload_net__malformed_answers_fall_back),
        T(test_offload_net__offline_edge_only_and_caps),
        T(test_offload_net__drain_uplinks_each_sample_once),
        T(test_offload_net__crash_after_send_before_ack),
        T(test_offload_net__kill_at_every_point_of_upload),
        T(test_offload_net__backoff_with_jitter),
        T(test_offload_net__policy_is_cached_and_bad_policy_rejected),
        T(test_offload_net__telemetry_json),
        T(test_offload_net__bad_options_and_samples),
        T(test_offload_net__new_failure_fills_the_error_buffer),
        T(test_offload_net__every_allocation_failure_is_clean),
    };
#undef T
    return cmocka_run_group_tests_name("offload_net", tests, NULL, NULL);
}
