/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rollouts over a real (SQLite) store, devices simulated by real mf_telemetry handles whose
 * check-in JSON goes through the server's ingest: reports validated all-or-nothing and
 * replaced, fleet percentiles exact against the raw samples after the server-side merge,
 * waves that advance when clean, halts with fleet rollback on each red line, the ops
 * actions, and the director's wave hook.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "mf_test.h"
#include "kit_fs.h"
#include "common/token.h"
#include "deltas/delta_worker.h"
#include "director/director_wave.h"
#include "rollout/rollout_ctl.h"
#include "rollout/rollout_fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEVICES 40

/* What a simulated device's model version does at run time. */
struct behaviour {
    uint64_t latency_us;  /* typical; samples spread over [l, 2l) */
    uint64_t memory;      /* peak bytes */
    int health_fail;      /* 1: the health check fails */
    unsigned offload_pct; /* uncertain share of asked samples */
    unsigned teacher;     /* teacher comparisons per run (0: the app reports none) */
};

static const struct behaviour baseline = {1000, 40u << 20, 0, 5, 0};

struct eng {
    char dir[64];
    struct mf_ctx ctx;
    struct mf_store *s;
    mf_telemetry *dev[DEVICES];
    char ids[DEVICES][16];
    const char *cls[DEVICES]; /* the class tag each check-in declares (NULL: none) */
    uint32_t seed;
};

static void release(struct eng *f, const char *version, uint64_t seq)
{
    struct mf_store_version v = {.size = 1, .sequence = seq, .created_at = 1};

    (void)snprintf(v.model, sizeof(v.model), "m");
    (void)snprintf(v.version, sizeof(v.version), "%s", version);
    memset(v.sha256, 'a' + (int)seq, 64);
    memset(v.release_digest, 'b', 64);
    assert_int_equal(f->s->ops->registry->version_insert(f->s, &f->ctx, &v), MF_OK);
    assert_int_equal(f->s->ops->registry->release_set(f->s, &f->ctx, &v, "{}", 2), MF_OK);
}

static int eng_setup(void **state)
{
    struct eng *f = calloc(1, sizeof(*f));
    char url[128];
    int applied = 0;

    assert_non_null(f);
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    mf_kit_fs_mkdtemp(f->dir, sizeof(f->dir), "mf-reng");
    (void)snprintf(url, sizeof(url), "sqlite:%s/store.db", f->dir);
    assert_int_equal(mf_store__open(&f->s, &f->ctx, url, 1), MF_OK);
    assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    for (int i = 0; i < DEVICES; i++) {
        uint8_t h[MF_SHA256_LEN];

        (void)snprintf(f->ids[i], sizeof(f->ids[i]), "dev-%02d", i);
        mf_token__hash(h, f->ids[i], strlen(f->ids[i]));
        assert_int_equal(f->s->ops->auth->device_enroll(f->s, &f->ctx, f->ids[i], h, 1), MF_OK);
        assert_int_equal(mf_telemetry_new(&f->dev[i], NULL, NULL, "t"), MF_OK);
    }
    release(f, "v1", 1);
    release(f, "v2", 2);
    f->seed = 11;
    *state = f;
    return 0;
}

static int eng_teardown(void **state)
{
    struct eng *f = *state;

    for (int i = 0; i < DEVICES; i++)
        mf_telemetry_free(f->dev[i]);
    mf_store__close(f->s);
    mf_kit_fs_rmtree(f->dir);
    free(f);
    return 0;
}

static uint32_t rng(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Sends device i's cumulative telemetry through the server's check-in ingest. */
static int checkin(struct eng *f, int i, int64_t now)
{
    static char json[MF_TELEMETRY_JSON_MAX];
    char root[MF_TELEMETRY_JSON_MAX + 192];
    size_t len = 0;
    cJSON *body;
    int stored = 0, err;

    assert_int_equal(mf_telemetry_checkin_json(&len, json, sizeof(json), f->dev[i], "m"), MF_OK);
    if (f->cls[i])
        (void)snprintf(root, sizeof(root),
                       "{\"device_class\":{\"tag\":\"%s\",\"ram_mb\":256,\"storage_mb\":512},"
                       "\"models\":[{\"name\":\"m\",\"telemetry\":%s}]}",
                       f->cls[i], json);
    else
        (void)snprintf(root, sizeof(root), "{\"models\":[{\"name\":\"m\",\"telemetry\":%s}]}",
                       json);
    body = cJSON_Parse(root);
    assert_non_null(body);
    err = mf_rollout__ingest(&stored, f->s, &f->ctx, f->ids[i], body, now);
    cJSON_Delete(body);
    mf_telemetry_ack(f->dev[i]);
    return err;
}

/* Device i runs `version` for a while with behaviour `b`, then checks in. */
static void run(struct eng *f, int i, const char *version, const struct behaviour *b, int64_t now)
{
    mf_offload_telemetry o = {.asked = 100, .uncertain = b->offload_pct};
    mf_telemetry *t = f->dev[i];

    for (int k = 0; k < 50; k++)
        assert_int_equal(mf_telemetry_record_latency(t, "m", version,
                                                     b->latency_us + rng(&f->seed) % b->latency_us),
                         MF_OK);
    assert_int_equal(mf_telemetry_record_memory(t, "m", version, b->memory), MF_OK);
    assert_int_equal(mf_telemetry_record_health(t, "m", version, !b->health_fail), MF_OK);
    (void)snprintf(o.model_version, sizeof(o.model_version), "%s", version);
    assert_int_equal(mf_telemetry_add_offload(t, "m", version, &o), MF_OK);
    for (unsigned k = 0; k < b->teacher; k++)
        assert_int_equal(mf_telemetry_record_teacher(t, "m", version, 1), MF_OK);
    assert_int_equal(checkin(f, i, now), MF_OK);
}

/* One period of the fleet under rollout `r`: the admitted devices run v2 with `b`, every
 * other device keeps running v1 as it did (the concurrent control group). */
static void run_fleet(struct eng *f, const struct mf_store_rollout *r, const struct behaviour *b,
                      int64_t now)
{
    struct mf_rollout_plan plan;

    assert_int_equal(mf_rollout__plan_load(&plan, &f->ctx, r), MF_OK);
    for (int i = 0; i < DEVICES; i++) {
        int wave = -1;

        assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]), MF_OK);
        if (wave >= 0 && wave <= r->wave)
            run(f, i, "v2", b, now);
        else
            run(f, i, "v1", &baseline, now);
    }
}

