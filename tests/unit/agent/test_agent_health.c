/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmf after activation and around it (agent_fixture.c's fake server): the app's health
 * answer (healthy confirms, unhealthy reverts), versions left unconfirmed for N starts
 * (revert), no rollback loop (a reverted sha256 is held until a higher release sequence),
 * manual rollback, pins (to the installed or a named version, surviving restarts, beaten
 * only by a security floor), the check-in fields that carry all of it, backoff between
 * failed attempts, and the parsers of the progress record and response headers.
 */
#include "agent_fixture.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

struct health {
    int answer; /* what the app says */
    int calls;
    char version[32];
};

static int on_health(void *payload, const char *model, const char *version, const char *path)
{
    struct health *h = payload;

    (void)model;
    (void)path;
    h->calls++;
    (void)snprintf(h->version, sizeof(h->version), "%s", version);
    return h->answer;
}

/* An agent with a health callback and v1 installed and confirmed. */
static mf_agent *healthy_v1(struct fixture *fx, struct health *h)
{
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    fx->opts.ready_fn = NULL;
    fx->opts.health_fn = on_health;
    fx->opts.health_payload = h;
    h->answer = MF_AGENT_HEALTHY;
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.pending);
    assert_string_equal(h->version, "v1");
    return agent;
}

static void assert_rolled_back_to_v1(struct fixture *fx, mf_agent *agent, const char *why)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    assert_active(agent, "v1", 'a');
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.pending);
    assert_string_equal(st.previous_version, "v2");
    assert_int_equal(st.rolled_back, 1);
    assert_non_null(strstr(st.last_rollback, why));
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
}

static void test_agent_health__unhealthy_reverts_without_a_loop(void **state)
{
    struct fixture *fx = *state;
    struct health h = {0};
    mf_agent *agent = healthy_v1(fx, &h);
    char sha2[65];
    int blobs;

    h.answer = MF_AGENT_UNHEALTHY;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_rolled_back_to_v1(fx, agent, "unhealthy");
    /* The revert is reported as a failure of v2, and announced in the check-in. */
    assert_string_equal(fx->srv.report_status, "failed");
    assert_non_null(strstr(fx->srv.report_detail, "rolled back: unhealthy"));
    sha256_hex(sha2, model_v2, sizeof(model_v2));
    blobs = fx->srv.n_blob;
    /* The server keeps assigning v2 (same release): held, not downloaded again. */
    fx->srv.release_seq--; /* fake_assign re-signs: keep the rolled-back sequence */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    for (int i = 0; i < 3; i++)
        step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_blob, blobs);
    assert_active(agent, "v1", 'a');
    assert_non_null(strstr(fx->srv.checkin_body, "\"rolled_back\":[{\"sha256\":\""));
    assert_non_null(strstr(fx->srv.checkin_body, sha2));
    /* A release with a higher sequence for the same bytes is tried again. */
    h.answer = MF_AGENT_HEALTHY;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_int_equal(fx->srv.n_blob, blobs + 1);
    mf_agent_free(agent);
}

/* v1 healthy, then v2 installed and left pending (the app answers "confirm later"), with
 * `max_starts` unconfirmed starts allowed. */
static mf_agent *pending_v2(struct fixture *fx, struct health *h, unsigned int max_starts)
{
    mf_agent *agent;

    fx->opts.max_unconfirmed_starts = max_starts;
    agent = healthy_v1(fx, h);
    h->answer = MF_AGENT_CONFIRM_LATER;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    return agent;
}

static void test_agent_health__unconfirmed_for_n_starts_reverts(void **state)
{
    struct fixture *fx = *state;
    struct health h = {0};
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    agent = pending_v2(fx, &h, 2);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_true(st.pending);
    assert_string_equal(st.version, "v2");
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body, "\"pending\":true"));
    mf_agent_free(agent);
    /* Start 1 while pending: still v2. A control handle does not count as a start. */
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_true(st.pending);
    assert_int_equal(st.unconfirmed_starts, 1);
    mf_agent_free(agent);
    fx->opts.control_only = 1;
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
    /* Start 2: reverted, the app is told about v1 again (answer ignored). */
    fx->opts.control_only = 0;
    h.calls = 0;
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_rolled_back_to_v1(fx, agent, "unconfirmed after 2 starts");
    assert_int_equal(h.calls, 1);
    assert_string_equal(h.version, "v1");
    /* The next step reports it. */
    fx->srv.release_seq--;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.report_detail, "unconfirmed after 2 starts"));
    assert_active(agent, "v1", 'a');
    mf_agent_free(agent);
}

