/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The telemetry handle and its record path (mf/telemetry.h). Recording finds or takes the
 * version's slot and bumps counters: no allocation, no I/O, a few dozen instructions (plus,
 * with an energy counter, one read of it every MF_TELEMETRY_ENERGY_EVERY latencies).
 */
#include "mf_telemetry_int.h"

#include <stdio.h>
#include <string.h>

size_t mf_telemetry_workspace_size(void)
{
    return sizeof(struct mf_telemetry);
}

static int set_name(struct mf_telemetry *t, const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > MF_TELEMETRY_NAME_MAX)
        return MF_E_INVALID;
    memcpy(t->name, name, n + 1);
    (void)snprintf(t->tmp_name, sizeof(t->tmp_name), "%s.tmp", name);
    return MF_OK;
}

int mf_telemetry_init_static(mf_telemetry **out, void *ws, size_t ws_size,
                             const mf_platform_ops *platform, const char *name)
{
    struct mf_telemetry *t = ws;
    int err;

    *out = NULL;
    if (ws_size < sizeof(*t))
        return MF_E_LIMIT;
    memset(t, 0, sizeof(*t));
    err = set_name(t, name);
    if (err < 0)
        return err;
    if (platform) {
        t->platform = *platform;
        t->has_platform = 1;
    }
    t->energy_slot = -1;
    *out = t;
    return MF_OK;
}

int mf_telemetry_new(mf_telemetry **out, const mf_allocator *allocator,
                     const mf_platform_ops *platform, const char *name)
{
    mf_allocator a = allocator ? *allocator : *mf_allocator_default();
    void *ws = mf_alloc(&a, sizeof(struct mf_telemetry));
    int err;

    *out = NULL;
    if (!ws)
        return MF_E_NOMEM;
    err = mf_telemetry_init_static(out, ws, sizeof(struct mf_telemetry), platform, name);
    if (err < 0) {
        mf_free(&a, ws);
        return err;
    }
    (*out)->heap = 1;
    (*out)->alloc = a;
    return MF_OK;
}

void mf_telemetry_free(mf_telemetry *t)
{
    mf_allocator a;

    if (!t || !t->heap)
        return;
    a = t->alloc;
    mf_free(&a, t);
}

static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= MF_OFFLOAD_NAME_MAX;
}

/* The slot index of (model, version): the existing one, else a free one, else one whose
 * totals the server acknowledged (its last report stays on the server, nothing is lost);
 * -1 when every slot holds unacknowledged totals of other versions. */
static int slot_for(struct mf_telemetry *t, const char *model, const char *version)
{
    int spare = -1;
    int free_found;
    mf_telemetry_version *v;

    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        v = &t->slot[i].v;
        if (v->model[0] && strcmp(v->model, model) == 0 && strcmp(v->version, version) == 0)
            return i;
        if (spare < 0 && !v->model[0])
            spare = i;
    }
    free_found = spare >= 0;
    /* Of the acknowledged slots, the one recorded into least recently. */
    for (int i = 0; !free_found && i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        if (!t->slot[i].dirty && (spare < 0 || t->last_use[i] < t->last_use[spare]))
            spare = i;
    }
    if (spare < 0)
        return -1;
    t->last_use[spare] = 0;
    memset(&t->slot[spare], 0, sizeof(t->slot[spare]));
    memset(&t->run[spare], 0, sizeof(t->run[spare]));
    t->sent_seq[spare] = 0;
    t->planned[spare] = 0;
    if (t->energy_slot == spare)
        t->energy_slot = -1;
    v = &t->slot[spare].v;
    memcpy(v->model, model, strlen(model) + 1);
    memcpy(v->version, version, strlen(version) + 1);
    (void)snprintf(v->offload.model_version, sizeof(v->offload.model_version), "%s", version);
    return spare;
}

/* The index of the slot to record into, marked dirty; a negative mf_err when there is
 * none. */
static int take_index(struct mf_telemetry *t, const char *model, const char *version)
{
    int i;

    if (!name_ok(model) || !name_ok(version))
        return MF_E_INVALID;
    i = slot_for(t, model, version);
    if (i < 0)
        return MF_E_LIMIT;
    t->slot[i].dirty = 1;
    t->last_use[i] = ++t->tick;
    return i;
}

/* The slot to record into, marked dirty; NULL with *err set when there is none. */
static mf_telemetry_version *take(int *err, struct mf_telemetry *t, const char *model,
                                  const char *version)
{
    int i = take_index(t, model, version);

    *err = i < 0 ? i : MF_OK;
    return i < 0 ? NULL : &t->slot[i].v;
}

static uint64_t inc(uint64_t x)
{
    return x == UINT64_MAX ? x : x + 1;
}

