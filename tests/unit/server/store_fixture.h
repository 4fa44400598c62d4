/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store under test, on both backends. PostgreSQL: the ctest fixture mf_pg
 * (tests/pg/start.sh) writes its server's URL to the file named by MF_TEST_PG_URL_FILE. Each
 * test makes its own database there, so tests run in parallel without seeing each other's
 * rows, and drops it at the end. struct store_fixture is the per-test store the store suites
 * share: a scratch dir, and the store URL of this run (that database, or a SQLite file).
 */
#ifndef MF_STORE_FIXTURE_H
#define MF_STORE_FIXTURE_H

#include "mf_ctx.h"

#include <stddef.h>

#define MF_PGTEST_URL_MAX 512

/* 1 when the environment names a PostgreSQL for this run (MF_TEST_PG_URL_FILE). */
int mf_pgtest__enabled(void);

/* Creates a fresh database and writes its URL (postgresql://...) to `url_out`. Fails the
 * test when the server cannot be reached. */
void mf_pgtest__create_db(char url_out[MF_PGTEST_URL_MAX], const char *tag);

/* Drops the database of `url` (closing its other connections first). */
void mf_pgtest__drop_db(const char *url);

/* Runs `sql` (no rows expected) on the database of `url`; fails the test on error. */
void mf_pgtest__exec(const char *url, const char *sql);

/* Runs `sql` on `url` and returns the first column of its first row as a number. */
long long mf_pgtest__query_ll(const char *url, const char *sql);

struct mf_store;

struct store_fixture {
    char dir[64];                /* scratch dir, removed at the end */
    char db[128];                /* dir/store.db: the SQLite file (the store of the SQLite run) */
    char url[MF_PGTEST_URL_MAX]; /* the store under test: db, or a fresh PostgreSQL database */
    int pg;                      /* 1 in the PostgreSQL run */
    struct mf_ctx ctx;
    struct mf_store *s; /* closed at the end */
};

/* A calloc'd fixture for this run; its PostgreSQL database is named after `tag`. With
 * `migrate`, f->s is the store opened (created) and migrated. */
struct store_fixture *store_fixture_new(const char *tag, int migrate);
/* The same on the backend `pg` names (1: PostgreSQL, 0: SQLite) instead of this run's, for a
 * suite that runs on both in one binary. Asked for PostgreSQL where none is configured, the
 * case skips (MF_SKIP) before anything is made. */
struct store_fixture *store_fixture_new_on(const char *tag, int migrate, int pg);
/* `struct list`, up to `cap` rows of `type` in v[] (n of them), and `fn`, the store listing
 * callback that appends one (failing the test past `cap`); a suite's rows to assert on. */
#define STORE_FIXTURE_COLLECTOR(list, type, cap, fn)                                               \
    struct list {                                                                                  \
        type v[cap];                                                                               \
        size_t n;                                                                                  \
    };                                                                                             \
    static int fn(void *payload, const type *row)                                                  \
    {                                                                                              \
        struct list *l = payload;                                                                  \
                                                                                                   \
        assert_true(l->n < (cap));                                                                 \
        l->v[l->n++] = *row;                                                                       \
        return MF_OK;                                                                              \
    }

/* Runs `sql` on the fixture's database from a connection of its own, behind the store's back
 * (what a crash or an older release leaves); fails the test unless it succeeds. */
void store_fixture_exec(struct store_fixture *f, const char *sql);
/* Closes the store, drops the database, removes the dir, frees `f`. */
void store_fixture_free(struct store_fixture *f);
/* Stores `dev`'s report of (`model`, `version`) with `status` and `detail` at time 100, the
 * sha256 64 times version[1] ("c1" -> "111..."); fails the test unless it is stored. */
void store_fixture_report(struct mf_store *s, struct mf_ctx *ctx, const char *dev,
                          const char *model, const char *version, const char *status,
                          const char *detail);
/* store_fixture_free(*state) as a cmocka teardown, for setups that put a fixture there. */
int store_fixture_teardown(void **state);

#endif /* MF_STORE_FIXTURE_H */