static void test_agent_health__confirm_keeps_the_version(void **state)
{
    struct fixture *fx = *state;
    struct health h = {0};
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    agent = pending_v2(fx, &h, 1);
    assert_int_equal(mf_agent_confirm(agent, "detector"), MF_OK);
    assert_int_equal(mf_agent_confirm(agent, "detector"), MF_OK); /* idempotent */
    assert_int_equal(mf_agent_confirm(agent, "nope"), MF_E_NOTFOUND);
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.pending);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

static void test_agent_health__manual_rollback(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    int reports;

    assert_int_equal(mf_agent_rollback(agent, "detector", NULL), MF_E_STATE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "no previous version"));
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_int_equal(mf_agent_rollback(agent, "detector", NULL), MF_OK);
    assert_rolled_back_to_v1(fx, agent, "manual rollback");
    assert_string_equal(fx->ready_version, "v1");
    /* Survives a restart (as if `mf-agent rollback` ran in another process); the same
     * release is not installed again. */
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fx->srv.release_seq--;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    /* The rollback (made before the restart) reaches the server once. */
    assert_string_equal(fx->srv.report_status, "failed");
    assert_non_null(strstr(fx->srv.report_detail, "rolled back: manual rollback"));
    reports = fx->srv.n_report;
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_report, reports);
    assert_int_equal(mf_agent_rollback(agent, "classifier", NULL), MF_E_STATE);
    assert_int_equal(mf_agent_rollback(agent, "other", NULL), MF_E_NOTFOUND);
    mf_agent_free(agent);
}

static void test_agent_health__pin_holds_until_unpinned(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    int blobs = fx->srv.n_blob;

    assert_int_equal(mf_agent_pin(agent, "classifier", NULL), MF_E_STATE);
    assert_int_equal(mf_agent_pin(agent, "detector", "../x"), MF_E_INVALID);
    assert_int_equal(mf_agent_pin(agent, "detector", NULL), MF_OK);
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK); /* the pin survives */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    assert_int_equal(fx->srv.n_blob, blobs);
    assert_non_null(strstr(fx->srv.checkin_body, "\"pin\":\"v1\""));
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_string_equal(st.pinned, "v1");
    assert_true(st.held);
    assert_non_null(strstr(st.hold_reason, "pinned to v1"));
    assert_true(st.up_to_date);
    /* Unpinned, it updates. */
    assert_int_equal(mf_agent_unpin(agent, "detector"), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.held);
    assert_null(strstr(fx->srv.checkin_body, "\"pin\""));
    mf_agent_free(agent);
}

static void test_agent_health__pin_to_a_named_version_and_the_floor(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    static const uint8_t v3[] = "detector weights, version three (security fix)\n";

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    /* Pinned to v1 while v2 runs: v2 assignments are held ... */
    assert_int_equal(mf_agent_pin(agent, "detector", "v1"), MF_OK);
    fake_assign(&fx->srv, "v2b", model_v2, sizeof(model_v2) - 1, model_v2, sizeof(model_v2) - 1);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    /* ... and the server honouring the pin assigns v1 (fleet rollback): installed. */
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    /* A release raising the security floor wins over the pin. */
    fx->srv.floor = 1;
    fake_assign(&fx->srv, "v3", v3, sizeof(v3), v3, sizeof(v3));
    step_expect(agent, MF_OK);
    assert_active(agent, "v3", 'b');
    mf_agent_free(agent);
}

