/* SPDX-License-Identifier: Apache-2.0 */
/* Counters of the example fleet per model version, their merge and their JSON (mf_fleet_stats.h).
 */
#include "mf_fleet_stats.h"

#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mf_dynbuf.h"

#include <stdio.h>
#include <string.h>

/* A stats document is a few KiB per version; this bound is far above any real one. */
#define FLEET_JSON_MAX (1u << 20)

mf_fleet_counts *mf_fleet_stats_version(mf_fleet_stats *s, const char *version)
{
    mf_fleet_version *v;

    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->v[i].version, version) == 0)
            return &s->v[i].c;
    }
    if (s->n == MF_FLEET_MAX_VERSIONS || strlen(version) > MF_OFFLOAD_NAME_MAX)
        return NULL;
    v = &s->v[s->n++];
    memset(v, 0, sizeof(*v));
    memcpy(v->version, version, strlen(version) + 1);
    return &v->c;
}

int mf_fleet_reason_is_fallback(int reason)
{
    return reason != MF_OFFLOAD_REASON_CONFIDENT && reason != MF_OFFLOAD_REASON_TEACHER &&
           reason != MF_OFFLOAD_REASON_AUDIT;
}

void mf_fleet_stats_answer(mf_fleet_counts *c, uint32_t truth, uint32_t student,
                           const mf_offload_answer *a)
{
    c->images++;
    c->student_correct += student == truth;
    c->cascade_correct += (uint32_t)a->label == truth;
    if (a->by_teacher) {
        c->by_teacher++;
        c->teacher_agreed += (uint32_t)a->label == student;
    }
    c->hard += a->route == MF_OFFLOAD_ROUTE_SYNC || a->route == MF_OFFLOAD_ROUTE_QUEUE;
    c->audit += a->route == MF_OFFLOAD_ROUTE_AUDIT;
    c->queued += a->queued != 0;
    if (a->reason >= 0 && a->reason < MF_FLEET_REASONS)
        c->reasons[a->reason]++;
}

/* Every counter is a uint64_t (the header says so of each), so counts add as an array: a
 * counter added to the struct is merged without a line here. */
_Static_assert(sizeof(mf_fleet_counts) % sizeof(uint64_t) == 0, "counts are uint64_t only");

static void counts_add(mf_fleet_counts *dst, const mf_fleet_counts *src)
{
    uint64_t d[sizeof(*dst) / sizeof(uint64_t)], x[sizeof(*src) / sizeof(uint64_t)];

    memcpy(d, dst, sizeof(d));
    memcpy(x, src, sizeof(x));
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        d[i] += x[i];
    memcpy(dst, d, sizeof(d));
}

/* The slot of `version` in `s` (added when new), or NULL when the table is full. */
static mf_fleet_version *slot_of(mf_fleet_stats *s, const char *version)
{
    const mf_fleet_counts *c = mf_fleet_stats_version(s, version);

    return c ? (mf_fleet_version *)((const char *)c - offsetof(mf_fleet_version, c)) : NULL;
}

