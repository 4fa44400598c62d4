/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blob lifetime by reference (server/blob/blob_gc.h, store blob_ref) on SQLite, or on
 * PostgreSQL when the mf_pg fixture names one (ctest unit_blob_gc_pg): a sample deletion
 * orphans only inputs no row of any table names; those blob files go (no leak), shared ones
 * stay; a crash between the row delete and the file removal leaves an orphan the sweep
 * removes, while the sweep never takes a referenced blob nor one younger than the grace
 * period; the removal's own race checks; which blobs devices may fetch; and a walk over the
 * schema that fails when a column naming a blob is missing from the reference check.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, utimensat */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "blob/blob_gc.h"
#include "blob/blob_store.h"
#include "offload/offload_srv.h"
#include "store/store.h"
#include "store/store_blobref.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct fixture {
    char dir[64], root[96];
    char url[MF_PGTEST_URL_MAX];
    int pg;
    struct mf_ctx ctx;
    struct mf_store *s;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int applied = 0;

    assert_non_null(f);
    mf_kit_fs_mkdtemp(f->dir, sizeof(f->dir), "mf-blobgc");
    (void)snprintf(f->root, sizeof(f->root), "%s/blobs", f->dir);
    f->pg = mf_pgtest__enabled();
    if (f->pg)
        mf_pgtest__create_db(f->url, "blobgc");
    else
        (void)snprintf(f->url, sizeof(f->url), "%s/store.db", f->dir);
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 1), MF_OK);
    assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    assert_int_equal(mf_blob__ensure_dirs(&f->ctx, f->root), MF_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    mf_store__close(f->s);
    if (f->pg)
        mf_pgtest__drop_db(f->url);
    mf_kit_fs_rmtree(f->dir);
    free(f);
    return 0;
}

/* A blob file of `n` bytes of `c`; its name into sha. */
static void put_blob(struct fixture *f, char sha[MF_SHA256_HEX_LEN + 1], char c, size_t n)
{
    char buf[256];

    assert_true(n <= sizeof(buf));
    memset(buf, c, n);
    assert_int_equal(mf_blob__put(sha, &f->ctx, f->root, buf, n), MF_OK);
}

static int blob_exists(struct fixture *f, const char *sha)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%.2s/%s", f->root, sha, sha);
    return stat(path, &st) == 0;
}

