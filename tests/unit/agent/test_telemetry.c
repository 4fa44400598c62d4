/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device runtime reports (sdk/telemetry): bucket arithmetic, exact merging checked against
 * percentiles of the raw samples, slots and their recycling, the check-in JSON and its worst
 * case, offload counters merged in, and crash-safe persistence with storage failing at every
 * call. The scorecard: each record call, sustained windows on a simulated clock, energy from
 * a counter (and absent without one), the powercap reader, and files of format 1.
 */
#include "kit_fs.h"
#include "offload_fixture.h"
#include "mf/telemetry.h"
#include "mf_telemetry_int.h"
#include "mf_sha256.h"
#include "telemetry_widest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVICES 24
#define PER_DEVICE 500

static uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void test_telemetry__buckets_tile_the_range(void **state)
{
    (void)state;
    assert_int_equal(mf_telemetry_bucket_low(0), 0);
    for (unsigned i = 0; i < MF_TELEMETRY_LAT_BUCKETS; i++) {
        uint64_t lo = mf_telemetry_bucket_low(i), hi = mf_telemetry_bucket_high(i);

        assert_true(lo <= hi);
        assert_int_equal(mf_telemetry_bucket(lo), i);
        assert_int_equal(mf_telemetry_bucket(hi), i);
        if (i + 1 < MF_TELEMETRY_LAT_BUCKETS)
            assert_int_equal(mf_telemetry_bucket_low(i + 1), hi + 1);
        /* At most 12.5 % wide above the linear part. */
        if (lo >= 16)
            assert_true((hi - lo + 1) * 8 <= lo);
    }
    assert_int_equal(mf_telemetry_bucket_high(MF_TELEMETRY_LAT_BUCKETS - 1), UINT32_MAX);
    assert_int_equal(mf_telemetry_bucket(UINT64_MAX), MF_TELEMETRY_LAT_BUCKETS - 1);
}

/* The fleet's P50/P95/P99 from merged per-device histograms equal the quantiles of the
 * histogram of every raw sample, and land in the bucket of the raw nearest-rank sample. */
static void test_telemetry__merge_is_exact(void **state)
{
    static uint64_t raw[DEVICES * PER_DEVICE];
    static const double qs[] = {0.5, 0.95, 0.99, 1.0};
    uint32_t merged[MF_TELEMETRY_LAT_BUCKETS] = {0};
    mf_telemetry *all = NULL, *dev = NULL;
    uint32_t seed = 7;
    size_t n = 0;
    double avg_p99 = 0;

    (void)state;
    assert_int_equal(mf_telemetry_new(&all, NULL, NULL, "t"), MF_OK);
    for (int d = 0; d < DEVICES; d++) {
        /* Devices differ: every third one is slow, so averaging percentiles would lie. */
        uint64_t base = d % 3 == 0 ? 20000 : 3000;

        assert_int_equal(mf_telemetry_new(&dev, NULL, NULL, "t"), MF_OK);
        for (int i = 0; i < PER_DEVICE; i++) {
            uint64_t us = base + rng_next(&seed) % (base * 2);

            raw[n++] = us;
            assert_int_equal(mf_telemetry_record_latency(dev, "det", "v2", us), MF_OK);
            assert_int_equal(mf_telemetry_record_latency(all, "det", "v2", us), MF_OK);
        }
        mf_telemetry_hist_merge(merged, mf_telemetry_get(dev, "det", "v2")->latency);
        avg_p99 +=
            (double)mf_telemetry_hist_quantile(mf_telemetry_get(dev, "det", "v2")->latency, 0.99) /
            DEVICES;
        mf_telemetry_free(dev);
    }
    assert_memory_equal(merged, mf_telemetry_get(all, "det", "v2")->latency, sizeof(merged));
    assert_int_equal(mf_telemetry_get(all, "det", "v2")->inferences, n);
    qsort(raw, n, sizeof(raw[0]), cmp_u64);
    for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
        size_t rank = (size_t)(qs[k] * (double)n + 0.999999);
        uint64_t exact = raw[rank - 1];
        uint64_t got = mf_telemetry_hist_quantile(merged, qs[k]);

        assert_int_equal(got, mf_telemetry_bucket_high(mf_telemetry_bucket(exact)));
        assert_true(got >= exact);
        assert_true(got - exact <= exact / 8);
    }
    /* The average of per-device P99s is not the fleet's P99 (why the server merges). */
    assert_true(avg_p99 < (double)mf_telemetry_hist_quantile(merged, 0.99) * 0.9);
    assert_int_equal(mf_telemetry_hist_quantile((uint32_t[MF_TELEMETRY_LAT_BUCKETS]){0}, 0.99), 0);
    mf_telemetry_free(all);
}

