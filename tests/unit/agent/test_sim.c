/* SPDX-License-Identifier: Apache-2.0 */
/* mf-sim's command line (device/sim/sim_args.c): device ids from --prefix, every flag's value
 * checked, unknown flags refused, --help and --version answered. */
#include "mf_test.h"
#include "kit_fs.h"
#include "sim.h"

#include <stdio.h>
#include <string.h>

static void test_sim__device_name_joins_the_prefix_once(void **state)
{
    static const struct {
        const char *prefix;
        unsigned index;
        const char *id;
    } cases[] = {
        {"sim", 0, "sim-00000"},   {"sim-", 0, "sim-00000"},    {"cam_", 7, "cam_00007"},
        {"lab.", 12, "lab.00012"}, {"a-b", 19999, "a-b-19999"}, {"", 3, "00003"},
    };
    char id[MF_AGENT_NAME_MAX + 1];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(sim__device_name(id, sizeof(id), cases[i].prefix, cases[i].index), 0);
        assert_string_equal(id, cases[i].id);
    }
    assert_int_equal(sim__device_name(id, 9, "sim", 0), -1); /* "sim-00000" needs 10 bytes */
}

struct sim_args_fx {
    char dir[64], token[96], root[96];
};

static int setup(void **state)
{
    static struct sim_args_fx fx;

    mf_kit_fs_mkdtemp(fx.dir, sizeof(fx.dir), "mf-simargs");
    (void)snprintf(fx.token, sizeof(fx.token), "%s/enroll.token", fx.dir);
    (void)snprintf(fx.root, sizeof(fx.root), "%s/root.json", fx.dir);
    mf_kit_fs_write(fx.token, "tok\n", 4);
    mf_kit_fs_write(fx.root, "{}", 2);
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    mf_kit_fs_rmtree(((struct sim_args_fx *)*state)->dir);
    return 0;
}

/* The required flags, then `extra` (n of them) at the end; sim__parse_args's result. */
static int parse_with(struct sim_config *c, const struct sim_args_fx *fx, int n,
                      const char *const *extra)
{
    const char *base[] = {"mf-sim",
                          "--server",
                          "http://127.0.0.1:1",
                          "--enroll-token-file",
                          fx->token,
                          "--trust-root",
                          fx->root,
                          "--state",
                          fx->dir,
                          "--model",
                          "det",
                          "--devices",
                          "3",
                          "--cycles",
                          "2"};
    char *argv[32];
    char *token = NULL, *root = NULL;
    int argc = 0, rc;

    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        argv[argc++] = (char *)base[i];
    for (int i = 0; i < n; i++)
        argv[argc++] = (char *)extra[i];
    memset(c, 0, sizeof(*c));
    c->prefix = "sim";
    c->threads = 4;
    rc = sim__parse_args(c, argc, argv, &token, &root);
    if (rc == 0) {
        assert_string_equal(c->enroll_token, "tok");
        assert_int_equal(c->trust_root_len, 2);
    }
    mf_free(NULL, token);
    mf_free(NULL, root);
    return rc;
}

static void test_sim__args_accepted(void **state)
{
    const char *extra[] = {"--prefix", "sim-",      "--threads", "8",        "--interval-ms",
                           "0",        "--offline", "0-2:1-3",   "--behave", "v2:lat=2000,mem=40M"};
    struct sim_config c;

    assert_int_equal(parse_with(&c, *state, 10, extra), 0);
    assert_int_equal(c.devices, 3);
    assert_int_equal(c.cycles, 2);
    assert_int_equal(c.threads, 8);
    assert_int_equal(c.interval_ms, 0);
    assert_int_equal(c.offline_to, 2);
    assert_int_equal(c.n_behave, 1);
    assert_int_equal(c.behave[0].memory, 40u << 20);
    assert_string_equal(c.prefix, "sim-");
}

/* The controller's part of a squeeze: low battery in minutes [A, B), a latency deadline, a
 * hold window of simulated milliseconds, and a spec of a hold only (a restart that recovers). */