/* Backdates blob `sha`'s commit by `age_s` seconds, as if it were written that long ago. */
static void age_blob(struct fixture *f, const char *sha, time_t age_s)
{
    char path[256];
    struct timespec t[2];

    (void)snprintf(path, sizeof(path), "%s/%.2s/%s", f->root, sha, sha);
    t[0].tv_sec = t[1].tv_sec = time(NULL) - age_s;
    t[0].tv_nsec = t[1].tv_nsec = 0;
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void version_of(struct mf_store_version *v, const char *model, const char *version,
                       const char *sha)
{
    memset(v, 0, sizeof(*v));
    (void)snprintf(v->model, sizeof(v->model), "%s", model);
    (void)snprintf(v->version, sizeof(v->version), "%s", version);
    (void)snprintf(v->sha256, sizeof(v->sha256), "%s", sha);
    v->size = 16;
    v->created_at = 1;
}

/* A staged version of `model` whose blob is `sha`. */
static void add_version(struct fixture *f, const char *model, const char *version, const char *sha)
{
    struct mf_store_version v;

    version_of(&v, model, version, sha);
    assert_int_equal(f->s->ops->registry->version_insert(f->s, &f->ctx, &v), MF_OK);
}

/* Its release (sequence 1: one per model here). */
static void release(struct fixture *f, const char *model, const char *version, const char *sha)
{
    struct mf_store_version v;

    version_of(&v, model, version, sha);
    v.sequence = 1;
    memset(v.release_digest, 'f', MF_SHA256_HEX_LEN);
    assert_int_equal(f->s->ops->registry->release_set(f->s, &f->ctx, &v, "env", 3), MF_OK);
}

static void add_delta(struct fixture *f, const char *from, const char *to, const char *delta)
{
    struct mf_store_delta d;

    memset(&d, 0, sizeof(d));
    (void)snprintf(d.model, sizeof(d.model), "det");
    (void)snprintf(d.from_sha256, sizeof(d.from_sha256), "%s", from);
    (void)snprintf(d.to_sha256, sizeof(d.to_sha256), "%s", to);
    (void)snprintf(d.delta_sha256, sizeof(d.delta_sha256), "%s", delta);
    d.size = 16;
    (void)snprintf(d.format, sizeof(d.format), "mfdelta");
    assert_int_equal(f->s->ops->registry->delta_insert(f->s, &f->ctx, &d), MF_OK);
}

/* One sample of `device` whose input is blob `sha`. */
static void add_sample(struct fixture *f, const char *device, int id, const char *sha)
{
    struct mf_store_sample m;
    int replayed, acc, dup;

    memset(&m, 0, sizeof(m));
    (void)snprintf(m.id, sizeof(m.id), "%032x", id);
    (void)snprintf(m.model, sizeof(m.model), "det");
    (void)snprintf(m.model_version, sizeof(m.model_version), "v1");
    (void)snprintf(m.kind, sizeof(m.kind), "hard");
    (void)snprintf(m.method, sizeof(m.method), "max_softmax");
    (void)snprintf(m.output_kind, sizeof(m.output_kind), "logits");
    m.output = "[1,0]";
    m.received_at = 2000 + id;
    (void)snprintf(m.input_sha256, sizeof(m.input_sha256), "%s", sha);
    m.input_size = 16;
    assert_int_equal(f->s->ops->offload->sample_batch_put(&replayed, &acc, &dup, f->s, &f->ctx,
                                                          device, NULL, &m, 1),
                     MF_OK);
    assert_int_equal(acc, 1);
}

struct orphans {
    char sha[8][MF_SHA256_HEX_LEN + 1];
    size_t n;
};

static int on_orphan(void *payload, const char *unused, const char *sha)
{
    struct orphans *o = payload;

    (void)unused;
    assert_true(o->n < 8);
    (void)snprintf(o->sha[o->n++], sizeof(o->sha[0]), "%s", sha);
    return MF_OK;
}

/* The crash between the commit and the file removal: the rows are gone, the callback that
 * would remove the files never gets to. */
static int crash(void *payload, const char *unused, const char *sha)
{
    (void)payload;
    (void)unused;
    (void)sha;
    return MF_E_IO;
}

static void sha_of(char out[MF_SHA256_HEX_LEN + 1], char c)
{
    memset(out, c, MF_SHA256_HEX_LEN);
    out[MF_SHA256_HEX_LEN] = '\0';
}

/* The reviewer's attack at the store: inputs equal to a model blob, a delta blob and another
 * device's input are not orphans; only the device's own input is. */
static void test_blob_gc__shared_inputs_are_not_orphans(void **state)
{
    struct fixture *f = *state;
    char model[65], delta[65], from[65], shared[65], own[65], who[MF_STORE_BLOB_REF_MAX];
    struct orphans o;
    int64_t deleted = 0;

    sha_of(model, 'a');
    sha_of(from, 'b');
    sha_of(delta, 'c');
    sha_of(shared, 'd');
    sha_of(own, 'e');
    add_version(f, "det", "v2", model);
    add_delta(f, from, model, delta);
    add_sample(f, "cam-1", 1, model);
    add_sample(f, "cam-1", 2, delta);
    add_sample(f, "cam-1", 3, shared);
    add_sample(f, "cam-1", 4, own);
    add_sample(f, "cam-2", 5, shared);
    add_sample(f, "cam-1", 6, from);
    memset(&o, 0, sizeof(o));
    assert_int_equal(
        f->s->ops->offload->samples_delete(&deleted, f->s, &f->ctx, "cam-1", 0, on_orphan, &o),
        MF_OK);
    assert_int_equal(deleted, 5);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.sha[0], own);
    /* Who refers to what, afterwards: */
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, model), MF_OK);
    assert_string_equal(who, "model_versions.sha256");
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, delta), MF_OK);
    assert_string_equal(who, "deltas.delta_sha256");
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, from), MF_OK);
    assert_string_equal(who, "deltas.from_sha256");
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, shared), MF_OK);
    assert_string_equal(who, "offload_samples.input_sha256");
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, own), MF_OK);
    assert_string_equal(who, "");
}

