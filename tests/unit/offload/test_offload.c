/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pure parts of mf_offload: scores against vectors computed independently (Python, float64),
 * strict policy parsing, the "stricter only" app merge, the routing decision, hard rate caps
 * under bursts with simulated time, and telemetry histograms/JSON.
 */
#include "mf_test.h"
#include "mf_offload_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- scores ---- */

static void test_offload__score_vectors(void **state)
{
    static const struct {
        float x[4];
        size_t n;
        int kind;
        float t;
        float want[3]; /* max-softmax, margin, entropy confidence */
    } v[] = {
        {{2, 1, 0}, 3, MF_OFFLOAD_LOGITS, 1, {0.6652410f, 0.4205125f, 0.2423209f}},
        {{2, 1, 0}, 3, MF_OFFLOAD_LOGITS, 2, {0.5064804f, 0.1992845f, 0.0713818f}},
        {{0.7f, 0.2f, 0.1f}, 3, MF_OFFLOAD_PROBS, 1, {0.7f, 0.5f, 0.2701533f}},
        {{0.7f, 0.2f, 0.1f}, 3, MF_OFFLOAD_PROBS, 2, {0.5228794f, 0.2433886f, 0.0754179f}},
        {{3, -1, 0.5f, 2.5f}, 4, MF_OFFLOAD_LOGITS, 0.5f, {0.7272977f, 0.4597398f, 0.5582240f}},
        {{0.25f, 0.25f, 0.25f, 0.25f}, 4, MF_OFFLOAD_PROBS, 1, {0.25f, 0, 0}},
        {{1, 0, 0}, 3, MF_OFFLOAD_PROBS, 1, {1, 1, 1}},
        /* shift invariance and no overflow: logits far from 0 */
        {{1002, 1001, 1000}, 3, MF_OFFLOAD_LOGITS, 1, {0.6652410f, 0.4205125f, 0.2423209f}},
        {{-500, -501, -502}, 3, MF_OFFLOAD_LOGITS, 1, {0.6652410f, 0.4205125f, 0.2423209f}},
        {{3e38f, 0, -3e38f}, 3, MF_OFFLOAD_LOGITS, 1, {1, 1, 1}},
        /* ties: two top classes give a zero margin */
        {{1, 1, 0}, 3, MF_OFFLOAD_LOGITS, 1, {0.4223188f, 0, 0.0739616f}},
    };
    (void)state;
    for (size_t i = 0; i < N_OF(v); i++) {
        for (int m = 0; m < 3; m++) {
            float s = -1;

            assert_int_equal(mf_offload_score(&s, m, v[i].kind, v[i].x, v[i].n, v[i].t), MF_OK);
            if (fabsf(s - v[i].want[m]) > 2e-6f)
                fail_msg("vector %zu method %d: %.7f, want %.7f", i, m, (double)s,
                         (double)v[i].want[m]);
        }
    }
}

static void test_offload__score_rejects_bad_input(void **state)
{
    static const float ok[3] = {1, 2, 3};
    const float nan3[3] = {1, NAN, 3}, inf3[3] = {1, INFINITY, 3}, neg[3] = {0.5f, -0.1f, 0.6f};
    const float zeros[3] = {0, 0, 0};
    float s;

    (void)state;
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, nan3, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, inf3, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_PROBS, neg, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_PROBS, zeros, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, 1, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, MF_OFFLOAD_MAX_CLASSES + 1, 1),
                     MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, 3, 0), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, 3, -1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, 3, NAN), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 3, MF_OFFLOAD_LOGITS, ok, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, 2, ok, 3, 1), MF_E_INVALID);
    assert_int_equal(mf_offload_score(&s, 0, MF_OFFLOAD_LOGITS, ok, 3, 1), MF_OK);
}

