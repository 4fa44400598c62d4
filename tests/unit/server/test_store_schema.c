/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One migrations table drives both backends (store_schema.h): every entry has both
 * dialects, and a fresh store on SQLite and one on PostgreSQL (the mf_pg fixture, through
 * MF_TEST_PG_URL_FILE) reach the same schema version with the same tables, columns and
 * indexes. Column types differ by dialect and are not compared; the deliberate differences
 * in names are listed in `deliberate` below.
 */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "store/store_engine.h"
#include "store/store_schema.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAMES_MAX 512
#define NAME_SIZE 160

/* "table.column" and "index:name" names of one backend's schema. */
struct names {
    char v[NAMES_MAX][NAME_SIZE];
    size_t n;
};

struct schema_fixture {
    char dir[64];
    char sqlite_url[128], pg_url[MF_PGTEST_URL_MAX];
    struct mf_ctx ctx;
    struct mf_store *sqlite, *pg;
    struct names a, b;
};

/* Names only one backend has, on purpose: PostgreSQL keeps admin tokens in creation order
 * by a column (SQLite reads its rowid), and names the indexes of primary keys and UNIQUE
 * columns itself (SQLite's are internal, sqlite_autoindex_*, and filtered out by the query). */
static const char *const deliberate[] = {
    "tokens.seq",
    NULL,
};

static int is_deliberate(const char *name)
{
    for (const char *const *d = deliberate; *d; d++) {
        if (strcmp(*d, name) == 0)
            return 1;
    }
    return 0;
}

static void names_add(struct names *l, const char *a, const char *b)
{
    assert_true(l->n < NAMES_MAX);
    assert_true((size_t)snprintf(l->v[l->n], NAME_SIZE, "%s%s", a, b) < NAME_SIZE);
    l->n++;
}

static int by_name(const void *x, const void *y)
{
    return strcmp(x, y);
}

static int schema_setup(void **state)
{
    struct schema_fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    if (!mf_pgtest__enabled())
        fail_msg("MF_TEST_PG_URL_FILE is not set: run under ctest (fixture mf_pg)");
    mf_ctx__init(&f->ctx, NULL, NULL, NULL, "test");
    mf_kit_fs_mkdtemp(f->dir, sizeof(f->dir), "mf-schema");
    (void)snprintf(f->sqlite_url, sizeof(f->sqlite_url), "sqlite:%s/store.db", f->dir);
    mf_pgtest__create_db(f->pg_url, "schema");
    assert_int_equal(mf_store__open(&f->sqlite, &f->ctx, f->sqlite_url, 1), MF_OK);
    assert_int_equal(mf_store__open(&f->pg, &f->ctx, f->pg_url, 1), MF_OK);
    *state = f;
    return 0;
}

static int schema_teardown(void **state)
{
    struct schema_fixture *f = *state;

    mf_store__close(f->sqlite);
    mf_store__close(f->pg);
    mf_pgtest__drop_db(f->pg_url);
    mf_kit_fs_rmtree(f->dir);
    free(f);
    return 0;
}

static void test_store_schema__every_migration_in_both_dialects(void **state)
{
    (void)state;
    assert_non_null(mf_store__schema_table.sqlite);
    assert_non_null(mf_store__schema_table.pg);
    for (int i = 0; i < MF_STORE_SCHEMA_LATEST; i++) {
        const struct mf_store_migration *m = &mf_store__migrations[i];

        if (m->n != i + 1)
            fail_msg("migration entry %d is numbered %d", i, m->n);
        if (!m->sqlite || !m->sqlite[0] || !m->pg || !m->pg[0])
            fail_msg("migration %d lacks a dialect (sqlite %s, pg %s)", m->n,
                     m->sqlite ? "set" : "NULL", m->pg ? "set" : "NULL");
    }
}

