/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The way down in libmf (docs/agent.md, "Runtime degradation"): the fallback variant the
 * check-in offers is installed beside the active slot, verified, kept while that version
 * runs and removed when it is superseded; mf_agent_degrade() / mf_agent_restore() and the
 * automatic triggers (memory pressure through the squeeze callback with the hold window,
 * deadline misses) switch what mf_agent_model_path() answers, with no network and across a
 * restart; every switch rides the next check-in with its reason until one is answered; and
 * options of version 7 never read the version-8 fields.
 */
#include "agent_fixture.h"

#include <stdio.h>
#include <string.h>

static const uint8_t tiny_v1[] = "detector weights v1, the tiny fallback variant\n";
static const uint8_t tiny_v2[] = "detector weights v2, its tiny fallback, a bit longer\n";

/* The test's own monotonic clock and squeeze signals (the agent reads both through ports). */
static uint64_t clock_ms = 1000;
static mf_degrade_signals squeeze = {-1, -1, -1};
static int squeeze_calls;

static uint64_t fake_ms(void *payload)
{
    (void)payload;
    return clock_ms;
}

static int fake_squeeze(void *payload, mf_degrade_signals *out)
{
    (void)payload;
    squeeze_calls++;
    *out = squeeze;
    return MF_OK;
}

static mf_platform_ops clocked;
static const mf_degrade_config hold_1s = {
    .hold_ms = 1000, .deadline_us = 2000, .deadline_misses = 2};

/* Options of the fixture with degradation on (hold 1 s), the test clock and squeeze. */
static void degrade_on(struct fixture *fx)
{
    clocked = fx->ops;
    clocked.monotonic_ms = fake_ms;
    clock_ms = 1000;
    squeeze = (mf_degrade_signals){-1, -1, -1};
    squeeze_calls = 0;
    fx->opts.platform = &clocked;
    fx->opts.degrade = &hold_1s;
    fx->opts.squeeze_fn = fake_squeeze;
}

static mf_agent *new_agent(struct fixture *fx)
{
    mf_agent *agent = NULL;

    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    return agent;
}

/* What the app would load now, and whether it is the fallback. */
static void assert_path(mf_agent *agent, const struct fixture *fx, const char *leaf, int fallback)
{
    char path[256], want[256];
    int is_fb = -1;

    assert_int_equal(mf_agent_model_path(path, sizeof(path), &is_fb, agent, "detector"), MF_OK);
    (void)snprintf(want, sizeof(want), "%s/models/detector/%s", fx->dir, leaf);
    assert_string_equal(path, want);
    assert_int_equal(is_fb, fallback);
}

/* The last check-in's body holds `text`. */
static void assert_sent(const struct fixture *fx, const char *text)
{
    if (!strstr(fx->srv.checkin_body, text))
        fail_msg("the check-in lacks %s: %s", text, fx->srv.checkin_body);
}

static void assert_fallback(mf_agent *agent, const char *variant, uint64_t size)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.fallback_installed, variant != NULL);
    assert_string_equal(st.fallback_variant, variant ? variant : "");
    assert_int_equal(st.fallback_size, size);
}

/* A new agent that degrades, after one step installing v1 (into slot a) with the tiny bytes
 * offered as the fallback of `fb_version`. */
static mf_agent *v1_offering(struct fixture *fx, const char *fb_version)
{
    mf_agent *agent;

    degrade_on(fx);
    agent = new_agent(fx);
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fake_offer_fallback(&fx->srv, "tiny", fb_version, tiny_v1, sizeof(tiny_v1));
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    return agent;
}

/* Degradation on, and v1 active in slot a with its tiny fallback beside it. */
static mf_agent *v1_with_fallback(struct fixture *fx)
{
    mf_agent *agent = v1_offering(fx, "v1");

    assert_file_equals(fx, "models/detector/fallback", tiny_v1, sizeof(tiny_v1));
    assert_fallback(agent, "tiny", sizeof(tiny_v1));
    return agent;
}

/* Installed beside the active slot, not fetched again while held, replaced with the next
 * version's fallback, and removed when a version without one supersedes it. */
