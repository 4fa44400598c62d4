/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device library mf_offload against the real mf-server (in-process on 127.0.0.1, an
 * ephemeral port, SQLite store, the labelling worker running) with a real command teacher
 * (a shell process per call). The device enrols and checks in for its policy as an app
 * would; sync asks are answered by the teacher; queued samples are drained in batches,
 * storage is killed at every point of an upload and the device restarted; then the admin
 * export route must hold every sample exactly once, labelled by the teacher, with the input
 * bytes the device sent, and `mfctl samples export` must write it out as .npy + JSONL.
 */
#define _GNU_SOURCE
#include "kit_fs.h"
#include "offload_fixture.h"
#include "offload_e2e_fixture.h"
#include "offload_server_fixture.h"
#include "cmd_samples.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include "app/server.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SENT 1024
#define TEACHER_VERSION "cmd-1"

struct fx {
    struct offload_server_fx s;
    char policy[4096];
    struct tplat t;
    mf_offload_options opts;
    char sent[MAX_SENT][MF_SHA256_HEX_LEN + 1]; /* input SHA-256 of every variant sent */
    int n_sent;
};

static struct fx fx;
static char reply[16 * 1024 * 1024];

/* The command teacher: reads the sample, answers class 1 at 0.9 (docs/operations.md). */
static const char offload_config[] =
    "{\"models\": {\"digits\": {"
    "\"teacher\": {\"connector\": \"command\", \"command\": [\"/bin/sh\", \"-c\","
    " \"cat >/dev/null; echo "
    "'{\\\"probs\\\":[0.05,0.9,0.05],\\\"version\\\":\\\"" TEACHER_VERSION
    "\\\"}'\"], \"timeout_ms\": 5000},"
    "\"policy\": {\"enabled\": true, \"method\": \"max_softmax\", \"mode\": \"sync\","
    " \"threshold\": 0.8, \"deadline_ms\": 5000, \"metered\": \"allow\"}}}}";

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof(fx));
    offload_server_fx_start(&fx.s, "mf-offe2e", offload_config, "cam-e2e");
    assert_int_equal(
        e2e_checkin_policy(fx.policy, sizeof(fx.policy), fx.s.url, fx.s.cred, "digits", "v3"), 0);
    tplat_init(&fx.t);
    assert_int_equal(mf_offload_options_init(&fx.opts, MF_OFFLOAD_OPTIONS_VERSION), MF_OK);
    fx.opts.model = "digits";
    fx.opts.model_version = "v3";
    fx.opts.server_url = fx.s.url;
    fx.opts.credential = fx.s.cred;
    fx.opts.platform = &fx.t.ops;
    fx.opts.batch_max_samples = 8;
    fx.opts.request_timeout_ms = 10000;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    offload_server_fx_stop(&fx.s);
    tplat_done(&fx.t);
    return 0;
}

/* A handle with the server's policy; `async` restricts it to queueing (app limits). */
static mf_offload *new_handle(int async)
{
    mf_offload_policy limits;
    mf_offload *o = NULL;

    assert_int_equal(mf_offload_policy_init(&limits, MF_OFFLOAD_POLICY_VERSION), MF_OK);
    limits.mode = MF_OFFLOAD_MODE_ASYNC;
    fx.opts.app_limits = async ? &limits : NULL;
    assert_int_equal(mf_offload_new(&o, &fx.opts), MF_OK);
    assert_int_equal(mf_offload_set_policy_json(o, fx.policy, strlen(fx.policy)), MF_OK);
    fx.opts.app_limits = NULL; /* `limits` dies here; the handle keeps its own copy */
    return o;
}

