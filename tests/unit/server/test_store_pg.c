/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What only the PostgreSQL store has: several handles (nodes) on one database, migrations
 * racing at startup, the connection pool under more threads than connections, reconnects
 * after the server dropped a connection, and its URL errors. The behaviour both backends
 * share is test_server_store's suite, run on PostgreSQL as unit_server_store_pg. Needs the
 * mf_pg fixture (tests/pg/start.sh) through MF_TEST_PG_URL_FILE.
 */
#include "mf_test.h"
#include "store_fixture.h"
#include "common/token.h"
#include "store/pg/pg_store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 2
#define THREADS_PER_NODE 12 /* 24 > MF_PG_POOL_MAX: exercises waiting for a free connection */
#define RESERVES_PER_THREAD 25
#define JOBS 60

struct pg_fixture {
    char url[MF_PGTEST_URL_MAX];
    struct mf_ctx ctx;
    struct mf_store *node[NODES];
};

static int pg_setup(void **state)
{
    struct pg_fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    if (!mf_pgtest__enabled())
        fail_msg("MF_TEST_PG_URL_FILE is not set: run under ctest (fixture mf_pg)");
    mf_pgtest__create_db(f->url, "pg");
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    *state = f;
    return 0;
}

static int pg_teardown(void **state)
{
    struct pg_fixture *f = *state;

    for (int i = 0; i < NODES; i++)
        mf_store__close(f->node[i]);
    mf_pgtest__drop_db(f->url);
    free(f);
    return 0;
}

/* Fails naming the slot when one of the function pointers of `table` from byte `first` to
 * byte `end` is NULL. */
static void expect_slots_set(const char *scheme, const char *table, const void *ops, size_t first,
                             size_t end)
{
    const size_t n = (end - first) / sizeof(void (*)(void));

    assert_non_null(ops);
    for (size_t i = 0; i < n; i++) {
        void (*fn)(void);

        memcpy(&fn, (const char *)ops + first + i * sizeof(fn), sizeof(fn));
        if (!fn)
            fail_msg("%s ops: %s slot %zu of %zu is NULL", scheme, table, i, n);
    }
}

/* Every op of every table is implemented: each domain table is function pointers, so is the
 * backend's table from `open` to its domain tables, and a designated initializer that
 * forgets one compiles silently to NULL. The SQLite backend's tables too. */
static void test_store_pg__every_op_implemented(void **state)
{
    const struct mf_store_ops *tables[] = {&mf_store__pg_ops, &mf_store__postgres_ops,
                                           &mf_store__sqlite_ops};

    (void)state;
    assert_string_equal(mf_store__pg_ops.scheme, "postgresql");
    assert_string_equal(mf_store__postgres_ops.scheme, "postgres");
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        const struct mf_store_ops *o = tables[t];

        expect_slots_set(o->scheme, "lifecycle", o, offsetof(struct mf_store_ops, open),
                         offsetof(struct mf_store_ops, auth));
#define EXPECT_DOMAIN(name) expect_slots_set(o->scheme, #name, o->name, 0, sizeof(*o->name))
        EXPECT_DOMAIN(auth);
        EXPECT_DOMAIN(registry);
        EXPECT_DOMAIN(devices);
        EXPECT_DOMAIN(checkin);
        EXPECT_DOMAIN(director);
        EXPECT_DOMAIN(jobs);
        EXPECT_DOMAIN(offload);
        EXPECT_DOMAIN(rollout);
        EXPECT_DOMAIN(distill);
        EXPECT_DOMAIN(blobs);
        EXPECT_DOMAIN(audit);
        EXPECT_DOMAIN(webhooks);
        EXPECT_DOMAIN(variants);
#undef EXPECT_DOMAIN
        /* The domain tables are the whole rest of the struct: none is left unchecked. */
        assert_int_equal(sizeof(*o), offsetof(struct mf_store_ops, variants) + sizeof(o->variants));
    }
}