static void step(struct eng *f, int64_t id, int64_t now, struct mf_store_rollout *r)
{
    assert_int_equal(mf_rollout__step(f->s, &f->ctx, id, now), MF_OK);
    assert_int_equal(f->s->ops->rollout->rollout_get(r, f->s, &f->ctx, id), MF_OK);
}

static int64_t create(struct eng *f, const char *plan)
{
    struct mf_store_rollout r;
    cJSON *body = cJSON_Parse(plan);

    assert_non_null(body);
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", body, 1000), MF_OK);
    cJSON_Delete(body);
    assert_string_equal(r.prev_version, "v1");
    return r.id;
}

/* Every device runs the previous version; then, every 11 s of fake time, the admitted ones
 * run v2 with `b` and the others v1, and the rollout is evaluated, until it stops running
 * (at most 12 steps: each wave needs one to start its soak on evidence, one to advance). */
static void drive(struct eng *f, int64_t id, const struct behaviour *b, struct mf_store_rollout *r)
{
    int64_t now = 1000;

    for (int i = 0; i < DEVICES; i++)
        run(f, i, "v1", &baseline, now);
    assert_int_equal(f->s->ops->rollout->rollout_get(r, f->s, &f->ctx, id), MF_OK);
    for (int k = 0; k < 12 && strcmp(r->state, "running") == 0; k++) {
        run_fleet(f, r, b, now);
        now += 11;
        step(f, id, now, r);
    }
}

static const char *const plan3 =
    "{\"soak_s\": 10, \"min_devices\": 2,"
    " \"waves\": [{\"percent\": 10}, {\"percent\": 50}, {\"percent\": 100}],"
    " \"red_lines\": [{\"metric\": \"p99_latency_us\", \"relative\": 1.5},"
    " {\"metric\": \"peak_memory\", \"relative\": 1.2},"
    " {\"metric\": \"health_rollback_rate\", \"max\": 0.1},"
    " {\"metric\": \"offload_rate\", \"relative\": 1.5}]}";

struct kind_count {
    const char *kind;
    int n;
};

static int count_kind(void *payload, const struct mf_store_rollout_event *e)
{
    struct kind_count *k = payload;

    if (strcmp(e->kind, k->kind) == 0)
        k->n++;
    return MF_OK;
}

/* How many events of `kind` rollout `id` recorded. */
static int events_of(struct eng *f, int64_t id, const char *kind)
{
    struct kind_count k = {.kind = kind};

    assert_int_equal(f->s->ops->rollout->rollout_events_list(f->s, &f->ctx, id, count_kind, &k),
                     MF_OK);
    return k.n;
}

static int count_rollouts(void *payload, const struct mf_store_rollout *r)
{
    (void)r;
    (*(int *)payload)++;
    return MF_OK;
}

static void expect_promoted(struct eng *f, const char *version)
{
    struct mf_store_version v;

    assert_int_equal(f->s->ops->registry->promoted_latest(&v, f->s, &f->ctx, "m"), MF_OK);
    assert_string_equal(v.version, version);
}

static void test_rollout_engine__good_version_advances_every_wave(void **state)
{
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_version v;
    struct mf_store_directives d;
    int64_t id = create(f, plan3);

    /* Published is not deployed: v2 is released, the channel default stays v1. */
    expect_promoted(f, "v1");
    drive(f, id, &baseline, &r);
    assert_string_equal(r.state, "done");
    assert_int_equal(r.wave, 2);
    assert_string_equal(r.breach, "");
    assert_int_equal(events_of(f, id, "advanced"), 2);
    assert_int_equal(events_of(f, id, "soaking"), 3);  /* each wave soaked on its own evidence */
    assert_int_equal(events_of(f, id, "promoted"), 1); /* an event of its own, for webhooks */
    assert_int_equal(events_of(f, id, "rollback_started"), 0);
    /* The last wave (100 %) has no device left outside: its relative lines were judged
     * against the control group stored when it was admitted. */
    assert_non_null(strstr(r.control, "p99_latency_us"));
    /* Done: v2 is promoted, so the channel default gives every device v2 (the done rollout
     * offers no wave of its own); no fleet rollback. */
    expect_promoted(f, "v2");
    for (int i = 0; i < DEVICES; i++)
        assert_int_equal(mf_director__wave(&v, f->s, &f->ctx, f->ids[i], "m"), MF_E_NOTFOUND);
    assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[0], "m"), MF_OK);
    assert_string_equal(d.fleet_rollback, "");
}

/* One red line at a time: v2 breaches it, so wave 0 halts and the fleet rolls back. */
static void test_rollout_engine__each_red_line_halts_the_first_wave(void **state)
{
    static const struct {
        const char *metric;
        struct behaviour b;
    } cases[] = {
        {"p99_latency_us", {2000, 40u << 20, 0, 5, 0}},       /* 2x P99 */
        {"peak_memory", {1000, 60u << 20, 0, 5, 0}},          /* 1.5x memory */
        {"health_rollback_rate", {1000, 40u << 20, 1, 5, 0}}, /* health checks fail */
        {"offload_rate", {1000, 40u << 20, 0, 12, 0}},        /* 2.4x offloads */
    };
    struct eng *f = *state;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct mf_store_rollout r;
        struct mf_rollout_status st;
        struct mf_store_directives d;
        struct mf_store_version v;
        int64_t id;

        if (c > 0) { /* a fresh store for each case */
            assert_int_equal(eng_teardown(state), 0);
            assert_int_equal(eng_setup(state), 0);
            f = *state;
        }
        id = create(f, plan3);
        drive(f, id, &cases[c].b, &r);
        assert_string_equal(r.state, "halted");
        assert_int_equal(r.wave, 0);
        assert_non_null(strstr(r.breach, cases[c].metric));
        /* The halt and the fleet rollback it starts are each an event; nothing promoted. */
        assert_int_equal(events_of(f, id, "halted"), 1);
        assert_int_equal(events_of(f, id, "rollback_started"), 1);
        assert_int_equal(events_of(f, id, "promoted"), 0);
        assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
        assert_true(st.breached >= 0);
        assert_string_equal(mf_rollout__metric_name(st.plan.lines[st.breached].metric),
                            cases[c].metric);
        assert_true(st.verdicts[st.breached].evaluated);
        /* The numbers are recorded: the canary's and the control group's evidence. */
        assert_non_null(strstr(r.breach, "canary "));
        assert_non_null(strstr(r.breach, "control "));
        expect_promoted(f, "v1");
        /* The fleet rollback directive points every device at v1; no wave is offered. */
        for (int i = 0; i < DEVICES; i++) {
            assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[i], "m"),
                             MF_OK);
            assert_string_equal(d.fleet_rollback, "v1");
        }
        assert_int_equal(mf_director__wave(&v, f->s, &f->ctx, f->ids[0], "m"), MF_E_NOTFOUND);
    }
}

