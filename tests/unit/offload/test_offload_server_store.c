/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload store ops (schema migration 4) on SQLite, or on PostgreSQL when the mf_pg
 * fixture names one (ctest unit_offload_server_store_pg): idempotent batches, sample-id
 * de-duplication, labels, the export query's filters and cursor, deletion by device with
 * the orphaned inputs reported, and score histograms.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    *state = store_fixture_new("offstore", 1);
    return 0;
}

static void sample(struct mf_store_sample *m, int i, const char *kind, const char *version,
                   char sha)
{
    memset(m, 0, sizeof(*m));
    (void)snprintf(m->id, sizeof(m->id), "%032x", i);
    (void)snprintf(m->model, sizeof(m->model), "digits");
    (void)snprintf(m->model_version, sizeof(m->model_version), "%s", version);
    (void)snprintf(m->kind, sizeof(m->kind), "%s", kind);
    (void)snprintf(m->method, sizeof(m->method), "max_softmax");
    (void)snprintf(m->output_kind, sizeof(m->output_kind), "logits");
    m->output = "[1,0.5,-1]";
    m->score = 0.25 + i / 100.0;
    m->created_at = 1000 + i;
    m->received_at = 2000 + i;
    memset(m->input_sha256, sha, MF_SHA256_HEX_LEN);
    m->input_sha256[MF_SHA256_HEX_LEN] = '\0';
    m->input_size = 16;
}

struct rows {
    struct mf_store_sample r[16];
    char out[16][64];
    size_t n;
};

static int collect(void *payload, const struct mf_store_sample *m)
{
    struct rows *rows = payload;

    assert_true(rows->n < 16);
    rows->r[rows->n] = *m;
    (void)snprintf(rows->out[rows->n], sizeof(rows->out[0]), "%s", m->teacher_output);
    rows->r[rows->n].teacher_output = rows->out[rows->n];
    rows->r[rows->n].output = NULL;
    rows->n++;
    return MF_OK;
}

static size_t count(struct store_fixture *f, const struct mf_store_sample_query *q)
{
    struct rows rows;

    memset(&rows, 0, sizeof(rows));
    assert_int_equal(f->s->ops->offload->samples_walk(f->s, &f->ctx, q, collect, &rows), MF_OK);
    return rows.n;
}

/* What one sample_batch_put said it did. */
struct put_counts {
    int replayed, acc, dup;
};

/* Stores `n` samples of `b` from `device` as batch `batch` (NULL: none): the store's code,
 * its counts into `c`. */
static int put(struct put_counts *c, struct store_fixture *f, const char *device, const char *batch,
               const struct mf_store_sample *b, size_t n)
{
    return f->s->ops->offload->sample_batch_put(&c->replayed, &c->acc, &c->dup, f->s, &f->ctx,
                                                device, batch, b, n);
}

static void expect_counts(const struct put_counts *c, int replayed, int acc, int dup)
{
    assert_int_equal(c->replayed, replayed);
    assert_int_equal(c->acc, acc);
    assert_int_equal(c->dup, dup);
}