static void test_store_pg__open_errors(void **state)
{
    struct pg_fixture *f = *state;
    char url[MF_PGTEST_URL_MAX + 1100], *q;
    struct mf_store *s = NULL;

    /* The short scheme selects the same backend. */
    (void)snprintf(url, sizeof(url), "postgres%s", strchr(f->url, ':'));
    assert_int_equal(mf_store__open(&s, &f->ctx, url, 0), MF_OK);
    mf_store__close(s);
    /* A database that does not exist: NOTFOUND, so `serve` can say "run init first". */
    q = strchr(strstr(f->url, "://") + 3, '?');
    assert_non_null(q);
    (void)snprintf(url, sizeof(url), "postgresql:///mft_no_such_db%s", q);
    assert_int_equal(mf_store__open(&s, &f->ctx, url, 0), MF_E_NOTFOUND);
    assert_null(s);
    /* No server there: IO, and the message never repeats the URL's password. */
    (void)snprintf(url, sizeof(url),
                   "postgresql://u:s3cr3tpw@/db?host=/nonexistent-mf-dir&connect_timeout=2");
    assert_int_equal(mf_store__open(&s, &f->ctx, url, 0), MF_E_IO);
    assert_null(strstr(mf_ctx__errmsg(&f->ctx), "s3cr3tpw"));
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "PostgreSQL"));
    /* Longer than the bound: refused before any connection attempt. */
    memset(url, 'a', sizeof(url) - 1);
    url[sizeof(url) - 1] = '\0';
    memcpy(url, "postgresql://", 13);
    assert_int_equal(mf_store__open(&s, &f->ctx, url, 0), MF_E_LIMIT);
}

struct migrate_arg {
    struct mf_store *s;
    int applied;
    int err;
    char msg[MF_ERRMSG_MAX];
};

static void *migrate_thread(void *p)
{
    struct migrate_arg *a = p;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    a->err = a->s->ops->migrate(&a->applied, a->s, &ctx);
    (void)snprintf(a->msg, sizeof(a->msg), "%s", mf_ctx__errmsg(&ctx));
    return NULL;
}

/* Two nodes starting together on an empty database: the advisory lock lets exactly one
 * apply the migrations, the other finds them applied. */
static void test_store_pg__nodes_migrate_together(void **state)
{
    struct pg_fixture *f = *state;
    struct migrate_arg a[NODES];
    pthread_t t[NODES];
    int version = 0;

    for (int i = 0; i < NODES; i++) {
        assert_int_equal(mf_store__open(&f->node[i], &f->ctx, f->url, 0), MF_OK);
        a[i] = (struct migrate_arg){.s = f->node[i], .applied = -1};
    }
    for (int i = 0; i < NODES; i++)
        assert_int_equal(pthread_create(&t[i], NULL, migrate_thread, &a[i]), 0);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < NODES; i++)
        if (a[i].err != MF_OK)
            fail_msg("node %d: %s", i, a[i].msg);
    assert_int_equal(f->node[0]->ops->schema_version(&version, f->node[0], &f->ctx), MF_OK);
    assert_true(version >= 2);
    /* One node applied everything, the other nothing: no migration ran twice. */
    assert_int_equal(a[0].applied + a[1].applied, version);
    assert_true(a[0].applied == 0 || a[1].applied == 0);
    assert_int_equal(mf_pgtest__query_ll(f->url, "SELECT count(*) FROM schema_version"), version);
}

/* Opens and migrates both nodes and enrolls one device. */
static void open_nodes(struct pg_fixture *f)
{
    uint8_t cred[MF_SHA256_LEN];
    int applied = 0;

    for (int i = 0; i < NODES; i++) {
        assert_int_equal(mf_store__open(&f->node[i], &f->ctx, f->url, 0), MF_OK);
        assert_int_equal(f->node[i]->ops->migrate(&applied, f->node[i], &f->ctx), MF_OK);
    }
    mf_token__hash(cred, "cred", 4);
    assert_int_equal(f->node[0]->ops->auth->device_enroll(f->node[0], &f->ctx, "dev-1", cred, 1),
                     MF_OK);
}

struct reserve_arg {
    struct mf_store *s;
    uint64_t got[RESERVES_PER_THREAD];
    int err;
};

