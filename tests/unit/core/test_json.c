/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the strict JSON reader (sdk/core/json.c): one table row per profile rule. */
#include "mf_test.h"
#include "mf_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_case {
    const char *text;
    size_t len;      /* bytes of text, so rows can hold NULs */
    int code;        /* expected result */
    const char *msg; /* expected part of the message (refusals) */
};

/* A row from a string literal, NULs included. */
#define ROW(lit, code, msg)                                                                        \
    {                                                                                              \
        lit, sizeof(lit) - 1, code, msg                                                            \
    }

static const struct json_case cases[] = {
    /* accepted: RFC 8259 values, whitespace around them */
    ROW("{}", MF_OK, NULL),
    ROW(" \t\r\n{\"a\": [1, -0, 0.5, 1e3, 1E-3, -2.5e+7, true, false, null]} \n", MF_OK, NULL),
    ROW("\"top-level string\"", MF_OK, NULL),
    ROW("9007199254740992", MF_OK, NULL),
    ROW("-9007199254740992", MF_OK, NULL),
    ROW("1e-400", MF_OK, NULL), /* underflows to 0: no value is lost that was representable */
    ROW("\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"", MF_OK, NULL),
    ROW("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\x7f\"", MF_OK, NULL),
    ROW("{\"a\": 1, \"A\": 2, \"b\": {\"a\": 3}}", MF_OK, NULL),
    /* exactly one value */
    ROW("", MF_E_INVALID, "byte 0: empty input"),
    ROW("  ", MF_E_INVALID, "byte 2: unexpected end of input"),
    ROW("{} x", MF_E_INVALID, "byte 3: trailing bytes after the JSON value (0x78)"),
    ROW("{}{}", MF_E_INVALID, "byte 2: trailing bytes"),
    ROW("{}\0", MF_E_INVALID, "byte 2: raw control character outside a string (0x00)"),
    ROW("{\"sequence\":100\x01\x00}", MF_E_INVALID, "byte 15: raw control character outside"),
    ROW("{\"a\":1,}", MF_E_INVALID, "byte 7: expected a member name (0x7d)"),
    ROW("[1,]", MF_E_INVALID, "byte 3: unexpected byte (0x5d)"),
    ROW("[1 2]", MF_E_INVALID, "byte 3: expected ',' or the closing bracket"),
    ROW("{\"a\" 1}", MF_E_INVALID, "byte 5: expected ':'"),
    ROW("{\"a\":1]", MF_E_INVALID, "byte 6: expected ',' or the closing bracket"),
    ROW("[", MF_E_INVALID, "byte 1: unexpected end of input"),
    ROW("tru", MF_E_INVALID, "byte 0: unexpected byte (0x74)"),
    ROW("nul1", MF_E_INVALID, "byte 0: unexpected byte"),
    ROW("\xef\xbb\xbf{}", MF_E_INVALID, "byte 0: unexpected byte (0xef)"), /* BOM */
    ROW("{\x0b}", MF_E_INVALID, "byte 1: raw control character outside a string (0x0b)"),
    /* strings: UTF-8, control characters, NUL, escapes, surrogates */
    ROW("\"a\tb\"", MF_E_INVALID, "byte 2: raw control character in a string (0x09)"),
    ROW("\"cam\0evil\"", MF_E_INVALID, "byte 4: raw control character in a string (0x00)"),
    ROW("{\"name\":\"cam\\u0000evil\"}", MF_E_INVALID, "byte 12: \\u0000 (NUL) in a string"),
    ROW("\"\xc0\xaf\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xc0)"),         /* overlong / */
    ROW("\"\xe0\x80\xaf\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xe0)"),     /* overlong */
    ROW("\"\xf0\x80\x80\xaf\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xf0)"), /* overlong */
    ROW("\"\xed\xa0\x80\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xed)"),     /* U+D800 */
    ROW("\"\xf4\x90\x80\x80\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xf4)"), /* > U+10FFFF */
    ROW("\"\x80\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0x80)"),
    ROW("\"\xc3\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xc3)"),
    ROW("\"\xff\"", MF_E_INVALID, "byte 1: invalid UTF-8 (0xff)"),
    ROW("\"\\ud800\"", MF_E_INVALID, "byte 1: high surrogate escape without its low half"),
    ROW("\"\\ud800\\u0041\"", MF_E_INVALID, "byte 1: high surrogate escape without its low"),
    ROW("\"\\udc00\"", MF_E_INVALID, "byte 1: lone low surrogate escape"),
    ROW("\"\\x41\"", MF_E_INVALID, "byte 1: invalid escape (0x78)"),
    ROW("\"\\u12g4\"", MF_E_INVALID, "byte 1: invalid \\u escape"),
    ROW("\"\\u12\"", MF_E_INVALID, "byte 1: invalid \\u escape"),
    ROW("\"abc", MF_E_INVALID, "byte 4: unterminated string"),
    /* duplicate member names, compared after unescaping */
    ROW("{\"a\":1,\"a\":2}", MF_E_INVALID, "duplicate member name 'a'"),
    ROW("{\"a\":1,\"\\u0061\":2}", MF_E_INVALID, "duplicate member name 'a'"),
    ROW("{\"x\":[{\"s\":1,\"s\":1}]}", MF_E_INVALID, "duplicate member name 's'"),
    /* numbers: grammar, 2^53, range */
    ROW("9007199254740993", MF_E_INVALID, "byte 0: integer magnitude above 2^53"),
    ROW("-9007199254740993", MF_E_INVALID, "byte 0: integer magnitude above 2^53"),
    ROW("{\"sequence\": 18446744073709551616}", MF_E_INVALID, "byte 13: integer magnitude"),
    ROW("1e400", MF_E_INVALID, "byte 0: fraction or exponent number of magnitude 2^53 or more"),
    ROW("-1.5e309", MF_E_INVALID, "byte 0: fraction or exponent number of magnitude 2^53"),
    ROW("9007199254740993.0", MF_E_INVALID, "byte 0: fraction or exponent number of magnitude"),
    ROW("9007199254740992.0", MF_E_INVALID, "byte 0: fraction or exponent number of magnitude"),
    ROW("9007199254740991.0", MF_OK, NULL),
    ROW("[1e15, -2.5E-3, 1e-320]", MF_OK, NULL),
    ROW("01", MF_E_INVALID, "byte 1: trailing bytes"),
    ROW("-", MF_E_INVALID, "byte 1: number without integer digits"),
    ROW("+1", MF_E_INVALID, "byte 0: unexpected byte (0x2b)"),
    ROW("1.", MF_E_INVALID, "byte 2: number without digits after '.'"),
    ROW(".5", MF_E_INVALID, "byte 0: unexpected byte"),
    ROW("1e", MF_E_INVALID, "byte 2: number without exponent digits"),
    ROW("1e+", MF_E_INVALID, "byte 3: number without exponent digits"),
    ROW("0x10", MF_E_INVALID, "byte 1: trailing bytes"),
    ROW("NaN", MF_E_INVALID, "byte 0: unexpected byte"),
    ROW("1.000000000000000000000000000000000000000000000000000000000000001", MF_E_LIMIT,
        "byte 0: number longer than 63 bytes"),
    /* depth: the bound of these calls is 4 */
    ROW("[[[[1]]]]", MF_OK, NULL),
    ROW("{\"a\":{\"b\":[{\"c\":1}]}}", MF_OK, NULL),
    ROW("[[[[[1]]]]]", MF_E_LIMIT, "byte 4: nested deeper than 4 levels"),
    ROW("{\"a\":{\"b\":[{\"c\":{}}]}}", MF_E_LIMIT, "byte 16: nested deeper than 4 levels"),
};

static void test_json__profile_table(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct json_case *c = &cases[k];
        struct mf_ctx ctx;
        cJSON *doc = (cJSON *)&ctx; /* must be reset to NULL on failure */
        int err;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        err = mf_json__parse(&doc, &ctx, c->text, c->len, 4096, 4, "doc");
        if (err != c->code || (c->msg && !strstr(mf_ctx__errmsg(&ctx), c->msg)))
            fail_msg("case %zu: got %d '%s', want %d '%s'", k, err, mf_ctx__errmsg(&ctx), c->code,
                     c->msg ? c->msg : "");
        if (err == MF_OK) {
            assert_non_null(doc);
            cJSON_Delete(doc);
        } else {
            assert_null(doc);
            assert_non_null(strstr(mf_ctx__errmsg(&ctx), "doc: "));
        }
    }
}

