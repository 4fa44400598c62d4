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

static void put_sparse(struct mf_strbuf *w, const char *key, const uint32_t *h, unsigned n)
{
    int first = 1;

    mf_strbuf__put(w, ",\"%s\":[", key);
    for (unsigned i = 0; i < n; i++) {
        if (!h[i])
            continue;
        mf_strbuf__put(w, "%s[%u,%u]", first ? "" : ",", i, (unsigned)h[i]);
        first = 0;
    }
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

static void put_version(struct mf_strbuf *w, const mf_telemetry_version *v)
{
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
    mf_strbuf__put(w, "}");
}

int mf_telemetry_checkin_json(size_t *len_out, char *buf, size_t cap, const mf_telemetry *t,
                              const char *model)
{
    struct mf_strbuf w;
    int n = 0;

    *len_out = 0;
    mf_strbuf__init(&w, buf, cap);
    mf_strbuf__put(&w, "{\"buckets\":\"log2x8\",\"versions\":[");
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        const mf_telemetry_version *v = &t->slot[i].v;

        if (!v->model[0] || strcmp(v->model, model) != 0)
            continue;
        if (n++)
            mf_strbuf__put(&w, ",");
        put_version(&w, v);
    }
    mf_strbuf__put(&w, "]}");
    if (n == 0)
        return MF_E_NOTFOUND;
    if (w.overflow)
        return MF_E_LIMIT;
    *len_out = w.len;
    return MF_OK;
}