/* A large output: the scores stay in [0, 1] and a uniform vector scores 1/n, 0, 0. */
static void test_offload__score_many_classes(void **state)
{
    static float x[MF_OFFLOAD_MAX_CLASSES];
    float s;

    (void)state;
    for (size_t i = 0; i < N_OF(x); i++)
        x[i] = 0.5f;
    assert_int_equal(mf_offload_score(&s, MF_OFFLOAD_MAX_SOFTMAX, MF_OFFLOAD_LOGITS, x, N_OF(x), 1),
                     MF_OK);
    assert_true(fabsf(s - 1.0f / (float)N_OF(x)) < 1e-6f);
    assert_int_equal(mf_offload_score(&s, MF_OFFLOAD_MARGIN, MF_OFFLOAD_LOGITS, x, N_OF(x), 1),
                     MF_OK);
    assert_true(s == 0.0f);
    assert_int_equal(mf_offload_score(&s, MF_OFFLOAD_ENTROPY, MF_OFFLOAD_LOGITS, x, N_OF(x), 1),
                     MF_OK);
    assert_true(s < 1e-3f);
}

/* ---- policy ---- */

#define FULL_POLICY                                                                                \
    "{\"enabled\":true,\"method\":\"margin\",\"mode\":\"async\",\"threshold\":0.4,"                \
    "\"target_rate\":0.1,\"temperature\":1.5,\"rate_caps\":{\"per_minute\":6,\"per_hour\":60,"     \
    "\"per_day\":500},\"bytes_per_day\":1048576,\"audit_fraction\":0.02,\"metered\":\"deny\","     \
    "\"deadline_ms\":250,\"model_version\":\"v3\"}"

static void test_offload__policy_parses_every_field(void **state)
{
    struct mf_ctx ctx;
    mf_offload_policy p;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_offload__policy_parse(&ctx, &p, FULL_POLICY, strlen(FULL_POLICY)), MF_OK);
    assert_int_equal(p.enabled, 1);
    assert_int_equal(p.method, MF_OFFLOAD_MARGIN);
    assert_int_equal(p.mode, MF_OFFLOAD_MODE_ASYNC);
    assert_true(fabsf(p.threshold - 0.4f) < 1e-7f);
    assert_true(fabsf(p.target_rate - 0.1f) < 1e-7f);
    assert_true(fabsf(p.temperature - 1.5f) < 1e-7f);
    assert_int_equal(p.per_minute, 6);
    assert_int_equal(p.per_hour, 60);
    assert_int_equal(p.per_day, 500);
    assert_int_equal(p.bytes_per_day, 1048576);
    assert_true(fabsf(p.audit_fraction - 0.02f) < 1e-7f);
    assert_int_equal(p.metered, MF_OFFLOAD_METERED_DENY);
    assert_int_equal(p.deadline_ms, 250);
    assert_string_equal(p.model_version, "v3");
}

static void test_offload__policy_defaults(void **state)
{
    static const char json[] = "{\"enabled\":true,\"target_rate\":0.05}";
    struct mf_ctx ctx;
    mf_offload_policy p;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_offload__policy_parse(&ctx, &p, json, strlen(json)), MF_OK);
    assert_int_equal(p.method, MF_OFFLOAD_MAX_SOFTMAX);
    assert_int_equal(p.mode, MF_OFFLOAD_MODE_SYNC);
    assert_true(p.threshold < 0.0f); /* derived from the target rate */
    assert_int_equal(p.per_minute, MF_OFFLOAD_UNLIMITED);
    assert_int_equal(p.per_day, MF_OFFLOAD_UNLIMITED);
    assert_true(p.bytes_per_day == UINT64_MAX);
    assert_int_equal(p.metered, MF_OFFLOAD_METERED_DEFER);
    assert_int_equal(p.deadline_ms, 1000);
    assert_true(p.audit_fraction == 0.0f);
    assert_string_equal(p.model_version, "");
}

