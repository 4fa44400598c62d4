/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by test_telemetry and test_agent: a telemetry handle at its worst case (every
 * bucket used, every counter and the rollback reason at their widest printed value), through
 * the handle's layout (sdk/telemetry/mf_telemetry_int.h). Include after cmocka (mf_test.h).
 */
#ifndef MF_TEST_TELEMETRY_WIDEST_H
#define MF_TEST_TELEMETRY_WIDEST_H

#include "mf/telemetry.h"
#include "mf_telemetry_int.h"

#include <stdio.h>
#include <string.h>

/* Version `ver` of `model` recorded in every bucket, its counters and reason at their widest
 * (and the scorecards of every slot). */
static void telemetry_fill_widest(mf_telemetry *t, const char *model, const char *ver)
{
    char reason[200];
    mf_offload_telemetry o;

    memset(reason, '"', sizeof(reason) - 1);
    reason[sizeof(reason) - 1] = '\0';
    memset(&o, 0xff, sizeof(o));
    for (unsigned b = 0; b < MF_TELEMETRY_LAT_BUCKETS; b++)
        assert_int_equal(mf_telemetry_record_latency(t, model, ver, mf_telemetry_bucket_low(b)),
                         MF_OK);
    assert_int_equal(mf_telemetry_add_offload(t, model, ver, &o), MF_OK);
    assert_int_equal(mf_telemetry_add_offload(t, model, ver, &o), MF_OK);
    assert_int_equal(mf_telemetry_record_rollback(t, model, ver, reason), MF_OK);
    /* Force every counter and bucket to its widest printed value. */
    {
        mf_telemetry_version *v = (mf_telemetry_version *)mf_telemetry_get(t, model, ver);

        memset(v->latency, 0xff, sizeof(v->latency));
        v->inferences = v->peak_memory = v->health_ok = v->health_failed = UINT64_MAX;
        v->install_ok = v->install_failed = v->rollbacks = UINT64_MAX;
        v->teacher_compared = v->teacher_agreed = UINT64_MAX;
    }
    for (int k = 0; k < MF_TELEMETRY_MAX_VERSIONS; k++) {
        mf_telemetry_scorecard *sc = &t->slot[k].sc;

        memset(sc->cold_latency, 0xff, sizeof(sc->cold_latency));
        memset(sc->sustained, 0xff, sizeof(sc->sustained));
        memset(sc->sustained_minutes, 0xff, sizeof(sc->sustained_minutes));
        memset(sc->counters, 0xff, sizeof(sc->counters));
        sc->activations = sc->steady_memory_sum = sc->steady_memory_samples = UINT64_MAX;
        sc->energy_uj = sc->energy_inferences = UINT64_MAX;
    }
}

/* A longest name with a prefix: "v1000...0" and the like. */
static void telemetry_long_name(char out[MF_OFFLOAD_NAME_MAX + 1], const char *prefix)
{
    (void)snprintf(out, MF_OFFLOAD_NAME_MAX + 1, "%s%0*d", prefix,
                   (int)(MF_OFFLOAD_NAME_MAX - strlen(prefix)), 0);
}

#endif /* MF_TEST_TELEMETRY_WIDEST_H */