static void test_agent_degrade__fallback_beside_active_and_gcd(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent;

    agent = v1_with_fallback(fx);
    assert_int_equal(fx->srv.n_fb_blob, 1);
    assert_int_equal(fx->srv.n_fb_sent, 1);
    assert_false(exists(fx, "models/detector/fallback.part"));
    /* Held: the check-in names it, the server leaves its release out, nothing is fetched. */
    step_expect(agent, MF_OK);
    assert_sent(fx, "\"fallback_sha256\":\"");
    assert_int_equal(fx->srv.n_fb_sent, 1);
    assert_int_equal(fx->srv.n_fb_blob, 1);
    /* A restart keeps it (fallback.state describes the file). */
    mf_agent_free(agent);
    agent = new_agent(fx);
    assert_fallback(agent, "tiny", sizeof(tiny_v1));
    /* v2 with its own fallback: the v1 fallback is replaced. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fake_offer_fallback(&fx->srv, "tiny", "v2", tiny_v2, sizeof(tiny_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/fallback", tiny_v2, sizeof(tiny_v2));
    assert_fallback(agent, "tiny", sizeof(tiny_v2));
    /* v3 without a fallback supersedes it: state and file go. */
    fake_assign(&fx->srv, "v3", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fake_offer_fallback(&fx->srv, NULL, NULL, NULL, 0);
    step_expect(agent, MF_OK);
    assert_active(agent, "v3", 'a');
    assert_false(exists(fx, "models/detector/fallback"));
    assert_false(exists(fx, "models/detector/fallback.state"));
    assert_fallback(agent, NULL, 0);
    /* Degraded without a fallback: the active slot is still what the app loads. */
    assert_int_equal(mf_agent_degrade(agent), MF_OK);
    assert_path(agent, fx, "slot-a", 0);
    mf_agent_free(agent);
}

/* A fallback whose signed release is of another version, or whose bytes do not match that
 * release, is never installed; the step itself succeeds (the model is fine). */
static void test_agent_degrade__bad_fallback_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent;
    uint8_t forged[sizeof(tiny_v1)];

    agent = v1_offering(fx, "v7");
    assert_int_equal(fx->srv.n_fb_blob, 0); /* refused before any download */
    assert_fallback(agent, NULL, 0);
    /* The release of v1's tiny, but other bytes served under its digest. */
    fake_offer_fallback(&fx->srv, "tiny", "v1", tiny_v1, sizeof(tiny_v1));
    memcpy(forged, tiny_v1, sizeof(forged));
    forged[3] ^= 1;
    fx->srv.fb = forged;
    step_expect(agent, MF_OK);
    assert_true(fx->srv.n_fb_blob >= 1); /* fetched, refused at the bad chunk */
    assert_fallback(agent, NULL, 0);
    assert_false(exists(fx, "models/detector/fallback"));
    fx->srv.fb = tiny_v1;
    step_expect(agent, MF_OK);
    assert_fallback(agent, "tiny", sizeof(tiny_v1));
    mf_agent_free(agent);
}

/* Memory pressure degrades at once; relief within the 1 s hold does not restore (no flap),
 * after it it does; a new squeeze inside the next hold is held back too. No check-in. */
static void test_agent_degrade__memory_pressure_with_hysteresis(void **state)
{
    struct fixture *fx = *state;
    const mf_degrade_status *st;
    mf_agent *agent;
    int checkins;

    agent = v1_with_fallback(fx);
    checkins = fx->srv.n_checkin;
    assert_path(agent, fx, "slot-a", 0);
    squeeze.memory_pressure = 1;
    clock_ms = 5000;
    assert_int_equal(mf_agent_squeeze(agent), 1);
    assert_path(agent, fx, "fallback", 1);
    st = mf_agent_degrade_status(agent);
    assert_int_equal(st->reason, MF_DEGRADE_MEMORY);
    /* Relief 500 ms later: held back, still on the fallback, counted. */
    squeeze.memory_pressure = 0;
    clock_ms = 5500;
    assert_int_equal(mf_agent_squeeze(agent), 0);
    assert_path(agent, fx, "fallback", 1);
    assert_int_equal(mf_agent_degrade_status(agent)->suppressed, 1);
    /* Pressure flickers inside the window: nothing moves. */
    for (int i = 0; i < 5; i++) {
        squeeze.memory_pressure = i & 1;
        clock_ms += 50;
        assert_int_equal(mf_agent_squeeze(agent), 0);
        assert_path(agent, fx, "fallback", 1);
    }
    /* Past the window with no pressure: back to the active slot. */
    squeeze.memory_pressure = 0;
    clock_ms = 6100;
    assert_int_equal(mf_agent_squeeze(agent), 1);
    assert_path(agent, fx, "slot-a", 0);
    assert_int_equal(mf_agent_degrade_status(agent)->reason, MF_DEGRADE_RECOVERED);
    /* Squeezed again 100 ms after the restore: held back. */
    squeeze.memory_pressure = 1;
    clock_ms = 6200;
    assert_int_equal(mf_agent_squeeze(agent), 0);
    assert_path(agent, fx, "slot-a", 0);
    assert_int_equal(mf_agent_degrade_status(agent)->switches, 2);
    assert_int_equal(fx->srv.n_checkin, checkins); /* never the network */
    mf_agent_free(agent);
}

/* Offline: a step that cannot reach the server still degrades first (the squeeze runs
 * before any request), and the app loads the fallback. */