/* Blob `model` ('M') as det v1 and two more 100-byte blobs, `a` and `b`, filled with `ca` and
 * `cb`: the store the deletion cases start from. */
static void v1_and_two_blobs(struct fixture *f, char model[65], char a[65], char ca, char b[65],
                             char cb)
{
    put_blob(f, model, 'M', 100);
    put_blob(f, a, ca, 100);
    put_blob(f, b, cb, 100);
    add_version(f, "det", "v1", model);
}

/* Deletion through the offload service (the admin route's and retention's call): the blob
 * files of unshared inputs go, shared ones stay. */
static void test_blob_gc__unreferenced_inputs_are_removed(void **state)
{
    struct fixture *f = *state;
    char model[65], own1[65], own2[65];
    int64_t deleted = 0;

    v1_and_two_blobs(f, model, own1, '1', own2, '2');
    add_sample(f, "cam-1", 1, model);
    add_sample(f, "cam-1", 2, own1);
    add_sample(f, "cam-2", 3, own2);
    /* A deletion keeps what was committed from its start on: begin it a clock tick later. */
    (void)nanosleep(&(struct timespec){0, 30000000L}, NULL);
    assert_int_equal(mf_offsrv__delete(&deleted, f->s, &f->ctx, f->root, "cam-1", 0), MF_OK);
    assert_int_equal(deleted, 2);
    assert_true(blob_exists(f, model));
    assert_false(blob_exists(f, own1));
    assert_true(blob_exists(f, own2));
    /* Retention (by age, any device) takes the same path. */
    assert_int_equal(mf_offsrv__delete(&deleted, f->s, &f->ctx, f->root, "", 9999), MF_OK);
    assert_int_equal(deleted, 1);
    assert_false(blob_exists(f, own2));
    assert_true(blob_exists(f, model));
}

struct listed {
    char sha[8][MF_SHA256_HEX_LEN + 1];
    size_t n;
};

static int on_swept(void *payload, const char *sha, int64_t mtime_ms)
{
    struct listed *l = payload;

    assert_true(mtime_ms > 0);
    assert_true(l->n < 8);
    (void)snprintf(l->sha[l->n++], sizeof(l->sha[0]), "%s", sha);
    return MF_OK;
}

/* One sweep now with an hour's grace (`dry_run`: list, remove nothing): it succeeds, what it
 * found goes to `rep` and what it removed (or would) to `l`. */
static void sweep_now(struct mf_blobgc_report *rep, struct listed *l, struct fixture *f,
                      int dry_run)
{
    memset(l, 0, sizeof(*l));
    assert_int_equal(mf_blobgc__sweep(rep, &f->ctx, f->s, f->root, mf_blob__clock_ms(), 3600,
                                      dry_run, on_swept, l),
                     MF_OK);
}

/* A crash after the deletion committed leaves an orphan file, never a row naming a missing
 * blob; the sweep removes it once past the grace period, and leaves referenced and young
 * blobs and anything that is not a committed blob alone. */
