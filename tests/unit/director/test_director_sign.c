/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's batching signer (server/director/director_sign.c) under concurrency: threads
 * call mf_director__sign() at once; every envelope verifies on a device and is distinct,
 * the counters show that calls were batched (fewer signatures than assignments), and with a
 * batch size of 1 they never are. A lone caller always gets a plain signature.
 */
#include "mf_test.h"
#include "kit_fs.h"
#include "manifest_fixture.h"
#include "director/director.h"
#include "director/director_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define THREADS 8
#define CALLS 40

static struct fx world;
static char dir[64];
static struct mf_director *director;
static uint8_t *rel;
static size_t rel_len;
static uint8_t rel_digest[MF_MANIFEST_DIGEST_LEN];

struct worker {
    int id;
    pthread_barrier_t *start;
    char device[32];
    uint8_t *envs[CALLS];
    size_t lens[CALLS];
    int err;
};

static int setup(void **state)
{
    struct mf_ctx ctx;
    char key[128];
    int changed = 0;
    FILE *f;

    (void)state;
    fx_init(&world);
    mf_kit_fs_mkdtemp(dir, sizeof(dir), "mf-dirsign");
    (void)snprintf(key, sizeof(key), "%s/dir.pem", dir);
    f = fopen(key, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(world.priv[K_DIR], 1, world.priv_len[K_DIR], f), world.priv_len[K_DIR]);
    assert_int_equal(fclose(f), 0);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_director__init_key(&changed, &ctx, dir, key), MF_OK);
    assert_int_equal(mf_director__open(&director, &ctx, dir), MF_OK);
    rel = fx_release_v1(&rel_len, rel_digest, &world);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_director__close(director);
    mf_free(NULL, rel);
    fx_free(&world);
    mf_kit_fs_rmtree(dir);
    return 0;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    (void)snprintf(w->device, sizeof(w->device), "cam-%d", w->id);
    (void)pthread_barrier_wait(w->start);
    for (int i = 0; i < CALLS && w->err == MF_OK; i++) {
        mf_manifest_assignment_spec spec = {.device_id = w->device,
                                            .model = FX_MODEL,
                                            .nonce = FX_NONCE,
                                            .sequence = (uint64_t)i + 1};

        memcpy(spec.release_sha256, rel_digest, sizeof(rel_digest));
        w->err = mf_director__sign(&w->envs[i], &w->lens[i], director, &ctx, &spec);
    }
    return NULL;
}

/* Runs THREADS x CALLS concurrent signatures; returns how many envelopes carry a batch
 * member after checking that all verify (each device in sequence order) and differ. The
 * signer is held until every thread's first call waits in it, so those meet whatever the
 * machine's load (a test that only hoped for overlap failed on a busy machine). */
static size_t run_concurrent(uint64_t *signatures, uint64_t *assignments)
{
    static struct worker w[THREADS];
    pthread_barrier_t start;
    pthread_t th[THREADS];
    uint64_t s0, a0;
    size_t batched = 0;

    mf_director__stats(director, &s0, &a0);
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    mf_batcher__hold(&director->batcher);
    for (int t = 0; t < THREADS; t++) {
        memset(&w[t], 0, sizeof(w[t]));
        w[t].id = t;
        w[t].start = &start;
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int i = 0; i < 5000 && mf_batcher__queued(&director->batcher) < THREADS; i++) {
        struct timespec ms = {0, 1000000};

        (void)nanosleep(&ms, NULL);
    }
    assert_int_equal(mf_batcher__queued(&director->batcher), THREADS);
    mf_batcher__release(&director->batcher);
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    (void)pthread_barrier_destroy(&start);
    for (int t = 0; t < THREADS; t++) {
        mf_trust *tr = fx_trust(&world, NULL);

        assert_int_equal(w[t].err, MF_OK);
        for (int i = 0; i < CALLS; i++) {
            mf_manifest_assignment *a = NULL;

            if (mf_trust_verify_assignment(&a, tr, w[t].device, FX_NONCE, w[t].envs[i],
                                           w[t].lens[i], rel, rel_len, FX_NOW) != MF_OK)
                fail_msg("thread %d call %d: %s", t, i, mf_trust_errmsg(tr));
            assert_int_equal(a->sequence, (uint64_t)i + 1);
            mf_manifest_assignment_free(a);
            batched += strstr((const char *)w[t].envs[i], "\"batch\"") != NULL;
            for (int u = 0; u <= t; u++) {
                for (int j = 0; j < (u == t ? i : CALLS); j++)
                    assert_string_not_equal(w[t].envs[i], w[u].envs[j]);
            }
        }
        mf_trust_free(tr);
    }
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < CALLS; i++)
            mf_free(NULL, w[t].envs[i]);
    }
    mf_director__stats(director, signatures, assignments);
    *signatures -= s0;
    *assignments -= a0;
    return batched;
}

