/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in answer's JSON writer (director/checkin_answer.h): the exact text of nested
 * objects and arrays (empty ones too), escaped strings, counts, raw members and holes, which
 * strict JSON parsing accepts with nothing after the outer object; holes filled in order with
 * escaped envelopes, and an answer without holes handed over as it is.
 */
#include "mf_test.h"
#include "director/checkin_answer.h"

#include <cjson/cJSON.h>
#include <string.h>

static void assert_strict_json(const char *text)
{
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);

    assert_non_null(doc);
    cJSON_Delete(doc);
}

static void test_checkin_answer__text_and_holes(void **state)
{
    static const char want[] =
        "{\"nonce\":\"n\\\"1\",\"poll_interval_s\":60,\"trust\":{\"roots\":[],\"keys\":\"k\"},"
        "\"assignments\":[{\"model\":\"det\",\"release\":\"R\",\"assignment\":\"{\\\"a\\\":1}\","
        "\"deltas\":[{\"size\":18446744073709551615}]},{\"assignment\":\"x\\\\y\"}],"
        "\"empty\":{}}";
    uint8_t *envs[2] = {(uint8_t *)"{\"a\":1}", (uint8_t *)"x\\y"};
    size_t lens[2] = {7, 3}, len = 0;
    struct mf_answer a;
    char *text;

    (void)state;
    mf_answer__init(&a);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__str(&a, "nonce", "n\"1"), MF_OK);
    assert_int_equal(mf_answer__count(&a, "poll_interval_s", 60), MF_OK);
    assert_int_equal(mf_answer__open(&a, "trust", '{'), MF_OK);
    assert_int_equal(mf_answer__open(&a, "roots", '['), MF_OK);
    assert_int_equal(mf_answer__close(&a, ']'), MF_OK);
    assert_int_equal(mf_answer__str_n(&a, "keys", "kXX", 1), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__open(&a, "assignments", '['), MF_OK);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__str(&a, "model", "det"), MF_OK);
    assert_int_equal(mf_answer__raw_begin(&a, "release"), MF_OK);
    assert_int_equal(mf_dynbuf__append(&a.text, "\"R\"", 3), MF_OK);
    assert_int_equal(mf_answer__end(&a), MF_OK);
    assert_int_equal(mf_answer__hole(&a, "assignment"), MF_OK);
    assert_int_equal(mf_answer__open(&a, "deltas", '['), MF_OK);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__count(&a, "size", UINT64_MAX), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__close(&a, ']'), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__hole(&a, "assignment"), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__close(&a, ']'), MF_OK);
    assert_int_equal(mf_answer__open(&a, "empty", '{'), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(a.n_holes, 2);
    text = mf_answer__finish(&len, &a, envs, lens);
    assert_non_null(text);
    assert_string_equal(text, want);
    assert_int_equal(len, strlen(want));
    assert_strict_json(text);
    mf_free(NULL, text);
    mf_answer__free(&a);
}

static void test_checkin_answer__no_holes(void **state)
{
    struct mf_answer a;
    size_t len = 0;
    char *text;

    (void)state;
    mf_answer__init(&a);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__open(&a, "assignments", '['), MF_OK);
    assert_int_equal(mf_answer__close(&a, ']'), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    text = mf_answer__finish(&len, &a, NULL, NULL);
    assert_string_equal(text, "{\"assignments\":[]}");
    assert_int_equal(len, 18);
    assert_strict_json(text);
    mf_free(NULL, text);
    mf_answer__free(&a);
}

/* More holes than an answer may have is refused, not written past the table. */
static void test_checkin_answer__hole_limit(void **state)
{
    struct mf_answer a;

    (void)state;
    mf_answer__init(&a);
    assert_int_equal(mf_answer__open(&a, NULL, '['), MF_OK);
    for (int i = 0; i < MF_ANSWER_HOLES_MAX; i++)
        assert_int_equal(mf_answer__hole(&a, "a"), MF_OK);
    assert_int_equal(mf_answer__hole(&a, "a"), MF_E_LIMIT);
    mf_answer__free(&a);
}

int main(void)
{
    return MF_TEST_RUN("checkin_answer", NULL, NULL,
                       cmocka_unit_test(test_checkin_answer__text_and_holes),
                       cmocka_unit_test(test_checkin_answer__no_holes),
                       cmocka_unit_test(test_checkin_answer__hole_limit));
}