void mf_fleet_stats_merge(mf_fleet_stats *dst, const mf_fleet_stats *src, const char *running)
{
    mf_fleet_version *v;

    for (size_t i = 0; i < src->n; i++) {
        v = slot_of(dst, src->v[i].version);
        if (!v) {
            dst->dropped += src->v[i].c.images + 1;
            continue;
        }
        v->devices += src->v[i].devices;
        counts_add(&v->c, &src->v[i].c);
        if (!v->fallback[0])
            memcpy(v->fallback, src->v[i].fallback, sizeof(v->fallback));
    }
    dst->skipped += src->skipped;
    dst->bytes_delta += src->bytes_delta;
    dst->bytes_full += src->bytes_full;
    dst->dropped += src->dropped;
    if (running && running[0]) {
        v = slot_of(dst, running);
        if (v)
            v->devices++;
        else
            dst->dropped++;
    }
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

static int version_json(struct mf_dynbuf *b, const mf_fleet_version *v)
{
    const mf_fleet_counts *c = &v->c;
    int err, first = 1;

    err = mf_dynbuf__appendf(
        b,
        "    {\"version\": \"%s\", \"devices\": %llu, \"images\": %llu, "
        "\"student_correct\": %llu, \"cascade_correct\": %llu, \"by_teacher\": %llu, "
        "\"teacher_agreed\": %llu, \"hard\": %llu, \"audit\": %llu, \"queued\": %llu, "
        "\"student_accuracy\": %.6f, \"cascade_accuracy\": %.6f, \"offload_rate\": %.6f, "
        "\"installs_delta\": %llu, \"installs_full\": %llu, \"bytes_delta\": %llu, "
        "\"bytes_full\": %llu, \"rejected\": %llu, \"degrades\": %llu, \"restores\": %llu, "
        "\"degraded\": %llu, \"degraded_main_accuracy\": %.6f, "
        "\"degraded_fallback_accuracy\": %.6f, \"fallback_variant\": \"%s\", \"fallbacks\": {",
        v->version, (unsigned long long)v->devices, (unsigned long long)c->images,
        (unsigned long long)c->student_correct, (unsigned long long)c->cascade_correct,
        (unsigned long long)c->by_teacher, (unsigned long long)c->teacher_agreed,
        (unsigned long long)c->hard, (unsigned long long)c->audit, (unsigned long long)c->queued,
        share(c->student_correct, c->images), share(c->cascade_correct, c->images),
        share(c->by_teacher, c->images), (unsigned long long)c->installs_delta,
        (unsigned long long)c->installs_full, (unsigned long long)c->bytes_delta,
        (unsigned long long)c->bytes_full, (unsigned long long)c->rejected,
        (unsigned long long)c->degrades, (unsigned long long)c->restores,
        (unsigned long long)c->degraded, share(c->degraded_main_ok, c->degraded),
        share(c->degraded_fallback_ok, c->degraded), v->fallback);
    for (int r = 0; err == MF_OK && r < MF_FLEET_REASONS; r++) {
        if (!mf_fleet_reason_is_fallback(r) || c->reasons[r] == 0)
            continue;
        err = mf_dynbuf__appendf(b, "%s\"%s\": %llu", first ? "" : ", ", mf_offload_reason_name(r),
                                 (unsigned long long)c->reasons[r]);
        first = 0;
    }
    return err == MF_OK ? mf_dynbuf__appendf(b, "}}") : err;
}

int mf_fleet_stats_json(struct mf_dynbuf *out, const mf_fleet_stats *s, const char *model,
                        uint64_t pass, unsigned devices, int finished)
{
    int err = mf_dynbuf__appendf(
        out,
        "{\"model\": \"%s\", \"pass\": %llu, \"finished\": %s, \"devices\": %u, "
        "\"skipped\": %llu, \"bytes_delta\": %llu, \"bytes_full\": %llu, \"dropped\": %llu, "
        "\"versions\": [\n",
        model, (unsigned long long)pass, finished ? "true" : "false", devices,
        (unsigned long long)s->skipped, (unsigned long long)s->bytes_delta,
        (unsigned long long)s->bytes_full, (unsigned long long)s->dropped);

    for (size_t i = 0; err == MF_OK && i < s->n; i++) {
        err = version_json(out, &s->v[i]);
        if (err == MF_OK)
            err = mf_dynbuf__appendf(out, "%s\n", i + 1 < s->n ? "," : "");
    }
    return err == MF_OK ? mf_dynbuf__appendf(out, "]}\n") : err;
}

int mf_fleet_stats_write(struct mf_ctx *ctx, const char *path, const mf_fleet_stats *s,
                         const char *model, uint64_t pass, unsigned devices, int finished)
{
    struct mf_dynbuf b;
    int err;

    mf_dynbuf__init(&b, &ctx->alloc, FLEET_JSON_MAX);
    err = mf_fleet_stats_json(&b, s, model, pass, devices, finished);
    if (err < 0)
        err = mf_fail(ctx, err, "stats document for %s does not fit in %u bytes", path,
                      FLEET_JSON_MAX);
    else
        err = mf_file_write_atomic(ctx, path, b.data, b.len);
    mf_dynbuf__free(&b);
    return err;
}
