/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in's "telemetry" value for one model (docs/protocol.md, "Check-in field for
 * telemetry"), written into the caller's buffer: histograms as sparse [index, count] pairs
 * so a typical version costs a few hundred bytes, with a hard worst case
 * (MF_TELEMETRY_JSON_MAX) for every slot full.
 */
#include "mf_telemetry_int.h"

#include "mf_strbuf.h"

#include <stdio.h>
#include <string.h>

/* [[index, count], ...] of the non-empty buckets. */
static void put_pairs(struct mf_strbuf *w, const uint32_t *h, unsigned n)
{
    int first = 1;

    mf_strbuf__put(w, "[");
    for (unsigned i = 0; i < n; i++) {
        if (!h[i])
            continue;
        mf_strbuf__put(w, "%s[%u,%u]", first ? "" : ",", i, (unsigned)h[i]);
        first = 0;
    }
    mf_strbuf__put(w, "]");
}

static void put_sparse(struct mf_strbuf *w, const char *key, const uint32_t *h, unsigned n)
{
    mf_strbuf__put(w, ",\"%s\":", key);
    put_pairs(w, h, n);
}

static void put_count(struct mf_strbuf *w, const char *key, uint64_t n)
{
    mf_strbuf__put(w, ",\"%s\":%llu", key, (unsigned long long)n);
}

/* The scorecard's fields, each only when it has data, so a version that records none costs
 * nothing and an absent figure (no energy counter) is absent on the wire too. */
static void put_scorecard(struct mf_strbuf *w, const mf_telemetry_scorecard *sc)
{
    static const char *const counters[MF_TELEMETRY_COUNTERS] = {"fallbacks", "errors", "timeouts",
                                                                "mem_pressure", "hot"};
    int first = 1;

    if (sc->activations) {
        put_count(w, "activations", sc->activations);
        put_sparse(w, "cold_us", sc->cold_latency, MF_TELEMETRY_LAT_BUCKETS);
    }
    if (sc->steady_memory_samples) {
        put_count(w, "steady_memory_sum", sc->steady_memory_sum);
        put_count(w, "steady_memory_samples", sc->steady_memory_samples);
    }
    if (sc->energy_inferences) {
        put_count(w, "energy_uj", sc->energy_uj);
        put_count(w, "energy_inferences", sc->energy_inferences);
    }
    for (int c = 0; c < MF_TELEMETRY_COUNTERS; c++) {
        if (sc->counters[c])
            put_count(w, counters[c], sc->counters[c]);
    }
    for (int m = 0; m < MF_TELEMETRY_SUSTAINED_WINDOWS; m++) {
        if (!sc->sustained_minutes[m])
            continue;
        mf_strbuf__put(w, "%s[%d,%llu,", first ? ",\"sustained\":[" : ",", m,
                       (unsigned long long)sc->sustained_minutes[m]);
        put_pairs(w, sc->sustained[m], MF_TELEMETRY_COARSE_BUCKETS);
        mf_strbuf__put(w, "]");
        first = 0;
    }
    if (!first)
        mf_strbuf__put(w, "]");
}

/* A rollback reason is free text from the app: keep it inside the JSON string. */
static void put_reason(struct mf_strbuf *w, const char *s)
{
    mf_strbuf__put(w, ",\"last_rollback\":\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            mf_strbuf__put(w, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            mf_strbuf__put(w, "?"); /* ASCII only: no partial UTF-8 sequence after truncation */
        else
            mf_strbuf__put(w, "%c", c);
    }
    mf_strbuf__put(w, "\"");
}