static void test_telemetry__counters_and_bad_input(void **state)
{
    mf_telemetry *t = NULL;
    const mf_telemetry_version *v;
    char long_name[80];

    (void)state;
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, ""), MF_E_INVALID);
    assert_null(t);
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "", "v1", 5), MF_E_INVALID);
    assert_int_equal(mf_telemetry_record_latency(t, "det", long_name, 5), MF_E_INVALID);
    assert_int_equal(mf_telemetry_record_memory(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_record_memory(t, "det", "v1", 50), MF_OK);
    assert_int_equal(mf_telemetry_record_health(t, "det", "v1", 1), MF_OK);
    assert_int_equal(mf_telemetry_record_health(t, "det", "v1", 0), MF_OK);
    assert_int_equal(mf_telemetry_record_install(t, "det", "v1", 0), MF_OK);
    assert_int_equal(mf_telemetry_record_rollback(t, "det", "v1", "unhealthy: \"probe\""), MF_OK);
    assert_int_equal(mf_telemetry_record_teacher(t, "det", "v1", 1), MF_OK);
    assert_int_equal(mf_telemetry_record_teacher(t, "det", "v1", 0), MF_OK);
    v = mf_telemetry_get(t, "det", "v1");
    assert_non_null(v);
    assert_int_equal(v->peak_memory, 100);
    assert_int_equal(v->health_ok, 1);
    assert_int_equal(v->health_failed, 1);
    assert_int_equal(v->install_failed, 1);
    assert_int_equal(v->rollbacks, 1);
    assert_int_equal(v->teacher_compared, 2);
    assert_int_equal(v->teacher_agreed, 1);
    assert_string_equal(v->last_rollback, "unhealthy: \"probe\"");
    assert_null(mf_telemetry_get(t, "det", "v9"));
    mf_telemetry_free(t);
}

static void test_telemetry__offload_counters_merge_in(void **state)
{
    const mf_offload_telemetry o = {.asked = 10, .uncertain = 3, .hist = {[5] = 4, [99] = 6}};
    mf_telemetry *t = NULL;
    const mf_telemetry_version *v;

    (void)state;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    assert_int_equal(mf_telemetry_add_offload(t, "det", "v1", &o), MF_OK);
    assert_int_equal(mf_telemetry_add_offload(t, "det", "v1", &o), MF_OK);
    v = mf_telemetry_get(t, "det", "v1");
    assert_int_equal(v->offload.asked, 20);
    assert_int_equal(v->offload.uncertain, 6);
    assert_int_equal(v->offload.hist[5], 8);
    assert_int_equal(v->offload.hist[99], 12);
    mf_telemetry_free(t);
}

/* Four unacknowledged versions fill the handle; after an ack the least recently used slot
 * is recycled and the others keep their totals. */
