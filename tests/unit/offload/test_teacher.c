/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Teacher connectors and their guards (server/offload/teacher.c): a KServe v2 request and
 * response against a fake Open Inference Protocol server started here, the external
 * command contract, the built-in teacher of the example family against the float MLP it
 * loads, timeouts that end a slow call within its deadline, and the circuit breaker
 * (opens after N failures, fails fast while open, half-opens for one trial, closes).
 */
#define _GNU_SOURCE
#include "mf_test.h"
#include "kit_case.h"
#include "teacher_fixture.h"

#include "mf_ctx.h"
#include "mf_mlp.h"
#include "offload/offload_srv.h"
#include "offload/teacher.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const float three[3] = {0.2f, 0.3f, 0.5f};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void kserve_config(struct mf_teacher_config *c, uint16_t port)
{
    mf_teacher__config_init(c, "digits", "kserve");
    (void)snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%u", port);
    (void)snprintf(c->remote_name, sizeof(c->remote_name), "teach");
    c->timeout_ms = 1000;
}

/* One KServe teacher under test: its config, the fake it asks, and the last answer. */
struct kserve {
    struct mf_teacher_config c;
    struct teacher_fake f;
    struct mf_ctx ctx;
    struct mf_teacher *t;
    char ver[MF_STORE_NAME_SIZE];
    float p[3];
};

/* Starts `k`'s fake answering in `mode` and a teacher on it (configured as kserve_config
 * makes it, plus breaker settings when not 0). */
static void kserve_teacher(struct kserve *k, enum teacher_fake_mode mode, unsigned breaker_failures,
                           unsigned breaker_open_ms)
{
    k->t = NULL;
    mf_ctx__init(&k->ctx, NULL, NULL, NULL, "test");
    teacher_fake_start(&k->f, three, 3);
    teacher_fake_set(&k->f, mode, mode == TEACHER_FAKE_SLOW ? 1500 : 0);
    kserve_config(&k->c, (uint16_t)k->f.http.port);
    if (breaker_failures)
        k->c.breaker_failures = breaker_failures;
    if (breaker_open_ms)
        k->c.breaker_open_ms = breaker_open_ms;
    assert_int_equal(mf_teacher__new(&k->t, &k->ctx, &k->c), MF_OK);
}

static void kserve_done(struct kserve *k)
{
    mf_teacher__free(k->t);
    teacher_fake_stop(&k->f);
}

/* Asks `k`'s teacher for `nout` probabilities of `in` (into k->p, its version into k->ver). */
static int kserve_ask(struct kserve *k, const uint8_t *in, size_t len, size_t nout,
                      unsigned timeout_ms)
{
    return mf_teacher__ask(k->p, k->ver, k->t, &k->ctx, in, len, nout, timeout_ms);
}

static void test_teacher__kserve_request_and_response(void **state)
{
    static const uint8_t in[4] = {0, 7, 200, 255};
    struct kserve k;

    (void)state;
    kserve_teacher(&k, TEACHER_FAKE_OK, 0, 0);
    assert_int_equal(kserve_ask(&k, in, sizeof(in), 3, 0), MF_OK);
    for (int i = 0; i < 3; i++)
        assert_true(fabsf(k.p[i] - three[i]) < 1e-6f);
    assert_string_equal(k.ver, "k-3"); /* the server's model_version wins over the config */
    assert_string_equal(mf_kit_http_request(&k.f.http, -1)->target, "/v2/models/teach/infer");
    assert_non_null(strstr(mf_kit_http_request(&k.f.http, -1)->body, "\"shape\":[1,4]"));
    assert_non_null(strstr(mf_kit_http_request(&k.f.http, -1)->body, "\"datatype\":\"UINT8\""));
    assert_non_null(strstr(mf_kit_http_request(&k.f.http, -1)->body, "\"data\":[0,7,200,255]"));
    /* Another shape than asked: the answer is refused. */
    assert_int_equal(kserve_ask(&k, in, sizeof(in), 4, 0), MF_E_INVALID);
    kserve_done(&k);
}

static const uint8_t two[2] = {1, 2};

static void test_teacher__slow_teacher_ends_at_the_deadline(void **state)
{
    struct kserve k;
    double t0;

    (void)state;
    kserve_teacher(&k, TEACHER_FAKE_SLOW, 0, 0);
    t0 = now_ms();
    assert_int_equal(kserve_ask(&k, two, sizeof(two), 3, 150), MF_E_NET);
    assert_true(now_ms() - t0 < 600); /* the caller's 150 ms, not the teacher's 1.5 s */
    kserve_done(&k);
}