static void test_sim__squeeze_accepted(void **state)
{
    const char *extra[] = {"--squeeze", "0-2:battery=2-4,deadline=3000,hold=120000", "--squeeze",
                           "2-3:hold=90000"};
    struct sim_config c;
    struct sim_squeeze_now now;

    assert_int_equal(parse_with(&c, *state, 4, extra), 0);
    assert_int_equal(c.n_squeeze, 2);
    assert_int_equal(c.squeeze[0].deadline_us, 3000);
    assert_int_equal(c.squeeze[0].hold_ms, 120000);
    assert_int_equal(c.squeeze[1].hold_ms, 90000);
    assert_int_equal(c.squeeze[1].deadline_us, 0);
    for (uint64_t m = 0; m < 6; m++) {
        sim__squeeze_at(&now, &c.squeeze[0], m);
        assert_int_equal(now.battery_pct, m >= 2 && m < 4 ? SIM_BATTERY_LOW_PCT : -1);
        assert_int_equal(now.memory_pressure, 0);
        sim__squeeze_at(&now, &c.squeeze[1], m); /* a hold only: no signal at all */
        assert_int_equal(now.battery_pct, -1);
        assert_int_equal(now.memory_pressure, 0);
        assert_int_equal(now.thermal, 0);
        assert_int_equal(now.factor_pct, 100);
    }
    sim__squeeze_at(&now, NULL, 3);
    assert_int_equal(now.battery_pct, -1);
}

/* A bad squeeze spec is refused with a message naming what is wrong; the flags of the two
 * squeezes it replaced are unknown options now. */
static void test_sim__bad_squeeze_named(void **state)
{
    static const char *const cases[][2] = {
        {"0-2", "WHO is all, @CLASS or FROM-TO"},
        {"2-1:mem=1-2", "WHO is all, @CLASS or FROM-TO"},
        {"all:mem", "each item is KEY=VALUE"},
        {"all:mem=3-3", "mem: not minutes A-B, A < B"},
        {"all:battery=5-2", "battery: not minutes A-B, A < B"},
        {"all:deadline=0", "deadline: not microseconds"},
        {"all:hold=0", "hold: not simulated milliseconds"},
        {"all:hold=86400001", "hold: not simulated milliseconds"},
        {"all:after=x,factor=2", "after: not minutes"},
        {"all:after=5,factor=101", "factor: not 1..100"},
        {"all:mem=1-2,fallback=0", "fallback: not a percentage"},
        {"all:mem=1-2,hot=1", "unknown key"},
        {"all:mem=1-2,holdms=5", "unknown key"},
        {"@cam:fallback=40", "squeezes nothing"},
        {"all:version=v2", "squeezes nothing"},
    };
    const char *gone[][2] = {{"--agent-squeeze", "0-2:3-100"}, {"--degrade-hold-ms", "400"}};
    struct sim_squeeze q;
    struct sim_config c;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *why = NULL;

        if (sim__parse_squeeze(&q, cases[i][0], &why) != -1)
            fail_msg("\"%s\" was accepted", cases[i][0]);
        if (!why || !strstr(why, cases[i][1]))
            fail_msg("\"%s\": \"%s\", not \"%s\"", cases[i][0], why ? why : "(none)", cases[i][1]);
    }
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(parse_with(&c, *state, 2, gone[i]), -1);
}

/* Device classes (--class) and per-class behaviours ("v2@TAG"): the low-RAM and the
 * accelerator class of docs/rollouts.md, and which device declares which. */
static void test_sim__classes_accepted(void **state)
{
    const char *extra[] = {"--class",  "0-2:cam-lite,ram=256,storage=512,int8",
                           "--class",  "2-3:cam-pro,ram=2048,storage=8192,accel=npu,int8,fp16",
                           "--behave", "v2@cam-lite:lat=4000"};
    struct sim_config c;

    assert_int_equal(parse_with(&c, *state, 6, extra), 0);
    assert_int_equal(c.n_classes, 2);
    assert_string_equal(c.classes[0].cls.tag, "cam-lite");
    assert_int_equal(c.classes[0].cls.ram_mb, 256);
    assert_int_equal(c.classes[0].cls.storage_mb, 512);
    assert_true(c.classes[0].cls.int8);
    assert_false(c.classes[0].cls.fp16);
    assert_null(c.classes[0].cls.accelerator);
    assert_string_equal(c.classes[1].cls.accelerator, "npu");
    assert_true(c.classes[1].cls.fp16);
    assert_ptr_equal(sim__class_of(&c, 1), &c.classes[0]);
    assert_ptr_equal(sim__class_of(&c, 2), &c.classes[1]);
    assert_null(sim__class_of(&c, 3));
    assert_string_equal(c.behave[0].version, "v2@cam-lite");
    assert_int_equal(c.behave[0].latency_us, 4000);
}