static void test_telemetry__slots_recycle_only_after_ack(void **state)
{
    static const char *const vs[] = {"v1", "v2", "v3", "v4"};
    void *small[2];
    mf_telemetry *t = NULL;

    (void)state;
    {
        void *mem = malloc(mf_telemetry_workspace_size());

        assert_int_equal(mf_telemetry_init_static(&t, small, sizeof(small), NULL, "t"), MF_E_LIMIT);
        assert_int_equal(
            mf_telemetry_init_static(&t, mem, mf_telemetry_workspace_size(), NULL, "t"), MF_OK);
        for (int i = 0; i < 4; i++)
            assert_int_equal(mf_telemetry_record_latency(t, "det", vs[i], 10), MF_OK);
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v5", 10), MF_E_LIMIT);
        mf_telemetry_ack(t);
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v2", 10), MF_OK);
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v5", 10), MF_OK);
        assert_null(mf_telemetry_get(t, "det", "v1")); /* least recently used went */
        assert_int_equal(mf_telemetry_get(t, "det", "v2")->inferences, 2);
        assert_int_equal(mf_telemetry_get(t, "det", "v5")->inferences, 1);
        free(mem);
    }
}

static void test_telemetry__checkin_json(void **state)
{
    char buf[MF_TELEMETRY_JSON_MAX];
    mf_telemetry *t = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, "det"), MF_E_NOTFOUND);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 3), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 3), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 1000), MF_OK);
    assert_int_equal(mf_telemetry_record_rollback(t, "det", "v1", "bad \"q\"\n"), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "other", "v7", 3), MF_OK);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, "det"), MF_OK);
    assert_int_equal(strlen(buf), len);
    assert_non_null(strstr(buf, "\"version\":\"v1\",\"inferences\":3,"));
    assert_non_null(strstr(buf, "\"latency_us\":[[3,2],[63,1]]"));
    assert_non_null(strstr(buf, "\"last_rollback\":\"bad \\\"q\\\"?\""));
    assert_null(strstr(buf, "v7"));
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, 20, t, "det"), MF_E_LIMIT);
    mf_telemetry_free(t);
}

/* Every slot of one model full in every bucket, counters and reason at their widest: the
 * documented bounds hold, for the model and for each version. */
static void test_telemetry__json_worst_case_fits(void **state)
{
    static char buf[MF_TELEMETRY_JSON_MAX];
    static const char *const vs[] = {"v1", "v2", "v3", "v4"};
    char name[MF_OFFLOAD_NAME_MAX + 1], ver[MF_OFFLOAD_NAME_MAX + 1];
    mf_telemetry *t = NULL;
    size_t len = 0, one = 0;

    (void)state;
    memset(name, 'm', MF_OFFLOAD_NAME_MAX);
    name[MF_OFFLOAD_NAME_MAX] = '\0';
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    for (int i = 0; i < 4; i++) {
        telemetry_long_name(ver, vs[i]);
        telemetry_fill_widest(t, name, ver);
    }
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, name), MF_OK);
    assert_true(len < sizeof(buf));
    /* One version alone: under MF_TELEMETRY_VERSION_JSON_MAX, the check-in budget's floor. */
    one = mf_telemetry_checkin_plan(t, MF_TELEMETRY_VERSION_JSON_MAX + 64);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, name), MF_OK);
    assert_int_equal(one, len + strlen(",\"telemetry\":"));
    assert_true(len > 30 * 1024 && len < MF_TELEMETRY_VERSION_JSON_MAX);
    mf_telemetry_free(t);
}

/* The check-in's budget at the worst case: four versions of two models, all at their widest
 * and recorded into again after every check-in (always changed). Each check-in's members stay
 * within MF_TELEMETRY_CHECKIN_BUDGET (so under the server's 64 KiB body cap), carry at least
 * one version, and every version goes out within four check-ins: none starves. A version
 * recorded into after the plan, or left out of it, stays unacknowledged. */