static void test_teacher__breaker_opens_and_half_opens(void **state)
{
    struct kserve k;
    unsigned calls;
    double t0;

    (void)state;
    kserve_teacher(&k, TEACHER_FAKE_FAIL, 2, 300);
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_E_NET);
    assert_int_equal(mf_teacher__breaker(k.t), MF_TEACHER_CLOSED);
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_E_NET);
    assert_int_equal(mf_teacher__breaker(k.t), MF_TEACHER_OPEN);
    /* Open: fails at once, without reaching the teacher. */
    calls = mf_kit_http_answered(&k.f.http);
    t0 = now_ms();
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_E_STATE);
    assert_true(now_ms() - t0 < 20);
    assert_int_equal(mf_kit_http_answered(&k.f.http), calls);
    /* After the open period: one trial; it fails, so the breaker opens again. */
    usleep(350 * 1000);
    assert_int_equal(mf_teacher__breaker(k.t), MF_TEACHER_HALF_OPEN);
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_E_NET);
    assert_int_equal(mf_teacher__breaker(k.t), MF_TEACHER_OPEN);
    /* The teacher recovers: the next trial succeeds and closes the breaker. */
    teacher_fake_set(&k.f, TEACHER_FAKE_OK, 0);
    usleep(350 * 1000);
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_OK);
    assert_int_equal(mf_teacher__breaker(k.t), MF_TEACHER_CLOSED);
    kserve_done(&k);
}

static void test_teacher__down_teacher_fails_fast(void **state)
{
    struct kserve k = {.t = NULL};
    double t0;

    (void)state;
    mf_ctx__init(&k.ctx, NULL, NULL, NULL, "test");
    kserve_config(&k.c, (uint16_t)mf_kit_http_free_port()); /* connection refused */
    k.c.timeout_ms = 5000;
    assert_int_equal(mf_teacher__new(&k.t, &k.ctx, &k.c), MF_OK);
    t0 = now_ms();
    assert_int_equal(kserve_ask(&k, two, 2, 3, 0), MF_E_NET);
    assert_true(now_ms() - t0 < 1000);
    assert_non_null(strstr(mf_ctx__errmsg(&k.ctx), "kserve"));
    mf_teacher__free(k.t);
}

static void command_config(struct mf_teacher_config *c, const char *script)
{
    mf_teacher__config_init(c, "digits", "command");
    (void)snprintf(c->argv_store, sizeof(c->argv_store), "/bin/sh%c-c%c%s", 0, 0, script);
    c->argv[0] = c->argv_store;
    c->argv[1] = c->argv_store + 8;
    c->argv[2] = c->argv_store + 11;
    c->argv[3] = NULL;
    c->timeout_ms = 3000;
}

static void test_teacher__command_contract(void **state)
{
    struct mf_teacher_config c;
    struct mf_teacher *t = NULL;
    struct mf_ctx ctx;
    uint8_t in[300];
    char ver[MF_STORE_NAME_SIZE];
    float p[2];
    double t0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (uint8_t)i;
    /* The program checks what it was sent: the model, the class count and base64. */
    command_config(&c, "read -r line; case \"$line\" in"
                       " *'\"model\":\"digits\",\"n_classes\":2,\"input\":\"AAECAwQF'*)"
                       " echo '{\"probs\":[0.25,0.75],\"version\":\"cmd-1\"}';;"
                       " *) echo '{}';; esac");
    assert_int_equal(mf_teacher__new(&t, &ctx, &c), MF_OK);
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, sizeof(in), 2, 0), MF_OK);
    assert_true(p[0] == 0.25f && p[1] == 0.75f);
    assert_string_equal(ver, "cmd-1");
    mf_teacher__free(t);
    /* A failing program, and one that never answers (killed at the timeout). */
    command_config(&c, "cat >/dev/null; exit 3");
    assert_int_equal(mf_teacher__new(&t, &ctx, &c), MF_OK);
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, sizeof(in), 2, 0), MF_E_NET);
    mf_teacher__free(t);
    command_config(&c, "exec sleep 30");
    assert_int_equal(mf_teacher__new(&t, &ctx, &c), MF_OK);
    t0 = now_ms();
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, sizeof(in), 2, 200), MF_E_NET);
    assert_true(now_ms() - t0 < 1500);
    mf_teacher__free(t);
}

static void test_teacher__builtin_matches_the_example_teacher(void **state)
{
    static const uint32_t sizes[3] = {16, 12, 4};
    struct mf_teacher_config c;
    struct mf_teacher *t = NULL;
    struct mf_ctx ctx;
    mf_mlp *m = NULL;
    char path[] = "/tmp/mf-teacher-XXXXXX";
    char ver[MF_STORE_NAME_SIZE];
    uint8_t in[16];
    float want[4], p[4];
    int fd;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mf_mlp_new(&m, &ctx, NULL, sizes, 3, 1.0f / 255.0f, 42), MF_OK);
    assert_int_equal(mf_mlp_save(m, &ctx, path, NULL, 0), MF_OK);
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (uint8_t)(i * 16);
    assert_int_equal(mf_mlp_logits(want, &ctx, m, in, 1, 1), MF_OK);
    mf_teacher__softmax(want, 4);
    mf_teacher__config_init(&c, "digits", "builtin");
    c.output_logits = 1;
    (void)snprintf(c.path, sizeof(c.path), "%s", path);
    (void)snprintf(c.version, sizeof(c.version), "mlp-1");
    assert_int_equal(mf_teacher__new(&t, &ctx, &c), MF_OK);
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, sizeof(in), 4, 0), MF_OK);
    for (int i = 0; i < 4; i++)
        assert_true(fabsf(p[i] - want[i]) < 1e-6f);
    assert_string_equal(ver, "mlp-1");
    /* Wrong input size or class count: refused with a message. */
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, 8, 4, 0), MF_E_INVALID);
    assert_int_equal(mf_teacher__ask(p, ver, t, &ctx, in, sizeof(in), 3, 0), MF_E_INVALID);
    mf_teacher__free(t);
    /* A missing file fails at open. */
    (void)snprintf(c.path, sizeof(c.path), "%s.missing", path);
    assert_true(mf_teacher__new(&t, &ctx, &c) < 0);
    mf_mlp_free(m);
    unlink(path);
}