static void test_blob_gc__crash_leaves_an_orphan_the_sweep_removes(void **state)
{
    struct fixture *f = *state;
    char model[65], orphan[65], young[65], path[256], who[MF_STORE_BLOB_REF_MAX];
    struct mf_blobgc_report rep;
    struct listed l;
    int64_t deleted = 0;
    FILE *stray;

    v1_and_two_blobs(f, model, orphan, 'O', young, 'Y');
    add_sample(f, "cam-1", 1, orphan);
    add_sample(f, "cam-1", 2, model);
    assert_int_equal(
        f->s->ops->offload->samples_delete(&deleted, f->s, &f->ctx, "cam-1", 0, crash, NULL),
        MF_E_IO);
    assert_int_equal(deleted, 2); /* committed before the crash */
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, orphan), MF_OK);
    assert_string_equal(who, "");        /* no row names it ... */
    assert_true(blob_exists(f, orphan)); /* ... and the file is still there: an orphan */
    (void)snprintf(path, sizeof(path), "%s/tmp/upload-unfinished", f->root);
    stray = fopen(path, "w"); /* an upload in flight: not a blob, never swept */
    assert_non_null(stray);
    (void)fclose(stray);
    (void)snprintf(path, sizeof(path), "%s/%.2s/notes.txt", f->root, model);
    stray = fopen(path, "w");
    assert_non_null(stray);
    (void)fclose(stray);
    /* Within the grace period nothing goes. */
    sweep_now(&rep, &l, f, 0);
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.young, 3);
    assert_true(blob_exists(f, orphan));
    /* Two hours later for the model and the orphan, not for the young blob. */
    age_blob(f, model, 7200);
    age_blob(f, orphan, 7200);
    sweep_now(&rep, &l, f, 1);
    assert_int_equal(rep.removed, 1); /* dry run: listed, still there */
    assert_int_equal(l.n, 1);
    assert_string_equal(l.sha[0], orphan);
    assert_true(blob_exists(f, orphan));
    sweep_now(&rep, &l, f, 0);
    assert_int_equal(rep.removed, 1);
    assert_int_equal(rep.referenced, 1);
    assert_int_equal(rep.young, 1);
    assert_string_equal(l.sha[0], orphan);
    assert_false(blob_exists(f, orphan));
    assert_true(blob_exists(f, model));
    assert_true(blob_exists(f, young));
    assert_int_equal(access(path, F_OK), 0);
    (void)snprintf(path, sizeof(path), "%s/tmp/upload-unfinished", f->root);
    assert_int_equal(access(path, F_OK), 0);
}

static int never_referenced(void *payload, int *referenced_out, const char *sha)
{
    (void)payload;
    (void)sha;
    *referenced_out = 0;
    return MF_OK;
}

/* The row about to name the blob committed after the caller's decision. */
static int referenced_now(void *payload, int *referenced_out, const char *sha)
{
    (void)payload;
    (void)sha;
    *referenced_out = 1;
    return MF_OK;
}

/* mf_blob__remove_orphan of `sha` with the cutoff `ago_ms` from now (0 or negative) and
 * `check` as the caller's reference check: it succeeds; returns whether it removed the blob. */
static int remove_orphan(struct fixture *f, const char *sha, int64_t ago_ms, mf_blob_ref_fn check)
{
    int removed = -1;

    assert_int_equal(mf_blob__remove_orphan(&removed, &f->ctx, f->root, sha,
                                            mf_blob__clock_ms() + ago_ms, check, NULL),
                     MF_OK);
    return removed;
}

/* The removal's own checks against uploads racing it: a blob committed again after the
 * cutoff stays; one a row names by the time it is moved aside is put back. */
static void test_blob_gc__removal_keeps_a_blob_claimed_meanwhile(void **state)
{
    struct fixture *f = *state;
    char sha[65];

    put_blob(f, sha, 'R', 50);
    /* Committed after the cutoff: kept. */
    assert_int_equal(remove_orphan(f, sha, -60000, never_referenced), 0);
    assert_true(blob_exists(f, sha));
    age_blob(f, sha, 600);
    assert_int_equal(remove_orphan(f, sha, 0, referenced_now), 0);
    assert_true(blob_exists(f, sha));
    /* The same bytes uploaded again refresh the commit time, even over the existing file. */
    put_blob(f, sha, 'R', 50);
    assert_int_equal(remove_orphan(f, sha, -60000, never_referenced), 0);
    age_blob(f, sha, 600);
    assert_int_equal(remove_orphan(f, sha, 0, never_referenced), 1);
    assert_false(blob_exists(f, sha));
    assert_int_equal(remove_orphan(f, sha, 0, never_referenced), 0); /* gone already: fine */
}

/* What devices may fetch: a released version's blob and the deltas towards it; not a staged
 * version's, nor a delta towards one, nor a sample's input. */