static void test_telemetry__checkin_budget_at_worst_case(void **state)
{
    static char buf[MF_TELEMETRY_CHECKIN_BUDGET];
    static const char *const models[] = {"a", "b"};
    char ver[4][MF_OFFLOAD_NAME_MAX + 1];
    unsigned sent[4] = {0};
    mf_telemetry *t = NULL;

    (void)state;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    for (int i = 0; i < 4; i++) {
        char prefix[8];

        (void)snprintf(prefix, sizeof(prefix), "v%d", i);
        telemetry_long_name(ver[i], prefix);
        telemetry_fill_widest(t, models[i / 2], ver[i]);
    }
    for (int round = 0; round < 8; round++) {
        size_t planned = mf_telemetry_checkin_plan(t, MF_TELEMETRY_CHECKIN_BUDGET), total = 0;
        unsigned carried = 0;

        assert_true(planned > 0 && planned <= MF_TELEMETRY_CHECKIN_BUDGET);
        for (int m = 0; m < 2; m++) {
            size_t len = 0;
            int err = mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, models[m]);

            if (err == MF_E_NOTFOUND)
                continue;
            assert_int_equal(err, MF_OK);
            total += strlen(",\"telemetry\":") + len;
            for (int i = 0; i < 4; i++) {
                if (strstr(buf, ver[i])) {
                    assert_int_equal(i / 2, m);
                    sent[i]++;
                    carried++;
                }
            }
        }
        assert_int_equal(total, planned);
        assert_true(carried >= 1);
        if (round == 3) {
            for (int i = 0; i < 4; i++)
                assert_true(sent[i] >= 1);
        }
        /* Recorded into after the plan: still unacknowledged after the ack. */
        for (int i = 0; i < 4; i++)
            assert_int_equal(mf_telemetry_record_health(t, models[i / 2], ver[i], 1), MF_OK);
        mf_telemetry_ack(t);
        for (int i = 0; i < 4; i++)
            assert_true(t->slot[i].dirty);
    }
    /* Every version went out about equally often (round robin by the last send). */
    for (int i = 0; i < 4; i++)
        assert_true(sent[i] >= 2);
    /* Nothing recorded after the plan: the carried ones are acknowledged, the others are not. */
    {
        size_t len = 0;
        int acked = 0;

        (void)mf_telemetry_checkin_plan(t, MF_TELEMETRY_CHECKIN_BUDGET);
        for (int m = 0; m < 2; m++) {
            int err = mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, models[m]);

            assert_true(err == MF_OK || err == MF_E_NOTFOUND);
        }
        mf_telemetry_ack(t);
        for (int i = 0; i < 4; i++)
            acked += !t->slot[i].dirty;
        assert_true(acked >= 1 && acked < 4);
    }
    mf_telemetry_free(t);
}

/* Totals survive a restart; a damaged object is refused and leaves empty totals; storage
 * failing at every call during a save leaves the previous save readable. */
static void test_telemetry__persists_crash_safely(void **state)
{
    struct tplat p;
    mf_telemetry *t = NULL;
    char path[256];

    (void)state;
    tplat_init(&p);
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_OK); /* nothing saved yet */
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_save(t), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    for (long n = 0;; n++) {
        int err;

        p.io_calls = 0;
        p.fail_at = n;
        err = mf_telemetry_save(t);
        p.fail_at = -1;
        if (err == MF_OK)
            break;
        {
            mf_telemetry *r = NULL;

            assert_int_equal(mf_telemetry_new(&r, NULL, &p.ops, "telemetry.state"), MF_OK);
            assert_int_equal(mf_telemetry_load(r), MF_OK);
            assert_int_equal(mf_telemetry_get(r, "det", "v1")->inferences, 1);
            mf_telemetry_free(r);
        }
    }
    mf_telemetry_free(t);
    tplat_reopen(&p);
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_OK);
    assert_int_equal(mf_telemetry_get(t, "det", "v1")->inferences, 2);
    mf_telemetry_free(t);
    /* Flip one byte: the digest catches it. */
    tplat_path(&p, path, sizeof(path), "telemetry.state");
    mf_kit_fs_flip_byte(path, 40);
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_E_INVALID);
    assert_null(mf_telemetry_get(t, "det", "v1"));
    mf_telemetry_free(t);
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_save(t), MF_E_INVALID); /* no port */
    mf_telemetry_free(t);
    tplat_done(&p);
}