/* Squeeze events (--squeeze) and the simulated clock (--cycle-ms): who each hits (a class,
 * a device range, everyone; only while running one version), and what it does minute by
 * minute since the activation: throttling from `after` on, memory pressure in [A, B). */
static void test_sim__squeezes_accepted(void **state)
{
    const char *extra[] = {"--class",       "0-2:cam-lite,ram=256,storage=512",
                           "--squeeze",     "@cam-lite:mem=3-6,fallback=40",
                           "--squeeze",     "2-3:after=5,factor=2.5,version=v2",
                           "--squeeze",     "all:after=0,factor=1.05",
                           "--cycle-ms",    "60000",
                           "--interval-ms", "250"};
    struct sim_config c;
    struct sim_squeeze_now now;

    assert_int_equal(parse_with(&c, *state, 12, extra), 0);
    assert_int_equal(c.n_squeeze, 3);
    assert_int_equal(c.cycle_ms, 60000); /* simulated: a minute per 250 ms cycle */
    assert_string_equal(c.squeeze[0].tag, "cam-lite");
    assert_int_equal(c.squeeze[0].fallback_pct, 40);
    assert_int_equal(c.squeeze[1].factor_pct, 250);
    assert_int_equal(c.squeeze[1].throttle_after_min, 5);
    assert_string_equal(c.squeeze[1].version, "v2");
    assert_int_equal(c.squeeze[1].fallback_pct, 50); /* the default */
    assert_int_equal(c.squeeze[2].factor_pct, 105);
    /* Who: the class's squeeze on its devices; device 2 only while it runs v2. */
    assert_ptr_equal(sim__squeeze_of(&c, 1, "cam-lite", "v1"), &c.squeeze[0]);
    assert_ptr_equal(sim__squeeze_of(&c, 2, NULL, "v2"), &c.squeeze[1]);
    assert_ptr_equal(sim__squeeze_of(&c, 2, NULL, "v1"), &c.squeeze[2]);
    assert_ptr_equal(sim__squeeze_of(&c, 2, NULL, NULL), &c.squeeze[1]); /* any version */
    /* When: memory pressure in minutes 3..5 only, no throttle on that squeeze. */
    for (uint64_t m = 0; m < 8; m++) {
        sim__squeeze_at(&now, &c.squeeze[0], m);
        assert_int_equal(now.memory_pressure, m >= 3 && m < 6);
        assert_int_equal(now.factor_pct, 100);
        assert_int_equal(now.thermal, 0);
    }
    /* Throttled (and hot) from minute 5 on, for good. */
    sim__squeeze_at(&now, &c.squeeze[1], 4);
    assert_int_equal(now.factor_pct, 100);
    assert_int_equal(now.thermal, 0);
    sim__squeeze_at(&now, &c.squeeze[1], 5);
    assert_int_equal(now.factor_pct, 250);
    assert_int_equal(now.thermal, 2);
    sim__squeeze_at(&now, &c.squeeze[1], 500);
    assert_int_equal(now.factor_pct, 250);
    sim__squeeze_at(&now, NULL, 500); /* no squeeze: nothing */
    assert_int_equal(now.factor_pct, 100);
    assert_int_equal(now.memory_pressure, 0);
}

/* Without --cycle-ms the simulated clock runs at the interval's pace. */
static void test_sim__cycle_defaults_to_the_interval(void **state)
{
    const char *extra[] = {"--interval-ms", "300"};
    struct sim_config c;

    assert_int_equal(parse_with(&c, *state, 2, extra), 0);
    assert_int_equal(c.cycle_ms, 300);
    assert_int_equal(c.n_squeeze, 0);
}