static void test_offload__policy_rejects_bad_fields(void **state)
{
    static const struct {
        const char *json;
        const char *needle; /* the message must name the problem */
    } bad[] = {
        {"", "offload policy: line 1: not valid JSON at byte 0: empty input"},
        {"[1]", "offload policy: top level is not a JSON object"},
        {"{\"enabled\":true,\"threshold\":0.5", "at byte 31: unexpected end of input"},
        {"{\"threshold\":0.5}", "\"enabled\""},
        {"{\"enabled\":\"yes\",\"threshold\":0.5}", "\"enabled\""},
        {"{\"enabled\":true,\"threshold\":1.5}", "\"threshold\""},
        {"{\"enabled\":true,\"threshold\":\"0.5\"}", "\"threshold\""},
        {"{\"enabled\":true,\"target_rate\":-0.1}", "\"target_rate\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"temperature\":0}", "\"temperature\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"method\":\"variance\"}", "\"method\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"mode\":1}", "\"mode\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"metered\":\"sometimes\"}", "\"metered\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"treshold\":0.5}", "unknown key \"treshold\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"rate_caps\":5}", "\"rate_caps\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"rate_caps\":{\"per_minute\":-1}}",
         "\"per_minute\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"rate_caps\":{\"per_hour\":1.5}}", "\"per_hour\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"rate_caps\":{\"per_week\":1}}",
         "rate_caps.per_week"},
        {"{\"enabled\":true,\"threshold\":0.5,\"bytes_per_day\":1e12}", "\"bytes_per_day\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"audit_fraction\":2}", "\"audit_fraction\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"deadline_ms\":0}", "\"deadline_ms\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"deadline_ms\":60001}", "\"deadline_ms\""},
        {"{\"enabled\":true}", "\"threshold\" or \"target_rate\""},
        {"{\"enabled\":true,\"threshold\":0.5,\"model_version\":\"../v1\"}", "\"model_version\""},
    };
    static char big[MF_OFFLOAD_POLICY_JSON_MAX + 2];
    struct mf_ctx ctx;
    mf_offload_policy p;

    (void)state;
    for (size_t i = 0; i < N_OF(bad); i++) {
        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        assert_int_equal(mf_offload__policy_parse(&ctx, &p, bad[i].json, strlen(bad[i].json)),
                         MF_E_INVALID);
        if (!strstr(ctx.errmsg, bad[i].needle))
            fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, ctx.errmsg, bad[i].needle);
    }
    memset(big, ' ', sizeof(big) - 1);
    assert_int_equal(mf_offload__policy_parse(&ctx, &p, big, sizeof(big) - 1), MF_E_LIMIT);
}

static void test_offload__app_limits_only_tighten(void **state)
{
    mf_offload_policy server, app, out;

    (void)state;
    assert_int_equal(mf_offload_policy_init(&server, MF_OFFLOAD_POLICY_VERSION), MF_OK);
    assert_int_equal(mf_offload_policy_init(&app, 99), MF_E_INVALID);
    assert_int_equal(mf_offload_policy_init(&app, MF_OFFLOAD_POLICY_VERSION), MF_OK);
    server.threshold = 0.5f;
    server.per_minute = 10;
    server.per_day = 100;
    server.audit_fraction = 0.1f;
    server.metered = MF_OFFLOAD_METERED_DEFER;
    server.temperature = 2.0f;
    server.deadline_ms = 300;
    /* The least strict app policy changes nothing. */
    mf_offload_policy_restrict(&out, &server, &app);
    assert_memory_equal(&out, &server, sizeof(out));
    /* Stricter app values win; looser ones are ignored. */
    app.threshold = 0.3f;
    app.per_minute = 20;
    app.per_day = 50;
    app.audit_fraction = 0.5f;
    app.metered = MF_OFFLOAD_METERED_ALLOW;
    app.temperature = 9.0f;
    app.deadline_ms = 100;
    app.mode = MF_OFFLOAD_MODE_ASYNC;
    mf_offload_policy_restrict(&out, &server, &app);
    assert_true(out.threshold == 0.3f);
    assert_int_equal(out.per_minute, 10);
    assert_int_equal(out.per_day, 50);
    assert_true(out.audit_fraction == 0.1f);
    assert_int_equal(out.metered, MF_OFFLOAD_METERED_DEFER);
    assert_true(out.temperature == 2.0f); /* calibration comes from the server */
    assert_int_equal(out.deadline_ms, 100);
    assert_int_equal(out.mode, MF_OFFLOAD_MODE_ASYNC);
    app.enabled = 0;
    mf_offload_policy_restrict(&out, &server, &app);
    assert_int_equal(out.enabled, 0);
}

