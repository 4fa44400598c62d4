/* SPDX-License-Identifier: Apache-2.0 */
/*
 * End-to-end tests of libmf (sdk/agent/) against the fake mf-server of agent_fixture.c: plain
 * sockets on 127.0.0.1, an ephemeral port, one thread serving one request per connection.
 * The fake follows docs/protocol.md, serves a signed trust chain (manifests/sign through
 * the manifest test fixture: root v1, keys v1, releases by the release key, assignments by
 * the director key for the nonce it was sent) and can misbehave on demand (wrong bytes,
 * extra bytes, a cut connection, 404, malformed or replayed check-in answers, releases
 * signed with the director key, releases below the device's floor).
 */
#include "agent_fixture.h"
#include "kit_fs.h"
#include "kit_log.h"
#include "mf_offload_int.h" /* the handle's credential */
#include "telemetry_widest.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void test_agent__enroll_checkin_install_report(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    char sha[65], expect_path[256];
    struct stat sb;
    size_t len = 0;
    uint8_t *cred;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_string_equal(mf_agent_errmsg(agent), "");
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_checkin, 1);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(fx->srv.n_report, 1);
    assert_string_equal(fx->srv.report_status, "installed");
    /* The installed bytes are the served ones, in slot a, announced to the app. */
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    assert_false(exists(fx, "models/detector/slot-a.part"));
    assert_int_equal(fx->ready_calls, 1);
    assert_string_equal(fx->ready_version, "v1");
    (void)snprintf(expect_path, sizeof(expect_path), "%s/models/detector/slot-a", fx->dir);
    assert_string_equal(fx->ready_path, expect_path);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    sha256_hex(sha, model_v1, sizeof(model_v1));
    assert_string_equal(st.sha256, sha);
    assert_int_equal(st.size, sizeof(model_v1));
    assert_true(st.up_to_date);
    assert_int_equal(mf_agent_poll_interval_s(agent), 5);
    /* The untracked "other" assignment was ignored; "classifier" has nothing assigned. */
    assert_int_equal(mf_agent_status(&st, agent, "classifier"), MF_OK);
    assert_false(st.installed);
    assert_true(st.up_to_date);
    assert_int_equal(mf_agent_status(&st, agent, "other"), MF_E_NOTFOUND);
    /* Credential persisted privately. */
    cred = slurp(fx, "credential", &len);
    assert_non_null(cred);
    assert_string_equal((char *)cred, CREDENTIAL);
    test_free(cred);
    assert_int_equal(stat(expect_path, &sb), 0);
    (void)snprintf(expect_path, sizeof(expect_path), "%s/credential", fx->dir);
    assert_int_equal(stat(expect_path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    /* Second step: nothing to do, the check-in lists what runs. */
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_checkin, 2);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(fx->srv.n_report, 1);
    assert_non_null(strstr(fx->srv.checkin_body, "\"version\":\"v1\""));
    assert_non_null(strstr(fx->srv.checkin_body, sha));
    assert_int_equal(fx->ready_calls, 1);

    /* v2 goes to slot b; v1 stays as previous. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", model_v2, sizeof(model_v2));
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    assert_int_equal(fx->ready_calls, 2);
    mf_agent_free(agent);

    /* A restarted agent reads credential and state back: no enrollment, no download. */
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_active(agent, "v2", 'b');
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_blob, 2);
    mf_agent_free(agent);
    mf_agent_free(NULL);
}

/* Descriptors this process has open. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    assert_non_null(d);
    while (readdir(d))
        n++;
    (void)closedir(d);
    return n;
}

/* open_fds() once it is back to `want`, waiting (at most 2 s) for the fake server's thread,
 * which shares this process, to close its side of a connection the agent ended. */
static int open_fds_settled(int want)
{
    const struct timespec step = {0, 10 * 1000000L};
    int n = open_fds();

    for (int i = 0; i < 200 && n != want; i++) {
        (void)nanosleep(&step, NULL);
        n = open_fds();
    }
    return n;
}

/* A fleet of agents must not hold a connection each between steps (a 1,000-device
 * simulator ran out of descriptors with libcurl's connection and wakeup pair per agent). */
static void test_agent__holds_no_descriptor_between_steps(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    int before;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    before = open_fds();
    step_expect(agent, MF_OK); /* enroll, check-in, download, report */
    assert_int_equal(open_fds_settled(before), before);
    step_expect(agent, MF_OK);
    assert_int_equal(open_fds_settled(before), before);
    assert_int_equal(fx->srv.n_checkin, 2);
    mf_agent_free(agent);
}

/* Options version 6: the device class rides every check-in (docs/protocol.md, "Device
 * class"); a bad one is refused at creation; without one nothing is sent, as before. */
static void test_agent__device_class_rides_the_checkin(void **state)
{
    struct fixture *fx = *state;
    mf_agent_device_class cls = {"cam-lite", "npu", 256, 512, 1, 0};
    mf_agent *agent = NULL;
    mf_agent_options o = fx->opts;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_null(strstr(fx->srv.checkin_body, "device_class"));
    mf_agent_free(agent);
    o.device_class = &cls;
    assert_int_equal(mf_agent_new(&agent, &o), MF_OK);
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body,
                           "\"device_class\":{\"ram_mb\":256,\"storage_mb\":512,\"int8\":true,"
                           "\"fp16\":false,\"tag\":\"cam-lite\",\"accelerator\":\"npu\"},"));
    mf_agent_free(agent);
    agent = (mf_agent *)1;
    cls.tag = "lab/1";
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_null(agent);
    cls.tag = NULL;
    cls.ram_mb = MF_AGENT_CLASS_MB_MAX + 1;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    /* Version 5 options carry no class: whatever the field holds is not read. */
    o.version = 5;
    assert_int_equal(mf_agent_new(&agent, &o), MF_OK);
    mf_agent_free(agent);
}

static void test_agent__state_file_records_active_and_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    char sha1[65], sha2[65];
    size_t len = 0;
    uint8_t *json;
    cJSON *doc;

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    json = slurp(fx, "models/detector/state.json", &len);
    assert_non_null(json);
    doc = cJSON_Parse((char *)json);
    assert_non_null(doc);
    sha256_hex(sha1, model_v1, sizeof(model_v1));
    sha256_hex(sha2, model_v2, sizeof(model_v2));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "active"), "slot")->valuestring, "b");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "active"), "sha256")->valuestring, sha2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "previous"), "version")->valuestring, "v1");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "previous"), "sha256")->valuestring, sha1);
    assert_false(exists(fx, "models/detector/state.json.tmp"));
    cJSON_Delete(doc);
    test_free(json);
    mf_agent_free(agent);
}

static void test_agent__wrong_enrollment_token_is_auth_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->opts.enrollment_token = "mfe_wrong";
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_AUTH);
    assert_non_null(strstr(mf_agent_errmsg(agent), "401"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "enrollment token rejected"));
    assert_int_equal(fx->srv.n_checkin, 0);
    assert_int_equal(fx->srv.n_blob, 0);
    assert_false(exists(fx, "credential"));
    assert_false(exists(fx, "models"));
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.installed);
    mf_agent_free(agent);
}