/* Every scorecard call lands in its field, sustained windows follow the (simulated)
 * minutes since the activation, and the JSON carries what was recorded and only that. */
static void test_telemetry__scorecard_records(void **state)
{
    static char buf[MF_TELEMETRY_JSON_MAX];
    mf_telemetry_scorecard sc = MF_TELEMETRY_SCORECARD_INIT;
    struct tplat p;
    mf_telemetry *t = NULL;
    size_t len = 0;

    (void)state;
    tplat_init(&p);
    p.fake_clock = 1;
    p.mono_ms = 1000;
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "t"), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK); /* starts run */
    assert_int_equal(mf_telemetry_record_cold_latency(t, "det", "v1", 40000), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    p.mono_ms += 59999;
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK); /* minute 0 */
    p.mono_ms += 1;
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 3000), MF_OK); /* minute 1 */
    p.mono_ms += 11 * 60000;
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 5000), MF_OK); /* minute 12 */
    p.mono_ms += 60000;
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 5000), MF_OK); /* minute 13 */
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 5000), MF_OK);
    assert_int_equal(mf_telemetry_record_steady_memory(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_record_steady_memory(t, "det", "v1", 300), MF_OK);
    assert_int_equal(mf_telemetry_record_memory(t, "det", "v1", 900), MF_OK);
    for (int c = 0; c < MF_TELEMETRY_COUNTERS; c++) {
        for (int k = 0; k <= c; k++)
            assert_int_equal(mf_telemetry_count(t, "det", "v1", (mf_telemetry_counter)c), MF_OK);
    }
    assert_int_equal(mf_telemetry_count(t, "det", "v1", MF_TELEMETRY_COUNTERS), MF_E_INVALID);
    assert_int_equal(mf_telemetry_count(t, "", "v1", MF_TELEMETRY_ERROR), MF_E_INVALID);
    assert_int_equal(mf_telemetry_record_energy(t, "det", "v1", 1000, 4), MF_OK);
    assert_int_equal(mf_telemetry_record_energy(t, "det", "v1", 777, 0), MF_OK); /* no figure */
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.struct_version, MF_TELEMETRY_SCORECARD_VERSION);
    assert_int_equal(sc.activations, 1);
    assert_int_equal(sc.cold_latency[mf_telemetry_bucket(40000)], 1);
    assert_int_equal(mf_telemetry_get(t, "det", "v1")->inferences, 7); /* cold not among */
    /* Two activations reached minute 0: the first latency's, and the cold call's. */
    assert_int_equal(sc.sustained_minutes[0], 2);
    assert_int_equal(sc.sustained[0][mf_telemetry_bucket(100) / 2], 3);
    assert_int_equal(sc.sustained_minutes[1], 1);
    assert_int_equal(sc.sustained[1][mf_telemetry_bucket(3000) / 2], 1);
    assert_int_equal(sc.sustained_minutes[2], 0);
    assert_int_equal(sc.sustained_minutes[10], 2); /* minutes 12 and 13 */
    assert_int_equal(sc.sustained[10][mf_telemetry_bucket(5000) / 2], 3);
    assert_int_equal(sc.steady_memory_sum, 400);
    assert_int_equal(sc.steady_memory_samples, 2);
    assert_int_equal(sc.energy_uj, 1000);
    assert_int_equal(sc.energy_inferences, 4);
    for (int c = 0; c < MF_TELEMETRY_COUNTERS; c++)
        assert_int_equal(sc.counters[c], c + 1);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, "det"), MF_OK);
    assert_non_null(strstr(buf, "\"activations\":1,\"cold_us\":[[105,1]]"));
    assert_non_null(strstr(buf, "\"steady_memory_sum\":400,\"steady_memory_samples\":2"));
    assert_non_null(strstr(buf, "\"energy_uj\":1000,\"energy_inferences\":4"));
    assert_non_null(strstr(buf, "\"fallbacks\":1,\"errors\":2,\"timeouts\":3,"
                                "\"mem_pressure\":4,\"hot\":5"));
    assert_non_null(strstr(buf, "\"sustained\":[[0,2,[[18,3]]],[1,1,[[37,1]]],[10,2,[[40,3]]]]"));
    sc.struct_version = 99;
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_E_INVALID);
    sc.struct_version = MF_TELEMETRY_SCORECARD_VERSION;
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v9"), MF_E_NOTFOUND);
    /* A restart is a new activation: the windows count from the first latency after it. */
    assert_int_equal(mf_telemetry_save(t), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.sustained_minutes[0], 3);
    assert_int_equal(sc.energy_uj, 1000); /* the scorecard was saved and loaded */
    assert_int_equal(sc.counters[MF_TELEMETRY_HOT], 5);
    mf_telemetry_free(t);
    /* Without a port there is no clock: no sustained windows, rather than made-up ones. */
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, "det"), MF_OK);
    assert_null(strstr(buf, "sustained"));
    mf_telemetry_free(t);
    tplat_done(&p);
}