/* Per-class halts (docs/rollouts.md): v2 is twice as slow on the low-RAM class only. That
 * class is halted and rolled back on its own (an event of its own, its devices offered v1
 * by the director's class rollback whatever the rollout does next) while the other class
 * advances through every wave, and the rollout ends done with v2 promoted for it. */
static void test_rollout_engine__class_halt_leaves_other_classes_on_the_new_version(void **state)
{
    static const char *const plan2 =
        "{\"soak_s\": 10, \"min_devices\": 2,"
        " \"waves\": [{\"percent\": 25}, {\"percent\": 100}],"
        " \"red_lines\": [{\"metric\": \"p99_latency_us\", \"relative\": 1.5}]}";
    static const struct behaviour slow = {2000, 40u << 20, 0, 5, 0};
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_rollout_plan plan;
    struct mf_store_directives d;
    struct mf_ccache_view view = {.s = f->s, .ctx = &f->ctx};
    struct mf_store_version v;
    int64_t id, now = 1000;
    int lite_in_wave0 = 0, pro_in_wave0 = 0;

    for (int i = 0; i < DEVICES; i++)
        f->cls[i] = i % 2 ? "cam-pro" : "cam-lite";
    id = create(f, plan2);
    for (int i = 0; i < DEVICES; i++)
        run(f, i, "v1", &baseline, now);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(mf_rollout__plan_load(&plan, &f->ctx, &r), MF_OK);
    for (int i = 0; i < DEVICES; i++) {
        int wave = -1;

        assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]), MF_OK);
        lite_in_wave0 += wave == 0 && i % 2 == 0;
        pro_in_wave0 += wave == 0 && i % 2 == 1;
    }
    assert_true(lite_in_wave0 >= 2 && pro_in_wave0 >= 2); /* both classes in the canary */
    for (int k = 0; k < 12 && strcmp(r.state, "running") == 0; k++) {
        for (int i = 0; i < DEVICES; i++) {
            int wave = -1, lite = i % 2 == 0;

            assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]),
                             MF_OK);
            /* A halted class runs v1 again (what the class rollback gives its devices). */
            if (wave >= 0 && wave <= r.wave && !mf_rollout__class_halted(&r, f->cls[i]))
                run(f, i, "v2", lite ? &slow : &baseline, now);
            else
                run(f, i, "v1", &baseline, now);
        }
        now += 11;
        step(f, id, now, &r);
    }
    assert_string_equal(r.state, "done");
    assert_string_equal(r.halted_classes, "cam-lite");
    assert_true(mf_rollout__class_halted(&r, "cam-lite"));
    assert_false(mf_rollout__class_halted(&r, "cam-pro"));
    assert_false(mf_rollout__class_halted(&r, ""));
    assert_int_equal(events_of(f, id, "class_halted"), 1);
    assert_int_equal(events_of(f, id, "halted"), 0);
    assert_int_equal(events_of(f, id, "advanced"), 1);
    expect_promoted(f, "v2");
    /* Each class's own status (the status view's "classes"): the halted class's v2 figures
     * stay visible after the halt, and only its P99 is the slow one. */
    {
        struct mf_rollout_status *lite = calloc(1, sizeof(*lite)), *pro = calloc(1, sizeof(*pro));
        int p99 = MF_METRIC_P99_LATENCY_US;

        assert_non_null(lite);
        assert_non_null(pro);
        assert_int_equal(mf_rollout__class_status(lite, f->s, &f->ctx, id, "cam-lite"), MF_OK);
        assert_int_equal(mf_rollout__class_status(pro, f->s, &f->ctx, id, "cam-pro"), MF_OK);
        assert_true(lite->cur.have[p99] && pro->cur.have[p99]);
        assert_true(lite->cur.v[p99] > 1.5 * pro->cur.v[p99]);
        assert_true(lite->breached >= 0);
        assert_int_equal(pro->breached, -1);
        /* The fleet's status names the canary's classes but the halted one. */
        assert_int_equal(mf_rollout__status(lite, f->s, &f->ctx, id), MF_OK);
        assert_int_equal(lite->n_classes, 1);
        assert_string_equal(lite->classes[0], "cam-pro");
        free(lite);
        free(pro);
    }
    /* No fleet rollback; the low-RAM class goes back to v1, the other keeps v2. */
    assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[0], "m"), MF_OK);
    assert_string_equal(d.fleet_rollback, "");
    assert_int_equal(mf_director__class_rollback_cached(&v, &view, "cam-lite", "m"), MF_OK);
    assert_string_equal(v.version, "v1");
    assert_int_equal(mf_director__class_rollback_cached(&v, &view, "cam-pro", "m"), MF_E_NOTFOUND);
    assert_int_equal(mf_director__class_rollback_cached(&v, &view, "", "m"), MF_E_NOTFOUND);
    for (int i = 0; i < DEVICES; i++)
        f->cls[i] = NULL;
}

static void test_rollout_engine__pause_resume_abort_rollback(void **state)
{
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_directives d;
    struct mf_store_version v;
    cJSON *again = cJSON_Parse(plan3);
    int64_t id = create(f, plan3);
    int out_of_wave = -1;

    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    run_fleet(f, &r, &baseline, 1000);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "pause", 1001), MF_OK);
    assert_string_equal(r.state, "paused");
    assert_int_equal(mf_rollout__step(f->s, &f->ctx, id, 5000), MF_OK); /* soaked, paused */
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(r.wave, 0);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "pause", 5001), MF_E_STATE);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "resume", 5002), MF_OK);
    assert_int_equal(r.wave_started_at, 5002); /* the soak starts again */
    assert_int_equal(r.soak_started_at, 0);    /* it never started: paused before evidence */
    step(f, id, 5005, &r);
    assert_int_equal(r.wave, 0);
    assert_int_equal(r.soak_started_at, 5005); /* the wave's reports: the soak starts */
    step(f, id, 5013, &r);
    assert_int_equal(r.wave, 0); /* 8 s of the 10 s soak */
    step(f, id, 5016, &r);
    assert_int_equal(r.wave, 1);
    assert_int_equal(r.soak_started_at, 0); /* wave 1 waits for its own devices */

    /* Only one active rollout per model. */
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", again, 5014), MF_E_STATE);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "abort", 5020), MF_OK);
    assert_string_equal(r.state, "aborted");
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "resume", 5021), MF_E_STATE);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "launch", 5021), MF_E_INVALID);
    assert_int_equal(mf_rollout__step(f->s, &f->ctx, id, 9000), MF_OK);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(r.wave, 1); /* frozen */
    /* Aborted is frozen: outside the admitted waves devices stay on v1, not the channel
     * default v2. */
    for (int i = 0; i < DEVICES && out_of_wave < 0; i++) {
        assert_int_equal(mf_director__wave(&v, f->s, &f->ctx, f->ids[i], "m"), MF_OK);
        if (strcmp(v.version, "v1") == 0)
            out_of_wave = i;
    }
    assert_true(out_of_wave >= 0);

    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "rollback", 5030), MF_OK);
    assert_string_equal(r.state, "rolled_back");
    assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[3], "m"), MF_OK);
    assert_string_equal(d.fleet_rollback, "v1");
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "rollback", 5031), MF_E_STATE);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, 999, "pause", 5031), MF_E_NOTFOUND);
    cJSON_Delete(again);
}