static void test_agent__no_token_no_credential_is_auth_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    fx->opts.enrollment_token = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_AUTH);
    assert_non_null(strstr(mf_agent_errmsg(agent), "no enrollment token"));
    assert_int_equal(fx->srv.n_enroll, 0);
    mf_agent_free(agent);
}

/* After a failed v2 install: v1 still active and intact, no .part, a failed report. */
static void assert_v1_survived(struct fixture *fx, mf_agent *agent, const char *detail)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    assert_active(agent, "v1", 'a');
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    if (exists(fx, "models/detector/slot-b.part")) {
        /* Kept for a resume only after a transport failure, and only verified bytes:
         * whole 16-byte chunks of v2, described by a progress record. */
        size_t got = 0;
        uint8_t *part = slurp(fx, "models/detector/slot-b.part", &got);

        assert_true(got > 0 && got % 16 == 0 && got < sizeof(model_v2));
        assert_memory_equal(part, model_v2, got);
        assert_true(exists(fx, "models/detector/slot-b.part.prog"));
        test_free(part);
    }
    assert_false(exists(fx, "models/detector/slot-b"));
    assert_string_equal(fx->srv.report_status, "failed");
    assert_non_null(strstr(fx->srv.report_detail, detail));
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.up_to_date);
    assert_true(st.last_error < 0);
    assert_non_null(strstr(st.last_errmsg, detail));
    assert_int_equal(fx->ready_calls, 1);
}

static void test_agent__sha256_mismatch_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    static uint8_t evil[sizeof(model_v2)];

    memcpy(evil, model_v2, sizeof(evil));
    evil[3] ^= 1;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), evil, sizeof(evil));
    step_expect(agent, MF_E_SIGNATURE);
    /* Caught at the first 16-byte chunk, against the signed chunk hash. */
    assert_non_null(strstr(mf_agent_errmsg(agent), "chunk 0 (bytes from 0) does not match its "
                                                   "signed sha256"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "v2"));
    assert_v1_survived(fx, agent, "does not match its signed sha256");
    /* A bad byte in a later chunk: the chunks before it pass, that one aborts. */
    evil[3] ^= 1;
    evil[40] ^= 1;
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "chunk 2 (bytes from 32)"));
    assert_v1_survived(fx, agent, "download aborted");
    /* The server fixes the blob: the next step installs it. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_string_equal(fx->srv.report_status, "installed");
    mf_agent_free(agent);
}

static void test_agent__chunks_before_a_bad_one_in_the_same_piece_are_kept(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    /* 16-byte chunks: the first piece of the body holds chunks 0 and 1 (good) and chunk 2,
     * whose byte 40 the server flips once. The agent fetches again from byte 32, and the
     * bytes 0..31 it verified in the failed piece must be in the slot: the .part used to
     * be cut "back" to 32 bytes it never had, filling them with zeros, and the image
     * installed was wrong although every chunk the agent hashed had matched. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.corrupt_at = 40;
    fx->srv.corrupt_left = 1;
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.last_range_from, 32);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", model_v2, sizeof(model_v2));
    mf_agent_free(agent);
}

static void test_agent__more_bytes_than_assigned_are_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    static uint8_t longer[sizeof(model_v2) + 100];

    memcpy(longer, model_v2, sizeof(model_v2));
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), longer, sizeof(longer));
    step_expect(agent, MF_E_LIMIT);
    assert_v1_survived(fx, agent, "larger than allowed");
    /* Without a Content-Length the bound is enforced on the streamed bytes. */
    fx->srv.blob_mode = BLOB_CHUNKED;
    step_expect(agent, MF_E_LIMIT);
    assert_v1_survived(fx, agent, "sent more than 57 bytes");
    /* The same chunked framing with the right bytes installs. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

/* v2 assigned, its blob served as the first `served` bytes in `mode`: the step fails with
 * `code` and v1 keeps running, `why` in the report and the status. */
static void assert_v2_blob_fails(struct fixture *fx, mf_agent *agent, enum blob_mode mode,
                                 size_t served, int code, const char *why)
{
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, served);
    fx->srv.blob_mode = mode;
    step_expect(agent, code);
    assert_v1_survived(fx, agent, why);
}

static void test_agent__cut_connection_keeps_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    assert_v2_blob_fails(fx, agent, BLOB_TRUNCATE, sizeof(model_v2), MF_E_NET, "truncated");
    mf_agent_free(agent);
}

static void test_agent__short_blob_keeps_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    /* Well-framed response, but fewer bytes than assigned. */
    assert_v2_blob_fails(fx, agent, BLOB_OK, 10, MF_E_NET, "ended after 10 of");
    mf_agent_free(agent);
}

static void test_agent__missing_blob_is_clear_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    assert_v2_blob_fails(fx, agent, BLOB_404, sizeof(model_v2), MF_E_NOTFOUND, "no such blob");
    assert_non_null(strstr(mf_agent_errmsg(agent), "HTTP 404"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "/v1/blobs/"));
    mf_agent_free(agent);
}

static void test_agent__malformed_checkin_is_invalid(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->srv.checkin_mode = CHECKIN_MALFORMED;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_INVALID);
    assert_non_null(strstr(mf_agent_errmsg(agent), "not valid JSON"));
    assert_int_equal(fx->srv.n_blob, 0);
    fx->srv.checkin_mode = CHECKIN_BAD_NONCE;
    step_expect(agent, MF_E_INVALID);
    assert_non_null(strstr(mf_agent_errmsg(agent), "nonce"));
    assert_int_equal(fx->srv.n_blob, 0);
    mf_agent_free(agent);
}

static void test_agent__unreachable_server_is_net_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    /* Port 1 on loopback: nothing listens there, the connection is refused at once. */
    (void)snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:1");
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_NET);
    assert_non_null(strstr(mf_agent_errmsg(agent), "127.0.0.1"));
    mf_agent_free(agent);
}

/* What the library under test logged at ERROR (its options point here). */
static struct mf_kit_log errlog;

static void test_agent__bad_options_are_rejected_with_a_message(void **state)
{
    static const char *const dup[] = {"a", "a"};
    static const char *const bad_name[] = {"../etc"};
    struct fixture *fx = *state;
    mf_agent_options o;
    mf_agent *agent = (mf_agent *)1;

    assert_int_equal(mf_agent_options_init(&o, 999), MF_E_INVALID);
    fx->opts.log_fn = mf_kit_log_errors;
    fx->opts.log_payload = &errlog;
    o = fx->opts;
    o.server_url = "ftp://127.0.0.1/";
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_null(agent);
    assert_non_null(strstr(errlog.last, "ftp://127.0.0.1/"));
    o = fx->opts;
    o.device_id = "cam 1";
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "cam 1"));
    o = fx->opts;
    o.models = dup;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "twice"));
    o = fx->opts;
    o.models = bad_name;
    o.n_models = 1;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "../etc"));
    o = fx->opts;
    o.n_models = 0;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_int_equal(errlog.errors, 5);
}

static void test_agent__damaged_state_file_is_reported(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    char path[256];
    FILE *f;

    mf_agent_free(agent);
    (void)snprintf(path, sizeof(path), "%s/models/detector/state.json", fx->dir);
    f = fopen(path, "w");
    assert_non_null(f);
    (void)fputs("{\"format\":1,\"active\":{\"slot\":\"c\"}}", f);
    (void)fclose(f);
    fx->opts.log_fn = mf_kit_log_errors;
    fx->opts.log_payload = &errlog;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "state.json"));
    assert_non_null(strstr(errlog.last, "slot"));
}

