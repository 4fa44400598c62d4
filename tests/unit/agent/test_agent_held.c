/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Check-ins that send only what changed (docs/protocol.md): libmf keeps the release envelope
 * of each installed slot (models/<m>/slot-<x>.release, its digest in state.json), names the
 * release it runs in its check-in ("release_sha256"), and verifies an assignment whose answer
 * left that release out against the kept envelope, after a restart too. A new release comes
 * whole and is installed as before. A kept envelope that is damaged or missing, a release
 * left out that is not the one kept, and a state file of an older agent (no digest) all end
 * in a refusal or a full answer, and the next check-in asks for the envelope again; an older
 * server that always sends the envelope is served as before.
 */
#include "agent_fixture.h"
#include "kit_fs.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define KEPT_A "models/detector/slot-a.release"
#define KEPT_B "models/detector/slot-b.release"

static void release_digest(char *out, const struct fake_server *s)
{
    mf_hex__encode(out, s->release_digest, sizeof(s->release_digest));
}

/* A device running v1, and the digest of v1's release into `v1`. */
static mf_agent *running_v1(struct fixture *fx, char v1[65])
{
    mf_agent *agent = agent_with_v1(fx);

    release_digest(v1, &fx->srv);
    return agent;
}

/* Whether the last check-in named `digest` as the release it holds; the request passes the
 * server's strict reader (no member twice) either way. */
static int named(const struct fake_server *s, const char *digest)
{
    char want[100];
    struct mf_ctx ctx;
    cJSON *doc = NULL;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    if (mf_json__parse_object(&doc, &ctx, s->checkin_body, strlen(s->checkin_body),
                              sizeof(s->checkin_body), MF_JSON_DEPTH_DEFAULT, "check-in") < 0)
        fail_msg("%s: %s", mf_ctx__errmsg(&ctx), s->checkin_body);
    cJSON_Delete(doc);

    (void)snprintf(want, sizeof(want), "\"release_sha256\":\"%s\"", digest);
    return strstr(s->checkin_body, want) != NULL;
}

static uint64_t sequence_of(mf_agent *agent)
{
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;

    assert_int_equal(mf_agent_trust_status(&ts, agent), MF_OK);
    return ts.assignment_sequence;
}

static void assert_kept(const struct fixture *fx, const char *name)
{
    assert_file_equals(fx, name, fx->srv.release_env, fx->srv.release_len);
}

/* The next check-in names no release and gets the envelope (the `sent`-th sent), which is
 * kept for slot a; the one after names it and is the `held`-th left out. Nothing is
 * downloaded. */
static void asks_again_and_keeps(struct fixture *fx, mf_agent *agent, const char *digest, int sent,
                                 int held)
{
    step_expect(agent, MF_OK);
    assert_false(named(&fx->srv, digest));
    assert_int_equal(fx->srv.n_release_sent, sent);
    assert_kept(fx, KEPT_A);
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, digest));
    assert_int_equal(fx->srv.n_release_held, held);
    assert_int_equal(fx->srv.n_blob, 1);
}

/* state.json of "detector" with its active slot's "release" member removed, as an older
 * agent wrote it. */
static void drop_state_release(const struct fixture *fx)
{
    char path[160];
    size_t len = 0;
    uint8_t *raw = slurp(fx, "models/detector/state.json", &len);
    cJSON *st = raw ? cJSON_Parse((const char *)raw) : NULL;
    char *text;

    test_free(raw);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "active"), "release"));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(st, "active"), "release");
    text = cJSON_PrintUnformatted(st);
    (void)snprintf(path, sizeof(path), "%s/models/detector/state.json", fx->dir);
    mf_kit_fs_write(path, text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(st);
}

static void test_agent_held__release_left_out_is_verified_against_the_kept_one(void **state)
{
    struct fixture *fx = *state;
    char v1[65], v2[65];
    mf_agent *agent = running_v1(fx, v1);

    assert_int_equal(fx->srv.n_release_sent, 1);
    assert_kept(fx, KEPT_A);
    /* Nothing to do: the check-in names v1's release, the answer leaves it out, the signed
     * assignment verifies against the kept one (its sequence is accepted). */
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, v1));
    assert_int_equal(fx->srv.n_release_held, 1);
    assert_int_equal(fx->srv.n_release_sent, 1);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(sequence_of(agent), 2);
    assert_active(agent, "v1", 'a');
    /* A restarted agent reads the digest and the envelope back. */
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, v1));
    assert_int_equal(fx->srv.n_release_held, 2);
    assert_int_equal(sequence_of(agent), 3);
    /* A new release comes whole, installs into slot b and is kept there. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    release_digest(v2, &fx->srv);
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, v1));
    assert_int_equal(fx->srv.n_release_sent, 2);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", model_v2, sizeof(model_v2));
    assert_kept(fx, KEPT_B);
    assert_true(exists(fx, KEPT_A)); /* v1, the previous slot, keeps its own */
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, v2));
    assert_int_equal(fx->srv.n_release_held, 3);
    assert_int_equal(fx->srv.n_blob, 2);
    mf_agent_free(agent);
}

/* The kept envelope damaged or gone: the assignment is refused (nothing downloaded, v1
 * runs), the next check-in names no release, gets the envelope and keeps it again. */