static void test_sim__bad_args_refused(void **state)
{
    static const char *const cases[][2] = {
        {"--devices", "0"},
        {"--devices", "20001"},
        {"--devices", "3x"},
        {"--cycles", "-1"},
        {"--threads", "65"},
        {"--interval-ms", " 5"},
        {"--inferences", ""},
        {"--nope", "1"},
        {"--prefix", "bad/name"},
        {"--prefix", "p23456789012345678901234567890123456789012345678901234567890"},
        {"--behave", "v2:lat=x"},
        {"--offline", "2-1:0-1"},
        {"--offline", "0-2"},
        {"--class", "0-2:cam,ram=256"},                     /* no storage */
        {"--class", "2-1:cam,ram=1,storage=1"},             /* empty range */
        {"--class", "0-2:bad/tag,ram=1,storage=1"},         /* not a name */
        {"--class", "0-2:cam,ram=1,storage=1,gpu"},         /* unknown */
        {"--class", "0-2:cam,ram=1099511627777,storage=1"}, /* over 2^40 MiB */
        {"--trust-root", "/nonexistent/root.json"},
        {"--squeeze", "@cam:fallback=40"},       /* squeezes nothing */
        {"--squeeze", "0-2"},                    /* no colon */
        {"--squeeze", "2-1:mem=1-2"},            /* empty range */
        {"--squeeze", "@bad/tag:mem=1-2"},       /* not a name */
        {"--squeeze", "all:mem=3-3"},            /* empty minutes */
        {"--squeeze", "all:after=5,factor=0.5"}, /* a factor below 1 */
        {"--squeeze", "all:after=5,factor=101"}, /* above 100 */
        {"--squeeze", "all:after=5,factor=2."},  /* no decimals after the point */
        {"--squeeze", "all:after=x,factor=2"},   /* not a number */
        {"--squeeze", "all:mem=1-2,fallback=0"}, /* fallback out of 1..100 */
        {"--squeeze", "all:mem=1-2,hot=1"},      /* unknown key */
        {"--squeeze", "all:mem=1-2,version="},   /* empty version */
        {"--squeeze", "all:battery=1"},          /* not a span */
        {"--squeeze", "all:deadline=100001"},    /* over 100 ms */
        {"--cycle-ms", "86400001"},
    };
    struct sim_config c;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (parse_with(&c, *state, 2, cases[i]) != -1)
            fail_msg("%s \"%s\" was accepted", cases[i][0], cases[i][1]);
    }
    {
        const char *dangling[] = {"--report"};

        assert_int_equal(parse_with(&c, *state, 1, dangling), -1);
    }
}

static void test_sim__missing_required_flag_refused(void **state)
{
    char *argv[] = {(char *)"mf-sim", (char *)"--server", (char *)"http://127.0.0.1:1"};
    struct sim_config c = {.prefix = "sim"};
    char *token = NULL, *root = NULL;

    (void)state;
    assert_int_equal(sim__parse_args(&c, 3, argv, &token, &root), -1);
    assert_null(token);
}

static void test_sim__help_and_version_answered(void **state)
{
    char *help[] = {(char *)"mf-sim", (char *)"--devices", (char *)"x", (char *)"--help"};
    char *version[] = {(char *)"mf-sim", (char *)"--version"};
    struct sim_config c = {.prefix = "sim"};
    char *token = NULL, *root = NULL;

    (void)state;
    assert_int_equal(sim__parse_args(&c, 4, help, &token, &root), 1);
    assert_int_equal(sim__parse_args(&c, 2, version, &token, &root), 1);
    assert_non_null(strstr(sim__usage, "SYNOPSIS"));
    assert_non_null(strstr(sim__usage, "--prefix"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim__device_name_joins_the_prefix_once),
        cmocka_unit_test(test_sim__args_accepted),
        cmocka_unit_test(test_sim__squeeze_accepted),
        cmocka_unit_test(test_sim__bad_squeeze_named),
        cmocka_unit_test(test_sim__classes_accepted),
        cmocka_unit_test(test_sim__squeezes_accepted),
        cmocka_unit_test(test_sim__cycle_defaults_to_the_interval),
        cmocka_unit_test(test_sim__bad_args_refused),
        cmocka_unit_test(test_sim__missing_required_flag_refused),
        cmocka_unit_test(test_sim__help_and_version_answered),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