static void test_director_sign__concurrent_batches(void **state)
{
    uint64_t sigs, assigns;
    size_t batched;

    (void)state;
    mf_director__set_batch(director, MF_DIRECTOR_BATCH_DEFAULT);
    batched = run_concurrent(&sigs, &assigns);
    assert_int_equal(assigns, THREADS * CALLS);
    /* Eight callers met in the held signer: their first assignments share one signature. */
    assert_true(sigs < assigns);
    assert_true(batched > 0);
    print_message("batch 32: %llu signatures for %llu assignments\n", (unsigned long long)sigs,
                  (unsigned long long)assigns);
}

static void test_director_sign__batch_one_never_batches(void **state)
{
    uint64_t sigs, assigns;

    (void)state;
    mf_director__set_batch(director, 1);
    assert_int_equal(run_concurrent(&sigs, &assigns), 0);
    assert_int_equal(sigs, assigns);
    assert_int_equal(assigns, THREADS * CALLS);
    mf_director__set_batch(director, MF_DIRECTOR_BATCH_DEFAULT);
}

/* Idle server: one caller, nothing queued, a plain signature signed at once. */
static void test_director_sign__lone_call_is_plain(void **state)
{
    mf_manifest_assignment_spec spec = {
        .device_id = "cam-lone", .model = FX_MODEL, .nonce = FX_NONCE, .sequence = 1};
    mf_manifest_assignment *a = NULL;
    mf_trust *t = fx_trust(&world, NULL);
    struct mf_ctx ctx;
    uint64_t s0, a0, s1, a1;
    uint8_t *env = NULL;
    size_t len = 0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memcpy(spec.release_sha256, rel_digest, sizeof(rel_digest));
    mf_director__stats(director, &s0, &a0);
    assert_int_equal(mf_director__sign(&env, &len, director, &ctx, &spec), MF_OK);
    mf_director__stats(director, &s1, &a1);
    assert_int_equal(s1 - s0, 1);
    assert_int_equal(a1 - a0, 1);
    assert_null(strstr((const char *)env, "batch"));
    assert_int_equal(
        mf_trust_verify_assignment(&a, t, "cam-lone", FX_NONCE, env, len, rel, rel_len, FX_NOW),
        MF_OK);
    mf_manifest_assignment_free(a);
    mf_trust_free(t);
    mf_free(NULL, env);
}

/* A failed batch reports its error to the caller (here: a spec the builder refuses). */
static void test_director_sign__error_reaches_caller(void **state)
{
    mf_manifest_assignment_spec spec = {
        .device_id = "bad device id", .model = FX_MODEL, .nonce = FX_NONCE, .sequence = 1};
    struct mf_ctx ctx;
    uint8_t *env = NULL;
    size_t len = 0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_true(mf_director__sign(&env, &len, director, &ctx, &spec) < 0);
    assert_null(env);
    assert_non_null(strstr(ctx.errmsg, "cannot sign the assignment"));
}

int main(void)
{
    return MF_TEST_RUN("director_sign", setup, teardown,
                       cmocka_unit_test(test_director_sign__concurrent_batches),
                       cmocka_unit_test(test_director_sign__batch_one_never_batches),
                       cmocka_unit_test(test_director_sign__lone_call_is_plain),
                       cmocka_unit_test(test_director_sign__error_reaches_caller));
}