/* ---- the trust chain: every refusal keeps the running model and says why ---- */

/* A refused assignment: nothing downloaded, v1 kept, a failed report naming `why`. */
static void assert_refused(struct fixture *fx, mf_agent *agent, const char *why, int blobs)
{
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), why));
    assert_int_equal(fx->srv.n_blob, blobs); /* verified BEFORE downloading */
    assert_v1_survived(fx, agent, why);
}

static void test_agent__release_signed_by_director_key_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    /* A stolen director key: it signs the assignment validly and a "release" too. */
    fx->srv.release_by_director = 1;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    assert_refused(fx, agent, "unknown or revoked key", 1);
    mf_agent_free(agent);
}

static void test_agent__missing_release_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    assert_v2_refused_in_mode(fx, agent, CHECKIN_NO_RELEASE, MF_E_INVALID, "no signed \"release\"");
    mf_agent_free(agent);
}

static void test_agent__replayed_assignment_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;

    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.assignment_sequence, 1);
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.checkin_mode = CHECKIN_REPLAY;
    assert_refused(fx, agent, "wrong nonce", 1);
    /* A refused assignment does not advance the sequence. */
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.assignment_sequence, 1);
    /* An old sequence with the right nonce is a replay too. */
    fx->srv.checkin_mode = CHECKIN_OK;
    fx->srv.assign_seq = 0;
    assert_refused(fx, agent, "replayed sequence", 1);
    fx->srv.assign_seq = 10;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

/* Ops rotate the director key: keys v2 names SPARE as director, the server signs with it. */
static void rotate_director(struct fake_server *s)
{
    pthread_mutex_lock(&s->lock);
    mf_free(NULL, s->keys_env);
    s->keys_env = fx_keys(&s->keys_len, &world, 2, FX_EXPIRES, BY(K_REL0, K_REL1), 1, BY(K_SPARE),
                          1, BY(K_KEYS));
    s->keys_version = 2;
    s->director = K_SPARE;
    pthread_mutex_unlock(&s->lock);
}

/* A device frozen at sequence 2^53 by a stolen director key (v2 installed). */
static mf_agent *agent_frozen_at_2_53(struct fixture *fx)
{
    mf_agent *agent = agent_with_v1(fx);

    fx->srv.assign_seq = (1ull << 53) - 1; /* the next one signed is 2^53 */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK); /* it names a genuine release: installed */
    assert_active(agent, "v2", 'b');
    fx->srv.assign_seq = 10; /* the genuine director goes on from its own sequence */
    return agent;
}

/* Defect: an attacker with the director key assigns a genuine release at sequence 2^53,
 * the largest a device reads; every later genuine assignment was refused, even after ops
 * rotated the director key. Now keys v2 without that key starts a fresh sequence space. */
static void test_agent__stolen_director_key_freeze_ends_with_rotation(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_frozen_at_2_53(fx);
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;

    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.assignment_sequence, 1ull << 53);
    /* the genuine director's next assignment: frozen */
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "replayed sequence"));
    assert_active(agent, "v2", 'b');
    rotate_director(&fx->srv);
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.keys_version, 2);
    assert_int_equal(ts.assignment_sequence, 12);
    /* the stolen key is out, and the fresh space survives a restart */
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fx->srv.director = K_DIR;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "unknown or revoked key"));
    fx->srv.director = K_SPARE;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

static const mf_platform_ops *real_ops;
static int cut_trust_saves; /* renames of trust.state that fail, as a power cut would */

static int cut_rename(void *payload, const char *from, const char *to)
{
    if (cut_trust_saves > 0 && strcmp(to, "trust.state") == 0) {
        cut_trust_saves--;
        return MF_E_IO;
    }
    return real_ops->rename(payload, from, to);
}

/* Power lost while the rotated keys are saved: the state on storage is still the old one
 * as a whole (frozen, keys v1), never keys v2 with the old sequence or the reverse; after
 * the reboot the next check-in brings keys v2 again and the device recovers. */
static void test_agent__director_rotation_survives_a_cut_save(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_frozen_at_2_53(fx);
    mf_platform_ops cut = fx->ops;
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;

    mf_agent_free(agent);
    agent = NULL;
    real_ops = &fx->ops;
    cut.rename = cut_rename;
    cut_trust_saves = 1;
    fx->opts.platform = &cut;
    rotate_director(&fx->srv);
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_IO);
    assert_int_equal(cut_trust_saves, 0);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
    agent = NULL;
    fx->opts.platform = &fx->ops;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK); /* the reboot */
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.keys_version, 1);
    assert_int_equal(ts.assignment_sequence, 1ull << 53);
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.keys_version, 2);
    assert_true(ts.assignment_sequence < 1ull << 53);
    mf_agent_free(agent);
}

static void test_agent__release_below_floor_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    fx->srv.floor = 3;
    agent = agent_with_v1(fx);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.security_floor, 3); /* committed with the install */
    assert_int_equal(st.release_sequence, 1);
    fx->srv.floor = 2;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    assert_refused(fx, agent, "below security floor", 1);
    /* The floor survives a restart (trust.state), so does the refusal. */
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.security_floor, 3);
    assert_refused(fx, agent, "below security floor", 1);
    /* At the floor it installs (fleet rollback to an older release works the same way). */
    fx->srv.floor = 3;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

/*
 * mf_agent_model_status as an app built against a version-1 header lays it out: a frozen
 * copy, so the struct of mf/agent.h may grow while this one may not. The assert below ties
 * it to the fields version 1 names in the current header.
 */
struct agent_status_v1 {
    unsigned int struct_version;
    int installed;
    char version[MF_AGENT_NAME_MAX + 1];
    char sha256[65];
    uint64_t size;
    char slot;
    int up_to_date;
    int last_error;
    char last_errmsg[256];
    uint64_t security_floor;
    uint64_t release_sequence;
};
_Static_assert(offsetof(struct agent_status_v1, release_sequence) ==
                   offsetof(mf_agent_model_status, release_sequence),
               "version 1 of mf_agent_model_status is frozen");

/* An app of an older header passes a shorter struct: the library writes its fields and not
 * one byte past them (the guard after it stays intact). */
