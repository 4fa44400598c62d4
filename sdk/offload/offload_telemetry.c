/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Telemetry per model version: fixed-bin score histograms (offload_hist.c) and counters,
 * written as one bounded JSON object for the check-in (docs/protocol-offload.md).
 */
#include "mf_offload_int.h"

#include "mf_strbuf.h"

#include <stdio.h>
#include <string.h>

static uint64_t sat_add64(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void mf_offload_telemetry_merge(mf_offload_telemetry *dst, const mf_offload_telemetry *src)
{
    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++)
        dst->hist[i] =
            dst->hist[i] > UINT32_MAX - src->hist[i] ? UINT32_MAX : dst->hist[i] + src->hist[i];
    dst->asked = sat_add64(dst->asked, src->asked);
    dst->uncertain = sat_add64(dst->uncertain, src->uncertain);
    dst->teacher = sat_add64(dst->teacher, src->teacher);
    dst->fell_back = sat_add64(dst->fell_back, src->fell_back);
    dst->queued = sat_add64(dst->queued, src->queued);
    dst->audit = sat_add64(dst->audit, src->audit);
    dst->capped = sat_add64(dst->capped, src->capped);
    dst->bytes_up = sat_add64(dst->bytes_up, src->bytes_up);
    dst->bytes_down = sat_add64(dst->bytes_down, src->bytes_down);
}

mf_offload_telemetry *mf_offload__telemetry_slot(mf_offload *o)
{
    return &o->tele[0]; /* mf_offload_set_model_version() keeps the current version first */
}

const mf_offload_telemetry *mf_offload_telemetry_get(const mf_offload *o)
{
    return &o->tele[0];
}

void mf_offload_telemetry_reset(mf_offload *o)
{
    for (int i = 0; i < MF_OFFLOAD_TELEMETRY_SLOTS; i++) {
        char keep[MF_OFFLOAD_NAME_MAX + 1];

        memcpy(keep, o->tele[i].model_version, sizeof(keep));
        memset(&o->tele[i], 0, sizeof(o->tele[i]));
        /* Only the current version keeps its slot; older ones were reported for the last time. */
        if (i == 0)
            memcpy(o->tele[i].model_version, keep, sizeof(keep));
    }
}

static void put_slot(struct mf_strbuf *w, const mf_offload_telemetry *t)
{
    mf_strbuf__put(
        w,
        "{\"model_version\":\"%s\",\"asked\":%llu,\"uncertain\":%llu,\"teacher\":%llu,"
        "\"fell_back\":%llu,\"queued\":%llu,\"audit\":%llu,\"capped\":%llu,\"bytes_up\":%llu,"
        "\"bytes_down\":%llu,\"hist_bins\":%d,\"hist\":[",
        t->model_version, (unsigned long long)t->asked, (unsigned long long)t->uncertain,
        (unsigned long long)t->teacher, (unsigned long long)t->fell_back,
        (unsigned long long)t->queued, (unsigned long long)t->audit, (unsigned long long)t->capped,
        (unsigned long long)t->bytes_up, (unsigned long long)t->bytes_down, MF_OFFLOAD_HIST_BINS);
    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++)
        mf_strbuf__put(w, "%s%u", i ? "," : "", (unsigned)t->hist[i]);
    mf_strbuf__put(w, "]}");
}

int mf_offload_telemetry_json(size_t *len_out, char *buf, size_t cap, const mf_offload *o)
{
    const mf_offload_policy *p = mf_offload_policy_get(o);
    static const char *const methods[] = {"max_softmax", "margin", "entropy"};
    struct mf_strbuf w;
    int first = 1;

    *len_out = 0;
    mf_strbuf__init(&w, buf, cap);
    mf_strbuf__put(&w, "{\"policy_version\":%d,\"model\":\"%s\",\"method\":\"%s\",",
                   MF_OFFLOAD_POLICY_VERSION, o->model,
                   methods[p ? p->method : MF_OFFLOAD_MAX_SOFTMAX]);
    if (p)
        mf_strbuf__put(&w, "\"threshold\":%.6g,\"target_rate\":%.6g,", (double)p->threshold,
                       (double)p->target_rate);
    mf_strbuf__put(&w, "\"queue\":{\"count\":%llu,\"bytes\":%llu},\"versions\":[",
                   (unsigned long long)o->queue.count, (unsigned long long)o->queue.bytes);
    for (int i = 0; i < MF_OFFLOAD_TELEMETRY_SLOTS; i++) {
        if (!o->tele[i].model_version[0])
            continue;
        if (!first)
            mf_strbuf__put(&w, ",");
        put_slot(&w, &o->tele[i]);
        first = 0;
    }
    mf_strbuf__put(&w, "]}");
    if (w.overflow)
        return MF_E_LIMIT;
    *len_out = w.len;
    return MF_OK;
}