/* Pausing stops advancing, not watching: v2 breaching a red line while the rollout is paused
 * still halts it (through the worker's job, queued for paused rollouts too) and rolls the
 * fleet back. */
static void test_rollout_engine__paused_rollout_still_halts_on_a_breach(void **state)
{
    static const struct behaviour slow = {2000, 40u << 20, 0, 5, 0}; /* 2x P99 */
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_directives d;
    struct mf_store_job job;
    int64_t id = create(f, plan3);
    int made = 0;

    for (int i = 0; i < DEVICES; i++)
        run(f, i, "v1", &baseline, 1000);
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "pause", 1001), MF_OK);
    for (int i = 0; i < DEVICES; i++)
        run(f, i, "v2", &slow, 1002);
    mf_rollout__jobs_tick(f->s, &f->ctx);
    assert_int_equal(
        f->s->ops->jobs->job_claim_kind(&job, f->s, &f->ctx, MF_ROLLOUT_JOB_KIND, "n1", 1003, 60),
        MF_OK);
    assert_int_equal(mf_rollout__jobs_run(&made, f->s, &f->ctx, job.arg), MF_OK);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_string_equal(r.state, "halted");
    assert_int_equal(r.wave, 0);
    assert_non_null(strstr(r.breach, "p99_latency_us"));
    for (int i = 0; i < DEVICES; i++) {
        assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[i], "m"),
                         MF_OK);
        assert_string_equal(d.fleet_rollback, "v1");
    }
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "resume", 1004), MF_E_STATE);
}

static void test_rollout_engine__create_refuses_bad_requests(void **state)
{
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_version v = {.size = 1, .created_at = 1};
    cJSON *good = cJSON_Parse("{\"waves\": [{\"percent\": 10}], \"allow_no_red_lines\": true}");
    cJSON *bad = cJSON_Parse("{\"waves\": [{\"percent\": 10}], \"soak_s\": -1}");
    cJSON *typo = cJSON_Parse("{\"soak\": 30, \"waves\": [{\"percent\": 10}], \"red_lines\": []}");
    cJSON *no_lines =
        cJSON_Parse("{\"soak_s\": 30, \"waves\": [{\"percent\": 10}], \"red_lines\": []}");
    cJSON *unknown = cJSON_Parse("{\"waves\": [{\"percent\": 10}], \"red_lines\":"
                                 " [{\"metric\": \"p99_after_10_min\", \"max\": 5}]}");
    int n = 0;

    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", bad, 1), MF_E_INVALID);
    /* A metric the scorecard does not have: refused, naming the line. */
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", unknown, 1),
                     MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "red_lines[0].metric is not a known metric"));
    cJSON_Delete(unknown);
    /* The typo: refused, naming the key, instead of a default 3,600 s soak and no
     * red lines; and no red lines at all only when the plan says so. */
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", typo, 1), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "unknown key 'soak'"));
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "", no_lines, 1),
                     MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "allow_no_red_lines"));
    assert_int_equal(f->s->ops->rollout->rollouts_list(f->s, &f->ctx, "m", count_rollouts, &n),
                     MF_OK);
    assert_int_equal(n, 0); /* nothing was created */
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v9", "", good, 1), MF_E_NOTFOUND);
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v1", "", good, 1), MF_E_STATE);
    /* Staged but not released. */
    (void)snprintf(v.model, sizeof(v.model), "m");
    (void)snprintf(v.version, sizeof(v.version), "v3");
    memset(v.sha256, 'c', 64);
    assert_int_equal(f->s->ops->registry->version_insert(f->s, &f->ctx, &v), MF_OK);
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v3", "", good, 1), MF_E_NOTFOUND);
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "v3", good, 1),
                     MF_E_NOTFOUND);
    assert_int_equal(mf_rollout__create(&r, f->s, &f->ctx, "m", "v2", "v2", good, 1), MF_E_INVALID);
    cJSON_Delete(good);
    cJSON_Delete(bad);
    cJSON_Delete(typo);
    cJSON_Delete(no_lines);
}

static int count_rows(void *payload, const struct mf_store_telemetry *t)
{
    (void)t;
    (*(int *)payload)++;
    return MF_OK;
}

