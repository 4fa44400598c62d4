/* SPDX-License-Identifier: Apache-2.0 */
/*
 * director/batcher.h: leader/follower grouping. A lone caller runs at once; callers that arrive
 * while a batch runs go together in the next one (at most max), each gets its own result,
 * and batches never overlap.
 */
#include "mf_test.h"
#include "director/batcher.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct test_item {
    struct mf_batch_item link; /* first */
    int id;
};

struct fixture {
    struct mf_batcher b;
    atomic_int in_run;   /* a run in progress: two at once is a failure */
    atomic_int overlaps; /* runs that found another one in progress */
    int sizes[4096];     /* batch sizes in order, under b's serialisation */
    int n_runs;
    /* The gate: the first run waits until the test opens it. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cv;
    int gate_armed, gate_open, first_running;
};

static void run(void *owner, struct mf_batch_item **items, size_t n)
{
    struct fixture *f = owner;

    if (atomic_fetch_add(&f->in_run, 1) != 0)
        atomic_fetch_add(&f->overlaps, 1);
    (void)pthread_mutex_lock(&f->gate_lock);
    if (f->gate_armed && f->n_runs == 0) {
        f->first_running = 1;
        (void)pthread_cond_broadcast(&f->gate_cv);
        while (!f->gate_open)
            (void)pthread_cond_wait(&f->gate_cv, &f->gate_lock);
    }
    (void)pthread_mutex_unlock(&f->gate_lock);
    if (f->n_runs < (int)(sizeof(f->sizes) / sizeof(f->sizes[0])))
        f->sizes[f->n_runs] = (int)n;
    f->n_runs++;
    for (size_t i = 0; i < n; i++)
        items[i]->err = 1000 + ((struct test_item *)(void *)items[i])->id;
    atomic_fetch_sub(&f->in_run, 1);
}

static struct fixture *fixture_new(size_t max)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    assert_int_equal(mf_batcher__init(&f->b, max, run, f), MF_OK);
    (void)pthread_mutex_init(&f->gate_lock, NULL);
    (void)pthread_cond_init(&f->gate_cv, NULL);
    return f;
}

static void fixture_free(struct fixture *f)
{
    mf_batcher__destroy(&f->b);
    (void)pthread_cond_destroy(&f->gate_cv);
    (void)pthread_mutex_destroy(&f->gate_lock);
    free(f);
}

/* A caller thread: submits `n` items, ids `id` on, one after the other; `got` is the last
 * result, `bad` counts the results that are not the item's own (1000 + its id). */
struct submitter {
    pthread_t t;
    struct fixture *f;
    int id, n, got, bad;
};

static void *submit_run(void *arg)
{
    struct submitter *s = arg;

    for (int i = 0; i < s->n; i++) {
        struct test_item it = {.id = s->id + i};

        s->got = mf_batcher__submit(&s->f->b, &it.link);
        if (s->got != 1000 + s->id + i)
            s->bad++;
    }
    return NULL;
}

static void submitter_start(struct submitter *s, struct fixture *f, int id, int n)
{
    *s = (struct submitter){.f = f, .id = id, .n = n};
    assert_int_equal(pthread_create(&s->t, NULL, submit_run, s), 0);
}

/* Joins the `count` threads of `s`; each got its own results. */
static void submitters_join(struct submitter *s, int count)
{
    for (int i = 0; i < count; i++) {
        assert_int_equal(pthread_join(s[i].t, NULL), 0);
        assert_int_equal(s[i].got, 1000 + s[i].id + s[i].n - 1);
        assert_int_equal(s[i].bad, 0);
    }
}

/* Bounded wait (5 s) for `n` items queued behind the running batch. */
static void wait_queued(struct fixture *f, size_t n)
{
    struct timespec ms = {0, 1000000};

    for (int i = 0; i < 5000 && mf_batcher__queued(&f->b) < n; i++)
        (void)nanosleep(&ms, NULL);
    assert_int_equal(mf_batcher__queued(&f->b), n);
}

static void test_batcher__lone_caller_runs_at_once(void **state)
{
    struct fixture *f = fixture_new(8);
    struct test_item it = {.id = 7};
    uint64_t batches, items;

    (void)state;
    assert_int_equal(mf_batcher__submit(&f->b, &it.link), 1007);
    assert_int_equal(mf_batcher__submit(&f->b, &it.link), 1007);
    mf_batcher__stats(&f->b, &batches, &items);
    assert_int_equal(batches, 2);
    assert_int_equal(items, 2);
    assert_int_equal(f->sizes[0], 1);
    fixture_free(f);
}

/* One caller leads and is held in its run; `others` callers queue meanwhile; after the gate
 * opens they go in batches of at most max. Each caller gets its own result. */
static void gated(size_t max, int others, const int *want_sizes, int want_runs)
{
    struct fixture *f = fixture_new(max);
    struct submitter s[16];
    uint64_t batches, items;

    assert_true(others + 1 <= 16);
    f->gate_armed = 1;
    for (int i = 0; i <= others; i++) {
        submitter_start(&s[i], f, i, 1);
        if (i == 0) { /* the leader is in its run before the others come */
            (void)pthread_mutex_lock(&f->gate_lock);
            while (!f->first_running)
                (void)pthread_cond_wait(&f->gate_cv, &f->gate_lock);
            (void)pthread_mutex_unlock(&f->gate_lock);
        }
    }
    wait_queued(f, (size_t)others);
    (void)pthread_mutex_lock(&f->gate_lock);
    f->gate_open = 1;
    (void)pthread_cond_broadcast(&f->gate_cv);
    (void)pthread_mutex_unlock(&f->gate_lock);
    submitters_join(s, others + 1);
    mf_batcher__stats(&f->b, &batches, &items);
    assert_int_equal(batches, (uint64_t)want_runs);
    assert_int_equal(items, (uint64_t)others + 1);
    assert_int_equal(f->n_runs, want_runs);
    for (int i = 0; i < want_runs; i++)
        assert_int_equal(f->sizes[i], want_sizes[i]);
    assert_int_equal(atomic_load(&f->overlaps), 0);
    fixture_free(f);
}

static void test_batcher__waiting_callers_go_together(void **state)
{
    static const int sizes[] = {1, 5};

    (void)state;
    gated(8, 5, sizes, 2);
}

static void test_batcher__batches_stop_at_max(void **state)
{
    static const int sizes[] = {1, 2, 2, 1};

    (void)state;
    gated(2, 5, sizes, 4);
}

static void test_batcher__max_one_never_groups(void **state)
{
    static const int sizes[] = {1, 1, 1, 1};

    (void)state;
    gated(1, 3, sizes, 4);
}

/* hold: callers queue as behind a running batch; release: they go in one batch. */
static void test_batcher__hold_release(void **state)
{
    struct fixture *f = fixture_new(8);
    struct submitter s[4];
    uint64_t batches, items;

    (void)state;
    mf_batcher__hold(&f->b);
    for (int i = 0; i < 4; i++)
        submitter_start(&s[i], f, i, 1);
    wait_queued(f, 4);
    mf_batcher__stats(&f->b, &batches, &items);
    assert_int_equal(batches, 0); /* nothing ran while held */
    mf_batcher__release(&f->b);
    submitters_join(s, 4);
    mf_batcher__stats(&f->b, &batches, &items);
    assert_int_equal(batches, 1);
    assert_int_equal(items, 4);
    /* Released with nobody queued: free again, a lone caller runs at once. */
    mf_batcher__hold(&f->b);
    mf_batcher__release(&f->b);
    {
        struct test_item it = {.id = 5};

        assert_int_equal(mf_batcher__submit(&f->b, &it.link), 1005);
    }
    fixture_free(f);
}

/* Many threads at once: every item done once with its own result, runs never overlap. */
static void test_batcher__many_threads(void **state)
{
    struct fixture *f = fixture_new(MF_BATCHER_MAX);
    struct submitter s[8];
    uint64_t batches, items;

    (void)state;
    for (int i = 0; i < 8; i++)
        submitter_start(&s[i], f, i * 1000, 500);
    submitters_join(s, 8);
    mf_batcher__stats(&f->b, &batches, &items);
    assert_int_equal(items, 8 * 500);
    assert_true(batches >= 1 && batches <= items);
    assert_int_equal(atomic_load(&f->overlaps), 0);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batcher__lone_caller_runs_at_once),
        cmocka_unit_test(test_batcher__waiting_callers_go_together),
        cmocka_unit_test(test_batcher__batches_stop_at_max),
        cmocka_unit_test(test_batcher__max_one_never_groups),
        cmocka_unit_test(test_batcher__hold_release),
        cmocka_unit_test(test_batcher__many_threads),
    };

    return cmocka_run_group_tests_name("batcher", tests, NULL, NULL);
}
