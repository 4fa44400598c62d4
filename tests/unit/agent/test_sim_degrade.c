/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One mf-sim device (device/sim/sim_device.c) against the agent tests' fake server: its squeeze
 * (--squeeze) feeds libmf's own degrade controller through the port's squeeze callback, and
 * the controller reads the simulated clock (--cycle-ms) through the port, so its hold window
 * counts simulated minutes: a 3-minute hold ends three cycles after the switch although the
 * whole run takes milliseconds of real time. The device runs the fallback variant while the
 * agent answers it, and the switches reach the server with their reasons.
 */
#include "agent_fixture.h"
#include "sim.h"

#include <stdio.h>
#include <string.h>

static const uint8_t tiny[] = "detector weights v1, the tiny fallback variant\n";

/* A one-device fleet on the fixture's server: a simulated minute per cycle, 4 inferences each,
 * squeezed by `spec`. */
static void fleet_of_one(struct sim_config *c, struct fixture *fx, const char *spec)
{
    const char *why = NULL;

    fx->srv.device_id = "sim-00000";
    memset(c, 0, sizeof(*c));
    c->server_url = fx->url;
    c->enroll_token = ENROLL_TOKEN;
    c->trust_root = fx->root_env;
    c->trust_root_len = fx->root_len;
    c->state_root = fx->dir;
    c->prefix = "sim";
    c->model = "detector";
    c->devices = 1;
    c->inferences = 4;
    c->threads = 1;
    c->cycle_ms = 60000;
    c->n_squeeze = 1;
    if (sim__parse_squeeze(&c->squeeze[0], spec, &why) < 0)
        fail_msg("%s: %s", spec, why);
}

static void cycle(struct sim_device *d, unsigned k)
{
    uint64_t us = 0;

    if (sim__device_cycle(&us, d, k) < 0)
        fail_msg("cycle %u failed", k);
}

/* Device 0 of a fleet squeezed by `spec` (in *c), after its cycle 0: v1 installed with the tiny
 * fallback offered beside it. */
static struct sim_device *squeezed(struct sim_config *c, struct fixture *fx, const char *spec)
{
    struct sim_device *d;

    fleet_of_one(c, fx, spec);
    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fake_offer_fallback(&fx->srv, "tiny", "v1", tiny, sizeof(tiny));
    d = sim__device_new(c, 0);
    assert_non_null(d);
    cycle(d, 0);
    assert_string_equal(sim__device_version(d), "v1");
    return d;
}

static void assert_counts(const struct sim_device *d, unsigned long degrades,
                          unsigned long restores, int degraded)
{
    struct sim_degrade_counts n;

    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.degrades, degrades);
    assert_int_equal(n.restores, restores);
    assert_int_equal(n.degraded, degraded);
    assert_int_equal(sim__device_degraded(d), degraded); /* the fallback is installed */
}

/* Memory pressure in the version's minute 2 only, a hold of 3 simulated minutes. A step runs
 * at its cycle's end, the start of the next minute: v1 runs from 1 min, so the step at 3 min
 * degrades, and the steps at 4 and 5 min, with no pressure, hold; the step at 6 min restores.
 */
static void test_sim_degrade__hold_counts_the_simulated_clock(void **state)
{
    struct fixture *fx = *state;
    struct sim_degrade_counts n;
    struct sim_config c;
    struct sim_device *d;

    d = squeezed(&c, fx, "all:mem=2-3,hold=180000,fallback=40");
    assert_file_equals(fx, "sim-00000/models/detector/fallback", tiny, sizeof(tiny));
    cycle(d, 1); /* v1's minute 0 */
    assert_counts(d, 0, 0, 0);
    cycle(d, 2); /* minute 1; its step at minute 2 is under pressure */
    assert_counts(d, 1, 0, 1);
    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.by_reason[MF_DEGRADE_MEMORY], 1);
    assert_int_equal(n.degraded_inferences, 0);
    assert_non_null(strstr(fx->srv.checkin_body, "\"degraded\":true,\"reason\":\"memory\""));
    cycle(d, 3); /* minute 2 on the fallback; the step at minute 3 (no pressure) holds */
    assert_counts(d, 1, 0, 1);
    cycle(d, 4); /* held: 2 of the 3 minutes */
    assert_counts(d, 1, 0, 1);
    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.degraded_inferences, 8);
    cycle(d, 5); /* held at every inference; the step 3 minutes after the switch restores */
    assert_counts(d, 1, 1, 0);
    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.degraded_inferences, 12);
    assert_non_null(strstr(fx->srv.checkin_body, "\"degraded\":false,\"reason\":\"recovered\""));
    cycle(d, 6);
    assert_counts(d, 1, 1, 0);
    sim__device_free(d);
}

/* Low battery reaches the same controller: low in minute 1 (from the step at 2 min), on mains
 * again in minute 2, when the 1-minute hold since the switch has just passed. */
static void test_sim_degrade__battery(void **state)
{
    struct fixture *fx = *state;
    struct sim_degrade_counts n;
    struct sim_config c;
    struct sim_device *d;

    d = squeezed(&c, fx, "all:battery=1-2,hold=60000");
    assert_counts(d, 0, 0, 0);
    cycle(d, 1); /* minute 0; its step at minute 1: battery low */
    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.by_reason[MF_DEGRADE_BATTERY], 1);
    assert_counts(d, 1, 0, 1);
    cycle(d, 2); /* minute 1 on the fallback; the step at minute 2 is on mains */
    assert_counts(d, 1, 1, 0);
    sim__device_free(d);
}

/* Each inference's latency goes to the deadline trigger: with the deadline at 1 ms, every one
 * of the default 1..2 ms misses, and the fifth in a row (the second of minute 1) degrades. */
static void test_sim_degrade__deadline_misses(void **state)
{
    struct fixture *fx = *state;
    struct sim_degrade_counts n;
    struct sim_config c;
    struct sim_device *d;

    d = squeezed(&c, fx, "all:deadline=1000,hold=600000");
    cycle(d, 1); /* four misses */
    assert_counts(d, 0, 0, 0);
    cycle(d, 2);
    sim__device_degrade_counts(&n, d);
    assert_int_equal(n.by_reason[MF_DEGRADE_DEADLINE], 1);
    assert_int_equal(n.degraded_inferences, 3);
    assert_counts(d, 1, 0, 1);
    sim__device_free(d);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_sim_degrade__hold_counts_the_simulated_clock),
        T(test_sim_degrade__battery),
        T(test_sim_degrade__deadline_misses),
    };
#undef T
    return cmocka_run_group_tests_name("sim_degrade", tests, world_setup, world_teardown);
}