static void test_blob_gc__released_blobs(void **state)
{
    struct fixture *f = *state;
    char rel[65], staged[65], d_rel[65], d_staged[65], input[65];
    int yes = -1;

    sha_of(rel, '1');
    sha_of(staged, '2');
    sha_of(d_rel, '3');
    sha_of(d_staged, '4');
    sha_of(input, '5');
    add_version(f, "det", "v1", rel);
    add_version(f, "det", "v2", staged);
    add_delta(f, staged, rel, d_rel);
    add_delta(f, rel, staged, d_staged);
    add_sample(f, "cam-1", 1, input);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, rel), MF_OK);
    assert_int_equal(yes, 0); /* staged until its release */
    release(f, "det", "v1", rel);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, rel), MF_OK);
    assert_int_equal(yes, 1);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, d_rel), MF_OK);
    assert_int_equal(yes, 1);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, staged), MF_OK);
    assert_int_equal(yes, 0);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, d_staged), MF_OK);
    assert_int_equal(yes, 0);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, input), MF_OK);
    assert_int_equal(yes, 0);
}

/* A chunk-tree release's chunk list (migration 15) is a reference of its version, and devices
 * may fetch it once the version is released: a staged version names no list. */
static void test_blob_gc__chunk_list_blobs(void **state)
{
    struct fixture *f = *state;
    char rel[65], list[65], who[MF_STORE_BLOB_REF_MAX];
    struct mf_store_version v, got;
    int yes = -1;

    sha_of(rel, '1');
    sha_of(list, '6');
    add_version(f, "det", "v1", rel);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, list), MF_OK);
    assert_int_equal(yes, 0);
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, list), MF_OK);
    assert_string_equal(who, ""); /* an orphan until a release names it */
    version_of(&v, "det", "v1", rel);
    v.sequence = 1;
    memset(v.release_digest, 'f', MF_SHA256_HEX_LEN);
    memcpy(v.chunks_sha256, list, sizeof(v.chunks_sha256));
    assert_int_equal(f->s->ops->registry->release_set(f->s, &f->ctx, &v, "env", 3), MF_OK);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, list), MF_OK);
    assert_int_equal(yes, 1);
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, list), MF_OK);
    assert_string_equal(who, "model_versions.chunks_sha256");
    assert_int_equal(f->s->ops->registry->version_get(&got, f->s, &f->ctx, "det", "v1"), MF_OK);
    assert_string_equal(got.chunks_sha256, list);
}

/* A variant's blob (migration 12) is a reference like a version's, and devices may fetch it,
 * and the deltas towards it, once the variant's own release is attached. */
static void test_blob_gc__variant_blobs(void **state)
{
    struct fixture *f = *state;
    struct mf_store_variant x;
    char base[65], int8[65], d_int8[65], who[MF_STORE_BLOB_REF_MAX];
    int yes = -1;

    sha_of(base, '1');
    sha_of(int8, '2');
    sha_of(d_int8, '3');
    add_version(f, "det", "v1", base);
    memset(&x, 0, sizeof(x));
    (void)snprintf(x.model, sizeof(x.model), "det");
    (void)snprintf(x.version, sizeof(x.version), "v1");
    (void)snprintf(x.variant, sizeof(x.variant), "int8");
    memcpy(x.sha256, int8, sizeof(x.sha256));
    x.size = 16;
    x.rank = 1;
    x.needs.int8 = 1;
    assert_int_equal(f->s->ops->variants->variant_insert(f->s, &f->ctx, &x), MF_OK);
    assert_int_equal(f->s->ops->blobs->blob_ref(who, f->s, &f->ctx, int8), MF_OK);
    assert_string_equal(who, "model_variants.sha256");
    add_delta(f, base, int8, d_int8);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, int8), MF_OK);
    assert_int_equal(yes, 0); /* staged until its release */
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, d_int8), MF_OK);
    assert_int_equal(yes, 0);
    memset(x.release_digest, 'e', MF_SHA256_HEX_LEN);
    assert_int_equal(f->s->ops->variants->variant_release_set(f->s, &f->ctx, &x, "env", 3), MF_OK);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, int8), MF_OK);
    assert_int_equal(yes, 1);
    assert_int_equal(f->s->ops->blobs->blob_released(&yes, f->s, &f->ctx, d_int8), MF_OK);
    assert_int_equal(yes, 1);
}