/* ---- decision ---- */

static mf_offload_policy open_policy(void)
{
    mf_offload_policy p;

    assert_int_equal(mf_offload_policy_init(&p, MF_OFFLOAD_POLICY_VERSION), MF_OK);
    p.threshold = 0.5f;
    p.audit_fraction = 0.0f;
    return p;
}

static void decide_expect(const mf_offload_policy *p, mf_offload_budget *b, float score,
                          mf_offload_link link, uint32_t rnd, mf_offload_route route,
                          mf_offload_reason reason)
{
    mf_offload_decision d;

    mf_offload_decide(&d, p, b, score, p ? p->threshold : -1.0f, 100, 0, rnd, link);
    if (d.route != route || d.reason != reason)
        fail_msg("score %.2f link %d: route %d reason %s, want route %d reason %s", (double)score,
                 (int)link, (int)d.route, mf_offload_reason_name(d.reason), (int)route,
                 mf_offload_reason_name(reason));
}

static void test_offload__decide_routes(void **state)
{
    mf_offload_policy p = open_policy();
    mf_offload_budget b;

    (void)state;
    mf_offload_budget_init(&b, &p, 0);
    decide_expect(NULL, &b, 0.1f, 0, 0, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_NO_POLICY);
    decide_expect(&p, &b, 0.9f, 0, 0, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT);
    decide_expect(&p, &b, 0.5f, 0, 0, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_CONFIDENT);
    decide_expect(&p, &b, 0.49f, 0, 0, MF_OFFLOAD_ROUTE_SYNC, MF_OFFLOAD_REASON_UNCERTAIN);
    decide_expect(&p, &b, 0.1f, MF_OFFLOAD_LINK_OFFLINE, 0, MF_OFFLOAD_ROUTE_QUEUE,
                  MF_OFFLOAD_REASON_OFFLINE);
    p.metered = MF_OFFLOAD_METERED_DEFER;
    decide_expect(&p, &b, 0.1f, MF_OFFLOAD_LINK_METERED, 0, MF_OFFLOAD_ROUTE_QUEUE,
                  MF_OFFLOAD_REASON_METERED);
    p.metered = MF_OFFLOAD_METERED_DENY;
    decide_expect(&p, &b, 0.1f, MF_OFFLOAD_LINK_METERED, 0, MF_OFFLOAD_ROUTE_LOCAL,
                  MF_OFFLOAD_REASON_METERED);
    decide_expect(&p, &b, 0.1f, MF_OFFLOAD_LINK_UNMETERED, 0, MF_OFFLOAD_ROUTE_SYNC,
                  MF_OFFLOAD_REASON_UNCERTAIN);
    p.mode = MF_OFFLOAD_MODE_ASYNC;
    decide_expect(&p, &b, 0.1f, 0, 0, MF_OFFLOAD_ROUTE_QUEUE, MF_OFFLOAD_REASON_UNCERTAIN);
    p.audit_fraction = 0.25f;
    decide_expect(&p, &b, 0.9f, 0, 0, MF_OFFLOAD_ROUTE_AUDIT, MF_OFFLOAD_REASON_AUDIT);
    decide_expect(&p, &b, 0.9f, 0, 0x40000000u, MF_OFFLOAD_ROUTE_LOCAL,
                  MF_OFFLOAD_REASON_CONFIDENT);
    p.threshold = -1.0f;
    decide_expect(&p, &b, 0.1f, 0, 0xffffffffu, MF_OFFLOAD_ROUTE_LOCAL,
                  MF_OFFLOAD_REASON_NO_THRESHOLD);
    p.enabled = 0;
    decide_expect(&p, &b, 0.1f, 0, 0, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_EDGE_ONLY);
    assert_string_equal(mf_offload_reason_name(MF_OFFLOAD_REASON_TIMEOUT), "timeout");
    assert_string_equal(mf_offload_reason_name(99), "?");
}