static void test_rollout_engine__ingest_is_all_or_nothing_and_replaces(void **state)
{
    static const char *const bad[] = {
        /* the second model's bucket index is out of range: the first is not stored either */
        "{\"models\":[{\"name\":\"m\",\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":"
        "[{\"version\":\"v1\",\"inferences\":1}]}},{\"name\":\"n\",\"telemetry\":{\"buckets\":"
        "\"log2x8\",\"versions\":[{\"version\":\"v1\",\"latency_us\":[[999,1]]}]}}]}",
        /* five versions across models: more than a device keeps */
        "{\"models\":[{\"name\":\"m\",\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":"
        "[{\"version\":\"a\"},{\"version\":\"b\"},{\"version\":\"c\"}]}},{\"name\":\"n\","
        "\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":[{\"version\":\"d\"},"
        "{\"version\":\"e\"}]}}]}",
        /* a count that is not an integer */
        "{\"models\":[{\"name\":\"m\",\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":"
        "[{\"version\":\"v1\",\"peak_memory\":-4}]}}]}",
    };
    struct eng *f = *state;
    struct mf_rollout_fleet *fleet = calloc(1, sizeof(*fleet));
    int rows = 0, stored = 0;

    assert_non_null(fleet);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *body = cJSON_Parse(bad[i]);

        assert_non_null(body);
        assert_int_equal(mf_rollout__ingest(&stored, f->s, &f->ctx, "dev-00", body, 5),
                         MF_E_INVALID);
        assert_int_equal(stored, 0);
        cJSON_Delete(body);
    }
    assert_int_equal(f->s->ops->rollout->telemetry_list(f->s, &f->ctx, "m", count_rows, &rows),
                     MF_OK);
    assert_int_equal(f->s->ops->rollout->telemetry_list(f->s, &f->ctx, "n", count_rows, &rows),
                     MF_OK);
    assert_int_equal(rows, 0);

    /* The same cumulative report three times counts once. */
    run(f, 0, "v1", &baseline, 10);
    assert_int_equal(checkin(f, 0, 11), MF_OK);
    assert_int_equal(checkin(f, 0, 12), MF_OK);
    assert_int_equal(mf_rollout__fleet_collect(fleet, f->s, &f->ctx, "m", NULL, NULL), MF_OK);
    assert_int_equal(fleet->n, 1);
    assert_int_equal(fleet->v[0].agg.devices, 1);
    assert_int_equal(mf_telemetry_get(f->dev[0], "m", "v1")->inferences, 50);
    {
        uint64_t sum = 0;

        for (int b = 0; b < MF_TELEMETRY_LAT_BUCKETS; b++)
            sum += fleet->v[0].agg.latency[b];
        assert_int_equal(sum, 50);
    }
    free(fleet);
}

/* The worker tick queues one job per running rollout (idempotent), the job evaluates; group
 * waves read the memberships before walking the store. */
static void test_rollout_engine__tick_job_and_group_waves(void **state)
{
    struct eng *f = *state;
    struct mf_rollout_status st;
    struct mf_store_rollout r;
    struct mf_store_job job, other;
    const char *lab[] = {"lab"};
    int64_t id = create(f, "{\"soak_s\": 0, \"waves\": [{\"group\": \"lab\"}, {\"percent\": 100}],"
                           " \"allow_no_red_lines\": true}");
    int wave = -1, made = 0;

    assert_int_equal(f->s->ops->director->device_groups_set(f->s, &f->ctx, f->ids[3], lab, 1),
                     MF_OK);
    assert_int_equal(f->s->ops->director->device_groups_set(f->s, &f->ctx, f->ids[7], lab, 1),
                     MF_OK);
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(st.wave_devices[0], 2);
    assert_int_equal(st.wave_devices[1], DEVICES - 2);
    assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &st.plan, f->ids[7]), MF_OK);
    assert_int_equal(wave, 0);
    assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &st.plan, f->ids[8]), MF_OK);
    assert_int_equal(wave, 1);

    mf_rollout__jobs_tick(f->s, &f->ctx);
    mf_rollout__jobs_tick(f->s, &f->ctx); /* still queued: not twice */
    assert_int_equal(
        f->s->ops->jobs->job_claim_kind(&job, f->s, &f->ctx, MF_ROLLOUT_JOB_KIND, "n1", 2000, 60),
        MF_OK);
    assert_int_equal(
        f->s->ops->jobs->job_claim_kind(&other, f->s, &f->ctx, MF_ROLLOUT_JOB_KIND, "n2", 2000, 60),
        MF_E_NOTFOUND);
    run(f, 3, "v2", &baseline, 1500);
    assert_int_equal(mf_rollout__jobs_run(&made, f->s, &f->ctx, job.arg), MF_OK);
    assert_int_equal(made, 1);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(r.wave, 0); /* one lab device reports: its soak starts ... */
    assert_true(r.soak_started_at > 0);
    assert_int_equal(mf_rollout__jobs_run(&made, f->s, &f->ctx, job.arg), MF_OK);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(r.wave, 1); /* ... and the next evaluation, with a soak of 0 s, advances */
    assert_int_equal(mf_rollout__jobs_run(&made, f->s, &f->ctx, "7x"), MF_E_INVALID);
}

/* The server's worker runs "rollout" jobs as one of its kinds, and leaves a kind it does
 * not run queued for a node that does (claimed per kind), instead of failing it. */
static void test_rollout_engine__worker_runs_rollouts_and_leaves_unknown_kinds(void **state)
{
    struct eng *f = *state;
    struct mf_delta_options o;
    struct mf_delta_worker *w = NULL;
    struct mf_store_rollout r = {0};
    int64_t id = create(f, "{\"soak_s\": 0, \"waves\": [{\"percent\": 100}, {\"percent\": 100}],"
                           " \"allow_no_red_lines\": true}");
    int64_t queued = 0, running = 0;

    for (int i = 0; i < 3; i++)
        run(f, i, "v2", &baseline, 1500);
    assert_int_equal(f->s->ops->jobs->job_enqueue(f->s, &f->ctx, "from-a-newer-node", "x", 1),
                     MF_OK);
    mf_delta__options_init(&o);
    o.interval_ms = 20;
    o.kinds[o.n_kinds++] = (struct mf_job_kind){MF_ROLLOUT_JOB_KIND, mf_rollout__jobs_run,
                                                mf_rollout__jobs_tick, f->s};
    assert_int_equal(mf_delta__worker_start(&w, &f->ctx, f->s, f->dir, NULL, &o), MF_OK);
    for (int k = 0; k < 250 && r.wave == 0; k++) { /* bounded: 5 s */
        struct timespec ts = {0, 20 * 1000000L};

        (void)nanosleep(&ts, NULL);
        assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    }
    mf_delta__worker_stop(w);
    assert_int_equal(r.wave, 1);
    assert_int_equal(f->s->ops->jobs->job_counts(&queued, &running, f->s, &f->ctx, 10), MF_OK);
    assert_int_equal(queued, 1); /* the unknown kind, untouched */
}

/* A rollout created before any device reports never advances on time alone: the soak clock
 * starts only once min_devices of the wave report v2, and a line counts clean only on
 * enough evidence. */
static void test_rollout_engine__no_advance_before_evidence(void **state)
{
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_rollout_status st;
    int64_t id = create(f, plan3);
    int first = -1;

    /* Hours of silence: nothing soaks, nothing advances, every line waits. */
    for (int64_t now = 1011; now < 1000 + 4 * 3600; now += 600) {
        step(f, id, now, &r);
        assert_string_equal(r.state, "running");
        assert_int_equal(r.wave, 0);
        assert_int_equal(r.soak_started_at, 0);
    }
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(st.waiting, st.plan.n_lines);
    assert_int_equal(st.breached, -1);
    /* The control group and one device of wave 0 report: below min_devices (2), no soak. */
    assert_true(st.wave_devices[0] >= 2); /* the plan's 10 % of 40 devices */
    for (int i = 0; i < DEVICES; i++) {
        int wave = -1;

        assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &st.plan, f->ids[i]), MF_OK);
        if (wave != 0)
            run(f, i, "v1", &baseline, 20000);
        else if (first < 0)
            run(f, first = i, "v2", &baseline, 20000);
    }
    step(f, id, 20001, &r);
    assert_int_equal(r.soak_started_at, 0);
    /* All of wave 0 reports: the soak starts now, not at the rollout's creation. */
    run_fleet(f, &r, &baseline, 20002);
    step(f, id, 20003, &r);
    assert_int_equal(r.soak_started_at, 20003);
    assert_int_equal(r.wave, 0);
    step(f, id, 20007, &r);
    assert_int_equal(r.wave, 0); /* 4 s of the 10 s soak */
    run_fleet(f, &r, &baseline, 20010);
    step(f, id, 20014, &r);
    assert_int_equal(r.wave, 1);
}