static int parse_config(void *cfg, struct mf_ctx *ctx, const char *json)
{
    return mf_offsrv__config_parse(cfg, ctx, json, strlen(json));
}

static void test_teacher__config_errors(void **state)
{
    static const struct mf_kit_case bad[] = {
        {"[]", "top level is not a JSON object"},
        {"{\"models\":{\"d\":{\"policy\":{\"enabled\":true,\"bogus\":1}}}}",
         "models.d.policy: unknown key 'bogus'"},
        {"{\"models\":{\"d\":{\"policy\":{\"method\":\"margin\"}}}}",
         "models.d.policy: 'enabled' (bool) is required"},
        {"{\"models\":{\"d\":{\"policy\":{\"enabled\":true,\"target_rate\":2}}}}",
         "'target_rate' must be in [0, 1]"},
        {"{\"models\":{\"d\":{\"teacher\":{\"connector\":\"kserve\",\"output\":\"odds\"}}}}",
         "models.d.teacher: 'output' is probs or logits"},
        {"{\"models\":{\"d\":{\"teacher\":{\"connector\":\"command\",\"command\":[]}}}}",
         "'command' must be 1..16 strings"},
        {"{\"retention_days\":-1}", "'retention_days' must be an integer in [0, 36500]"},
    };
    struct mf_offload_config *cfg = calloc(1, sizeof(*cfg));
    struct mf_offload_srv *srv = NULL;
    struct mf_ctx ctx;
    const char *unknown = "{\"models\":{\"d\":{\"teacher\":{\"connector\":\"telepathy\"}}}}";
    const char *good = "{\"retention_days\":30,\"models\":{\"d\":{\"teacher\":{\"connector\":"
                       "\"command\",\"command\":[\"/bin/true\"],\"version\":\"t-1\"},"
                       "\"policy\":{\"enabled\":true,\"method\":\"margin\","
                       "\"target_rate\":0.1}}}}";

    (void)state;
    assert_non_null(cfg);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_kit_case_refused(bad, MF_TEST_COUNT(bad), parse_config, cfg);
    assert_int_equal(mf_offsrv__config_parse(cfg, &ctx, unknown, strlen(unknown)), MF_OK);
    assert_int_equal(mf_offsrv__srv_new(&srv, &ctx, cfg), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&ctx), "telepathy"));
    assert_int_equal(mf_offsrv__config_parse(cfg, &ctx, good, strlen(good)), MF_OK);
    assert_int_equal(cfg->retention_days, 30);
    assert_string_equal(cfg->models[0].method, "margin");
    assert_true(cfg->models[0].target_rate == 0.1);
    assert_string_equal(cfg->models[0].teacher.argv[0], "/bin/true");
    assert_int_equal(mf_offsrv__srv_new(&srv, &ctx, cfg), MF_OK);
    assert_non_null(mf_offsrv__teacher(srv, "d"));
    assert_null(mf_offsrv__teacher(srv, "e"));
    mf_offsrv__srv_free(srv);
    free(cfg);
}

static void test_teacher__hist_quantile(void **state)
{
    uint64_t bins[MF_STORE_HIST_BINS] = {0};

    (void)state;
    assert_true(mf_offsrv__hist_quantile(bins, 0.1) < 0);
    /* Uniform over [0, 1): the 10% quantile is 0.1, also with counts beyond 32 bits. */
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        bins[i] = 1ull << 40;
    assert_true(fabs(mf_offsrv__hist_quantile(bins, 0.1) - 0.1) < 1e-3);
    assert_true(fabs(mf_offsrv__hist_quantile(bins, 0.5) - 0.5) < 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_teacher__kserve_request_and_response),
        cmocka_unit_test(test_teacher__slow_teacher_ends_at_the_deadline),
        cmocka_unit_test(test_teacher__breaker_opens_and_half_opens),
        cmocka_unit_test(test_teacher__down_teacher_fails_fast),
        cmocka_unit_test(test_teacher__command_contract),
        cmocka_unit_test(test_teacher__builtin_matches_the_example_teacher),
        cmocka_unit_test(test_teacher__config_errors),
        cmocka_unit_test(test_teacher__hist_quantile),
    };
    (void)signal(SIGPIPE, SIG_IGN); /* a teacher command that exits before reading */
    return cmocka_run_group_tests_name("teacher", tests, NULL, NULL);
}