static void *reserve_thread(void *p)
{
    struct reserve_arg *a = p;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (int i = 0; i < RESERVES_PER_THREAD && a->err == MF_OK; i++)
        a->err = a->s->ops->checkin->device_reserve_sequence(&a->got[i], a->s, &ctx, "dev-1", 1);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Check-ins of one device on both nodes at once, more threads than pooled connections: every
 * assignment sequence number is handed out exactly once and each thread sees its own
 * numbers grow. (Not 1..N without a gap: each database session raises the store epoch
 * before its first reservation, and its numbers start above that epoch's floor.) */
static void test_store_pg__sequence_unique_across_nodes(void **state)
{
    enum { N = NODES * THREADS_PER_NODE };
    struct pg_fixture *f = *state;
    static struct reserve_arg a[N];
    static uint64_t all[N * RESERVES_PER_THREAD];
    pthread_t t[N];

    open_nodes(f);
    for (int i = 0; i < N; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        a[i].s = f->node[i % NODES];
        assert_int_equal(pthread_create(&t[i], NULL, reserve_thread, &a[i]), 0);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].err, MF_OK);
        for (int j = 0; j < RESERVES_PER_THREAD; j++) {
            if (j > 0)
                assert_true(a[i].got[j] > a[i].got[j - 1]);
            all[i * RESERVES_PER_THREAD + j] = a[i].got[j];
        }
    }
    qsort(all, N * RESERVES_PER_THREAD, sizeof(all[0]), cmp_u64);
    assert_true(all[0] >= 1);
    for (int i = 1; i < N * RESERVES_PER_THREAD; i++)
        assert_true(all[i] > all[i - 1]);
}

static int stop_after_one(void *payload, const struct mf_store_device *d)
{
    int *seen = payload;

    (void)d;
    (*seen)++;
    return MF_E_LIMIT;
}

/* A listing stopped by its visitor returns the visitor's code, and the connection it ran on
 * is clean for the next op (the rest of the rows were drained). */
static void test_store_pg__walk_stopped_early(void **state)
{
    struct pg_fixture *f = *state;
    struct mf_store *s;
    uint8_t cred[MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];
    int seen = 0;

    open_nodes(f);
    s = f->node[0];
    for (int i = 2; i < 40; i++) {
        (void)snprintf(id, sizeof(id), "dev-%d", i);
        mf_token__hash(cred, id, strlen(id));
        assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, id, cred, 1), MF_OK);
    }
    for (int round = 0; round < MF_PG_POOL_MAX + 2; round++)
        assert_int_equal(s->ops->devices->devices_list(s, &f->ctx, stop_after_one, &seen),
                         MF_E_LIMIT);
    assert_int_equal(seen, MF_PG_POOL_MAX + 2);
    mf_token__hash(cred, "cred", 4);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, cred), MF_OK);
    assert_string_equal(id, "dev-1");
}

/* The server drops every connection (restart, failover, an admin's pg_terminate_backend):
 * the next ops succeed on fresh connections, without an error reaching the request. */
static void test_store_pg__reconnects_after_drop(void **state)
{
    struct pg_fixture *f = *state;
    struct mf_store *s;
    uint64_t first = 0;
    char id[MF_STORE_NAME_SIZE];
    uint8_t cred[MF_SHA256_LEN];

    open_nodes(f);
    s = f->node[0];
    mf_token__hash(cred, "cred", 4);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, cred), MF_OK);
    assert_true(mf_pgtest__query_ll(f->url, "SELECT count(*) FROM pg_stat_activity"
                                            " WHERE application_name = 'mf-server'"
                                            " AND datname = current_database()") >= 1);
    mf_pgtest__exec(f->url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE application_name = 'mf-server'"
                            " AND datname = current_database()");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, cred), MF_OK);
        assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 1),
                         MF_OK);
        assert_int_equal(first, (uint64_t)i + 1);
    }
}

struct claim_arg {
    struct mf_store *s;
    char owner[16];
    int64_t ids[JOBS];
    int n;
    int err;
};

static void *claim_thread(void *p)
{
    struct claim_arg *a = p;
    struct mf_store_job job;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (;;) {
        int err = a->s->ops->jobs->job_claim(&job, a->s, &ctx, a->owner, 1000, 60);

        if (err == MF_E_NOTFOUND)
            break;
        if (err == MF_OK)
            err = a->s->ops->jobs->job_complete(a->s, &ctx, job.id, a->owner);
        if (err < 0) {
            a->err = err;
            break;
        }
        a->ids[a->n++] = job.id;
    }
    return NULL;
}

/* Workers of both nodes drain one queue at once: FOR UPDATE SKIP LOCKED hands every job to
 * exactly one of them, none is lost, and each one's completion is accepted. */