struct fake_meter {
    int present; /* 0: the platform has no counter */
    uint64_t uj; /* the counter */
    long reads;
};

static int fake_energy(void *payload, uint64_t *out)
{
    struct fake_meter *m = payload;

    m->reads++;
    if (!m->present)
        return MF_E_NOTFOUND;
    *out = m->uj;
    return MF_OK;
}

/* A platform without an energy counter leaves the figure absent (no field, not 0); with
 * one, each inference between two reads costs exactly what the counter says; a counter
 * that went backwards (wrapped) adds nothing for that interval. */
static void test_telemetry__energy_absent_without_a_counter(void **state)
{
    static char buf[MF_TELEMETRY_JSON_MAX];
    mf_telemetry_scorecard sc = MF_TELEMETRY_SCORECARD_INIT;
    struct fake_meter m = {0};
    mf_telemetry *t = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    mf_telemetry_set_energy_counter(t, fake_energy, &m);
    for (int i = 0; i < 10 * MF_TELEMETRY_ENERGY_EVERY; i++)
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    assert_true(m.reads >= 10);
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.energy_inferences, 0);
    assert_int_equal(sc.energy_uj, 0);
    assert_int_equal(mf_telemetry_checkin_json(&len, buf, sizeof(buf), t, "det"), MF_OK);
    assert_null(strstr(buf, "energy"));
    mf_telemetry_free(t);

    m.present = 1;
    assert_int_equal(mf_telemetry_new(&t, NULL, NULL, "t"), MF_OK);
    mf_telemetry_set_energy_counter(t, fake_energy, &m);
    /* The first latency of a version only takes the baseline. */
    assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    for (int i = 0; i < 2 * MF_TELEMETRY_ENERGY_EVERY; i++) {
        m.uj += 250; /* this inference's energy */
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    }
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.energy_inferences, 2 * MF_TELEMETRY_ENERGY_EVERY);
    assert_int_equal(sc.energy_uj, 250 * 2 * MF_TELEMETRY_ENERGY_EVERY);
    m.uj = 5; /* wrapped */
    for (int i = 0; i < MF_TELEMETRY_ENERGY_EVERY; i++)
        assert_int_equal(mf_telemetry_record_latency(t, "det", "v1", 100), MF_OK);
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.energy_inferences, 2 * MF_TELEMETRY_ENERGY_EVERY);
    mf_telemetry_free(t);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The Linux powercap reader: absent file is "no counter", a number is read, junk is an
 * I/O error. */