/*
 * Columns whose name marks a digest but that name no file of the blob store, each for a
 * reason; every other such column must be in mf_store__blob_cols.
 */
static const struct mf_store_blob_col not_blobs[] = {
    /* the SHA-256 of the release payload, whose envelope lives in model_versions.release */
    {"model_versions", "release_digest"},
    /* the same for a variant's release (migration 12), inline in model_variants.release */
    {"model_variants", "release_digest"},
    /* what a device reported it runs: device-supplied, names no blob the server keeps (and
     * counting it would let any device keep any blob alive) */
    {"device_models", "sha256"},
    {"events", "sha256"},
    /* credential and token hashes */
    {"tokens", "hash"},
    {"devices", "credential_hash"},
};

/* Trust documents and release envelopes are stored inline (trust_docs.envelope,
 * model_versions.release), not as blob files, so they need no entry either. */
static int marks_a_digest(const char *column)
{
    return strstr(column, "sha") || strstr(column, "digest") || strstr(column, "hash") ||
           strncmp(column, "blob", 4) == 0;
}

static int listed_in(const struct mf_store_blob_col *cols, size_t n, const char *table,
                     const char *column)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cols[i].table, table) == 0 && strcmp(cols[i].column, column) == 0)
            return 1;
    }
    return 0;
}

struct schema_walk {
    size_t seen, counted;
};

/* One column of the live schema. */
static void check_column(struct schema_walk *w, const char *table, const char *column)
{
    const size_t n_not = sizeof(not_blobs) / sizeof(not_blobs[0]);

    if (listed_in(mf_store__blob_cols, mf_store__n_blob_cols, table, column))
        w->counted++;
    w->seen++;
    if (!marks_a_digest(column))
        return;
    if (!listed_in(mf_store__blob_cols, mf_store__n_blob_cols, table, column) &&
        !listed_in(not_blobs, n_not, table, column))
        fail_msg("column %s.%s looks like a blob reference: add it to the reference check "
                 "(server/store/store_blobref.c) or, if it names no blob file, to not_blobs here",
                 table, column);
}

static void walk_sqlite(struct schema_walk *w, const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;

    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT m.name, p.name FROM sqlite_master m,"
                                        " pragma_table_info(m.name) p WHERE m.type = 'table'",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        check_column(w, (const char *)sqlite3_column_text(st, 0),
                     (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void walk_pg(struct schema_walk *w, const char *url)
{
    PGconn *c = PQconnectdb(url);
    PGresult *res;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    res = PQexec(c, "SELECT table_name, column_name FROM information_schema.columns"
                    " WHERE table_schema = current_schema()");
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    for (int i = 0; i < PQntuples(res); i++)
        check_column(w, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
    PQclear(res);
    PQfinish(c);
}

/* Every column of every table of the migrated schema: a new column that names a blob and is
 * not counted by the reference check fails here, on each store. */
static void test_blob_gc__schema_walk_finds_every_blob_column(void **state)
{
    struct fixture *f = *state;
    struct schema_walk w = {0, 0};

    if (f->pg)
        walk_pg(&w, f->url);
    else
        walk_sqlite(&w, f->url);
    assert_true(w.seen > 50); /* the walk saw the schema, not an empty database */
    /* Every column the check counts exists (a typo would count nothing). */
    assert_int_equal(w.counted, mf_store__n_blob_cols);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_blob_gc__shared_inputs_are_not_orphans),
        T(test_blob_gc__unreferenced_inputs_are_removed),
        T(test_blob_gc__crash_leaves_an_orphan_the_sweep_removes),
        T(test_blob_gc__removal_keeps_a_blob_claimed_meanwhile),
        T(test_blob_gc__released_blobs),
        T(test_blob_gc__variant_blobs),
        T(test_blob_gc__chunk_list_blobs),
        T(test_blob_gc__schema_walk_finds_every_blob_column),
    };
#undef T

    return cmocka_run_group_tests_name("blob_gc", tests, NULL, NULL);
}