static void test_agent__status_writes_only_the_callers_version(void **state)
{
    struct fixture *fx = *state;
    struct {
        struct agent_status_v1 st;
        unsigned char guard[sizeof(mf_agent_model_status)];
    } old;
    mf_agent_model_status cur;
    unsigned char guard[sizeof(old.guard)];
    mf_agent *agent = agent_with_v1(fx);

    memset(&old, 0xa5, sizeof(old));
    memset(guard, 0xa5, sizeof(guard));
    old.st.struct_version = 1;
    assert_int_equal(mf_agent_status((mf_agent_model_status *)(void *)&old, agent, "detector"),
                     MF_OK);
    assert_int_equal(old.st.struct_version, 1);
    assert_int_equal(old.st.installed, 1);
    assert_string_equal(old.st.version, "v1");
    assert_int_equal(old.st.slot, 'a');
    assert_int_equal(old.st.size, sizeof(model_v1));
    assert_memory_equal(old.guard, guard, sizeof(guard));
    /* A model that is not tracked clears version 1's fields only, too. */
    memset(&old, 0xa5, sizeof(old));
    old.st.struct_version = 1;
    assert_int_equal(mf_agent_status((mf_agent_model_status *)(void *)&old, agent, "other"),
                     MF_E_NOTFOUND);
    assert_int_equal(old.st.installed, 0);
    assert_memory_equal(old.guard, guard, sizeof(guard));
    /* A version from a newer header than this library's is refused, nothing written. */
    memset(&cur, 0xa5, sizeof(cur));
    cur.struct_version = MF_AGENT_STATUS_VERSION + 1;
    assert_int_equal(mf_agent_status(&cur, agent, "detector"), MF_E_INVALID);
    assert_int_equal(cur.struct_version, MF_AGENT_STATUS_VERSION + 1);
    assert_memory_equal((unsigned char *)&cur + sizeof(cur.struct_version), guard,
                        sizeof(cur) - sizeof(cur.struct_version));
    assert_int_equal(mf_agent_status_init(&cur, 0), MF_E_INVALID);
    /* The current version gets the version-2 fields too (a pin is one). */
    assert_int_equal(mf_agent_pin(agent, "detector", NULL), MF_OK);
    assert_int_equal(mf_agent_status_init(&cur, MF_AGENT_STATUS_VERSION), MF_OK);
    assert_int_equal(mf_agent_status(&cur, agent, "detector"), MF_OK);
    assert_string_equal(cur.version, "v1");
    assert_string_equal(cur.pinned, "v1");
    mf_agent_free(agent);
}

/* The counters and the trust state as an app of a version-1 header lays them out (frozen like
 * agent_status_v1; the asserts tie them to the current header's version-1 fields). */
struct agent_counters_v1 {
    unsigned int struct_version;
    uint64_t blob_requests, blob_bytes, delta_installs, full_installs, delta_fallbacks, resumes;
};
_Static_assert(sizeof(struct agent_counters_v1) ==
                   offsetof(mf_agent_counters, resumes) + sizeof(uint64_t),
               "version 1 of mf_agent_counters is frozen");
struct agent_trust_state_v1 {
    unsigned int struct_version;
    uint64_t root_version, keys_version, assignment_sequence;
};
_Static_assert(sizeof(struct agent_trust_state_v1) ==
                   offsetof(mf_agent_trust_state, assignment_sequence) + sizeof(uint64_t),
               "version 1 of mf_agent_trust_state is frozen");

static int stats_into(void *out, const mf_agent *agent)
{
    return mf_agent_stats(out, agent);
}

static int trust_into(void *out, const mf_agent *agent)
{
    return mf_agent_trust_status(out, agent);
}

/*
 * `call` writes a versioned output struct whose version 1 is `v1_size` bytes: given version
 * 1 it writes those bytes (copied to `v1_out`) and not one past them; given 0 (an app that
 * never set it) or a version newer than the library's `current` it fails and writes nothing.
 */
static void check_versioned_out(void *v1_out, uint64_t *buf, size_t buf_size,
                                int (*call)(void *, const mf_agent *), const mf_agent *agent,
                                size_t v1_size, unsigned int current)
{
    const unsigned int bad[] = {0, current + 1};
    unsigned char *b = (unsigned char *)buf;
    unsigned int v = 1;

    assert_true(v1_size + 16 <= buf_size);
    memset(buf, 0xa5, buf_size);
    memcpy(b, &v, sizeof(v));
    assert_int_equal(call(buf, agent), MF_OK);
    memcpy(&v, b, sizeof(v));
    assert_int_equal(v, 1);
    for (size_t i = v1_size; i < buf_size; i++)
        assert_int_equal(b[i], 0xa5);
    memcpy(v1_out, buf, v1_size);
    for (size_t k = 0; k < 2; k++) {
        memset(buf, 0xa5, buf_size);
        memcpy(b, &bad[k], sizeof(bad[k]));
        assert_int_equal(call(buf, agent), MF_E_INVALID);
        for (size_t i = sizeof(v); i < buf_size; i++)
            assert_int_equal(b[i], 0xa5);
    }
}

/* mf_agent_counters and mf_agent_trust_state follow mf_agent_model_status: an app of an older
 * header is written only its own fields, and a version the library does not know nothing. */
static void test_agent__counters_and_trust_write_only_the_callers_version(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    uint64_t buf[16];
    struct agent_counters_v1 c;
    struct agent_trust_state_v1 t;
    mf_agent_counters cur;

    check_versioned_out(&c, buf, sizeof(buf), stats_into, agent, sizeof(c),
                        MF_AGENT_COUNTERS_VERSION);
    assert_int_equal(c.full_installs, 1); /* agent_with_v1 installed v1 whole */
    assert_int_equal(c.delta_installs, 0);
    assert_true(c.blob_requests >= 1);
    assert_int_equal(c.blob_bytes, sizeof(model_v1));
    check_versioned_out(&t, buf, sizeof(buf), trust_into, agent, sizeof(t),
                        MF_AGENT_TRUST_STATE_VERSION);
    assert_int_equal(t.root_version, 1);
    assert_int_equal(t.assignment_sequence, 1);
    /* _init zeroes the caller's version and refuses unknown ones. */
    memset(&cur, 0xa5, sizeof(cur));
    assert_int_equal(mf_agent_counters_init(&cur, 0), MF_E_INVALID);
    assert_int_equal(mf_agent_counters_init(&cur, MF_AGENT_COUNTERS_VERSION), MF_OK);
    assert_int_equal(cur.struct_version, MF_AGENT_COUNTERS_VERSION);
    assert_int_equal(cur.resumes, 0);
    mf_agent_free(agent);
}

/* mf_agent_new() has no handle to fail into: the message reaches the options' error buffer
 * (without a log_fn), truncated to its size, and names the missing field. */
static void test_agent__new_failure_fills_the_error_buffer(void **state)
{
    struct fixture *fx = *state;
    mf_agent_options o = fx->opts;
    mf_agent *agent = (mf_agent *)1;
    char errbuf[MF_AGENT_ERRBUF_SIZE], tiny[8];

    o.log_fn = NULL;
    o.trust_root = NULL;
    o.trust_root_len = 0;
    o.errbuf = errbuf;
    o.errbuf_size = sizeof(errbuf);
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_null(agent);
    assert_non_null(strstr(errbuf, "trust_root is not set"));
    o.errbuf = tiny;
    o.errbuf_size = sizeof(tiny);
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_string_equal(tiny, "trust_r");
    /* A failure found after the options check (a damaged trust root) arrives too. */
    o = fx->opts;
    o.trust_root = "not a root";
    o.trust_root_len = strlen("not a root");
    o.errbuf = errbuf;
    o.errbuf_size = sizeof(errbuf);
    errbuf[0] = '\0';
    assert_true(mf_agent_new(&agent, &o) < 0);
    assert_null(agent);
    assert_true(errbuf[0] != '\0');
    /* Success leaves the buffer alone. */
    o = fx->opts;
    memset(errbuf, 'x', sizeof(errbuf));
    o.errbuf = errbuf;
    o.errbuf_size = sizeof(errbuf);
    assert_int_equal(mf_agent_new(&agent, &o), MF_OK);
    assert_int_equal(errbuf[0], 'x');
    mf_agent_free(agent);
}