static void put_version(struct mf_strbuf *w, const struct telemetry_slot *slot)
{
    const mf_telemetry_version *v = &slot->v;
    const mf_offload_telemetry *o = &v->offload;

    mf_strbuf__put(
        w,
        "{\"version\":\"%s\",\"inferences\":%llu,\"peak_memory\":%llu,"
        "\"health_ok\":%llu,\"health_failed\":%llu,\"install_ok\":%llu,\"install_failed\":%llu,"
        "\"rollbacks\":%llu,\"teacher_compared\":%llu,\"teacher_agreed\":%llu,"
        "\"offload_asked\":%llu,\"offload_uncertain\":%llu",
        v->version, (unsigned long long)v->inferences, (unsigned long long)v->peak_memory,
        (unsigned long long)v->health_ok, (unsigned long long)v->health_failed,
        (unsigned long long)v->install_ok, (unsigned long long)v->install_failed,
        (unsigned long long)v->rollbacks, (unsigned long long)v->teacher_compared,
        (unsigned long long)v->teacher_agreed, (unsigned long long)o->asked,
        (unsigned long long)o->uncertain);
    put_reason(w, v->last_rollback);
    put_sparse(w, "latency_us", v->latency, MF_TELEMETRY_LAT_BUCKETS);
    put_sparse(w, "confidence", o->hist, MF_OFFLOAD_HIST_BINS);
    put_scorecard(w, &slot->sc);
    mf_strbuf__put(w, "}");
}

/* The check-in member a model's versions ride in, without the versions. */
#define MEMBER_HEAD ",\"telemetry\":{\"buckets\":\"log2x8\",\"versions\":["
#define MEMBER_TAIL "]}"

static size_t version_len(const struct telemetry_slot *slot)
{
    struct mf_strbuf w;

    mf_strbuf__init_count(&w);
    put_version(&w, slot);
    return w.len;
}

/* The slot of the pass (changed ones, then unchanged ones) not yet looked at and sent least
 * recently, -1 when none is left. */
static int next_candidate(const mf_telemetry *t, const unsigned char *seen, int dirty)
{
    int best = -1;

    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        if (!t->slot[i].v.model[0] || seen[i] || !t->slot[i].dirty != !dirty)
            continue;
        if (best < 0 || t->sent_seq[i] < t->sent_seq[best])
            best = i;
    }
    return best;
}

static int model_planned(const mf_telemetry *t, const char *model)
{
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        if (t->planned[i] && strcmp(t->slot[i].v.model, model) == 0)
            return 1;
    }
    return 0;
}

size_t mf_telemetry_checkin_plan(mf_telemetry *t, size_t budget)
{
    unsigned char seen[MF_TELEMETRY_MAX_VERSIONS] = {0};
    size_t used = 0;

    _Static_assert(MF_TELEMETRY_CHECKIN_BUDGET >= MF_TELEMETRY_VERSION_JSON_MAX + 64,
                   "the check-in budget carries the worst-case version");
    memset(t->planned, 0, sizeof(t->planned));
    t->plan_active = 1;
    for (int pass = 0; pass < 2; pass++) {
        int i;

        while ((i = next_candidate(t, seen, pass == 0)) >= 0) {
            size_t need = version_len(&t->slot[i]) + (model_planned(t, t->slot[i].v.model)
                                                          ? 1 /* comma */
                                                          : sizeof(MEMBER_HEAD MEMBER_TAIL) - 1);

            seen[i] = 1;
            if (used + need > budget)
                continue; /* a smaller one may still fit; this one goes first next time */
            used += need;
            t->planned[i] = 1;
            t->planned_use[i] = t->last_use[i];
        }
    }
    return used;
}

int mf_telemetry_checkin_json(size_t *len_out, char *buf, size_t cap, const mf_telemetry *t,
                              const char *model)
{
    struct mf_strbuf w;
    int n = 0;

    *len_out = 0;
    mf_strbuf__init(&w, buf, cap);
    mf_strbuf__put(&w, "%s", MEMBER_HEAD + sizeof(",\"telemetry\":") - 1);
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        const mf_telemetry_version *v = &t->slot[i].v;

        if (!v->model[0] || strcmp(v->model, model) != 0 || (t->plan_active && !t->planned[i]))
            continue;
        if (n++)
            mf_strbuf__put(&w, ",");
        put_version(&w, &t->slot[i]);
    }
    mf_strbuf__put(&w, MEMBER_TAIL);
    if (n == 0)
        return MF_E_NOTFOUND;
    if (w.overflow)
        return MF_E_LIMIT;
    *len_out = w.len;
    return MF_OK;
}
