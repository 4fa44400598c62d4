/* SPDX-License-Identifier: Apache-2.0 */
/* Range header parser of server/http (RFC 9110 single byte ranges), table-driven. */
#include "mf_test.h"
#include "http/http_range.h"

#include <stdio.h>

struct range_case {
    const char *header;
    uint64_t size;
    int kind;
    uint64_t first;
    uint64_t length;
};

static const struct range_case range_cases[] = {
    /* absent or not ours: full 200 */
    {NULL, 100, MF_RANGE_FULL, 0, 0},
    {"", 100, MF_RANGE_FULL, 0, 0},
    {"items=0-5", 100, MF_RANGE_FULL, 0, 0},
    {"bytes", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=-", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=abc", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=5", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=5-x", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=-5-", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=+5-6", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=9-3", 100, MF_RANGE_FULL, 0, 0},     /* last < first: invalid, ignored */
    {"bytes=0-1,5-6", 100, MF_RANGE_FULL, 0, 0}, /* multi-range: full */
    {"bytes=0-1, 5-6", 100, MF_RANGE_FULL, 0, 0},
    {"bytes=0-1,", 100, MF_RANGE_FULL, 0, 0},
    /* a-b */
    {"bytes=0-0", 100, MF_RANGE_PARTIAL, 0, 1},
    {"bytes=0-99", 100, MF_RANGE_PARTIAL, 0, 100},
    {"bytes=10-19", 100, MF_RANGE_PARTIAL, 10, 10},
    {"bytes=90-1000", 100, MF_RANGE_PARTIAL, 90, 10}, /* last clamped to the end */
    {"BYTES=1-2", 100, MF_RANGE_PARTIAL, 1, 2},       /* the unit is case-insensitive */
    {"bytes= 1-2 ", 100, MF_RANGE_PARTIAL, 1, 2},     /* optional whitespace */
    {"bytes=99-99", 100, MF_RANGE_PARTIAL, 99, 1},
    {"bytes=100-100", 100, MF_RANGE_UNSATISFIABLE, 0, 0},
    {"bytes=100-", 100, MF_RANGE_UNSATISFIABLE, 0, 0},
    /* a- */
    {"bytes=0-", 100, MF_RANGE_PARTIAL, 0, 100},
    {"bytes=40-", 100, MF_RANGE_PARTIAL, 40, 60},
    /* -n */
    {"bytes=-1", 100, MF_RANGE_PARTIAL, 99, 1},
    {"bytes=-30", 100, MF_RANGE_PARTIAL, 70, 30},
    {"bytes=-100", 100, MF_RANGE_PARTIAL, 0, 100},
    {"bytes=-500", 100, MF_RANGE_PARTIAL, 0, 100}, /* longer than the blob: all of it */
    {"bytes=-0", 100, MF_RANGE_UNSATISFIABLE, 0, 0},
    /* empty representation: nothing is satisfiable */
    {"bytes=0-", 0, MF_RANGE_UNSATISFIABLE, 0, 0},
    {"bytes=-5", 0, MF_RANGE_UNSATISFIABLE, 0, 0},
    {"bytes=0-0", 0, MF_RANGE_UNSATISFIABLE, 0, 0},
    /* 64-bit overflow saturates and is then compared like any large position */
    {"bytes=99999999999999999999999-", 100, MF_RANGE_UNSATISFIABLE, 0, 0},
    {"bytes=18446744073709551615-18446744073709551615", 100, MF_RANGE_UNSATISFIABLE, 0, 0},
    {"bytes=5-99999999999999999999999", 100, MF_RANGE_PARTIAL, 5, 95},
    {"bytes=-99999999999999999999999", 100, MF_RANGE_PARTIAL, 0, 100},
    {"bytes=18446744073709551614-", UINT64_MAX, MF_RANGE_PARTIAL, UINT64_MAX - 1, 1},
    {"bytes=0-", UINT64_MAX, MF_RANGE_PARTIAL, 0, UINT64_MAX},
};

static void test_server_range__table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(range_cases) / sizeof(range_cases[0]); i++) {
        const struct range_case *c = &range_cases[i];
        struct mf_range r = {12345, 67890};
        int kind = mf_httpd__range_parse(&r, c->header, c->size);

        if (kind != c->kind)
            fail_msg("'%s' size %llu: kind %d, want %d", c->header ? c->header : "(null)",
                     (unsigned long long)c->size, kind, c->kind);
        if (kind == MF_RANGE_PARTIAL) {
            assert_int_equal(r.first, c->first);
            assert_int_equal(r.length, c->length);
            /* The range always lies inside the blob. */
            assert_true(r.length > 0 && r.first <= c->size - r.length);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_server_range__table)};

    return cmocka_run_group_tests_name("server_range", tests, NULL, NULL);
}
