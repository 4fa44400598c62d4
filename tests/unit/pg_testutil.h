/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL for the tests: the ctest fixture mf_pg (tests/pg/start.sh) writes its server's
 * URL to the file named by MF_TEST_PG_URL_FILE. Each test makes its own database there, so
 * tests run in parallel without seeing each other's rows, and drops it at the end.
 */
#ifndef MF_TEST_PG_TESTUTIL_H
#define MF_TEST_PG_TESTUTIL_H

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

#endif /* MF_TEST_PG_TESTUTIL_H */