/* FNV-1a, 64 bits: enough to see that a text changed. */
static uint64_t fnv1a(const char *t)
{
    uint64_t h = 14695981039346656037u;

    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

/* A shipped migration never changes (a fix is a new one), in either dialect: the hashes of
 * the texts as the backends shipped them before the one table (sqlite.c's and pg.c's
 * arrays at ec23789). A new migration appends its pair here. */
static void test_store_schema__shipped_texts_unchanged(void **state)
{
    static const uint64_t shipped[MF_STORE_SCHEMA_LATEST][2] = {
        {0x8f2af8c7e50649f5u, 0xde31a797d00bcaceu}, {0x2913b964c08c083eu, 0x8d44576e56d58504u},
        {0x3c02bfd3beb21590u, 0x5c1832c3d081116bu}, {0xf77ce63e7beda883u, 0xb19268cefae58aaau},
        {0x3a4181aa07fe2f13u, 0x4be1ca3dc7f7065eu}, {0x60abc2c3a729223fu, 0x93748eec6570062eu},
        {0xe3831dbc8870465du, 0x6b3c5ea6b25eedb3u}, {0xc1f5f23828aca08cu, 0xf24e4f7a6a29edefu},
        {0xd8fef35aa8a61627u, 0x8c74c162e73e1936u}, {0x476b5b055aed07efu, 0x44e675ac0aa1ec2eu},
        {0x1a06e3d062845cd0u, 0xdf9a40e7b9cb4256u}, {0x77616f0ffeb3099cu, 0xa2e03efb1ace0e02u},
        {0x5817acbdb81bd3e1u, 0x6fe5f50de27bfc91u}, {0x5b13f211fc747c79u, 0x9017a4da17227b7bu},
        {0x5c4d44524b91df64u, 0x5c4d44524b91df64u},
    };

    (void)state;
    for (int i = 0; i < MF_STORE_SCHEMA_LATEST; i++) {
        if (fnv1a(mf_store__migrations[i].sqlite) != shipped[i][0])
            fail_msg("SQLite text of migration %d changed", i + 1);
        if (fnv1a(mf_store__migrations[i].pg) != shipped[i][1])
            fail_msg("PostgreSQL text of migration %d changed", i + 1);
    }
}

/* Both backends migrate a fresh store to the same, latest version. */
static void migrate_both(struct schema_fixture *f)
{
    struct mf_store *stores[] = {f->sqlite, f->pg};

    for (size_t i = 0; i < 2; i++) {
        int applied = 0, version = 0;

        assert_int_equal(stores[i]->ops->migrate(&applied, stores[i], &f->ctx), MF_OK);
        assert_int_equal(applied, MF_STORE_SCHEMA_LATEST);
        assert_int_equal(stores[i]->ops->schema_version(&version, stores[i], &f->ctx), MF_OK);
        assert_int_equal(version, MF_STORE_SCHEMA_LATEST);
    }
}

static void test_store_schema__same_version(void **state)
{
    migrate_both(*state);
}

/* Each backend's tables' columns and its own indexes, read through the store's engine. The
 * indexes PostgreSQL makes for primary keys and UNIQUE constraints are the constraints' (as
 * SQLite's sqlite_autoindex_*): the store's CREATE INDEX ones are compared. */
static const struct mf_sql sql_columns =
    MF_SQL_PAIR("SELECT m.name || '.', p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p"
                " WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
                "SELECT table_name || '.', column_name::text FROM information_schema.columns"
                " WHERE table_schema = current_schema()",
                "listing columns");
static const struct mf_sql sql_indexes =
    MF_SQL_PAIR("SELECT 'index:', name FROM sqlite_master WHERE type = 'index'"
                " AND name NOT LIKE 'sqlite_autoindex_%'",
                "SELECT 'index:'::text, i.indexname::text FROM pg_indexes i"
                " WHERE i.schemaname = current_schema()"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
                "listing indexes");

static int add_name(void *payload, const struct mf_store_cursor *row)
{
    names_add(payload, mf_store__col_str(row, 0), mf_store__col_str(row, 1));
    return MF_OK;
}

static void store_names(struct names *out, struct mf_store *s, struct mf_ctx *ctx)
{
    assert_int_equal(mf_store__run(NULL, s, NULL, ctx, &sql_columns, add_name, out, ""), MF_OK);
    assert_int_equal(mf_store__run(NULL, s, NULL, ctx, &sql_indexes, add_name, out, ""), MF_OK);
}

static void test_store_schema__same_tables_columns_and_indexes(void **state)
{
    struct schema_fixture *f = *state;
    size_t i = 0, j = 0, missing = 0;

    migrate_both(f);
    store_names(&f->a, f->sqlite, &f->ctx);
    store_names(&f->b, f->pg, &f->ctx);
    assert_true(f->a.n > 40); /* the query saw the schema: tens of tables' columns */
    qsort(f->a.v, f->a.n, sizeof(f->a.v[0]), by_name);
    qsort(f->b.v, f->b.n, sizeof(f->b.v[0]), by_name);
    /* A merge of the two sorted lists: every name on one side only is reported. */
    while (i < f->a.n || j < f->b.n) {
        int cmp = i == f->a.n ? 1 : j == f->b.n ? -1 : strcmp(f->a.v[i], f->b.v[j]);

        if (cmp == 0) {
            i++, j++;
        } else if (cmp < 0) {
            if (!is_deliberate(f->a.v[i]))
                print_error("only on SQLite: %s\n", f->a.v[i]), missing++;
            i++;
        } else {
            if (!is_deliberate(f->b.v[j]))
                print_error("only on PostgreSQL: %s\n", f->b.v[j]), missing++;
            j++;
        }
    }
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_schema__every_migration_in_both_dialects),
        cmocka_unit_test(test_store_schema__shipped_texts_unchanged),
        cmocka_unit_test_setup_teardown(test_store_schema__same_version, schema_setup,
                                        schema_teardown),
        cmocka_unit_test_setup_teardown(test_store_schema__same_tables_columns_and_indexes,
                                        schema_setup, schema_teardown),
    };

    return cmocka_run_group_tests_name("store_schema", tests, NULL, NULL);
}