static void test_agent_degrade__offline(void **state)
{
    struct fixture *fx = *state;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    mf_agent *agent;

    agent = v1_with_fallback(fx);
    mf_agent_free(agent);
    fx->opts.server_url = "http://127.0.0.1:1/"; /* nothing listens there */
    agent = new_agent(fx);
    squeeze.memory_pressure = 1;
    squeeze_calls = 0;
    step_expect(agent, MF_E_NET);
    assert_int_equal(squeeze_calls, 1);
    assert_path(agent, fx, "fallback", 1);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_true(st.degraded);
    assert_int_equal(st.degrade_reason, MF_DEGRADE_MEMORY);
    mf_agent_free(agent);
}

/* A manual degrade survives a restart; its switch is reported with its reason by the next
 * check-in (also after the restart) and dropped once answered; restore ends it. */
static void test_agent_degrade__manual_across_restart_and_reported(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent;

    agent = v1_with_fallback(fx);
    assert_sent(fx, "\"degrade\":{\"degraded\":false,\"reason\":\"none\",\"switches\":[]}");
    assert_int_equal(mf_agent_degrade(agent), MF_OK);
    assert_path(agent, fx, "fallback", 1);
    mf_agent_free(agent);
    agent = new_agent(fx);
    assert_path(agent, fx, "fallback", 1);
    assert_true(mf_agent_degrade_status(agent)->manual);
    /* Pressure gone and the hold long past: a manual degrade stays. */
    clock_ms = 100000;
    assert_int_equal(mf_agent_squeeze(agent), 0);
    assert_path(agent, fx, "fallback", 1);
    step_expect(agent, MF_OK);
    assert_sent(fx, "\"degrade\":{\"degraded\":true,\"reason\":\"manual\",\"switches\":"
                    "[{\"seq\":1,");
    assert_sent(fx, "\"degraded\":true,\"reason\":\"manual\"}]");
    step_expect(agent, MF_OK); /* acknowledged: not sent again */
    assert_sent(fx, "\"switches\":[]");
    assert_int_equal(mf_agent_restore(agent), MF_OK);
    assert_path(agent, fx, "slot-a", 0);
    step_expect(agent, MF_OK);
    assert_sent(fx, "[{\"seq\":2,\"at\":");
    assert_sent(fx, "\"degraded\":false,\"reason\":\"recovered\"}]");
    mf_agent_free(agent);
}

/* Two inferences over the 2 ms deadline in a row degrade (reason deadline). */
static void test_agent_degrade__deadline_misses(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent;

    agent = v1_with_fallback(fx);
    assert_int_equal(mf_agent_inference(agent, 5000), 0);
    assert_int_equal(mf_agent_inference(agent, 1000), 0); /* the run is broken */
    assert_int_equal(mf_agent_inference(agent, 5000), 0);
    assert_int_equal(mf_agent_inference(agent, 5000), 1);
    assert_path(agent, fx, "fallback", 1);
    assert_int_equal(mf_agent_degrade_status(agent)->reason, MF_DEGRADE_DEADLINE);
    mf_agent_free(agent);
}

/* Options of version 7 end before `degrade`: whatever lies beyond is never read, and
 * degradation stays off (refused, the active slot answered). */
static void test_agent_degrade__options_v7_never_read_v8_fields(void **state)
{
    struct fixture *fx = *state;
    mf_agent_options *o = test_malloc(sizeof(*o));
    mf_agent *agent = NULL;
    char path[256];
    int is_fb = -1;

    fx->opts.version = 7;
    memcpy(o, &fx->opts, offsetof(mf_agent_options, degrade));
    memset((char *)o + offsetof(mf_agent_options, degrade), 0xa5,
           sizeof(*o) - offsetof(mf_agent_options, degrade));
    assert_int_equal(mf_agent_new(&agent, o), MF_OK);
    assert_null(mf_agent_degrade_status(agent));
    assert_int_equal(mf_agent_degrade(agent), MF_E_STATE);
    assert_int_equal(mf_agent_squeeze(agent), MF_E_STATE);
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    step_expect(agent, MF_OK);
    assert_null(strstr(fx->srv.checkin_body, "\"degrade\""));
    assert_int_equal(mf_agent_model_path(path, sizeof(path), &is_fb, agent, "detector"), MF_OK);
    assert_int_equal(is_fb, 0);
    assert_int_equal(mf_agent_model_path(path, 8, NULL, agent, "detector"), MF_E_LIMIT);
    assert_int_equal(mf_agent_model_path(path, sizeof(path), NULL, agent, "classifier"),
                     MF_E_NOTFOUND);
    mf_agent_free(agent);
    test_free(o);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_agent_degrade__fallback_beside_active_and_gcd),
        T(test_agent_degrade__bad_fallback_refused),
        T(test_agent_degrade__memory_pressure_with_hysteresis),
        T(test_agent_degrade__offline),
        T(test_agent_degrade__manual_across_restart_and_reported),
        T(test_agent_degrade__deadline_misses),
        T(test_agent_degrade__options_v7_never_read_v8_fields),
    };
#undef T
    return cmocka_run_group_tests_name("agent_degrade", tests, world_setup, world_teardown);
}
