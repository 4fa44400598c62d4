/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The way down (sdk/telemetry/degrade.c, mf/degrade.h) on a simulated clock and a port
 * without any network: memory pressure that comes and goes every second degrades once and
 * switches at most once per hold window; each trigger and its release (battery with its
 * band, deadline misses in a row); manual degrade and restore; every switch reported with
 * its reason; the state across a restart (the window counts again from the first call), a
 * damaged state file refused, and a save that fails at every storage call; the POSIX
 * port's squeeze signals (PSI, thermal zone, battery) read from a fake root.
 */
#include "kit_fs.h"
#include "offload_fixture.h"
#include "mf/degrade.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define HOLD_MS 60000u

static const mf_degrade_signals calm = {0, 0, -1};
static const mf_degrade_signals squeezed = {1, 0, -1};

static mf_degrade *make(struct tplat *p, uint32_t deadline_us)
{
    mf_degrade_config c = {.hold_ms = HOLD_MS, .deadline_us = deadline_us};
    mf_degrade *d = NULL;

    assert_int_equal(mf_degrade_new(&d, &c, &p->ops, "degrade.state"), MF_OK);
    return d;
}

/* Pressure on for one second, off for the next, for ten minutes: one degrade at once, then
 * at most one switch per window, every switch at least HOLD_MS after the one before; the
 * held-back ones are counted. */
static void test_degrade__memory_pressure_with_hysteresis(void **state)
{
    struct tplat p;
    mf_degrade_event ev[MF_DEGRADE_EVENTS];
    mf_degrade *d;
    uint64_t last = 0, switches = 0;
    size_t n;

    (void)state;
    tplat_init(&p);
    d = make(&p, 0);
    assert_int_equal(mf_degrade_feed(d, &calm, 1000), 0);
    assert_false(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_feed(d, &squeezed, 2000), 1);
    assert_true(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_MEMORY);
    n = mf_degrade_events(d, ev, MF_DEGRADE_EVENTS);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].at_ms, 2000);
    assert_int_equal(ev[0].degraded, 1);
    assert_string_equal(mf_degrade_reason_name(ev[0].reason), "memory");
    last = 2000;
    switches = 1;
    for (uint64_t t = 3000; t <= 603000; t += 1000) {
        int r = mf_degrade_feed(d, (t / 1000) % 2 ? &calm : &squeezed, t);

        assert_true(r == 0 || r == 1);
        if (r == 1) {
            assert_true(t - last >= HOLD_MS);
            last = t;
            switches++;
        }
        n = mf_degrade_events(d, ev, MF_DEGRADE_EVENTS);
        assert_int_equal(n, (size_t)r);
    }
    assert_true(switches >= 2 && switches <= 1 + 600000 / HOLD_MS);
    assert_int_equal(mf_degrade_status_get(d)->switches, switches);
    assert_true(mf_degrade_status_get(d)->suppressed > 0);
    /* Calm for good: back to the active variant once the window has passed, and it stays. */
    for (uint64_t t = 604000; t <= 604000 + 3 * HOLD_MS; t += 1000)
        assert_true(mf_degrade_feed(d, &calm, t) >= 0);
    assert_false(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_RECOVERED);
    /* Signals out of range are refused and change nothing. */
    {
        mf_degrade_signals bad = {2, 0, -1};

        assert_int_equal(mf_degrade_feed(d, &bad, 999999999), MF_E_INVALID);
        bad = (mf_degrade_signals){0, 0, 101};
        assert_int_equal(mf_degrade_feed(d, &bad, 999999999), MF_E_INVALID);
        assert_false(mf_degrade_status_get(d)->degraded);
    }
    mf_degrade_free(d);
    tplat_done(&p);
}

/* Thermal, battery (let go only above the low mark plus its band) and deadline misses in a
 * row (one inference in time resets the count). */
