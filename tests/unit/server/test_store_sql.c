/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The statement catalogue's placeholder rewriting (store_engine.h): the PostgreSQL backend
 * turns SQLite's `?` and `?N` into $1..$n when it prepares a statement, and leaves string
 * literals, quoted identifiers and PostgreSQL's own $n alone. Known vectors, and the bound.
 */
#include "mf_test.h"
#include "kit_case.h"
#include "store/store_engine.h"

#include <string.h>

static void test_store_sql__rewrites_placeholders(void **state)
{
    static const struct mf_kit_case v[] = {
        {"SELECT 1", "SELECT 1"},
        {"SELECT x FROM t WHERE a = ? AND b = ?", "SELECT x FROM t WHERE a = $1 AND b = $2"},
        /* ?N names parameter N, used as often as it appears. */
        {"WHERE (?1 = '' OR model = ?1) AND seq > ?2",
         "WHERE ($1 = '' OR model = $1) AND seq > $2"},
        {"SET error = ?3 WHERE id = ?1 AND owner = ?2",
         "SET error = $3 WHERE id = $1 AND owner = $2"},
        {"LIMIT ?10", "LIMIT $10"},
        /* A bare ? is one more than the highest number so far (SQLite's rule). */
        {"?2, ?, ?1, ?", "$2, $3, $1, $4"},
        /* Literals and quoted identifiers are not statement text. */
        {"SELECT '?' , ?", "SELECT '?' , $1"},
        {"VALUES(?, strftime('%s'))", "VALUES($1, strftime('%s'))"},
        {"SELECT 'it''s ?', ? FROM t", "SELECT 'it''s ?', $1 FROM t"},
        {"SELECT \"odd?name\" FROM t WHERE a = ?", "SELECT \"odd?name\" FROM t WHERE a = $1"},
        {"ORDER BY device_id COLLATE \"C\" LIMIT ?", "ORDER BY device_id COLLATE \"C\" LIMIT $1"},
        {"WHERE a = '' AND b = ?", "WHERE a = '' AND b = $1"},
        /* PostgreSQL's own placeholders and casts pass through. */
        {"WHERE id = $1 AND ?::bigint = 0", "WHERE id = $1 AND $1::bigint = 0"},
    };
    char out[256];

    (void)state;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        assert_int_equal(mf_store__sql_to_pg(out, sizeof(out), v[i].in), MF_OK);
        assert_string_equal(out, v[i].want);
    }
}

static void test_store_sql__bounded(void **state)
{
    char out[16];

    (void)state;
    /* Exactly fits: 15 characters and the NUL. */
    assert_int_equal(mf_store__sql_to_pg(out, sizeof(out), "SELECT ? FROM "), MF_OK);
    assert_string_equal(out, "SELECT $1 FROM ");
    /* One more and it does not: an error, never a truncated statement. */
    assert_int_equal(mf_store__sql_to_pg(out, sizeof(out), "SELECT ? FROM t"), MF_E_LIMIT);
    /* The rewriting is longer than its input. */
    assert_int_equal(mf_store__sql_to_pg(out, sizeof(out), "?,?,?,?,?"), MF_OK);
    assert_string_equal(out, "$1,$2,$3,$4,$5");
    assert_int_equal(mf_store__sql_to_pg(out, sizeof(out), "?,?,?,?,?,?"), MF_E_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_sql__rewrites_placeholders),
        cmocka_unit_test(test_store_sql__bounded),
    };

    return cmocka_run_group_tests_name("store_sql", tests, NULL, NULL);
}