/* A line without data blocks advancing however long the wave soaks, and shows as waiting
 * with what it lacks; once the devices report its figure it counts. */
static void test_rollout_engine__line_without_data_blocks(void **state)
{
    static const struct behaviour with_teacher = {1000, 40u << 20, 0, 5, 60};
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_rollout_status st;
    int64_t id = create(f, "{\"soak_s\": 10, \"min_devices\": 2,"
                           " \"waves\": [{\"percent\": 10}, {\"percent\": 100}],"
                           " \"red_lines\": [{\"metric\": \"p99_latency_us\", \"relative\": 1.5},"
                           " {\"metric\": \"teacher_agreement\", \"min\": 0.9}]}");
    int64_t now = 1000;

    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    for (int k = 0; k < 20; k++, now += 11) { /* 220 s: twenty soaks' worth */
        run_fleet(f, &r, &baseline, now);
        step(f, id, now + 1, &r);
        assert_string_equal(r.state, "running");
        assert_int_equal(r.wave, 0);
    }
    assert_true(r.soak_started_at > 0); /* the wave soaked: only the line holds it */
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(st.waiting, 1);
    assert_true(st.verdicts[0].evaluated && !st.verdicts[0].breached);
    assert_false(st.verdicts[1].evaluated);
    assert_non_null(strstr(st.verdicts[1].waiting, "canary: 0 of 2 devices"));
    /* The app reports teacher comparisons: 60 per device per period, 2+ devices. */
    for (int k = 0; k < 3 && r.wave == 0; k++, now += 11) {
        run_fleet(f, &r, &with_teacher, now);
        step(f, id, now + 1, &r);
    }
    assert_int_equal(r.wave, 1);
}

/* Relative lines compare with the concurrent control group, not history: with no v1
 * history on the canary's devices and a stale one elsewhere the line waits; once devices
 * outside the wave report v1 during the rollout, a 2x-P99 canary halts against them, with
 * both groups' numbers in the breach record. */
static void test_rollout_engine__p99_halts_against_concurrent_control(void **state)
{
    static const struct behaviour slow = {2000, 40u << 20, 0, 5, 0};
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_rollout_status st;
    struct mf_rollout_plan plan;
    int64_t id;

    for (int i = 0; i < DEVICES; i++) /* history from before the rollout: not a control */
        run(f, i, "v1", &baseline, 500);
    id = create(f, plan3);
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(mf_rollout__plan_load(&plan, &f->ctx, &r), MF_OK);
    for (int i = 0; i < DEVICES; i++) {
        int wave = -1;

        assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]), MF_OK);
        if (wave == 0) {
            /* The canary's devices: no v1 history at all (fresh telemetry), v2 at 2x. */
            mf_telemetry_free(f->dev[i]);
            assert_int_equal(mf_telemetry_new(&f->dev[i], NULL, NULL, "t"), MF_OK);
            run(f, i, "v2", &slow, 1005);
        }
    }
    step(f, id, 1011, &r);
    assert_string_equal(r.state, "running"); /* no concurrent control yet: waiting */
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_false(st.verdicts[0].evaluated);
    assert_non_null(strstr(st.verdicts[0].waiting, "control: 0 of 2 devices"));
    run_fleet(f, &r, &slow, 1020); /* the rest of the fleet reports v1 during the rollout */
    step(f, id, 1022, &r);
    assert_string_equal(r.state, "halted");
    assert_int_equal(r.wave, 0);
    assert_non_null(strstr(r.breach, "p99_latency_us"));
    assert_non_null(strstr(r.breach, "x control "));
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_true(st.verdicts[0].breached);
    assert_true(st.verdicts[0].control_devices >= DEVICES / 2);
    assert_true(st.verdicts[0].value >= 2 * st.verdicts[0].control * 0.9);
    expect_promoted(f, "v1");
}

/* `previous` defaults to the release promoted last that no rollout halted: a version that
 * halted and was later promoted by hand is skipped, unless named. */
static void test_rollout_engine__previous_is_never_a_halted_version_by_default(void **state)
{
    static const struct behaviour slow = {2000, 40u << 20, 0, 5, 0};
    struct eng *f = *state;
    struct mf_store_rollout r, r3;
    cJSON *body = cJSON_Parse(plan3);
    int64_t id = create(f, plan3);

    drive(f, id, &slow, &r);
    assert_string_equal(r.state, "halted");
    assert_int_equal(f->s->ops->director->pin_clear(f->s, &f->ctx, MF_STORE_PIN_FLEET, "*", "m"),
                     MF_OK);
    /* Ops promote the halted v2 by hand anyway: the newest promotion. */
    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v2"), MF_OK);
    expect_promoted(f, "v2");
    release(f, "v3", 3);
    assert_non_null(body);
    assert_int_equal(mf_rollout__create(&r3, f->s, &f->ctx, "m", "v3", "", body, 2000), MF_OK);
    assert_string_equal(r3.prev_version, "v1"); /* not the halted v2 */
    assert_int_equal(mf_rollout__act(&r3, f->s, &f->ctx, r3.id, "abort", 2001), MF_OK);
    /* Named explicitly, a halted version is taken as named. */
    assert_int_equal(mf_rollout__create(&r3, f->s, &f->ctx, "m", "v3", "v2", body, 2002), MF_OK);
    assert_string_equal(r3.prev_version, "v2");
    cJSON_Delete(body);
}

/* Promoting by hand: refused while a rollout decides, then the channel default; after an
 * abort the frozen waves yield to what ops promoted. */