/* Asks with input `variant`; remembers the input's digest as sent. */
static void ask(mf_offload_answer *a, mf_offload *o, uint32_t variant)
{
    uint8_t in[E2E_INPUT_LEN], d[MF_SHA256_DIGEST_LEN];
    float logits[E2E_CLASSES];
    mf_offload_sample s = {in, sizeof(in), logits, E2E_CLASSES, MF_OFFLOAD_LOGITS};

    e2e_input(in, variant);
    e2e_logits(logits, variant);
    assert_int_equal(mf_offload_ask(a, NULL, o, &s), MF_OK);
    assert_true(fx.n_sent < MAX_SENT);
    mf_sha256__digest(d, in, sizeof(in));
    mf_hex__encode(fx.sent[fx.n_sent++], d, sizeof(d));
}

/* The export route's samples of `digits` (one page holds them all here). */
static cJSON *exported(const char *extra)
{
    char path[256];
    cJSON *j;

    (void)snprintf(path, sizeof(path), "/v1/admin/samples?model=digits&limit=500%s", extra);
    assert_int_equal(e2e_http(reply, sizeof(reply), fx.s.url, "GET", path, fx.s.admin, NULL), 200);
    j = cJSON_Parse(reply);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "next")->valuedouble, 0);
    return j;
}

/* Every sent input is stored exactly once, nothing else is, and all are labelled. */
static void assert_each_once_labelled(void)
{
    cJSON *j = NULL, *s;
    int n = 0;

    /* The label job runs every 2 s per model; bounded wait, 150 x 100 ms. */
    for (int i = 0; i < 150; i++) {
        cJSON_Delete(j);
        j = exported("&min_teacher_confidence=0.85");
        n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "samples"));
        if (n >= fx.n_sent)
            break;
        usleep(100 * 1000);
    }
    assert_int_equal(n, fx.n_sent);
    cJSON_Delete(j);
    j = exported("");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "samples")), fx.n_sent);
    for (int k = 0; k < fx.n_sent; k++) {
        int seen = 0;

        cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "samples"))
        {
            seen += strcmp(cJSON_GetObjectItem(s, "input_sha256")->valuestring, fx.sent[k]) == 0;
        }
        if (seen != 1)
            fail_msg("input %d (%s) stored %d times", k, fx.sent[k], seen);
    }
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "samples"))
    {
        assert_string_equal(cJSON_GetObjectItem(s, "teacher_version")->valuestring,
                            TEACHER_VERSION);
        assert_string_equal(cJSON_GetObjectItem(s, "device_id")->valuestring, "cam-e2e");
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(s, "teacher_output")), 3);
    }
    cJSON_Delete(j);
}

static void test_offload_e2e__ask_batches_crash_each_once(void **state)
{
    mf_offload_answer a;
    mf_offload *o;
    int done = 0, killed = 0;
    uint32_t v = 0;

    (void)state;
    /* Sync: the teacher answers within the deadline; the server stores the sample. */
    o = new_handle(0);
    for (int i = 0; i < 3; i++) {
        ask(&a, o, v++);
        assert_int_equal(a.by_teacher, 1);
        assert_int_equal(a.reason, MF_OFFLOAD_REASON_TEACHER);
        assert_int_equal(a.label, 1);
        assert_true(fabsf(a.confidence - 0.9f) < 1e-4f);
        assert_string_equal(a.teacher_version, TEACHER_VERSION);
        assert_int_equal(a.queued, 0);
    }
    mf_offload_free(o);
    /* Async: 20 queued, drained in batches of 8. */
    o = new_handle(1);
    for (int i = 0; i < 20; i++) {
        ask(&a, o, v++);
        assert_int_equal(a.route, MF_OFFLOAD_ROUTE_QUEUE);
        assert_int_equal(a.queued, 1);
    }
    assert_int_equal(mf_offload_drain(o, 1), MF_AGAIN);
    assert_int_equal(mf_offload_queue_count(o), 12);
    assert_int_equal(mf_offload_drain(o, 100), MF_OK);
    assert_int_equal(mf_offload_queue_count(o), 0);
    mf_offload_free(o);
    /* Storage dies at call n of an upload (a kill at every point), then a restart drains. */
    for (long n = 0; !done && n < 200; n++) {
        o = new_handle(1);
        for (int i = 0; i < 5; i++)
            ask(&a, o, v++);
        fx.t.io_calls = 0;
        fx.t.fail_at = n;
        if (mf_offload_drain(o, 100) < 0)
            assert_true(mf_offload_errmsg(o)[0] != '\0');
        done = fx.t.io_calls <= n;
        killed += !done;
        mf_offload_free(o); /* the crash: nothing more happens on this handle */
        tplat_reopen(&fx.t);
        o = new_handle(1);
        assert_int_equal(mf_offload_drain(o, 100), MF_OK);
        assert_int_equal(mf_offload_queue_count(o), 0);
        mf_offload_free(o);
    }
    assert_true(done);
    assert_true(killed > 5);
    assert_each_once_labelled();
}

