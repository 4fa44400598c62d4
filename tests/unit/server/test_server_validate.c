/* SPDX-License-Identifier: Apache-2.0 */
/* Name/path validation, token syntax and hashing, and the JSON request parsers of server/. */
#include "mf_test.h"
#include "common/token.h"
#include "common/req_parse.h"
#include "common/names.h"

#include <stdio.h>
#include <string.h>

static void test_server_validate__ids(void **state)
{
    static const char *const good[] = {"cam-0001", "a", "A.b_c-9", "v1.2.3",
                                       "0123456789012345678901234567890123456789012345678901234"
                                       "567890123"};
    static const char *const bad[] = {"",
                                      ".",
                                      "..",
                                      "a/b",
                                      "../x",
                                      "a b",
                                      "a%2F",
                                      "é",
                                      "a\\b",
                                      "01234567890123456789012345678901234567890123456789012345"
                                      "678901234"};

    (void)state;
    assert_int_equal(strlen(good[4]), 64);
    assert_int_equal(strlen(bad[9]), 65);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(mf_names__valid_id(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (mf_names__valid_id(bad[i]))
            fail_msg("'%s' accepted as an id", bad[i]);
    }
}

static void test_server_validate__blob_names(void **state)
{
    char name[80];

    (void)state;
    memset(name, 'a', 64);
    name[64] = '\0';
    assert_true(mf_names__valid_sha256(name));
    name[10] = 'A'; /* upper case is a different URL: refused */
    assert_false(mf_names__valid_sha256(name));
    name[10] = 'g';
    assert_false(mf_names__valid_sha256(name));
    name[10] = 'a';
    name[63] = '\0';
    assert_false(mf_names__valid_sha256(name));
    assert_false(mf_names__valid_sha256("../../etc/passwd"));
    assert_false(mf_names__valid_sha256(""));
    assert_true(mf_names__valid_nonce("0123456789abcdefABCDEF0123456789"));
    assert_false(mf_names__valid_nonce("0123456789abcdef0123456789abcde"));
    assert_false(mf_names__valid_nonce("0123456789abcdef0123456789abcdefa"));
    assert_false(mf_names__valid_nonce("0123456789abcdef0123456789abcdeg"));
}

static void test_server_validate__token_kind(void **state)
{
    char tok[MF_TOKEN_LEN + 1];

    (void)state;
    memset(tok, '0', MF_TOKEN_LEN);
    tok[MF_TOKEN_LEN] = '\0';
    memcpy(tok, "mfa_", 4);
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN), MF_TOKEN_ADMIN);
    memcpy(tok, "mfe_", 4);
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN), MF_TOKEN_ENROLL);
    memcpy(tok, "mfd_", 4);
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN), MF_TOKEN_DEVICE);
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN - 1), -1);
    memcpy(tok, "mfx_", 4);
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN), -1);
    memcpy(tok, "mfd_", 4);
    tok[20] = 'F'; /* hex digits are lower-case only */
    assert_int_equal(mf_token__kind(tok, MF_TOKEN_LEN), -1);
}

static void test_server_validate__token_hash_vector(void **state)
{
    /* printf 'mfa_%064d' 0 | sha256sum */
    static const char want[] = "6a4caee264317f987ae161d25403235ea2526d5716b996522438ed01d7a2e3b7";
    char tok[MF_TOKEN_LEN + 1], hex[MF_SHA256_HEX_LEN + 1];
    uint8_t hash[MF_SHA256_LEN];

    (void)state;
    memset(tok, '0', MF_TOKEN_LEN);
    memcpy(tok, "mfa_", 4);
    tok[MF_TOKEN_LEN] = '\0';
    mf_token__hash(hash, tok, MF_TOKEN_LEN);
    mf_hex__encode(hex, hash, sizeof(hash));
    assert_string_equal(hex, want);
}

static void test_server_validate__token_generate(void **state)
{
    char a[MF_TOKEN_LEN + 1], b[MF_TOKEN_LEN + 1];
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_token__generate(a, &ctx, MF_TOKEN_DEVICE), MF_OK);
    assert_int_equal(mf_token__generate(b, &ctx, MF_TOKEN_DEVICE), MF_OK);
    assert_int_equal(strlen(a), 68);
    assert_int_equal(mf_token__kind(a, strlen(a)), MF_TOKEN_DEVICE);
    assert_string_not_equal(a, b);
    assert_int_equal(mf_token__generate(a, &ctx, MF_TOKEN_ENROLL), MF_OK);
    assert_int_equal(mf_token__kind(a, strlen(a)), MF_TOKEN_ENROLL);
}

/* Parses `json` with `parse`; returns its result and leaves the message in ctx. */
static int parse_with(int (*parse)(void *, struct mf_ctx *, const cJSON *), void *out,
                      struct mf_ctx *ctx, const char *json)
{
    cJSON *root = cJSON_Parse(json);
    int err;

    assert_non_null(root);
    err = parse(out, ctx, root);
    cJSON_Delete(root);
    return err;
}

static int enroll_fn(void *out, struct mf_ctx *ctx, const cJSON *root)
{
    return mf_reqparse__enroll(out, ctx, root);
}

static int checkin_fn(void *out, struct mf_ctx *ctx, const cJSON *root)
{
    return mf_reqparse__checkin(out, ctx, root);
}

static int report_fn(void *out, struct mf_ctx *ctx, const cJSON *root)
{
    return mf_reqparse__report(out, ctx, root);
}