static void test_degrade__each_trigger_and_its_release(void **state)
{
    struct tplat p;
    mf_degrade_signals s = calm;
    mf_degrade *d;

    (void)state;
    tplat_init(&p);
    d = make(&p, 20000);
    s.thermal = 2;
    assert_int_equal(mf_degrade_feed(d, &s, 0), 1);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_THERMAL);
    s.thermal = 1;
    assert_int_equal(mf_degrade_feed(d, &s, HOLD_MS), 1);
    assert_false(mf_degrade_status_get(d)->degraded);
    s.battery_pct = 15;
    assert_int_equal(mf_degrade_feed(d, &s, 2 * HOLD_MS), 1);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_BATTERY);
    s.battery_pct = 20; /* inside the band: still degraded */
    assert_int_equal(mf_degrade_feed(d, &s, 4 * HOLD_MS), 0);
    assert_true(mf_degrade_status_get(d)->degraded);
    s.battery_pct = 21;
    assert_int_equal(mf_degrade_feed(d, &s, 4 * HOLD_MS), 1);
    assert_false(mf_degrade_status_get(d)->degraded);
    /* Deadline: four misses, one in time, four misses: nothing; the fifth in a row degrades. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(mf_degrade_latency(d, 30000, 6 * HOLD_MS), 0);
    assert_int_equal(mf_degrade_latency(d, 1000, 6 * HOLD_MS), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(mf_degrade_latency(d, 30000, 6 * HOLD_MS), 0);
    assert_int_equal(mf_degrade_latency(d, 30000, 6 * HOLD_MS), 1);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_DEADLINE);
    /* The fallback keeps its deadline: restored after the window. */
    assert_int_equal(mf_degrade_latency(d, 1000, 7 * HOLD_MS), 1);
    assert_false(mf_degrade_status_get(d)->degraded);
    mf_degrade_free(d);
    tplat_done(&p);
}

/* Manual degrade acts at once, inside any window, and outlasts calm signals; only a manual
 * restore ends it. */
static void test_degrade__manual_degrade_and_restore(void **state)
{
    struct tplat p;
    mf_degrade *d;

    (void)state;
    tplat_init(&p);
    d = make(&p, 0);
    assert_int_equal(mf_degrade_feed(d, &squeezed, 0), 1);
    assert_int_equal(mf_degrade_set(d, 0, 10), 1); /* inside the window: at once */
    assert_false(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_set(d, 1, 20), 1);
    assert_true(mf_degrade_status_get(d)->manual);
    assert_int_equal(mf_degrade_feed(d, &calm, 10 * HOLD_MS), 0);
    assert_true(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_set(d, 1, 10 * HOLD_MS), 0);
    assert_int_equal(mf_degrade_set(d, 2, 10 * HOLD_MS), MF_E_INVALID);
    assert_int_equal(mf_degrade_set(d, 0, 10 * HOLD_MS), 1);
    assert_false(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_status_get(d)->switches, 4);
    mf_degrade_free(d);
    tplat_done(&p);
}

/* Degraded at a restart: still degraded, and calm right after it waits a full window from
 * the first call; a damaged file is refused; a save that fails at every storage call leaves
 * the previous state readable. */
static void test_degrade__survives_a_restart(void **state)
{
    struct tplat p;
    char path[256];
    mf_degrade *d, *r = NULL;

    (void)state;
    tplat_init(&p);
    d = make(&p, 0);
    assert_int_equal(mf_degrade_feed(d, &squeezed, 5000), 1);
    mf_degrade_free(d);
    tplat_reopen(&p);
    d = make(&p, 0);
    assert_true(mf_degrade_status_get(d)->degraded);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_MEMORY);
    assert_int_equal(mf_degrade_feed(d, &calm, 100), 0); /* a new clock: the window anew */
    assert_int_equal(mf_degrade_feed(d, &calm, 100 + HOLD_MS - 1), 0);
    assert_int_equal(mf_degrade_feed(d, &calm, 100 + HOLD_MS), 1);
    assert_int_equal(mf_degrade_status_get(d)->switches, 2);
    /* Storage failing at call n of a save: the state on disk is the old or the new one. */
    for (long n = 0;; n++) {
        uint64_t before, after;
        int err;

        assert_int_equal(mf_degrade_new(&r, NULL, &p.ops, "degrade.state"), MF_OK);
        before = mf_degrade_status_get(r)->switches;
        mf_degrade_free(r);
        p.io_calls = 0;
        p.fail_at = n;
        err = mf_degrade_set(d, !mf_degrade_status_get(d)->degraded, 1000000 + (uint64_t)n);
        p.fail_at = -1;
        assert_int_equal(mf_degrade_new(&r, NULL, &p.ops, "degrade.state"), MF_OK);
        after = mf_degrade_status_get(r)->switches;
        mf_degrade_free(r);
        assert_true(after == before || after == mf_degrade_status_get(d)->switches);
        if (err == 1) {
            assert_int_equal(after, mf_degrade_status_get(d)->switches);
            break;
        }
        assert_true(err < 0);
        assert_true(n < 100);
    }
    mf_degrade_free(d);
    tplat_path(&p, path, sizeof(path), "degrade.state");
    mf_kit_fs_flip_byte(path, 20);
    assert_int_equal(mf_degrade_new(&r, NULL, &p.ops, "degrade.state"), MF_E_INVALID);
    assert_null(r);
    assert_int_equal(mf_degrade_new(&r, NULL, &p.ops, ""), MF_E_INVALID);
    tplat_done(&p);
}