static void test_store_pg__jobs_claimed_once_across_nodes(void **state)
{
    enum { N = NODES * 4 };
    struct pg_fixture *f = *state;
    static struct claim_arg a[N];
    static int seen[JOBS + 1];
    int64_t queued = -1, running = -1, max_id = 0;
    pthread_t t[N];
    char arg[32];
    int total = 0;

    open_nodes(f);
    for (int i = 0; i < JOBS; i++) {
        (void)snprintf(arg, sizeof(arg), "m/v%d", i);
        assert_int_equal(f->node[i % NODES]->ops->jobs->job_enqueue(f->node[i % NODES], &f->ctx,
                                                                    "test", arg, 1000),
                         MF_OK);
    }
    /* Enqueueing a pending job again is a no-op. */
    assert_int_equal(f->node[1]->ops->jobs->job_enqueue(f->node[1], &f->ctx, "test", "m/v0", 1000),
                     MF_OK);
    for (int i = 0; i < N; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        a[i].s = f->node[i % NODES];
        (void)snprintf(a[i].owner, sizeof(a[i].owner), "node%d-w%d", i % NODES, i);
        assert_int_equal(pthread_create(&t[i], NULL, claim_thread, &a[i]), 0);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].err, MF_OK);
        for (int j = 0; j < a[i].n; j++) {
            assert_true(a[i].ids[j] >= 1 && a[i].ids[j] <= JOBS);
            seen[a[i].ids[j]]++;
            max_id = a[i].ids[j] > max_id ? a[i].ids[j] : max_id;
        }
        total += a[i].n;
    }
    assert_int_equal(total, JOBS);
    for (int id = 1; id <= JOBS; id++)
        assert_int_equal(seen[id], 1);
    assert_int_equal(
        f->node[0]->ops->jobs->job_counts(&queued, &running, f->node[0], &f->ctx, 1000), MF_OK);
    assert_int_equal(queued, 0);
    assert_int_equal(running, 0);
    assert_int_equal(mf_pgtest__query_ll(f->url, "SELECT count(*) FROM jobs WHERE state = 'done'"
                                                 " AND attempts = 1"),
                     JOBS);
}

/* A database an older server left at schema 2, with a token and a device in it: the
 * migration to the latest schema keeps both working (the token gets the admin role, the
 * device the default channel). */
static void test_store_pg__migrate_from_schema_2(void **state)
{
    struct pg_fixture *f = *state;
    struct mf_store *s;
    struct mf_store_directives d;
    uint8_t h[MF_SHA256_LEN];
    char dev[MF_STORE_NAME_SIZE], name[MF_STORE_NAME_SIZE];
    int applied = 0, version = 0, role = 0;

    assert_int_equal(mf_store__open(&f->node[0], &f->ctx, f->url, 0), MF_OK);
    s = f->node[0];
    assert_int_equal(mf_pg__migrate_to(&applied, s, &f->ctx, 2), MF_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(mf_pg__migrate_to(&applied, s, &f->ctx, 99), MF_E_INVALID);
    mf_token__hash(h, "mfa_old", 7);
    assert_int_equal(s->ops->auth->token_insert(s, &f->ctx, MF_TOKEN_ADMIN, h, 1), MF_OK);
    /* A device row as schema 2 wrote it (today's enroll SQL needs schema 3 columns). */
    mf_pgtest__exec(f->url, "INSERT INTO devices(device_id, credential_hash, enrolled_at)"
                            " VALUES('old-cam', sha256('old-cam'), 1)");
    assert_int_equal(s->ops->migrate(&applied, s, &f->ctx), MF_OK);
    assert_true(applied >= 1);
    assert_int_equal(s->ops->schema_version(&version, s, &f->ctx), MF_OK);
    assert_int_equal(version, 2 + applied);
    assert_int_equal(s->ops->auth->admin_token_auth(&role, name, s, &f->ctx, h), MF_OK);
    assert_int_equal(role, MF_ROLE_ADMIN);
    mf_token__hash(h, "old-cam", 7);
    assert_int_equal(s->ops->auth->device_auth(dev, s, &f->ctx, h), MF_OK);
    assert_string_equal(dev, "old-cam");
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "old-cam", "m"), MF_OK);
    assert_string_equal(d.channel, "stable");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, pg_setup, pg_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_pg__every_op_implemented),
        T(test_store_pg__open_errors),
        T(test_store_pg__nodes_migrate_together),
        T(test_store_pg__sequence_unique_across_nodes),
        T(test_store_pg__walk_stopped_early),
        T(test_store_pg__reconnects_after_drop),
        T(test_store_pg__jobs_claimed_once_across_nodes),
        T(test_store_pg__migrate_from_schema_2),
    };
#undef T

    return cmocka_run_group_tests_name("store_pg", tests, NULL, NULL);
}