static uint64_t add_sat(uint64_t x, uint64_t y)
{
    return x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

static void bump32(uint32_t *n)
{
    if (*n != UINT32_MAX)
        (*n)++;
}

/* Starts the sustained windows of slot i at `now` (an activation). */
static void activate(struct mf_telemetry *t, int i, uint64_t now)
{
    t->run[i].active = 1;
    t->run[i].started_ms = now;
    t->run[i].window = -1;
    t->run[i].minute = 0;
}

/* One steady-state latency into the sustained window of its minute since the activation;
 * a window's device-minutes count once per activation and minute reached. No clock, no
 * windows: they are absent rather than guessed. */
static void sustained_add(struct mf_telemetry *t, int i, uint64_t us)
{
    struct telemetry_run *r = &t->run[i];
    mf_telemetry_scorecard *sc = &t->slot[i].sc;
    uint64_t now, minute;
    int w;

    if (!t->has_platform || !t->platform.monotonic_ms)
        return;
    now = t->platform.monotonic_ms(t->platform.payload);
    if (!r->active)
        activate(t, i, now);
    minute = now > r->started_ms ? (now - r->started_ms) / 60000u : 0;
    w = minute < MF_TELEMETRY_SUSTAINED_WINDOWS - 1 ? (int)minute
                                                    : MF_TELEMETRY_SUSTAINED_WINDOWS - 1;
    if (w != r->window || minute != r->minute) {
        sc->sustained_minutes[w] = inc(sc->sustained_minutes[w]);
        r->window = w;
        r->minute = minute;
    }
    bump32(&sc->sustained[w][mf_telemetry_bucket(us) / 2u]);
}

/* Energy by the platform counter: the inferences of one version between two reads get the
 * energy spent in between. A switch of version restarts the interval (its energy would be
 * shared), and an interval with a failed, absent or wrapped reading adds nothing. */
static void energy_tick(struct mf_telemetry *t, int i)
{
    mf_telemetry_scorecard *sc = &t->slot[i].sc;
    uint64_t now = 0;
    int ok;

    if (!t->energy)
        return;
    if (t->energy_slot != i) {
        t->energy_slot = i;
        t->energy_pending = 0;
        t->energy_base_ok = t->energy(t->energy_payload, &t->energy_base) == MF_OK;
        return;
    }
    if (++t->energy_pending < MF_TELEMETRY_ENERGY_EVERY)
        return;
    ok = t->energy(t->energy_payload, &now) == MF_OK;
    if (ok && t->energy_base_ok && now >= t->energy_base) {
        sc->energy_uj = add_sat(sc->energy_uj, now - t->energy_base);
        sc->energy_inferences = add_sat(sc->energy_inferences, t->energy_pending);
    }
    t->energy_base = now;
    t->energy_base_ok = ok;
    t->energy_pending = 0;
}

/* One latency into the version's steady-state histogram (and its sustained window) or, for
 * the first inference after a load, the cold one (which starts the sustained windows). */
static int record_latency(mf_telemetry *t, const char *model, const char *version, uint64_t us,
                          int cold)
{
    int i = take_index(t, model, version);
    struct telemetry_slot *s;

    if (i < 0)
        return i;
    s = &t->slot[i];
    bump32(cold ? &s->sc.cold_latency[mf_telemetry_bucket(us)]
                : &s->v.latency[mf_telemetry_bucket(us)]);
    if (cold) {
        s->sc.activations = inc(s->sc.activations);
        t->run[i].active = 0; /* without a clock the next latency starts the windows */
        if (t->has_platform && t->platform.monotonic_ms)
            activate(t, i, t->platform.monotonic_ms(t->platform.payload));
    } else {
        s->v.inferences = inc(s->v.inferences);
        sustained_add(t, i, us);
    }
    energy_tick(t, i);
    return MF_OK;
}

int mf_telemetry_record_latency(mf_telemetry *t, const char *model, const char *version,
                                uint64_t microseconds)
{
    return record_latency(t, model, version, microseconds, 0);
}

int mf_telemetry_record_cold_latency(mf_telemetry *t, const char *model, const char *version,
                                     uint64_t microseconds)
{
    return record_latency(t, model, version, microseconds, 1);
}

int mf_telemetry_record_steady_memory(mf_telemetry *t, const char *model, const char *version,
                                      uint64_t bytes)
{
    int i = take_index(t, model, version);

    if (i < 0)
        return i;
    t->slot[i].sc.steady_memory_sum = add_sat(t->slot[i].sc.steady_memory_sum, bytes);
    t->slot[i].sc.steady_memory_samples = inc(t->slot[i].sc.steady_memory_samples);
    return MF_OK;
}

int mf_telemetry_record_energy(mf_telemetry *t, const char *model, const char *version,
                               uint64_t microjoules, uint64_t inferences)
{
    int i = take_index(t, model, version);

    if (i < 0)
        return i;
    if (inferences == 0)
        return MF_OK; /* energy over no inference is no figure */
    t->slot[i].sc.energy_uj = add_sat(t->slot[i].sc.energy_uj, microjoules);
    t->slot[i].sc.energy_inferences = add_sat(t->slot[i].sc.energy_inferences, inferences);
    return MF_OK;
}

int mf_telemetry_count(mf_telemetry *t, const char *model, const char *version,
                       mf_telemetry_counter counter)
{
    int i;

    if ((int)counter < 0 || counter >= MF_TELEMETRY_COUNTERS)
        return MF_E_INVALID;
    i = take_index(t, model, version);
    if (i < 0)
        return i;
    t->slot[i].sc.counters[counter] = inc(t->slot[i].sc.counters[counter]);
    return MF_OK;
}

void mf_telemetry_set_energy_counter(mf_telemetry *t, mf_telemetry_energy_fn fn, void *payload)
{
    t->energy = fn;
    t->energy_payload = payload;
    t->energy_slot = -1;
}

int mf_telemetry_record_memory(mf_telemetry *t, const char *model, const char *version,
                               uint64_t bytes)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    if (bytes > v->peak_memory)
        v->peak_memory = bytes;
    return MF_OK;
}