static void test_agent_health__backoff_defers_the_next_attempt(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    long poll;
    int blobs;

    fx->opts.retry_base_ms = 60000;
    agent = agent_with_v1(fx);
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.blob_mode = BLOB_404;
    blobs = fx->srv.n_blob;
    step_expect(agent, MF_E_NOTFOUND);
    assert_int_equal(fx->srv.n_blob, blobs + 1);
    /* Within the backoff the check-in runs, the download waits. */
    fx->srv.blob_mode = BLOB_OK;
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_blob, blobs + 1);
    assert_active(agent, "v1", 'a');
    /* 30..60 s of backoff is longer than the server's 5 s poll interval. */
    poll = mf_agent_poll_interval_s(agent);
    assert_int_equal(poll, 5);
    mf_agent_free(agent);
}

static void test_agent_health__retry_before_the_poll_wakes_earlier(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    long poll;

    fx->opts.retry_base_ms = 2000; /* first retry in 1..2 s, the server polls every 5 s */
    agent = agent_with_v1(fx);
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.blob_mode = BLOB_404;
    step_expect(agent, MF_E_NOTFOUND);
    poll = mf_agent_poll_interval_s(agent);
    assert_true(poll >= 1 && poll <= 2);
    mf_agent_free(agent);
}

static void test_agent_health__header_parser(void **state)
{
    static const struct {
        const char *line;
        int ok;
        unsigned long long first, last, total;
    } cr[] = {
        {"Content-Range: bytes 0-99/100\r\n", 1, 0, 99, 100},
        {"content-range:bytes 5-9/10", 1, 5, 9, 10},
        {"Content-Range: bytes 5-9/*\r\n", 1, 5, 9, 0},
        {"Content-Range: bytes 9-5/10\r\n", 0, 0, 0, 0},
        {"Content-Range: bytes */10\r\n", 0, 0, 0, 0},
        {"Content-Range: items 0-1/2\r\n", 0, 0, 0, 0},
        {"Content-Range: bytes 0-1/2x\r\n", 0, 0, 0, 0},
        {"Content-Range: bytes 99999999999999999999-1/2\r\n", 0, 0, 0, 0},
    };
    struct mf_http_headers hd;

    (void)state;
    for (size_t i = 0; i < sizeof(cr) / sizeof(cr[0]); i++) {
        memset(&hd, 0, sizeof(hd));
        mf_http__parse_header(&hd, cr[i].line, strlen(cr[i].line));
        assert_true(hd.has_content_range);
        assert_int_equal(hd.range_ok, cr[i].ok);
        if (cr[i].ok) {
            assert_int_equal(hd.range_first, cr[i].first);
            assert_int_equal(hd.range_last, cr[i].last);
            assert_int_equal(hd.range_total, cr[i].total);
        }
    }
    mf_http__parse_header(&hd, "HTTP/1.1 206 Partial Content\r\n", 31);
    assert_int_equal(hd.status, 206);
    assert_false(hd.has_content_range);
    mf_http__parse_header(&hd, "ETag: \"abc\"\r\n", 13);
    assert_string_equal(hd.etag, "\"abc\"");
    mf_http__parse_header(&hd, "X-Other: 1\r\n", 12);
    assert_string_equal(hd.etag, "\"abc\"");
}

static void test_agent_health__progress_record_round_trip_and_rejects(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    struct mf_agent_progress pr = {.size = 100, .verified = 48, .etag = "\"e\""}, back;
    char path[256];
    FILE *f;

    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    memset(pr.sha256, 7, sizeof(pr.sha256));
    assert_int_equal(fx->ops.mkdir(fx->ops.payload, "models"), MF_OK);
    assert_int_equal(mf_agent__progress_save(agent, "models/x.part", &pr), MF_OK);
    assert_int_equal(mf_agent__progress_load(agent, &back, "models/x.part"), MF_OK);
    assert_memory_equal(back.sha256, pr.sha256, 32);
    assert_int_equal(back.verified, 48);
    assert_string_equal(back.etag, "\"e\"");
    /* verified beyond size, a torn record, garbage: refused, never trusted. */
    pr.verified = 101;
    assert_int_equal(mf_agent__progress_save(agent, "models/x.part", &pr), MF_OK);
    assert_int_equal(mf_agent__progress_load(agent, &back, "models/x.part"), MF_E_INVALID);
    (void)snprintf(path, sizeof(path), "%s/models/x.part.prog", fx->dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite("MFPR\1", 1, 5, f), 5);
    (void)fclose(f);
    assert_int_equal(mf_agent__progress_load(agent, &back, "models/x.part"), MF_E_INVALID);
    mf_agent__progress_drop(agent, "models/x.part", 1);
    assert_int_equal(mf_agent__progress_load(agent, &back, "models/x.part"), MF_E_NOTFOUND);
    mf_agent_free(agent);
}