static void test_json__values_are_exact(void **state)
{
    static const char text[] = "{\"n\": 9007199254740992, \"m\": -9007199254740992, "
                               "\"s\": \"\\u00e9\\ud83d\\ude00\"}";
    struct mf_ctx ctx;
    cJSON *doc;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_json__parse(&doc, &ctx, text, sizeof(text) - 1, 4096, 4, "doc"), MF_OK);
    assert_true(cJSON_GetObjectItemCaseSensitive(doc, "n")->valuedouble == 9007199254740992.0);
    assert_true(cJSON_GetObjectItemCaseSensitive(doc, "m")->valuedouble == -9007199254740992.0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "s")->valuestring,
                        "\xc3\xa9\xf0\x9f\x98\x80");
    cJSON_Delete(doc);
}

static void test_json__byte_cap_and_object_form(void **state)
{
    struct mf_ctx ctx;
    cJSON *doc;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_json__parse(&doc, &ctx, "[1,2]", 5, 4, 4, "body"), MF_E_LIMIT);
    assert_string_equal(mf_ctx__errmsg(&ctx), "body: JSON of 5 bytes exceeds 4");
    assert_int_equal(mf_json__parse(&doc, &ctx, "[1,2]", 5, 5, 4, "body"), MF_OK);
    cJSON_Delete(doc);
    assert_int_equal(mf_json__parse_object(&doc, &ctx, "[1,2]", 5, 5, 4, "body"), MF_E_INVALID);
    assert_null(doc);
    assert_string_equal(mf_ctx__errmsg(&ctx), "body: top level is not a JSON object");
}