/* One outcome into a pair of counters: an install or a health verdict, each counted as
 * succeeded or failed for the version. */
static int record_outcome(mf_telemetry *t, const char *model, const char *version, int install,
                          int ok)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);
    uint64_t *n;

    if (!v)
        return err;
    if (install)
        n = ok ? &v->install_ok : &v->install_failed;
    else
        n = ok ? &v->health_ok : &v->health_failed;
    *n = inc(*n);
    return MF_OK;
}

int mf_telemetry_record_health(mf_telemetry *t, const char *model, const char *version, int ok)
{
    return record_outcome(t, model, version, 0, ok);
}

int mf_telemetry_record_install(mf_telemetry *t, const char *model, const char *version, int ok)
{
    return record_outcome(t, model, version, 1, ok);
}

int mf_telemetry_record_rollback(mf_telemetry *t, const char *model, const char *version,
                                 const char *reason)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    v->rollbacks = inc(v->rollbacks);
    (void)snprintf(v->last_rollback, sizeof(v->last_rollback), "%s", reason ? reason : "");
    return MF_OK;
}

int mf_telemetry_record_teacher(mf_telemetry *t, const char *model, const char *version, int agreed)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    v->teacher_compared = inc(v->teacher_compared);
    if (agreed)
        v->teacher_agreed = inc(v->teacher_agreed);
    return MF_OK;
}

int mf_telemetry_add_offload(mf_telemetry *t, const char *model, const char *version,
                             const mf_offload_telemetry *o)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    mf_offload_telemetry_merge(&v->offload, o); /* the offload module's own merge */
    return MF_OK;
}

static int find(const struct mf_telemetry *t, const char *model, const char *version)
{
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        const mf_telemetry_version *v = &t->slot[i].v;

        if (v->model[0] && strcmp(v->model, model) == 0 && strcmp(v->version, version) == 0)
            return i;
    }
    return -1;
}

const mf_telemetry_version *mf_telemetry_get(const mf_telemetry *t, const char *model,
                                             const char *version)
{
    int i = find(t, model, version);

    return i < 0 ? NULL : &t->slot[i].v;
}

int mf_telemetry_scorecard_get(mf_telemetry_scorecard *out, const mf_telemetry *t,
                               const char *model, const char *version)
{
    const size_t from = offsetof(mf_telemetry_scorecard, cold_latency);
    int i;

    if (out->struct_version != MF_TELEMETRY_SCORECARD_VERSION)
        return MF_E_INVALID;
    i = find(t, model, version);
    if (i < 0)
        return MF_E_NOTFOUND;
    /* Version 1 is every field; a later version copies only up to its own last field. */
    memcpy((char *)out + from, (const char *)&t->slot[i].sc + from, sizeof(*out) - from);
    return MF_OK;
}

void mf_telemetry_ack(mf_telemetry *t)
{
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        if (!t->plan_active) {
            t->slot[i].dirty = 0;
        } else if (t->planned[i]) {
            t->sent_seq[i] = ++t->seq;
            if (t->last_use[i] == t->planned_use[i])
                t->slot[i].dirty = 0; /* nothing recorded since the plan */
        }
        t->planned[i] = 0;
    }
    t->plan_active = 0;
}