static void test_rollout_engine__promote_by_hand(void **state)
{
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_version v;
    int64_t id = create(f, plan3);
    int on_v1 = 0;

    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v2"), MF_E_STATE);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "abort it first"));
    assert_int_equal(mf_rollout__act(&r, f->s, &f->ctx, id, "abort", 1001), MF_OK);
    for (int i = 0; i < DEVICES; i++) { /* frozen: outside wave 0 the devices keep v1 */
        assert_int_equal(mf_director__wave(&v, f->s, &f->ctx, f->ids[i], "m"), MF_OK);
        on_v1 += strcmp(v.version, "v1") == 0;
    }
    assert_true(on_v1 > DEVICES / 2);
    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v9"), MF_E_NOTFOUND);
    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v2"), MF_OK);
    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v2"), MF_OK); /* idempotent */
    expect_promoted(f, "v2");
    for (int i = 0; i < DEVICES; i++) /* the channel default (v2) decides for everyone */
        assert_int_equal(mf_director__wave(&v, f->s, &f->ctx, f->ids[i], "m"), MF_E_NOTFOUND);
    /* Promoting v1 back is a newer promotion: the default follows the last one. */
    assert_int_equal(mf_rollout__promote(f->s, &f->ctx, "m", "v1"), MF_OK);
    expect_promoted(f, "v1");
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Percentiles of the stored, server-merged reports against nearest-rank on raw samples. */
static void test_rollout_engine__fleet_percentiles_exact_after_server_merge(void **state)
{
    static uint64_t raw[DEVICES * 200];
    static const double qs[] = {0.5, 0.95, 0.99};
    struct eng *f = *state;
    struct mf_rollout_fleet *fleet = calloc(1, sizeof(*fleet));
    size_t n = 0;

    assert_non_null(fleet);
    for (int i = 0; i < DEVICES; i++) {
        uint64_t base = i % 4 == 0 ? 30000 : 2000; /* a slow quarter */

        for (int k = 0; k < 200; k++) {
            uint64_t us = base + rng(&f->seed) % (base * 3);

            raw[n++] = us;
            assert_int_equal(mf_telemetry_record_latency(f->dev[i], "m", "v2", us), MF_OK);
        }
        assert_int_equal(checkin(f, i, 7), MF_OK);
    }
    assert_int_equal(mf_rollout__fleet_collect(fleet, f->s, &f->ctx, "m", NULL, NULL), MF_OK);
    assert_int_equal(fleet->n, 1);
    assert_int_equal(fleet->v[0].agg.devices, DEVICES);
    qsort(raw, n, sizeof(raw[0]), cmp_u64);
    for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
        size_t rank = (size_t)(qs[k] * (double)n + 0.999999);
        uint64_t got = mf_telemetry_hist_quantile(fleet->v[0].agg.latency, qs[k]);

        assert_int_equal(got, mf_telemetry_bucket_high(mf_telemetry_bucket(raw[rank - 1])));
    }
    free(fleet);
}

static uint64_t eng_clock_ms;

static uint64_t eng_clock(void *payload)
{
    (void)payload;
    return eng_clock_ms;
}

/* Device i runs `version` for one simulated minute: 30 inferences, the first of a new
 * activation cold; from minute 5 after its activation a throttling device is 4x slower. */
static void run_minute(struct eng *f, int i, const char *version, int since_activation,
                       int throttles, int64_t now)
{
    mf_telemetry *t = f->dev[i];
    uint64_t base = throttles && since_activation >= 5 ? 4000 : 1000;

    if (since_activation == 0)
        assert_int_equal(mf_telemetry_record_cold_latency(t, "m", version, 30000), MF_OK);
    for (int k = 0; k < 30; k++) {
        eng_clock_ms += 2000;
        assert_int_equal(mf_telemetry_record_latency(t, "m", version, base + rng(&f->seed) % base),
                         MF_OK);
    }
    assert_int_equal(mf_telemetry_record_health(t, "m", version, 1), MF_OK);
    assert_int_equal(checkin(f, i, now), MF_OK);
    eng_clock_ms -= 60000; /* every device runs the same minute */
}

/* Sustained performance on a simulated clock: v2 is fine for its first minutes and
 * throttles from minute 5 after activation. The red line "P99 from minute 5 <= 2500 us"
 * waits while the devices have run 2 minutes (no evidence: it blocks advancing and never
 * counts clean), and halts the rollout once the throttling shows, although the whole-run
 * P99 line is clean and every goal is met (goals never outrank a red line). */
static void test_rollout_engine__sustained_p99_halts_a_throttling_version(void **state)
{
    static struct mf_rollout_status st;
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_store_directives d;
    mf_platform_ops ops;
    int64_t now = 1000, id;
    int halted_at = -1;

    memset(&ops, 0, sizeof(ops));
    ops.version = MF_PLATFORM_OPS_VERSION;
    ops.monotonic_ms = eng_clock;
    eng_clock_ms = 0;
    for (int i = 0; i < DEVICES; i++) {
        mf_telemetry_free(f->dev[i]);
        assert_int_equal(mf_telemetry_new(&f->dev[i], NULL, &ops, "t"), MF_OK);
        run_minute(f, i, "v1", 0, 0, now);
    }
    eng_clock_ms += 60000;
    id = create(f, "{\"soak_s\": 10, \"min_devices\": 2,"
                   " \"waves\": [{\"percent\": 50}, {\"percent\": 100}],"
                   " \"red_lines\": [{\"metric\": \"sustained_p99_us\", \"after_min\": 5,"
                   " \"max\": 2500}, {\"metric\": \"p99_latency_us\", \"relative\": 10}],"
                   " \"goals\": [{\"metric\": \"cold_p99_us\", \"max\": 100000},"
                   " {\"metric\": \"sustained_rate\", \"after_min\": 0, \"min\": 0.1}]}");
    for (int m = 0; m < 8 && halted_at < 0; m++) {
        struct mf_rollout_plan plan;

        assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
        assert_int_equal(mf_rollout__plan_load(&plan, &f->ctx, &r), MF_OK);
        for (int i = 0; i < DEVICES; i++) {
            int wave = -1;

            assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]),
                             MF_OK);
            if (wave == 0)
                run_minute(f, i, "v2", m, 1, now);
            else
                run_minute(f, i, "v1", m + 1, 0, now);
        }
        eng_clock_ms += 60000;
        now += 60;
        step(f, id, now, &r);
        if (m == 1) { /* two minutes in: fine, and the line waits for minute 5 */
            assert_string_equal(r.state, "running");
            assert_int_equal(r.wave, 0);
            assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
            assert_int_equal(st.breached, -1);
            assert_false(st.verdicts[0].evaluated);
            assert_non_null(strstr(st.verdicts[0].waiting, "canary: 0 of 2 devices"));
            assert_true(st.verdicts[1].evaluated); /* the whole-run P99 is clean */
            assert_false(st.verdicts[1].breached);
            assert_int_equal(st.goals_met, 2);
        }
        if (strcmp(r.state, "halted") == 0)
            halted_at = m;
    }
    assert_int_equal(halted_at, 5); /* the first minute with data from minute 5 on */
    assert_int_equal(r.wave, 0);
    assert_non_null(strstr(r.breach, "sustained_p99_us@5 "));
    assert_non_null(strstr(r.breach, "> bound 2500"));
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_int_equal(st.breached, 0);
    assert_false(st.verdicts[1].breached);
    assert_int_equal(st.goals_met, 2);
    assert_int_equal(events_of(f, id, "halted"), 1);
    assert_int_equal(f->s->ops->director->directives_get(&d, f->s, &f->ctx, f->ids[0], "m"), MF_OK);
    assert_string_equal(d.fleet_rollback, "v1");
}

