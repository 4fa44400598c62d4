/* SPDX-License-Identifier: Apache-2.0 */
/* Label lookup by input bytes and the per-(kind, version) tally of mf_sample_check.h. */
#include "mf_sample_check.h"

#include "mf_ctx.h"
#include "mf_dynbuf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Slot values: 0 empty, else 1 + the index of the first image with those bytes. A second
 * image with the same bytes but another label marks its slot ambiguous. */
struct mf_label_index {
    const mf_dataset *ds;
    size_t mask; /* slots - 1, slots a power of two >= 2 n */
    uint32_t *slot;
    uint8_t *ambiguous;
    mf_allocator alloc;
};

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The slot holding `x`, or the empty slot where it would go. */
static size_t probe(const mf_label_index *ix, const uint8_t *x)
{
    const mf_dataset *ds = ix->ds;
    size_t i = (size_t)fnv1a64(x, ds->dim) & ix->mask;

    while (ix->slot[i] && memcmp(ds->x + (size_t)(ix->slot[i] - 1) * ds->dim, x, ds->dim) != 0)
        i = (i + 1) & ix->mask;
    return i;
}

int mf_label_index_new(mf_label_index **out, struct mf_ctx *ctx, const mf_dataset *ds)
{
    mf_label_index *ix;
    size_t slots = 2;

    *out = NULL;
    while (slots < 2 * ds->n)
        slots *= 2;
    ix = mf_ctx__alloc(ctx, sizeof(*ix));
    if (!ix)
        return mf_fail(ctx, MF_E_NOMEM, "no memory for the label index");
    memset(ix, 0, sizeof(*ix));
    ix->alloc = ctx->alloc;
    ix->ds = ds;
    ix->mask = slots - 1;
    ix->slot = mf_calloc(&ix->alloc, slots, sizeof(*ix->slot));
    ix->ambiguous = mf_calloc(&ix->alloc, slots, 1);
    if (!ix->slot || !ix->ambiguous) {
        mf_label_index_free(ix);
        return mf_fail(ctx, MF_E_NOMEM, "no memory for a label index of %zu slots", slots);
    }
    for (size_t k = 0; k < ds->n; k++) {
        const size_t i = probe(ix, ds->x + k * ds->dim);

        if (!ix->slot[i])
            ix->slot[i] = (uint32_t)(k + 1);
        else if (ds->y[ix->slot[i] - 1] != ds->y[k])
            ix->ambiguous[i] = 1;
    }
    *out = ix;
    return MF_OK;
}

void mf_label_index_free(mf_label_index *ix)
{
    if (!ix)
        return;
    mf_free(&ix->alloc, ix->slot);
    mf_free(&ix->alloc, ix->ambiguous);
    mf_free(&ix->alloc, ix);
}

int mf_label_index_find(uint8_t *label_out, const mf_label_index *ix, const uint8_t *x, size_t len)
{
    size_t i;

    if (len != ix->ds->dim)
        return MF_E_NOTFOUND;
    i = probe(ix, x);
    if (!ix->slot[i])
        return MF_E_NOTFOUND;
    if (ix->ambiguous[i])
        return MF_E_INVALID;
    *label_out = ix->ds->y[ix->slot[i] - 1];
    return MF_OK;
}

size_t mf_sample_argmax(const float *v, size_t n)
{
    size_t best = 0;

    for (size_t i = 1; i < n; i++) {
        if (v[i] > v[best])
            best = i;
    }
    return best;
}

/* Kinds and versions come from the export: only names ([A-Za-z0-9._-]) are kept, so they
 * go into the JSON without escaping. */
static int name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static mf_sample_group *group_of(mf_sample_tally *t, const char *kind, const char *version)
{
    mf_sample_group *g;

    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->g[i].kind, kind) == 0 && strcmp(t->g[i].model_version, version) == 0)
            return &t->g[i];
    }
    if (t->n == MF_SAMPLE_MAX_GROUPS || !name_ok(kind, sizeof(g->kind) - 1) ||
        !name_ok(version, sizeof(g->model_version) - 1))
        return NULL;
    g = &t->g[t->n++];
    memset(g, 0, sizeof(*g));
    memcpy(g->kind, kind, strlen(kind) + 1);
    memcpy(g->model_version, version, strlen(version) + 1);
    return g;
}

static int labelled(const float *teacher, size_t n)
{
    if (!teacher)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(teacher[i]))
            return 0;
    }
    return 1;
}

void mf_sample_tally_add(mf_sample_tally *t, const char *kind, const char *model_version, int truth,
                         const float *teacher, const float *student, size_t n)
{
    mf_sample_group *g = group_of(t, kind, model_version);

    t->samples++;
    t->unmatched += truth == MF_SAMPLE_UNMATCHED;
    t->ambiguous += truth == MF_SAMPLE_AMBIGUOUS;
    if (!g) {
        t->dropped++;
        return;
    }
    g->count++;
    if (truth < 0)
        return;
    g->matched++;
    g->student_correct += mf_sample_argmax(student, n) == (size_t)truth;
    if (labelled(teacher, n)) {
        g->labelled++;
        g->teacher_correct += mf_sample_argmax(teacher, n) == (size_t)truth;
    }
}

/* A share as JSON: null when there is nothing to divide (an accuracy of no sample). */
static int append_share(struct mf_dynbuf *b, const char *key, uint64_t part, uint64_t whole)
{
    if (!whole)
        return mf_dynbuf__appendf(b, ", \"%s\": null", key);
    return mf_dynbuf__appendf(b, ", \"%s\": %.6f", key, (double)part / (double)whole);
}

int mf_sample_tally_json(struct mf_dynbuf *out, const mf_sample_tally *t)
{
    int err = mf_dynbuf__appendf(out,
                                 "{\"samples\": %llu, \"unmatched\": %llu, \"ambiguous\": %llu, "
                                 "\"dropped\": %llu, \"groups\": [",
                                 (unsigned long long)t->samples, (unsigned long long)t->unmatched,
                                 (unsigned long long)t->ambiguous, (unsigned long long)t->dropped);

    for (size_t i = 0; err == MF_OK && i < t->n; i++) {
        const mf_sample_group *g = &t->g[i];

        err = mf_dynbuf__appendf(
            out,
            "%s\n  {\"kind\": \"%s\", \"model_version\": \"%s\", "
            "\"count\": %llu, \"matched\": %llu, \"labelled\": %llu, "
            "\"teacher_correct\": %llu, \"student_correct\": %llu",
            i ? "," : "", g->kind, g->model_version, (unsigned long long)g->count,
            (unsigned long long)g->matched, (unsigned long long)g->labelled,
            (unsigned long long)g->teacher_correct, (unsigned long long)g->student_correct);
        if (err == MF_OK)
            err = append_share(out, "teacher_accuracy", g->teacher_correct, g->labelled);
        if (err == MF_OK)
            err = append_share(out, "student_accuracy", g->student_correct, g->matched);
        if (err == MF_OK)
            err = mf_dynbuf__appendf(out, "}");
    }
    return err == MF_OK ? mf_dynbuf__appendf(out, "]}\n") : err;
}