/* Builds {"k0":0,...,"k<n-1>":n-1} plus, when dup_at >= 0, a repeat of that key at the end. */
static char *many_members(size_t n, long dup_at, size_t *len)
{
    size_t cap = n * 24 + 64;
    char *s = malloc(cap);
    size_t o = 0;

    assert_non_null(s);
    s[o++] = '{';
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s\"k%zu\":%zu", i ? "," : "",
                              (n - 1 - i) * 7919 % n, i);
    if (dup_at >= 0)
        o += (size_t)snprintf(s + o, cap - o, ",\"k%ld\":0", dup_at);
    s[o++] = '}';
    *len = o;
    return s;
}

static void test_json__large_objects_keep_order_and_find_duplicates(void **state)
{
    size_t len, n = 100000, i = 0;
    struct mf_ctx ctx;
    cJSON *doc, *it;
    char *s;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    /* 100k members: quadratic pairwise compares would take minutes, the sort takes ms. */
    s = many_members(n, -1, &len);
    assert_int_equal(mf_json__parse(&doc, &ctx, s, len, len, 4, "body"), MF_OK);
    cJSON_ArrayForEach(it, doc)
    {
        char want[32];

        (void)snprintf(want, sizeof(want), "k%zu", (n - 1 - i) * 7919 % n);
        assert_string_equal(it->string, want); /* the check did not reorder the members */
        assert_true(it->valuedouble == (double)i);
        i++;
    }
    assert_int_equal(i, n);
    assert_true(doc->child->prev == cJSON_GetArrayItem(doc, (int)n - 1));
    cJSON_Delete(doc);
    free(s);

    s = many_members(n, 4242, &len);
    assert_int_equal(mf_json__parse(&doc, &ctx, s, len, len, 4, "body"), MF_E_INVALID);
    assert_string_equal(mf_ctx__errmsg(&ctx),
                        "body: not valid JSON: duplicate member name 'k4242'");
    free(s);
    /* Just above the pairwise bound, both halves of the check agree. */
    s = many_members(17, 0, &len);
    assert_int_equal(mf_json__parse(&doc, &ctx, s, len, len, 4, "body"), MF_E_INVALID);
    free(s);
    s = many_members(17, -1, &len);
    assert_int_equal(mf_json__parse(&doc, &ctx, s, len, len, 4, "body"), MF_OK);
    cJSON_Delete(doc);
    free(s);
}

static void test_json__depth_bound_is_the_callers(void **state)
{
    char deep[2 * MF_JSON_DEPTH_MAX + 2];
    struct mf_ctx ctx;
    cJSON *doc;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    memset(deep, '[', MF_JSON_DEPTH_MAX);
    memset(deep + MF_JSON_DEPTH_MAX, ']', MF_JSON_DEPTH_MAX);
    assert_int_equal(mf_json__parse(&doc, &ctx, deep, 2 * MF_JSON_DEPTH_MAX, sizeof(deep),
                                    MF_JSON_DEPTH_MAX, "doc"),
                     MF_OK);
    cJSON_Delete(doc);
    assert_int_equal(mf_json__parse(&doc, &ctx, deep, 2 * MF_JSON_DEPTH_MAX, sizeof(deep),
                                    MF_JSON_DEPTH_MAX - 1, "doc"),
                     MF_E_LIMIT);
    assert_string_equal(mf_ctx__errmsg(&ctx),
                        "doc: line 1: not valid JSON at byte 31: nested deeper than 31 levels");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json__profile_table),
        cmocka_unit_test(test_json__values_are_exact),
        cmocka_unit_test(test_json__byte_cap_and_object_form),
        cmocka_unit_test(test_json__large_objects_keep_order_and_find_duplicates),
        cmocka_unit_test(test_json__depth_bound_is_the_callers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