/* Stores `n` labelled samples of device i's `version` of kind `kind`, the first `agree` of
 * them with the teacher's top class equal to the student's. */
static void labelled(struct eng *f, int i, const char *version, const char *kind, int n, int agree,
                     int64_t at)
{
    static int serial;

    for (int k = 0; k < n; k++) {
        struct mf_store_sample smp;
        int replayed = 0, accepted = 0, dups = 0;

        memset(&smp, 0, sizeof(smp));
        (void)snprintf(smp.id, sizeof(smp.id), "%032x", ++serial);
        (void)snprintf(smp.device_id, sizeof(smp.device_id), "%s", f->ids[i]);
        (void)snprintf(smp.model, sizeof(smp.model), "m");
        (void)snprintf(smp.model_version, sizeof(smp.model_version), "%s", version);
        (void)snprintf(smp.kind, sizeof(smp.kind), "%s", kind);
        (void)snprintf(smp.method, sizeof(smp.method), "max_softmax");
        (void)snprintf(smp.output_kind, sizeof(smp.output_kind), "probs");
        memset(smp.input_sha256, 'a', MF_SHA256_HEX_LEN);
        smp.input_size = 4;
        smp.score = 0.5;
        smp.received_at = at;
        smp.output = "[0.1,0.9]";
        assert_int_equal(f->s->ops->offload->sample_batch_put(&replayed, &accepted, &dups, f->s,
                                                              &f->ctx, f->ids[i], NULL, &smp, 1),
                         MF_OK);
        assert_int_equal(f->s->ops->offload->sample_label(f->s, &f->ctx, smp.id, "t1",
                                                          k < agree ? "[0.2,0.8]" : "[0.7,0.3]",
                                                          0.8, at),
                         MF_OK);
    }
}

/* The accuracy red line on the server's labelled samples: the canary's hard samples agree
 * half the time and its audit slice 60 %, so the stratified estimate (5 % hard) is about
 * 0.6 with an interval wholly below 0.9: halted. The control group's samples (v1, devices
 * outside the wave) are its own: all agree, and they do not lift the canary's figure. */
static void test_rollout_engine__accuracy_line_on_labelled_samples(void **state)
{
    static struct mf_rollout_status st;
    struct eng *f = *state;
    struct mf_store_rollout r;
    struct mf_rollout_plan plan;
    int64_t now = 1000, id;

    for (int i = 0; i < DEVICES; i++)
        run(f, i, "v1", &baseline, now);
    id = create(f, "{\"soak_s\": 10, \"waves\": [{\"percent\": 50}, {\"percent\": 100}],"
                   " \"red_lines\": [{\"metric\": \"accuracy\", \"min\": 0.9}]}");
    assert_int_equal(f->s->ops->rollout->rollout_get(&r, f->s, &f->ctx, id), MF_OK);
    run_fleet(f, &r, &baseline, now + 5);
    assert_int_equal(mf_rollout__plan_load(&plan, &f->ctx, &r), MF_OK);
    for (int i = 0; i < DEVICES; i++) {
        int wave = -1;

        assert_int_equal(mf_rollout__device_wave(&wave, f->s, &f->ctx, &plan, f->ids[i]), MF_OK);
        if (wave == 0) {
            labelled(f, i, "v2", "hard", 4, 2, now + 5);
            labelled(f, i, "v2", "audit", 10, 6, now + 5);
        } else { /* both strata: a share without a labelled sample gives no estimate */
            labelled(f, i, "v1", "hard", 2, 2, now + 5);
            labelled(f, i, "v1", "audit", 10, 10, now + 5);
        }
    }
    assert_int_equal(mf_rollout__status(&st, f->s, &f->ctx, id), MF_OK);
    assert_true(st.cur.have[MF_METRIC_ACCURACY]);
    assert_float_equal(st.cur.v[MF_METRIC_ACCURACY], 0.05 * 0.5 + 0.95 * 0.6, 1e-9);
    assert_true(st.cur.hi[MF_METRIC_ACCURACY] < 0.9);
    assert_true(st.control.have[MF_METRIC_ACCURACY]);
    assert_true(st.control.v[MF_METRIC_ACCURACY] > 0.99);
    step(f, id, now + 20, &r);
    assert_string_equal(r.state, "halted");
    assert_non_null(strstr(r.breach, "accuracy "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rollout_engine__good_version_advances_every_wave,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__each_red_line_halts_the_first_wave,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(
            test_rollout_engine__class_halt_leaves_other_classes_on_the_new_version, eng_setup,
            eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__pause_resume_abort_rollback, eng_setup,
                                        eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__paused_rollout_still_halts_on_a_breach,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__create_refuses_bad_requests, eng_setup,
                                        eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__ingest_is_all_or_nothing_and_replaces,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(
            test_rollout_engine__fleet_percentiles_exact_after_server_merge, eng_setup,
            eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__tick_job_and_group_waves, eng_setup,
                                        eng_teardown),
        cmocka_unit_test_setup_teardown(
            test_rollout_engine__worker_runs_rollouts_and_leaves_unknown_kinds, eng_setup,
            eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__no_advance_before_evidence, eng_setup,
                                        eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__line_without_data_blocks, eng_setup,
                                        eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__p99_halts_against_concurrent_control,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(
            test_rollout_engine__previous_is_never_a_halted_version_by_default, eng_setup,
            eng_teardown),
        cmocka_unit_test_setup_teardown(
            test_rollout_engine__sustained_p99_halts_a_throttling_version, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__accuracy_line_on_labelled_samples,
                                        eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_engine__promote_by_hand, eng_setup,
                                        eng_teardown),
    };

    return cmocka_run_group_tests_name("rollout_engine", tests, NULL, NULL);
}