static void test_agent__trust_root_is_required_and_state_persists(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;
    mf_agent_options o = fx->opts;
    uint8_t *bad;
    size_t len = 0;

    fx->opts.log_fn = mf_kit_log_errors;
    fx->opts.log_payload = &errlog;
    o = fx->opts;
    o.trust_root = NULL;
    o.trust_root_len = 0;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID); /* no trust on first use */
    assert_null(agent);
    assert_non_null(strstr(errlog.last, "trust_root"));
    /* A root not signed by its own root keys is refused at provisioning. */
    o = fx->opts;
    bad = fx_root(&len, &world, 1, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                  BY(K_EVIL));
    o.trust_root = bad;
    o.trust_root_len = len;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_SIGNATURE);
    assert_non_null(strstr(errlog.last, "provisioned trust root refused"));
    assert_false(exists(fx, "trust.state"));
    mf_free(NULL, bad);

    agent = agent_with_v1(fx);
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.root_version, 1);
    assert_int_equal(ts.keys_version, 1);
    assert_true(exists(fx, "trust.state"));
    assert_false(exists(fx, "trust.state.tmp"));
    /* The first check-in had no keys document yet; the next one names what it trusts. */
    assert_non_null(strstr(fx->srv.checkin_body, "\"root_version\":1,\"keys_version\":0"));
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body, "\"root_version\":1,\"keys_version\":1"));
    mf_agent_free(agent);
    /* Restarted: the saved state wins; the provisioned root is not needed any more. */
    agent = NULL;
    o = fx->opts;
    o.trust_root = "x";
    o.trust_root_len = 1;
    assert_int_equal(mf_agent_new(&agent, &o), MF_OK);
    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    assert_int_equal(ts.keys_version, 1);
    assert_int_equal(ts.assignment_sequence, 2); /* two check-ins, one assignment each */
    mf_agent_free(agent);
    /* An edited state file is refused, not trusted. */
    {
        char path[256];

        (void)snprintf(path, sizeof(path), "%s/trust.state", fx->dir);
        mf_kit_fs_flip_byte(path, 20);
    }
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(errlog.last, "trust.state refused"));
}

/* ---- fault injection: fail the Nth allocation, for every N, across new + one step ---- */

static void test_agent__every_allocation_failure_is_clean(void **state)
{
    struct fixture *fx = *state;
    struct mf_kit_alloc fa;
    mf_allocator alloc = mf_kit_alloc_init(&fa, 0, MF_KIT_ALLOC_FAIL_ONE);
    int done = 0, failures = 0;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->opts.allocator = &alloc;
    for (int n = 0; !done && n < 500; n++) {
        mf_agent *agent = NULL;
        mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
        int err;

        fresh_state_dir(fx);
        mf_kit_alloc_rearm(&fa, n);
        err = mf_agent_new(&agent, &fx->opts);
        if (err == MF_OK) {
            err = mf_agent_step(agent);
            if (err < 0) {
                /* A clean error: a message, and nothing half-installed is active. */
                assert_true(mf_agent_errmsg(agent)[0] != '\0');
                assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
                assert_false(exists(fx, "models/detector/slot-a.part"));
                if (st.installed)
                    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
            }
            mf_agent_free(agent);
        } else {
            assert_null(agent);
        }
        if (err == MF_OK) {
            done = fa.calls <= n; /* the failure point was never reached */
            if (!done)
                failures++; /* the failed allocation was absorbed (e.g. a log line) */
        } else {
            assert_int_equal(err, MF_E_NOMEM);
            failures++;
        }
    }
    assert_true(done);
    assert_true(failures > 10);
}

/* ---- bounded memory: the blob streams to storage, it is never held in RAM ---- */

static void test_agent__install_heap_is_bounded(void **state)
{
    enum { BIG = 4 * 1024 * 1024 };
    struct fixture *fx = *state;
    struct mf_kit_alloc pa;
    mf_allocator alloc = mf_kit_alloc_init(&pa, -1, MF_KIT_ALLOC_FAIL_ONE);
    uint8_t *big = test_malloc(BIG);
    mf_agent *agent = NULL;

    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    fake_assign(&fx->srv, "v1", big, BIG, big, BIG);
    fx->opts.allocator = &alloc;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-a", big, BIG);
    mf_agent_free(agent);
    assert_int_equal(pa.live, 0);
    print_message("peak agent heap for a %d-byte install: %zu bytes\n", BIG, pa.peak);
    assert_true(pa.peak < 32 * 1024); /* the 4 MiB blob never passes through the allocator */
    test_free(big);
}

/* ---- parsers, table-driven (the fake server only sends well-formed answers) ---- */

#define NONCE "00112233445566778899aabbccddeeff"
#define SHA "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define ASSIGN(fields) "{\"nonce\":\"" NONCE "\",\"assignments\":[{" fields "}]}"
#define ENVS ",\"release\":\"{}\",\"assignment\":\"{}\""
#define GOOD_FIELDS(size, blob)                                                                    \
    "\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA "\",\"size\":" size              \
    ",\"blob\":\"" blob "\"" ENVS

/* The injectable clock of the install window test: today at `clock_min` minutes, UTC. */
static int64_t clock_day_s;
static int clock_min;
static int idle_answer, idle_calls;

static int64_t window_clock_s(void *payload)
{
    (void)payload;
    return clock_day_s + clock_min * 60;
}

static int on_idle(void *payload, const char *model, const char *version)
{
    (void)payload;
    (void)model;
    (void)version;
    idle_calls++;
    return idle_answer;
}

static void expect_deferred(mf_agent *agent, const char *version)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.install_deferred, version[0] != '\0');
    assert_string_equal(st.deferred_version, version);
    assert_false(st.up_to_date && version[0]);
}

/* An install window (docs/agent.md, "Install window"): a new version downloads at once,
 * installs only once the (injected) clock is inside the window, from the verified .part
 * without a second download; "pending_install" is reported once meanwhile. The app's
 * idle_fn opens it early; a window may span midnight; a version older status structs do
 * not see the new fields. */
