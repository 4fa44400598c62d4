/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL test databases and the store fixture (see store_fixture.h). */
#include "mf_test.h"
#include "store_fixture.h"
#include "kit_fs.h"
#include "store/store.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mf_pgtest__enabled(void)
{
    const char *f = getenv("MF_TEST_PG_URL_FILE");

    return f && f[0];
}

/* The fixture's URL (its maintenance database). */
static void base_url(char out[MF_PGTEST_URL_MAX])
{
    const char *path = getenv("MF_TEST_PG_URL_FILE");
    FILE *f;
    size_t n;

    assert_non_null(path);
    f = fopen(path, "r");
    if (!f)
        fail_msg("no PostgreSQL URL in %s: is the mf_pg fixture (tests/pg/start.sh) running?",
                 path);
    assert_non_null(fgets(out, MF_PGTEST_URL_MAX, f));
    (void)fclose(f);
    n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
}

/* `url` with its database (the path after the authority) replaced by `db`. */
static void with_db(char out[MF_PGTEST_URL_MAX], const char *url, const char *db)
{
    const char *auth = strstr(url, "://");
    const char *path, *query;

    assert_non_null(auth);
    path = strchr(auth + 3, '/');
    if (!path)
        path = url + strlen(url);
    query = strchr(path, '?');
    if (!query)
        query = path + strlen(path);
    assert_true(snprintf(out, MF_PGTEST_URL_MAX, "%.*s/%s%s", (int)(path - url), url, db, query) <
                MF_PGTEST_URL_MAX);
}

static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static PGconn *connect_or_fail(const char *url)
{
    PGconn *c = PQconnectdb(url);

    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("PostgreSQL: %s", PQerrorMessage(c));
    (void)PQsetNoticeProcessor(c, ignore_notice, NULL);
    return c;
}

static void exec_on(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);

    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("PostgreSQL '%s': %s", sql, PQerrorMessage(c));
    PQclear(r);
}

void mf_pgtest__create_db(char url_out[MF_PGTEST_URL_MAX], const char *tag)
{
    static unsigned counter;
    char base[MF_PGTEST_URL_MAX], db[96], sql[160];
    PGconn *c;

    base_url(base);
    (void)snprintf(db, sizeof(db), "mft_%s_%ld_%u", tag, (long)getpid(), counter++);
    c = connect_or_fail(base);
    (void)snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", db);
    exec_on(c, sql);
    (void)snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
    exec_on(c, sql);
    PQfinish(c);
    with_db(url_out, base, db);
}

void mf_pgtest__drop_db(const char *url)
{
    char base[MF_PGTEST_URL_MAX], sql[160];
    PGconn *c = connect_or_fail(url);
    const char *db = PQdb(c);

    (void)snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
    base_url(base);
    {
        PGconn *m = connect_or_fail(base);

        PQfinish(c); /* after reading PQdb: its string lives in c */
        exec_on(m, sql);
        PQfinish(m);
    }
}

void mf_pgtest__exec(const char *url, const char *sql)
{
    PGconn *c = connect_or_fail(url);

    exec_on(c, sql);
    PQfinish(c);
}

void store_fixture_exec(struct store_fixture *f, const char *sql)
{
    sqlite3 *db = NULL;

    if (f->pg) {
        mf_pgtest__exec(f->url, sql);
        return;
    }
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

long long mf_pgtest__query_ll(const char *url, const char *sql)
{
    PGconn *c = connect_or_fail(url);
    PGresult *r = PQexec(c, sql);
    long long v;

    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        fail_msg("PostgreSQL '%s': %s", sql, PQerrorMessage(c));
    v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return v;
}

struct store_fixture *store_fixture_new(const char *tag, int migrate)
{
    return store_fixture_new_on(tag, migrate, mf_pgtest__enabled());
}

struct store_fixture *store_fixture_new_on(const char *tag, int migrate, int pg)
{
    struct store_fixture *f;
    char prefix[32];
    int applied = -1;

    if (pg && !mf_pgtest__enabled())
        MF_SKIP("no PostgreSQL fixture (MF_TEST_PG_URL_FILE)");
    f = calloc(1, sizeof(*f));
    assert_non_null(f);
    (void)snprintf(prefix, sizeof(prefix), "mf-%s", tag);
    mf_kit_fs_mkdtemp(f->dir, sizeof(f->dir), prefix);
    (void)snprintf(f->db, sizeof(f->db), "%s/store.db", f->dir);
    f->pg = pg;
    if (f->pg)
        mf_pgtest__create_db(f->url, tag);
    else
        (void)snprintf(f->url, sizeof(f->url), "%s", f->db);
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    if (migrate) {
        assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 1), MF_OK);
        assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    }
    return f;
}

void store_fixture_free(struct store_fixture *f)
{
    mf_store__close(f->s);
    if (f->pg)
        mf_pgtest__drop_db(f->url);
    mf_kit_fs_rmtree(f->dir);
    free(f);
}

int store_fixture_teardown(void **state)
{
    store_fixture_free(*state);
    return 0;
}

void store_fixture_report(struct mf_store *s, struct mf_ctx *ctx, const char *dev,
                          const char *model, const char *version, const char *status,
                          const char *detail)
{
    struct mf_store_status st;

    memset(&st, 0, sizeof(st));
    (void)snprintf(st.device_id, sizeof(st.device_id), "%s", dev);
    (void)snprintf(st.model, sizeof(st.model), "%s", model);
    (void)snprintf(st.version, sizeof(st.version), "%s", version);
    memset(st.sha256, version[1], MF_SHA256_HEX_LEN); /* "c1" -> "111...": one per version */
    (void)snprintf(st.status, sizeof(st.status), "%s", status);
    (void)snprintf(st.detail, sizeof(st.detail), "%s", detail);
    st.reported_at = 100;
    assert_int_equal(s->ops->devices->report_insert(s, ctx, &st), MF_OK);
}