static void test_telemetry__powercap_reader(void **state)
{
    char path[] = "/tmp/mf-energy-XXXXXX";
    int fd = mkstemp(path);
    uint64_t uj = 1;

    (void)state;
    assert_true(fd >= 0);
    (void)close(fd);
    write_text(path, "123456789\n");
    assert_int_equal(mf_platform_posix_energy(path, &uj), MF_OK);
    assert_int_equal(uj, 123456789);
    write_text(path, "n/a\n");
    assert_int_equal(mf_platform_posix_energy(path, &uj), MF_E_IO);
    write_text(path, "");
    assert_int_equal(mf_platform_posix_energy(path, &uj), MF_E_IO);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mf_platform_posix_energy(path, &uj), MF_E_NOTFOUND);
    assert_int_equal(mf_platform_posix_energy((void *)"/nonexistent/energy_uj", &uj),
                     MF_E_NOTFOUND);
}

/* A state file of format 1 (saved before the scorecard) loads: totals kept, scorecards
 * empty. */
static void test_telemetry__loads_format_1(void **state)
{
    static struct telemetry_slot_v1 old[MF_TELEMETRY_MAX_VERSIONS];
    const uint32_t head[4] = {0x4d46544cu, 1u, (uint32_t)sizeof(old[0]), MF_TELEMETRY_MAX_VERSIONS};
    mf_telemetry_scorecard sc = MF_TELEMETRY_SCORECARD_INIT;
    uint8_t sum[MF_SHA256_DIGEST_LEN];
    struct mf_sha256 c;
    struct tplat p;
    mf_telemetry *t = NULL;
    char path[256];
    FILE *f;

    (void)state;
    tplat_init(&p);
    memset(old, 0, sizeof(old));
    (void)snprintf(old[2].v.model, sizeof(old[2].v.model), "det");
    (void)snprintf(old[2].v.version, sizeof(old[2].v.version), "v1");
    old[2].v.inferences = 41;
    old[2].v.latency[mf_telemetry_bucket(100)] = 41;
    old[2].dirty = 1;
    mf_sha256__init(&c);
    mf_sha256__update(&c, head, sizeof(head));
    mf_sha256__update(&c, old, sizeof(old));
    mf_sha256__final(&c, sum);
    tplat_path(&p, path, sizeof(path), "telemetry.state");
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(head, sizeof(head), 1, f), 1);
    assert_int_equal(fwrite(old, sizeof(old), 1, f), 1);
    assert_int_equal(fwrite(sum, sizeof(sum), 1, f), 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_OK);
    assert_int_equal(mf_telemetry_get(t, "det", "v1")->inferences, 41);
    assert_int_equal(mf_telemetry_scorecard_get(&sc, t, "det", "v1"), MF_OK);
    assert_int_equal(sc.activations, 0);
    assert_int_equal(sc.sustained_minutes[0], 0);
    mf_telemetry_free(t);
    /* A damaged format field is foreign. */
    mf_kit_fs_flip_byte(path, 4);
    assert_int_equal(mf_telemetry_new(&t, NULL, &p.ops, "telemetry.state"), MF_OK);
    assert_int_equal(mf_telemetry_load(t), MF_E_INVALID);
    mf_telemetry_free(t);
    tplat_done(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_telemetry__buckets_tile_the_range),
        cmocka_unit_test(test_telemetry__merge_is_exact),
        cmocka_unit_test(test_telemetry__counters_and_bad_input),
        cmocka_unit_test(test_telemetry__offload_counters_merge_in),
        cmocka_unit_test(test_telemetry__slots_recycle_only_after_ack),
        cmocka_unit_test(test_telemetry__checkin_json),
        cmocka_unit_test(test_telemetry__json_worst_case_fits),
        cmocka_unit_test(test_telemetry__checkin_budget_at_worst_case),
        cmocka_unit_test(test_telemetry__persists_crash_safely),
        cmocka_unit_test(test_telemetry__scorecard_records),
        cmocka_unit_test(test_telemetry__energy_absent_without_a_counter),
        cmocka_unit_test(test_telemetry__powercap_reader),
        cmocka_unit_test(test_telemetry__loads_format_1),
    };
    return cmocka_run_group_tests_name("telemetry", tests, NULL, NULL);
}