/* The audit share of confident samples matches the fraction over uniform random values. */
static void test_offload__audit_fraction_is_honoured(void **state)
{
    mf_offload_policy p = open_policy();
    mf_offload_budget b;
    uint64_t rng = 42;
    int audits = 0;

    (void)state;
    p.audit_fraction = 0.2f;
    mf_offload_budget_init(&b, &p, 0);
    for (int i = 0; i < 100000; i++) {
        mf_offload_decision d;

        mf_offload_decide(&d, &p, &b, 0.9f, 0.5f, 10, 0,
                          (uint32_t)(mf_offload__rng_next(&rng) >> 32), 0);
        audits += d.route == MF_OFFLOAD_ROUTE_AUDIT;
    }
    assert_in_range(audits, 19500, 20500);
}

/*
 * Bursty arrivals over three simulated days against caps per minute, hour and day and a
 * byte budget: no interval of one window ever holds more than the cap, and the caps are
 * reached (so the test would notice a cap that lets nothing through).
 */
static void check_windows(const uint64_t *t, size_t n, uint64_t window, uint32_t cap,
                          const char *what)
{
    size_t lo = 0;
    uint32_t best = 0;

    for (size_t hi = 0; hi < n; hi++) {
        while (t[hi] - t[lo] >= window)
            lo++;
        if (hi - lo + 1 > best)
            best = (uint32_t)(hi - lo + 1);
    }
    if (best > cap)
        fail_msg("%s: %u samples in one window, cap %u", what, best, cap);
    if (best < cap)
        fail_msg("%s: cap %u never reached (max %u)", what, cap, best);
}

static void test_offload__rate_caps_hold_under_bursts(void **state)
{
    enum { MAXPASS = 4000 };
    static uint64_t passed[MAXPASS];
    mf_offload_policy p = open_policy();
    mf_offload_budget b;
    uint64_t rng = 7, now = 0, end = 3ull * 86400000;
    size_t n = 0;
    int capped = 0;

    (void)state;
    p.per_minute = 5;
    p.per_hour = 40;
    p.per_day = 300;
    mf_offload_budget_init(&b, &p, now);
    while (now < end) {
        /* A burst of 1..200 uncertain samples within a few ms, then a random pause. */
        uint64_t burst = 1 + mf_offload__rng_next(&rng) % 200;

        for (uint64_t i = 0; i < burst; i++) {
            mf_offload_decision d;

            mf_offload_decide(&d, &p, &b, 0.1f, 0.5f, 100, now + i / 50, 0, 0);
            if (d.route != MF_OFFLOAD_ROUTE_LOCAL) {
                assert_true(n < MAXPASS);
                passed[n++] = now + i / 50;
            } else {
                assert_int_equal(d.reason, MF_OFFLOAD_REASON_RATE_CAP);
                capped++;
            }
        }
        now += mf_offload__rng_next(&rng) % 400000;
    }
    check_windows(passed, n, 60000, 5, "minute");
    check_windows(passed, n, 3600000, 40, "hour");
    check_windows(passed, n, 86400000, 300, "day");
    assert_true(capped > 0);
}