static void test_agent_health__checkin_deltas_are_parsed_and_checked(void **state)
{
#define SHA "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define D(from, size, blob)                                                                        \
    "\"deltas\":[{\"from_sha256\":\"" from "\",\"sha256\":\"" SHA "\",\"size\":" size              \
    ",\"blob\":\"" blob "\"}]"
    static const char *const bad[] = {
        "\"deltas\":7",           "\"deltas\":[7]",     D("x", "1", "/b"),  D(SHA, "0", "/b"),
        D(SHA, "1", "http://x/"), D(SHA, "1", "/../b"), D(SHA, "-1", "/b"),
    };
#undef D
    char sha[65], json[2048], fields[1024];
    struct mf_agent_assignment as[2];
    struct mf_agent_trust_docs trust;
    const char *models[] = {"detector"};
    struct cJSON *doc = NULL;
    struct mf_ctx ctx;
    struct mf_agent_settings poll = {0};
    size_t n = 0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    sha256_hex(sha, model_v1, sizeof(model_v1));
#define ANSWER(extra)                                                                              \
    (void)snprintf(json, sizeof(json),                                                             \
                   "{\"nonce\":\"" FX_NONCE "\",\"assignments\":[{\"model\":\"detector\","         \
                   "\"version\":\"v2\",\"sha256\":\"%s\",\"size\":3,\"blob\":\"/v1/blobs/x\","     \
                   "\"release\":\"{}\",\"assignment\":\"{}\",%s}]}",                               \
                   sha, extra)
    (void)snprintf(fields, sizeof(fields),
                   "\"deltas\":[{\"from_sha256\":\"%s\",\"sha256\":\"%s\",\"size\":9,"
                   "\"blob\":\"/v1/blobs/%s\",\"format\":\"mfdelta\"},"
                   "{\"from_sha256\":\"%s\",\"sha256\":\"%s\",\"size\":9,"
                   "\"blob\":\"/v1/blobs/%s\",\"format\":\"bsdiff40\"}]",
                   sha, sha, sha, sha, sha, sha);
    ANSWER(fields);
    assert_int_equal(mf_agent__checkin_parse(&ctx, as, &n, &poll, &trust, &doc, json, strlen(json),
                                             FX_NONCE, models, 1),
                     MF_OK);
    assert_int_equal(n, 1);
    assert_int_equal(as[0].n_deltas, 1); /* bsdiff40 needs memory the device lacks: skipped */
    assert_string_equal(as[0].deltas[0].from_sha256, sha);
    assert_int_equal(as[0].deltas[0].size, 9);
    cJSON_Delete(doc);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ANSWER(bad[i]);
        assert_int_equal(mf_agent__checkin_parse(&ctx, as, &n, &poll, &trust, &doc, json,
                                                 strlen(json), FX_NONCE, models, 1),
                         MF_E_INVALID);
        assert_null(doc);
    }
#undef ANSWER
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_agent_health__unhealthy_reverts_without_a_loop),
        T(test_agent_health__unconfirmed_for_n_starts_reverts),
        T(test_agent_health__confirm_keeps_the_version),
        T(test_agent_health__manual_rollback),
        T(test_agent_health__pin_holds_until_unpinned),
        T(test_agent_health__pin_to_a_named_version_and_the_floor),
        T(test_agent_health__backoff_defers_the_next_attempt),
        T(test_agent_health__retry_before_the_poll_wakes_earlier),
        T(test_agent_health__progress_record_round_trip_and_rejects),
        cmocka_unit_test(test_agent_health__header_parser),
        cmocka_unit_test(test_agent_health__checkin_deltas_are_parsed_and_checked),
    };
#undef T

    return cmocka_run_group_tests_name("agent_health", tests, world_setup, world_teardown);
}