static void test_offload_server_store__batch_is_idempotent(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store_sample b[3];
    struct mf_store_sample_query all = {.model = "digits"};
    const char *batch = "0123456789abcdef0123456789abcdef";
    struct put_counts c;

    for (int i = 0; i < 3; i++)
        sample(&b[i], i + 1, "hard", "v1", 'a');
    assert_int_equal(put(&c, f, "cam-1", batch, b, 3), MF_OK);
    expect_counts(&c, 0, 3, 0);
    /* The same batch again (a device that lost the answer): nothing stored, same counts. */
    assert_int_equal(put(&c, f, "cam-1", batch, b, 2), MF_OK);
    expect_counts(&c, 1, 3, 0);
    assert_int_equal(count(f, &all), 3);
    /* A new batch id with one known sample id: that sample is a duplicate. */
    sample(&b[0], 3, "hard", "v1", 'a');
    sample(&b[1], 4, "audit", "v2", 'b');
    assert_int_equal(put(&c, f, "cam-1", "ffffffffffffffffffffffffffffffff", b, 2), MF_OK);
    expect_counts(&c, 0, 1, 1);
    /* No batch id (a sync ask). */
    sample(&b[0], 5, "hard", "v2", 'c');
    assert_int_equal(put(&c, f, "cam-2", NULL, b, 1), MF_OK);
    assert_int_equal(c.acc, 1);
    assert_int_equal(count(f, &all), 5);
    /* A malformed sample fails the whole batch, which stores nothing. */
    sample(&b[0], 6, "hard", "v2", 'c');
    sample(&b[1], 7, "maybe", "v2", 'c');
    assert_int_equal(put(&c, f, "cam-2", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", b, 2), MF_E_INVALID);
    assert_int_equal(count(f, &all), 5);
}

static void test_offload_server_store__label_and_query(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_sample b[4];
    struct mf_store_sample_query q;
    struct rows rows;
    struct put_counts c;

    for (int i = 0; i < 4; i++)
        sample(&b[i], i + 1, i % 2 ? "audit" : "hard", i < 2 ? "v1" : "v2", 'a');
    assert_int_equal(put(&c, f, "cam-1", NULL, b, 4), MF_OK);
    assert_int_equal(
        s->ops->offload->sample_label(s, &f->ctx, b[0].id, "t-7", "[0.1,0.9,0]", 0.9, 5000), MF_OK);
    assert_int_equal(
        s->ops->offload->sample_label(s, &f->ctx, b[2].id, "t-7", "[0.6,0.4,0]", 0.6, 5001), MF_OK);
    assert_int_equal(s->ops->offload->sample_label(s, &f->ctx, "00000000000000000000000000000abc",
                                                   "t", "[1,0]", 1.0, 1),
                     MF_E_NOTFOUND);
    memset(&q, 0, sizeof(q));
    q.model = "digits";
    memset(&rows, 0, sizeof(rows));
    assert_int_equal(s->ops->offload->samples_walk(s, &f->ctx, &q, collect, &rows), MF_OK);
    assert_int_equal(rows.n, 4);
    assert_true(rows.r[0].seq < rows.r[1].seq);
    assert_string_equal(rows.r[0].teacher_version, "t-7");
    assert_string_equal(rows.r[0].teacher_output, "[0.1,0.9,0]");
    assert_true(rows.r[0].teacher_confidence > 0.899 && rows.r[0].teacher_confidence < 0.901);
    assert_int_equal(rows.r[0].labelled_at, 5000);
    assert_string_equal(rows.r[1].teacher_version, "");
    assert_true(rows.r[1].score > 0.269 && rows.r[1].score < 0.271);
    assert_int_equal(rows.r[1].created_at, 1002);
    assert_string_equal(rows.r[1].device_id, "cam-1");
    q.version = "v2";
    assert_int_equal(count(f, &q), 2);
    q.kind = "hard";
    assert_int_equal(count(f, &q), 1);
    q.version = q.kind = NULL;
    q.min_confidence = 0.7; /* labelled, teacher sure enough */
    assert_int_equal(count(f, &q), 1);
    q.min_confidence = 0;
    q.unlabelled = 1;
    assert_int_equal(count(f, &q), 2);
    q.unlabelled = 0;
    q.since = 2002;
    q.until = 2004;
    assert_int_equal(count(f, &q), 2);
    q.since = q.until = 0;
    q.after_seq = rows.r[1].seq;
    q.limit = 1;
    memset(&rows, 0, sizeof(rows));
    assert_int_equal(s->ops->offload->samples_walk(s, &f->ctx, &q, collect, &rows), MF_OK);
    assert_int_equal(rows.n, 1);
    assert_string_equal(rows.r[0].id, b[2].id);
    q.model = "other";
    q.after_seq = 0;
    q.limit = 0;
    assert_int_equal(count(f, &q), 0);
}

struct orphans {
    char sha[4][MF_SHA256_HEX_LEN + 1];
    size_t n;
};

static int on_orphan(void *payload, const char *unused, const char *sha)
{
    struct orphans *o = payload;

    assert_string_equal(unused, "");
    assert_true(o->n < 4);
    (void)snprintf(o->sha[o->n++], sizeof(o->sha[0]), "%s", sha);
    return MF_OK;
}

static void test_offload_server_store__delete_by_device(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_sample b[3];
    struct mf_store_sample_query all = {.model = "digits"};
    struct orphans o;
    int64_t deleted = -1;
    struct put_counts c;

    /* cam-1 has inputs a and b; cam-2 shares input b. Deleting cam-1 orphans only a. */
    sample(&b[0], 1, "hard", "v1", 'a');
    sample(&b[1], 2, "hard", "v1", 'b');
    assert_int_equal(put(&c, f, "cam-1", "11111111111111111111111111111111", b, 2), MF_OK);
    sample(&b[2], 3, "hard", "v1", 'b');
    assert_int_equal(put(&c, f, "cam-2", NULL, &b[2], 1), MF_OK);
    memset(&o, 0, sizeof(o));
    assert_int_equal(s->ops->offload->samples_delete(&deleted, s, &f->ctx, "", 0, on_orphan, &o),
                     MF_E_INVALID);
    assert_int_equal(
        s->ops->offload->samples_delete(&deleted, s, &f->ctx, "cam-1", 0, on_orphan, &o), MF_OK);
    assert_int_equal(deleted, 2);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.sha[0][0], 'a');
    assert_int_equal(count(f, &all), 1);
    /* Its batch id went too: the same batch now stores again (the device re-sent it). */
    assert_int_equal(put(&c, f, "cam-1", "11111111111111111111111111111111", b, 2), MF_OK);
    assert_int_equal(c.replayed, 0);
    assert_int_equal(c.acc, 2);
    /* Retention: everything received before 2003 (samples 1 and 2). */
    memset(&o, 0, sizeof(o));
    assert_int_equal(s->ops->offload->samples_delete(&deleted, s, &f->ctx, "", 2003, on_orphan, &o),
                     MF_OK);
    assert_int_equal(deleted, 2);
    assert_int_equal(o.n, 1); /* a; b is still used by sample 3 */
    assert_int_equal(count(f, &all), 1);
}

STORE_FIXTURE_COLLECTOR(hists, struct mf_store_hist, 4, collect_hist)

static void test_offload_server_store__histograms(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_hist h;
    struct hists l;

    memset(&h, 0, sizeof(h));
    (void)snprintf(h.model, sizeof(h.model), "digits");
    (void)snprintf(h.version, sizeof(h.version), "v1");
    (void)snprintf(h.method, sizeof(h.method), "max_softmax");
    h.bins[0] = 3;
    h.bins[99] = 5000000000ull; /* beyond 32 bits: fleets sum large */
    h.asked = 10;
    h.uncertain = 2;
    h.updated_at = 7;
    assert_int_equal(s->ops->offload->hist_add(s, &f->ctx, &h, 0), MF_OK);
    assert_int_equal(s->ops->offload->hist_add(s, &f->ctx, &h, 0), MF_OK);
    h.source = MF_STORE_HIST_CALIBRATION;
    assert_int_equal(s->ops->offload->hist_add(s, &f->ctx, &h, 1), MF_OK);
    assert_int_equal(s->ops->offload->hist_add(s, &f->ctx, &h, 1), MF_OK); /* replaces */
    memset(&l, 0, sizeof(l));
    assert_int_equal(s->ops->offload->hists_list(s, &f->ctx, "digits", collect_hist, &l), MF_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].source, MF_STORE_HIST_FLEET);
    assert_int_equal(l.v[0].bins[0], 6);
    assert_true(l.v[0].bins[99] == 10000000000ull);
    assert_int_equal(l.v[0].asked, 20);
    assert_int_equal(l.v[0].uncertain, 4);
    assert_int_equal(l.v[1].source, MF_STORE_HIST_CALIBRATION);
    assert_int_equal(l.v[1].bins[0], 3);
    memset(&l, 0, sizeof(l));
    assert_int_equal(s->ops->offload->hists_list(s, &f->ctx, "other", collect_hist, &l), MF_OK);
    assert_int_equal(l.n, 0);
    assert_int_equal(s->ops->offload->hists_list(s, &f->ctx, "", collect_hist, &l), MF_OK);
    assert_int_equal(l.n, 2);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, store_fixture_teardown)
    return MF_TEST_RUN(
        "offload_server_store", NULL, NULL, T(test_offload_server_store__batch_is_idempotent),
        T(test_offload_server_store__label_and_query),
        T(test_offload_server_store__delete_by_device), T(test_offload_server_store__histograms));
#undef T
}