static void test_agent__install_window_defers_until_it_opens(void **state)
{
    struct fixture *fx = *state;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    uint8_t *v3 = make_model(4096, 3), *v4 = make_model(4096, 4);
    mf_agent *agent = NULL;
    int blobs, reports;

    clock_day_s = (int64_t)time(NULL) / 86400 * 86400;
    clock_min = 60; /* 01:00 UTC */
    idle_answer = idle_calls = 0;
    fx->ops.wall_clock_s = window_clock_s;
    fx->opts.idle_fn = on_idle;
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK); /* no window: installs at once */
    assert_active(agent, "v1", 'a');
    expect_deferred(agent, "");

    fx->srv.install_window = "{\"start_min\":120,\"end_min\":300}"; /* 02:00-05:00 */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    expect_deferred(agent, "v2");
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.window_start_min, 120);
    assert_int_equal(st.window_end_min, 300);
    assert_string_equal(fx->srv.report_status, "pending_install");
    assert_non_null(strstr(fx->srv.report_detail, "02:00-05:00 UTC; running v1"));
    assert_true(idle_calls > 0); /* asked, said busy */
    blobs = fx->srv.n_blob;
    reports = fx->srv.n_report;
    step_expect(agent, MF_OK); /* still 01:00: waits, no download, no second report */
    assert_active(agent, "v1", 'a');
    assert_int_equal(fx->srv.n_blob, blobs);
    assert_int_equal(fx->srv.n_report, reports);

    clock_min = 2 * 60; /* the window opens */
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", model_v2, sizeof(model_v2));
    assert_int_equal(fx->srv.n_blob, blobs); /* from the verified .part */
    assert_string_equal(fx->srv.report_status, "installed");
    expect_deferred(agent, "");

    /* 22:00-04:00 spans midnight: 03:00 is inside. */
    fx->srv.install_window = "{\"start_min\":1320,\"end_min\":240}";
    clock_min = 3 * 60;
    fake_assign(&fx->srv, "v3", v3, 4096, v3, 4096);
    step_expect(agent, MF_OK);
    assert_active(agent, "v3", 'a');

    /* Outside the window (12:00) the app's idle answer opens it. */
    fx->srv.install_window = "{\"start_min\":120,\"end_min\":300}";
    clock_min = 12 * 60;
    fake_assign(&fx->srv, "v4", v4, 4096, v4, 4096);
    step_expect(agent, MF_OK);
    assert_active(agent, "v3", 'a');
    idle_answer = 1;
    step_expect(agent, MF_OK);
    assert_active(agent, "v4", 'b');

    /* A version-2 status struct ends before the window fields: they stay untouched. */
    memset(&st, 0x5a, sizeof(st));
    st.struct_version = 2;
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.install_deferred, 0x5a5a5a5a);
    mf_agent_free(agent);
    test_free(v3);
    test_free(v4);
}

/* Steps `agent` `n` times; every wait lies in [lo, hi]; returns how many distinct waits. */
static int poll_waits_in(mf_agent *agent, int n, long lo, long hi)
{
    long first = -1;
    int distinct = 1;

    for (int i = 0; i < n; i++) {
        long p;

        step_expect(agent, MF_OK);
        p = mf_agent_poll_interval_s(agent);
        assert_in_range(p, lo, hi);
        if (first < 0)
            first = p;
        else if (p != first)
            distinct = 2;
    }
    return distinct;
}

/* The wait between check-ins (docs/agent.md, "Poll interval"): the server's default moved
 * by its jitter, drawn anew at each check-in; the device's own interval over the server's
 * default; a group's interval (poll_group) over the device's own. */
static void test_agent__poll_interval_precedence_and_jitter(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    fx->srv.poll_interval_s = 100;
    fx->srv.poll_jitter_pct = 20;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    /* 30 draws from 41 values all alike: a chance of 41^-29. */
    assert_int_equal(poll_waits_in(agent, 30, 80, 120), 2);
    mf_agent_free(agent);

    fx->opts.poll_interval_s = 30;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(poll_waits_in(agent, 20, 24, 36), 2);
    fx->srv.poll_group = "lab";
    (void)poll_waits_in(agent, 5, 80, 120);
    fx->srv.poll_jitter_pct = 0; /* an older server: no jitter */
    assert_int_equal(poll_waits_in(agent, 3, 100, 100), 1);
    mf_agent_free(agent);

    fx->opts.poll_interval_s = -1;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_null(agent);
}

static void test_agent__checkin_parser_rejects_bad_answers(void **state)
{
    static const char *const models[] = {"detector", "classifier"};
    static const struct {
        const char *json;
        int code;
        const char *msg;
    } cases[] = {
        {ASSIGN(GOOD_FIELDS("5", "/v1/blobs/" SHA)), MF_OK, ""},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[]}", MF_OK, ""},
        {"{\"nonce\":\"" NONCE "0\",\"assignments\":[]}", MF_E_INVALID, "nonce"},
        {"{\"assignments\":[]}", MF_E_INVALID, "nonce"},
        {"{\"nonce\":\"" NONCE "\"}", MF_E_INVALID, "\"assignments\""},
        {"{\"nonce\":\"" NONCE "\",\"poll_interval_s\":-1,\"assignments\":[]}", MF_E_INVALID,
         "poll_interval_s"},
        /* The group poll fields (docs/protocol.md, "Poll interval"). */
        {"{\"nonce\":\"" NONCE "\",\"poll_interval_s\":30,\"poll_jitter_pct\":50,"
         "\"poll_group\":\"lab\",\"assignments\":[]}",
         MF_OK, ""},
        {"{\"nonce\":\"" NONCE "\",\"poll_jitter_pct\":51,\"assignments\":[]}", MF_E_INVALID,
         "poll_jitter_pct is not an integer in 0..50"},
        {"{\"nonce\":\"" NONCE "\",\"poll_jitter_pct\":2.5,\"assignments\":[]}", MF_E_INVALID,
         "poll_jitter_pct"},
        {"{\"nonce\":\"" NONCE "\",\"poll_jitter_pct\":\"10\",\"assignments\":[]}", MF_E_INVALID,
         "poll_jitter_pct"},
        {"{\"nonce\":\"" NONCE "\",\"poll_group\":7,\"assignments\":[]}", MF_E_INVALID,
         "poll_group is not a group name"},
        {"{\"nonce\":\"" NONCE "\",\"poll_group\":\"a/b\",\"assignments\":[]}", MF_E_INVALID,
         "poll_group"},
        {"{\"nonce\":\"" NONCE "\",\"install_window\":{\"start_min\":1320,\"end_min\":240},"
         "\"assignments\":[]}",
         MF_OK, ""},
        {"{\"nonce\":\"" NONCE "\",\"install_window\":{\"start_min\":1440,\"end_min\":2},"
         "\"assignments\":[]}",
         MF_E_INVALID, "install_window needs start_min and end_min in 0..1439"},
        {"{\"nonce\":\"" NONCE "\",\"install_window\":{\"start_min\":60},\"assignments\":[]}",
         MF_E_INVALID, "install_window"},
        {"{\"nonce\":\"" NONCE "\",\"install_window\":\"02:00-05:00\",\"assignments\":[]}",
         MF_E_INVALID, "install_window"},
        {"{\"nonce\":\"" NONCE "\",\"install_window\":{\"start_min\":60,\"end_min\":60},"
         "\"assignments\":[]}",
         MF_E_INVALID, "install_window is empty"},
        {ASSIGN(GOOD_FIELDS("-1", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("1.5", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("\"5\"", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("1e300", "/b")), MF_E_INVALID, "number of magnitude 2^53 or more"},
        {ASSIGN(GOOD_FIELDS("5", "http://evil.example/x")), MF_E_INVALID, "not a server path"},
        {ASSIGN(GOOD_FIELDS("5", "/v1/../../etc/passwd")), MF_E_INVALID, "not a server path"},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v 2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\""),
         MF_E_INVALID, "assignment.version"},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"ABC\",\"size\":1,"
                "\"blob\":\"/b\""),
         MF_E_INVALID, "assignment.sha256"},
        {"{\"nonce\":\"" NONCE
         "\",\"assignments\":[{" GOOD_FIELDS("1", "/b") "},{" GOOD_FIELDS("1", "/b") "}]}",
         MF_E_INVALID, "twice"},
        {"[]", MF_E_INVALID, "not a JSON object"},
        /* Reviewer cases: trailing bytes and a repeated member were read leniently before. */
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[]} {}", MF_E_INVALID,
         "trailing bytes after the JSON value"},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[]}\x01", MF_E_INVALID,
         "raw control character outside a string"},
        {"{\"nonce\":\"" NONCE
         "\",\"poll_interval_s\":30,\"poll_interval_s\":1,\"assignments\":[]}",
         MF_E_INVALID, "duplicate member name 'poll_interval_s'"},
        /* Trust documents: envelopes must be there, as strings, and bounded. */
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\",\"assignment\":\"{}\""),
         MF_E_INVALID, "no signed \"release\""},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\",\"release\":\"{}\",\"assignment\":{}"),
         MF_E_INVALID, "no signed \"assignment\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"roots\":[7]},\"assignments\":[]}", MF_E_INVALID,
         "trust.roots[0]"},
        {"{\"nonce\":\"" NONCE "\",\"trust\":[],\"assignments\":[]}", MF_E_INVALID, "\"trust\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"keys\":1},\"assignments\":[]}", MF_E_INVALID,
         "\"keys\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"roots\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
         "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]},\"assignments\":[]}",
         MF_E_LIMIT, "more than 16 root rotations"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mf_agent_assignment out[2];
        struct mf_agent_trust_docs trust;
        struct cJSON *doc = NULL;
        struct mf_ctx ctx;
        size_t n = 7;
        struct mf_agent_settings poll = {0};
        int err;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        err = mf_agent__checkin_parse(&ctx, out, &n, &poll, &trust, &doc, cases[i].json,
                                      strlen(cases[i].json), NONCE, models, 2);
        if (err != cases[i].code || !strstr(ctx.errmsg, cases[i].msg))
            print_error("case %zu: %d \"%s\"\n", i, err, ctx.errmsg);
        assert_int_equal(err, cases[i].code);
        assert_non_null(strstr(ctx.errmsg, cases[i].msg));
        if (err < 0) {
            assert_int_equal(n, 0);
            assert_null(doc);
        } else if (n) {
            assert_string_equal(out[0].release_env, "{}"); /* borrowed from the tree */
        }
        cJSON_Delete(doc);
    }
}