static long file_size(const char *dir, const char *name)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* `mfctl samples export` over the same server: the files hold what the device sent. */
static void test_offload_e2e__mfctl_export(void **state)
{
    char out[128], tok[160], hdr[MFCTL_NPY_HEADER_LEN], got[MFCTL_NPY_HEADER_LEN];
    const char *args[] = {
        "mfctl",   "--server", fx.s.url,  "--token-file", tok,
        "samples", "export",   "--model", "digits",       "--min-teacher-confidence",
        "0.5",     out,        NULL};
    char *argv[16];
    uint64_t shape[2];
    uint8_t in[E2E_INPUT_LEN], row[E2E_INPUT_LEN];
    float t[E2E_CLASSES];
    mf_offload_answer a;
    mf_offload *o = new_handle(0);
    FILE *f, *dev_null = fopen("/dev/null", "w");

    (void)state;
    for (int i = 0; i < 13; i++)
        argv[i] = (char *)args[i]; /* mfctl reorders positional arguments in place */
    for (uint32_t v = 0; v < 4; v++)
        ask(&a, o, 500 + v);
    mf_offload_free(o);
    (void)snprintf(tok, sizeof(tok), "%s/admin.token", fx.s.data);
    (void)snprintf(out, sizeof(out), "%s/export", fx.s.dir);
    assert_int_equal(mfctl__main(12, argv, dev_null, stderr), 0);
    fclose(dev_null);
    shape[0] = 4;
    shape[1] = E2E_INPUT_LEN;
    assert_int_equal(file_size(out, "inputs.npy"), MFCTL_NPY_HEADER_LEN + 4 * E2E_INPUT_LEN);
    assert_int_equal(file_size(out, "teacher.npy"), MFCTL_NPY_HEADER_LEN + 4 * 3 * 4);
    assert_int_equal(file_size(out, "student.npy"), MFCTL_NPY_HEADER_LEN + 4 * 3 * 4);
    assert_int_equal(file_size(out, "input_offsets.npy"), -1); /* one input length */
    (void)snprintf(tok, sizeof(tok), "%s/inputs.npy", out);
    f = fopen(tok, "rb");
    assert_non_null(f);
    mfctl__npy_header(hdr, "|u1", 2, shape);
    assert_int_equal(fread(got, 1, sizeof(got), f), sizeof(got));
    assert_memory_equal(got, hdr, sizeof(hdr));
    /* Rows in upload order: the first is variant 500. */
    assert_int_equal(fread(row, 1, sizeof(row), f), sizeof(row));
    e2e_input(in, 500);
    assert_memory_equal(row, in, sizeof(in));
    fclose(f);
    (void)snprintf(tok, sizeof(tok), "%s/teacher.npy", out);
    f = fopen(tok, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, MFCTL_NPY_HEADER_LEN, SEEK_SET), 0);
    assert_int_equal(fread(t, sizeof(float), 3, f), 3); /* little-endian host */
    assert_true(fabsf(t[1] - 0.9f) < 1e-6f && fabsf(t[0] - 0.05f) < 1e-6f);
    fclose(f);
    assert_true(file_size(out, "samples.jsonl") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_offload_e2e__ask_batches_crash_each_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_offload_e2e__mfctl_export, setup, teardown),
    };
    return cmocka_run_group_tests_name("offload_e2e", tests, NULL, NULL);
}