static void damaged_kept_release(struct fixture *fx, int remove_it)
{
    char path[160], v1[65];
    mf_agent *agent = running_v1(fx, v1);

    (void)snprintf(path, sizeof(path), "%s/" KEPT_A, fx->dir);
    if (remove_it)
        assert_int_equal(remove(path), 0);
    else
        mf_kit_fs_flip_byte(path, (long)fx->srv.release_len / 2);
    assert_true(mf_agent_step(agent) < 0);
    assert_true(named(&fx->srv, v1));
    assert_string_equal(fx->srv.report_status, "failed");
    assert_int_equal(fx->srv.n_blob, 1);
    assert_active(agent, "v1", 'a');
    asks_again_and_keeps(fx, agent, v1, 2, 2);
    mf_agent_free(agent);
}

static void test_agent_held__damaged_kept_release_is_asked_for_again(void **state)
{
    damaged_kept_release(*state, 0);
}

static void test_agent_held__missing_kept_release_is_asked_for_again(void **state)
{
    damaged_kept_release(*state, 1);
}

/* A server that leaves out a release the device does not hold (v2 assigned, v1 kept): the
 * signed assignment names another release than the kept one, so it is refused before any
 * download. */
static void test_agent_held__release_left_out_for_another_release_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    assert_v2_refused_in_mode(fx, agent, CHECKIN_HELD_OTHER, MF_E_SIGNATURE, "assignment refused");
    assert_int_equal(sequence_of(agent), 1);
    /* Served properly again, v2 installs. */
    fx->srv.checkin_mode = CHECKIN_OK;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

/* A state file written before releases were kept: the first check-in names none and gets
 * the envelope, which the agent then keeps for the slot that runs it. */
static void test_agent_held__older_state_file_is_upgraded(void **state)
{
    struct fixture *fx = *state;
    char path[160], v1[65];
    mf_agent *agent = running_v1(fx, v1);

    mf_agent_free(agent);
    drop_state_release(fx);
    (void)snprintf(path, sizeof(path), "%s/" KEPT_A, fx->dir);
    assert_int_equal(remove(path), 0);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    asks_again_and_keeps(fx, agent, v1, 2, 1);
    mf_agent_free(agent);
}

/* An older server ignores release_sha256 and sends the envelope every time: still verified
 * and nothing else changes. */
static void test_agent_held__older_server_sends_the_release_every_time(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent;
    char v1[65];

    fx->srv.always_release = 1;
    agent = running_v1(fx, v1);
    step_expect(agent, MF_OK);
    step_expect(agent, MF_OK);
    assert_true(named(&fx->srv, v1));
    assert_int_equal(fx->srv.n_release_sent, 3);
    assert_int_equal(fx->srv.n_release_held, 0);
    assert_int_equal(sequence_of(agent), 3);
    assert_int_equal(fx->srv.n_blob, 1);
    mf_agent_free(agent);
}

/* The short form of an assignment: model, version and the assignment envelope only; with
 * any download hint and no release it is a download missing its release. */
static void test_agent_held__parser_reads_the_short_form(void **state)
{
#define NONCE "0123456789abcdef0123456789abcdef"
    static const char *const models[] = {"detector"};
    static const struct {
        const char *json;
        int code, held;
        const char *msg;
    } cases[] = {
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[{\"model\":\"detector\",\"version\":"
         "\"v1\",\"assignment\":\"{}\"}]}",
         MF_OK, 1, ""},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[{\"model\":\"detector\",\"version\":"
         "\"v1\"}]}",
         MF_E_INVALID, 0, "no signed \"assignment\""},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[{\"model\":\"detector\",\"version\":"
         "\"v1\",\"blob\":\"/b\",\"assignment\":\"{}\"}]}",
         MF_E_INVALID, 0, "assignment.sha256"},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[{\"model\":\"detector\",\"version\":"
         "\"v1\",\"sha256\":\""
         "0000000000000000000000000000000000000000000000000000000000000000"
         "\",\"size\":1,\"blob\":\"/b\",\"assignment\":\"{}\"}]}",
         MF_E_INVALID, 0, "no signed \"release\""},
    };
#undef NONCE

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mf_agent_assignment out[1];
        struct mf_agent_trust_docs trust;
        struct mf_agent_settings poll = {0};
        struct cJSON *doc = NULL;
        struct mf_ctx ctx;
        size_t n = 0;
        int err;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        err = mf_agent__checkin_parse(&ctx, out, &n, &poll, &trust, &doc, cases[i].json,
                                      strlen(cases[i].json), "0123456789abcdef0123456789abcdef",
                                      models, 1);
        if (err != cases[i].code || !strstr(ctx.errmsg, cases[i].msg))
            print_error("case %zu: %d \"%s\"\n", i, err, ctx.errmsg);
        assert_int_equal(err, cases[i].code);
        assert_non_null(strstr(ctx.errmsg, cases[i].msg));
        if (err == MF_OK) {
            assert_int_equal(n, 1);
            assert_int_equal(out[0].release_held, cases[i].held);
            assert_null(out[0].release_env);
            assert_string_equal(out[0].version, "v1");
            assert_int_equal(out[0].assignment_len, 2);
        }
        cJSON_Delete(doc);
    }
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_agent_held__release_left_out_is_verified_against_the_kept_one),
        T(test_agent_held__damaged_kept_release_is_asked_for_again),
        T(test_agent_held__missing_kept_release_is_asked_for_again),
        T(test_agent_held__release_left_out_for_another_release_is_refused),
        T(test_agent_held__older_state_file_is_upgraded),
        T(test_agent_held__older_server_sends_the_release_every_time),
        cmocka_unit_test(test_agent_held__parser_reads_the_short_form),
    };
#undef T
    return cmocka_run_group_tests_name("agent_held", tests, world_setup, world_teardown);
}