static void test_agent__state_parser_round_trip_and_rejects(void **state)
{
    static const char *const bad[] = {
        "{\"format\":2,\"active\":null}",
        "{\"format\":1,\"active\":{\"slot\":\"c\",\"version\":\"v\",\"sha256\":\"" SHA
        "\",\"size\":1}}",
        "{\"format\":1,\"active\":{\"slot\":\"a\",\"version\":\"v\",\"sha256\":\"" SHA
        "\",\"size\":1},\"previous\":{\"slot\":\"a\",\"version\":\"w\",\"sha256\":\"" SHA
        "\",\"size\":2}}",
        "{\"format\":1,\"active\":7}",
        "not json",
    };
    static struct mf_agent_model_state st = {
        .active = {'b', "v2", SHA, 42, 3},
        .previous = {'a', "v1", SHA, 7, 2},
        .pending = 1,
        .starts = 2,
        .pin = "v1",
        .rolled_back = {{"v9", SHA, 9, "unhealthy: \"quoted\" reason", 0}},
        .n_rolled_back = 1,
    };
    static struct mf_agent_model_state back;
    struct mf_dynbuf buf;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_dynbuf__init(&buf, NULL, 4096);
    assert_int_equal(mf_agent__state_format(&buf, &st), MF_OK);
    assert_int_equal(mf_agent__state_parse(&ctx, &back, (char *)buf.data, buf.len), MF_OK);
    assert_memory_equal(&st, &back, sizeof(st));
    mf_dynbuf__free(&buf);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mf_agent__state_parse(&ctx, &back, bad[i], strlen(bad[i])), MF_E_INVALID);
        assert_int_equal(back.active.slot, 0);
    }
}

/* The app's offload handle rides the agent's check-in: its telemetry goes up, the server's
 * policy for that model comes down and is installed, and the handle learns the version that
 * was installed (docs/protocol-offload.md). */
static void test_agent__offload_rides_the_checkin(void **state)
{
    struct fixture *fx = *state;
    mf_offload_options oo;
    mf_offload *off = NULL;
    mf_offload *offs[2] = {NULL, NULL};
    mf_agent *agent = NULL;
    const mf_offload_policy *p;

    assert_int_equal(mf_offload_options_init(&oo, MF_OFFLOAD_OPTIONS_VERSION), MF_OK);
    oo.model = "detector";
    oo.model_version = "v0";
    oo.platform = &fx->ops;
    assert_int_equal(mf_offload_new(&off, &oo), MF_OK);
    assert_null(mf_offload_policy_get(off));
    offs[0] = off;
    fx->opts.offloads = offs;
    fx->srv.offload_policy =
        "{\"enabled\":true,\"method\":\"margin\",\"threshold\":0.25,\"model_version\":\"v1\"}";
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body, "\"offload\":[{"));
    assert_non_null(strstr(fx->srv.checkin_body, "\"model\":\"detector\""));
    p = mf_offload_policy_get(off);
    assert_non_null(p);
    assert_true(p->enabled);
    assert_int_equal(p->method, MF_OFFLOAD_MARGIN);
    assert_true(p->threshold > 0.249f && p->threshold < 0.251f);
    assert_string_equal(mf_offload_telemetry_get(off)->model_version, "v1");
    /* The app made its handle without a credential: the agent handed over the one it got. */
    assert_string_equal(((const struct mf_offload *)off)->credential, CREDENTIAL);
    /* A policy the handle refuses keeps the old one and does not fail the step. */
    fx->srv.offload_policy = "{\"enabled\":true,\"method\":\"guess\",\"threshold\":0.5}";
    step_expect(agent, MF_OK);
    p = mf_offload_policy_get(off);
    assert_non_null(p);
    assert_int_equal(p->method, MF_OFFLOAD_MARGIN);
    mf_agent_free(agent);
    mf_offload_free(off);
}

/* The app's runtime-report handle rides the check-in: the agent counts the install it made,
 * and the model's totals (with the app's own latency samples) go up in its check-in entry. */
/*
 * Options version 4: the agent creates the offload handle itself and lends it out. A new
 * device gets the handle's policy from its first step (enroll and check-in), and the handle
 * holds the credential the agent enrolled for: the app never reads <state>/credential.
 */