/* `text` into <root>/<rel>, its directories made. */
static void put_file(const char *root, const char *rel, const char *text)
{
    char path[512];

    for (const char *slash = strchr(rel + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        (void)snprintf(path, sizeof(path), "%s%.*s", root, (int)(slash - rel), rel);
        (void)mkdir(path, 0700);
    }
    (void)snprintf(path, sizeof(path), "%s%s", root, rel);
    mf_kit_fs_write(path, text, strlen(text));
}

/* The POSIX port's squeeze signals: PSI memory pressure at its mark, the thermal levels,
 * the battery; absent files are unknown (-1), never a guess; and they drive the controller. */
static void test_degrade__posix_squeeze_signals(void **state)
{
    char root[128];
    mf_degrade_signals s;
    struct tplat p;
    mf_degrade *d;

    (void)state;
    mf_kit_fs_mkdtemp(root, sizeof(root), "mf-squeeze");
    assert_int_equal(mf_platform_posix_squeeze(&s, root), MF_OK);
    assert_int_equal(s.memory_pressure, -1);
    assert_int_equal(s.thermal, -1);
    assert_int_equal(s.battery_pct, -1);
    put_file(root, "/proc/pressure/memory",
             "some avg10=9.99 avg60=1.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 "
             "avg300=0.00 total=0\n");
    put_file(root, "/sys/class/thermal/thermal_zone0/temp", "69999\n");
    put_file(root, "/sys/class/power_supply/BAT0/capacity", "80\n");
    assert_int_equal(mf_platform_posix_squeeze(&s, root), MF_OK);
    assert_int_equal(s.memory_pressure, 0);
    assert_int_equal(s.thermal, 0);
    assert_int_equal(s.battery_pct, 80);
    put_file(root, "/proc/pressure/memory", "some avg10=10.00 avg60=1.00 avg300=0.00 total=9\n");
    put_file(root, "/sys/class/thermal/thermal_zone0/temp", "85000\n");
    put_file(root, "/sys/class/power_supply/BAT0/capacity", "n/a\n");
    assert_int_equal(mf_platform_posix_squeeze(&s, root), MF_OK);
    assert_int_equal(s.memory_pressure, 1);
    assert_int_equal(s.thermal, 2);
    assert_int_equal(s.battery_pct, -1);
    tplat_init(&p);
    d = make(&p, 0);
    assert_int_equal(mf_degrade_feed(d, &s, 0), 1);
    assert_int_equal(mf_degrade_status_get(d)->reason, MF_DEGRADE_MEMORY);
    mf_degrade_free(d);
    tplat_done(&p);
    assert_int_equal(mf_platform_posix_squeeze(NULL, root), MF_E_INVALID);
    mf_kit_fs_rmtree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_degrade__memory_pressure_with_hysteresis),
        cmocka_unit_test(test_degrade__each_trigger_and_its_release),
        cmocka_unit_test(test_degrade__manual_degrade_and_restore),
        cmocka_unit_test(test_degrade__survives_a_restart),
        cmocka_unit_test(test_degrade__posix_squeeze_signals),
    };

    return cmocka_run_group_tests_name("degrade", tests, NULL, NULL);
}