struct parse_case {
    int (*fn)(void *, struct mf_ctx *, const cJSON *);
    const char *json;
    int want;
    const char *msg_part; /* expected in the message when want < 0 */
};

#define SHA "\"0000000000000000000000000000000000000000000000000000000000000000\""
#define NONCE "\"0123456789abcdef0123456789abcdef\""

static const struct parse_case parse_cases[] = {
    {enroll_fn, "{\"enrollment_token\":\"x\",\"device_id\":\"cam-1\"}", MF_OK, NULL},
    {enroll_fn, "{\"device_id\":\"cam-1\"}", MF_E_INVALID, "enrollment_token"},
    {enroll_fn, "{\"enrollment_token\":5,\"device_id\":\"cam-1\"}", MF_E_INVALID,
     "enrollment_token"},
    {enroll_fn, "{\"enrollment_token\":\"x\",\"device_id\":\"../x\"}", MF_E_INVALID, "device_id"},
    {enroll_fn, "{\"enrollment_token\":\"x\",\"device_id\":null}", MF_E_INVALID, "device_id"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":[]}", MF_OK, NULL},
    {checkin_fn,
     "{\"nonce\":" NONCE ",\"models\":[{\"name\":\"d\",\"version\":\"v1\",\"sha256\":" SHA "},"
     "{\"name\":\"c\",\"version\":null,\"sha256\":null}]}",
     MF_OK, NULL},
    {checkin_fn, "{\"nonce\":\"abc\",\"models\":[]}", MF_E_INVALID, "nonce"},
    {checkin_fn, "{\"nonce\":" NONCE "}", MF_E_INVALID, "models"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":{}}", MF_E_INVALID, "models"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":[5]}", MF_E_INVALID, "object"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":[{\"name\":\"d\",\"version\":7}]}", MF_E_INVALID,
     "version"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":[{\"name\":\"d\",\"sha256\":\"ABC\"}]}",
     MF_E_INVALID, "sha256"},
    {checkin_fn, "{\"nonce\":" NONCE ",\"models\":[{\"name\":\"d\"},{\"name\":\"d\"}]}",
     MF_E_INVALID, "twice"},
    {report_fn, "{\"model\":\"d\",\"version\":\"v2\",\"sha256\":" SHA ",\"status\":\"installed\"}",
     MF_OK, NULL},
    {report_fn,
     "{\"model\":\"d\",\"version\":\"v2\",\"sha256\":" SHA ",\"status\":\"failed\","
     "\"detail\":\"sha256 mismatch\"}",
     MF_OK, NULL},
    {report_fn, "{\"model\":\"d\",\"version\":\"v2\",\"sha256\":" SHA ",\"status\":\"ok\"}",
     MF_E_INVALID, "status"},
    {report_fn, "{\"model\":\"d\",\"version\":\"v2\",\"sha256\":\"x\",\"status\":\"failed\"}",
     MF_E_INVALID, "sha256"},
    {report_fn,
     "{\"model\":\"d\",\"version\":\"v2\",\"sha256\":" SHA ",\"status\":\"failed\","
     "\"detail\":[]}",
     MF_E_INVALID, "detail"},
    {report_fn, "{\"version\":\"v2\",\"sha256\":" SHA ",\"status\":\"failed\"}", MF_E_INVALID,
     "model"},
};

static void test_server_validate__request_parsers(void **state)
{
    union {
        struct mf_enroll_req e;
        struct mf_checkin_req c;
        struct mf_report_req r;
    } out;
    struct mf_ctx ctx;

    (void)state;
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const struct parse_case *pc = &parse_cases[i];
        int err;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        err = parse_with(pc->fn, &out, &ctx, pc->json);
        if (err != pc->want)
            fail_msg("case %zu (%s): %d, want %d (%s)", i, pc->json, err, pc->want,
                     mf_ctx__errmsg(&ctx));
        if (pc->msg_part && !strstr(mf_ctx__errmsg(&ctx), pc->msg_part))
            fail_msg("case %zu: message '%s' does not name '%s'", i, mf_ctx__errmsg(&ctx),
                     pc->msg_part);
    }
}

static void test_server_validate__checkin_model_cap(void **state)
{
    static struct mf_checkin_req out;
    char json[8192];
    size_t n;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (int count = MF_CHECKIN_MAX_MODELS; count <= MF_CHECKIN_MAX_MODELS + 1; count++) {
        n = (size_t)snprintf(json, sizeof(json), "{\"nonce\":" NONCE ",\"models\":[");
        for (int i = 0; i < count; i++)
            n += (size_t)snprintf(json + n, sizeof(json) - n, "%s{\"name\":\"m%d\"}", i ? "," : "",
                                  i);
        (void)snprintf(json + n, sizeof(json) - n, "]}");
        assert_int_equal(parse_with(checkin_fn, &out, &ctx, json),
                         count <= MF_CHECKIN_MAX_MODELS ? MF_OK : MF_E_INVALID);
    }
    assert_int_equal(out.n_models, MF_CHECKIN_MAX_MODELS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_validate__ids),
        cmocka_unit_test(test_server_validate__blob_names),
        cmocka_unit_test(test_server_validate__token_kind),
        cmocka_unit_test(test_server_validate__token_hash_vector),
        cmocka_unit_test(test_server_validate__token_generate),
        cmocka_unit_test(test_server_validate__request_parsers),
        cmocka_unit_test(test_server_validate__checkin_model_cap),
    };

    return cmocka_run_group_tests_name("server_validate", tests, NULL, NULL);
}