static void test_agent__owns_offload_with_its_credential(void **state)
{
    struct fixture *fx = *state;
    mf_offload_options oo;
    const mf_offload_options *per_model[2] = {&oo, NULL};
    mf_agent *agent = NULL;
    mf_offload *off = NULL;
    const mf_offload_policy *p;
    char errbuf[MF_AGENT_ERRBUF_SIZE];

    assert_int_equal(mf_offload_options_init(&oo, MF_OFFLOAD_OPTIONS_VERSION), MF_OK);
    fx->opts.offload_options = per_model;
    fx->srv.offload_policy =
        "{\"enabled\":true,\"method\":\"margin\",\"threshold\":0.25,\"model_version\":\"v1\"}";
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_offload(&off, agent, "detector"), MF_OK);
    assert_non_null(off);
    assert_null(mf_offload_policy_get(off));
    assert_string_equal(((const struct mf_offload *)off)->credential, ""); /* not enrolled */
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_checkin, 1);
    p = mf_offload_policy_get(off);
    assert_non_null(p); /* from the first check-in, not the second */
    assert_int_equal(p->method, MF_OFFLOAD_MARGIN);
    assert_string_equal(mf_offload_telemetry_get(off)->model_version, "v1");
    assert_string_equal(((const struct mf_offload *)off)->credential, CREDENTIAL);
    assert_int_equal(mf_agent_offload(&off, agent, "classifier"), MF_E_NOTFOUND);
    assert_null(off);
    assert_int_equal(mf_agent_offload(&off, agent, "other"), MF_E_NOTFOUND);
    mf_agent_free(agent);
    /* A restarted agent hands the stored credential over at once. */
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_offload(&off, agent, "detector"), MF_OK);
    assert_string_equal(((const struct mf_offload *)off)->credential, CREDENTIAL);
    mf_agent_free(agent);
    /* The handle's own failure reaches the agent's error buffer with its message. */
    oo.max_input_bytes = 0;
    fx->opts.errbuf = errbuf;
    fx->opts.errbuf_size = sizeof(errbuf);
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(errbuf, "max_input_bytes"));
    oo.max_input_bytes = 784;
    /* The fields the agent fills are refused from the app, by name. */
    oo.credential = "mfd_from_the_app";
    fx->opts.errbuf = errbuf;
    fx->opts.errbuf_size = sizeof(errbuf);
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(errbuf, "credential"));
}

static void test_agent__runtime_reports_ride_the_checkin(void **state)
{
    struct fixture *fx = *state;
    mf_telemetry *t = NULL;
    mf_agent *agent = NULL;
    const mf_telemetry_version *v;

    assert_int_equal(mf_telemetry_new(&t, NULL, &fx->ops, "telemetry"), MF_OK);
    fx->opts.telemetry = t;
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    v = mf_telemetry_get(t, "detector", "v1");
    assert_non_null(v);
    assert_int_equal(v->install_ok, 1);
    assert_int_equal(v->install_failed, 0);
    /* Nothing was recorded before the first check-in: no member was sent. */
    assert_null(strstr(fx->srv.checkin_body, "\"telemetry\":"));
    assert_int_equal(mf_telemetry_record_latency(t, "detector", "v1", 1500), MF_OK);
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body, "\"telemetry\":"));
    assert_int_equal(mf_telemetry_get(t, "detector", "v1")->install_ok, 1); /* counted once */
    mf_agent_free(agent);
    mf_telemetry_free(t);
}

/* The last check-in request the fake server read. */
static const struct mf_kit_http_request *last_checkin(struct fixture *fx)
{
    int n = mf_kit_http_requests(&fx->srv.http);

    for (int i = n - 1; i >= 0 && i >= n - MF_KIT_HTTP_MAX_CAPTURE; i--) {
        const struct mf_kit_http_request *r = mf_kit_http_request(&fx->srv.http, i);

        if (strcmp(r->target, "/v1/checkin") == 0)
            return r;
    }
    fail_msg("no check-in among the last requests");
    return NULL;
}

/* Runtime reports at their worst case (four versions of the model, every bucket used, the
 * widest numbers: about 128 KiB of JSON, and recorded into again at every step) never make
 * a check-in the server's 64 KiB body cap refuses: each carries at least one version within
 * MF_TELEMETRY_CHECKIN_BUDGET, and every version goes up within four check-ins. */
static void test_agent__worst_case_reports_fit_the_checkin(void **state)
{
    struct fixture *fx = *state;
    char ver[4][MF_OFFLOAD_NAME_MAX + 1];
    mf_telemetry *t = NULL;
    mf_agent *agent = NULL;

    assert_int_equal(mf_telemetry_new(&t, NULL, &fx->ops, "telemetry"), MF_OK);
    fx->opts.telemetry = t;
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    (void)snprintf(ver[0], sizeof(ver[0]), "v1"); /* the installed one, as the agent counts it */
    for (int i = 1; i < 4; i++) {
        char prefix[8];

        (void)snprintf(prefix, sizeof(prefix), "w%d", i);
        telemetry_long_name(ver[i], prefix);
    }
    for (int i = 0; i < 4; i++)
        telemetry_fill_widest(t, "detector", ver[i]);
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    for (int round = 0; round < 4; round++) {
        const struct mf_kit_http_request *r;

        for (int i = 0; i < 4; i++)
            assert_int_equal(mf_telemetry_record_health(t, "detector", ver[i], 1), MF_OK);
        step_expect(agent, MF_OK);
        r = last_checkin(fx);
        assert_true(r->body_len <= 64 * 1024);
        assert_non_null(strstr(r->body, "\"telemetry\":"));
    }
    for (int i = 0; i < 4; i++)
        assert_true(t->sent_seq[i] > 0); /* carried by a check-in the server answered */
    mf_agent_free(agent);
    mf_telemetry_free(t);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_agent__enroll_checkin_install_report),
        T(test_agent__holds_no_descriptor_between_steps),
        T(test_agent__device_class_rides_the_checkin),
        T(test_agent__offload_rides_the_checkin),
        T(test_agent__owns_offload_with_its_credential),
        T(test_agent__runtime_reports_ride_the_checkin),
        T(test_agent__worst_case_reports_fit_the_checkin),
        T(test_agent__state_file_records_active_and_previous),
        T(test_agent__wrong_enrollment_token_is_auth_error),
        T(test_agent__no_token_no_credential_is_auth_error),
        T(test_agent__sha256_mismatch_is_refused),
        T(test_agent__chunks_before_a_bad_one_in_the_same_piece_are_kept),
        T(test_agent__more_bytes_than_assigned_are_refused),
        T(test_agent__cut_connection_keeps_previous),
        T(test_agent__short_blob_keeps_previous),
        T(test_agent__missing_blob_is_clear_error),
        T(test_agent__malformed_checkin_is_invalid),
        T(test_agent__unreachable_server_is_net_error),
        T(test_agent__bad_options_are_rejected_with_a_message),
        T(test_agent__damaged_state_file_is_reported),
        T(test_agent__every_allocation_failure_is_clean),
        T(test_agent__install_heap_is_bounded),
        T(test_agent__release_signed_by_director_key_is_refused),
        T(test_agent__missing_release_is_refused),
        T(test_agent__replayed_assignment_is_refused),
        T(test_agent__stolen_director_key_freeze_ends_with_rotation),
        T(test_agent__director_rotation_survives_a_cut_save),
        T(test_agent__release_below_floor_is_refused),
        T(test_agent__trust_root_is_required_and_state_persists),
        T(test_agent__status_writes_only_the_callers_version),
        T(test_agent__counters_and_trust_write_only_the_callers_version),
        T(test_agent__new_failure_fills_the_error_buffer),
        T(test_agent__poll_interval_precedence_and_jitter),
        T(test_agent__install_window_defers_until_it_opens),
        cmocka_unit_test(test_agent__checkin_parser_rejects_bad_answers),
        cmocka_unit_test(test_agent__state_parser_round_trip_and_rejects),
    };
#undef T

    return cmocka_run_group_tests_name("agent", tests, world_setup, world_teardown);
}