static void test_offload__byte_budget_holds(void **state)
{
    mf_offload_policy p = open_policy();
    mf_offload_budget b;
    uint64_t sent = 0;
    int refused = 0;

    (void)state;
    p.bytes_per_day = 10000;
    mf_offload_budget_init(&b, &p, 0);
    for (int i = 0; i < 1000; i++) {
        mf_offload_decision d;

        mf_offload_decide(&d, &p, &b, 0.1f, 0.5f, 784, (uint64_t)i * 1000, 0, 0);
        if (d.route == MF_OFFLOAD_ROUTE_LOCAL) {
            assert_int_equal(d.reason, MF_OFFLOAD_REASON_BYTE_BUDGET);
            refused++;
        } else {
            sent += 784;
        }
    }
    assert_int_equal(sent, 784 * 12); /* 12 * 784 <= 10000 < 13 * 784 within one day */
    assert_int_equal(refused, 1000 - 12);
    p.per_day = 0; /* a zero cap lets nothing through */
    mf_offload_budget_init(&b, &p, 0);
    decide_expect(&p, &b, 0.1f, 0, 0, MF_OFFLOAD_ROUTE_LOCAL, MF_OFFLOAD_REASON_RATE_CAP);
}

/* ---- telemetry ---- */

static void test_offload__histogram_quantile_and_merge(void **state)
{
    mf_offload_telemetry a, b;
    float q;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    assert_true(mf_offload_hist_quantile(a.hist, 0.1f) < 0.0f);
    for (int i = 0; i < 1000; i++)
        mf_offload__hist_add(a.hist, (float)i / 1000.0f); /* uniform on [0, 1) */
    mf_offload__hist_add(b.hist, 1.0f);
    mf_offload__hist_add(b.hist, -0.5f);
    assert_int_equal(b.hist[MF_OFFLOAD_HIST_BINS - 1], 1);
    assert_int_equal(b.hist[0], 1);
    q = mf_offload_hist_quantile(a.hist, 0.1f);
    assert_true(fabsf(q - 0.1f) < 0.011f);
    q = mf_offload_hist_quantile(a.hist, 0.5f);
    assert_true(fabsf(q - 0.5f) < 0.011f);
    {
        /* One sample in each of 10 spread bins: the 0.1 quantile is inside the first sample's
         * bin, not the second's (0.1f * 10 is a hair above 1 in float arithmetic). */
        uint32_t ten[MF_OFFLOAD_HIST_BINS] = {0};
        const int step = MF_OFFLOAD_HIST_BINS / 10;

        for (int i = 0; i < 10; i++)
            ten[i * step] = 1;
        q = mf_offload_hist_quantile(ten, 0.1f);
        assert_true(q <= 1.0f / MF_OFFLOAD_HIST_BINS);
        q = mf_offload_hist_quantile(ten, 0.3f);
        assert_true(q > (float)(2 * step) / MF_OFFLOAD_HIST_BINS);
        assert_true(q <= (float)(2 * step + 1) / MF_OFFLOAD_HIST_BINS);
    }
    a.asked = 1000;
    b.asked = 2;
    b.bytes_up = UINT64_MAX;
    a.bytes_up = 5;
    mf_offload_telemetry_merge(&a, &b);
    assert_int_equal(a.asked, 1002);
    assert_true(a.bytes_up == UINT64_MAX); /* saturates */
    assert_int_equal(a.hist[0], 11);
    assert_int_equal(a.hist[MF_OFFLOAD_HIST_BINS - 1], 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offload__score_vectors),
        cmocka_unit_test(test_offload__score_rejects_bad_input),
        cmocka_unit_test(test_offload__score_many_classes),
        cmocka_unit_test(test_offload__policy_parses_every_field),
        cmocka_unit_test(test_offload__policy_defaults),
        cmocka_unit_test(test_offload__policy_rejects_bad_fields),
        cmocka_unit_test(test_offload__app_limits_only_tighten),
        cmocka_unit_test(test_offload__decide_routes),
        cmocka_unit_test(test_offload__audit_fraction_is_honoured),
        cmocka_unit_test(test_offload__rate_caps_hold_under_bursts),
        cmocka_unit_test(test_offload__byte_budget_holds),
        cmocka_unit_test(test_offload__histogram_quantile_and_merge),
    };
    return cmocka_run_group_tests_name("offload", tests, NULL, NULL);
}
