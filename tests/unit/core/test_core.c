/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of sdk/core: error codes, allocator hooks, bounded buffers, logging, ct, CRC-32,
 * the name rule. */
#include "mf_test.h"
#include "kit_alloc.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_crc32.h"
#include "mf_hex.h"
#include "mf_name_chars.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <string.h>

/* The library, its header and project(VERSION) name one version: MF_VERSION_* are generated
 * from project(VERSION), and mf_version() is what the linked library was compiled with. */
static void test_core__version_matches_header_and_project(void **state)
{
    char expect[32];

    (void)state;
    assert_int_equal(mf_version(), MF_VERSION_NUMBER);
    assert_string_equal(mf_version_string(), MF_VERSION_STRING);
    assert_string_equal(mf_version_string(), MF_TEST_PROJECT_VERSION);
    (void)snprintf(expect, sizeof(expect), "%d.%d.%d", MF_VERSION_MAJOR, MF_VERSION_MINOR,
                   MF_VERSION_PATCH);
    assert_string_equal(mf_version_string(), expect);
    assert_int_equal(MF_VERSION_NUMBER,
                     MF_VERSION_MAJOR * 10000 + MF_VERSION_MINOR * 100 + MF_VERSION_PATCH);
}

static void test_core__strerror_covers_every_code(void **state)
{
    const char *seen[16] = {0};
    int n = 0;

    (void)state;
    for (int code = MF_AGAIN; code >= MF_E_LAST; code--) {
        const char *s = mf_strerror(code);

        assert_non_null(s);
        assert_string_not_equal(s, "unknown error");
        for (int i = 0; i < n; i++)
            assert_string_not_equal(s, seen[i]); /* every code has its own name */
        seen[n++] = s;
    }
    assert_string_equal(mf_strerror(MF_E_LAST - 1), "unknown error");
    assert_string_equal(mf_strerror(12345), "unknown error");
}

static void test_core__error_numbers_are_stable(void **state)
{
    /* These numbers are ABI: this test fails if anyone renumbers them. */
    (void)state;
    assert_int_equal(MF_OK, 0);
    assert_int_equal(MF_AGAIN, 1);
    assert_int_equal(MF_E_GENERIC, -1);
    assert_int_equal(MF_E_NOMEM, -2);
    assert_int_equal(MF_E_INVALID, -3);
    assert_int_equal(MF_E_LIMIT, -4);
    assert_int_equal(MF_E_SIGNATURE, -5);
    assert_int_equal(MF_E_IO, -6);
    assert_int_equal(MF_E_NOTFOUND, -7);
    assert_int_equal(MF_E_STATE, -8);
    assert_int_equal(MF_E_AUTH, -9);
    assert_int_equal(MF_E_NET, -10);
}

static void test_core__allocator_hooks_route_every_allocation(void **state)
{
    struct mf_kit_alloc c;
    mf_allocator a = mf_kit_alloc_init(&c, -1, MF_KIT_ALLOC_FAIL_FROM);
    char *s;
    void *z;

    (void)state;
    s = mf_strdup(&a, "model");
    assert_non_null(s);
    assert_string_equal(s, "model");
    assert_int_equal(c.live, 6);
    z = mf_calloc(&a, 4, 8);
    assert_non_null(z);
    for (int i = 0; i < 32; i++)
        assert_int_equal(((unsigned char *)z)[i], 0);
    assert_int_equal(c.peak, 38);
    mf_free(&a, s);
    mf_free(&a, z);
    mf_free(&a, NULL);
    assert_int_equal(c.live, 0);
    assert_null(mf_alloc(&a, 0));
    assert_null(mf_calloc(&a, SIZE_MAX / 2, 4)); /* overflow is refused, not wrapped */
}

static void test_core__allocation_failure_is_reported(void **state)
{
    struct mf_kit_alloc c;
    mf_allocator a = mf_kit_alloc_init(&c, 0, MF_KIT_ALLOC_FAIL_FROM);

    (void)state;
    assert_null(mf_strdup(&a, "x"));
    assert_null(mf_alloc(&a, 10));
}

static void test_core__dynbuf_enforces_its_maximum(void **state)
{
    struct mf_kit_alloc c;
    mf_allocator a = mf_kit_alloc_init(&c, -1, MF_KIT_ALLOC_FAIL_FROM);
    struct mf_dynbuf b;
    uint8_t chunk[100];
    size_t len;
    uint8_t *p;

    (void)state;
    memset(chunk, 'x', sizeof(chunk));
    mf_dynbuf__init(&b, &a, 1000);
    for (int i = 0; i < 9; i++)
        assert_int_equal(mf_dynbuf__append(&b, chunk, sizeof(chunk)), MF_OK);
    assert_int_equal(b.len, 900);
    /* 999 bytes + terminator fit exactly; one more byte does not. */
    assert_int_equal(mf_dynbuf__append(&b, chunk, 99), MF_OK);
    assert_int_equal(mf_dynbuf__append(&b, chunk, 1), MF_E_LIMIT);
    assert_int_equal(b.len, 999);
    assert_true(b.cap <= 1000);
    assert_int_equal(mf_dynbuf__append(&b, chunk, SIZE_MAX), MF_E_LIMIT);
    mf_dynbuf__reset(&b);
    assert_int_equal(mf_dynbuf__appendf(&b, "%s-%d", "v", 7), MF_OK);
    assert_string_equal((char *)b.data, "v-7");
    p = mf_dynbuf__take(&b, &len);
    assert_int_equal(len, 3);
    assert_null(b.data);
    mf_free(&a, p);
    mf_dynbuf__free(&b);
    assert_int_equal(c.live, 0);
}

static void test_core__dynbuf_survives_every_allocation_failure(void **state)
{
    (void)state;
    for (int n = 0; n < 8; n++) {
        struct mf_kit_alloc c;
        mf_allocator a = mf_kit_alloc_init(&c, n, MF_KIT_ALLOC_FAIL_FROM);
        struct mf_dynbuf b;
        int err = MF_OK;

        mf_dynbuf__init(&b, &a, 1 << 16);
        for (int i = 0; i < 100 && err == MF_OK; i++)
            err = mf_dynbuf__appendf(&b, "line %d of the body\n", i);
        /* Either all went through or it failed cleanly with the content intact. */
        assert_true(err == MF_OK || err == MF_E_NOMEM);
        if (err == MF_E_NOMEM && b.len)
            assert_memory_equal(b.data, "line 0 of the body\n", 19);
        mf_dynbuf__free(&b);
        assert_int_equal(c.live, 0);
    }
}

/* The JSON string literal is the one cJSON prints, for every byte value a C string holds,
 * and a limit reached midway fails cleanly. */
static void test_core__dynbuf_json_string(void **state)
{
    char all[256], *want;
    struct mf_dynbuf b;
    cJSON *str;

    (void)state;
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = '\0';
    str = cJSON_CreateString(all);
    want = cJSON_PrintUnformatted(str);
    mf_dynbuf__init(&b, NULL, 4096);
    assert_int_equal(mf_dynbuf__append_json_str(&b, all, 255), MF_OK);
    assert_string_equal((char *)b.data, want);
    mf_dynbuf__reset(&b);
    assert_int_equal(mf_dynbuf__append_json_str(&b, "{\"a\":\"b\\c\"}", 11), MF_OK);
    assert_string_equal((char *)b.data, "\"{\\\"a\\\":\\\"b\\\\c\\\"}\"");
    mf_dynbuf__reset(&b);
    assert_int_equal(mf_dynbuf__append_json_str(&b, "", 0), MF_OK);
    assert_string_equal((char *)b.data, "\"\"");
    mf_dynbuf__free(&b);
    mf_dynbuf__init(&b, NULL, 8);
    assert_int_equal(mf_dynbuf__append_json_str(&b, "a\"b\"c\"d", 7), MF_E_LIMIT);
    mf_dynbuf__free(&b);
    cJSON_free(want);
    cJSON_Delete(str);
}

static void test_core__ct_memeq(void **state)
{
    static const uint8_t a[32] = {1, 2, 3};
    uint8_t b[32];

    (void)state;
    memcpy(b, a, sizeof(b));
    assert_int_equal(mf_ct_memeq(a, b, sizeof(a)), 1);
    assert_int_equal(mf_ct_memeq(a, b, 0), 1);
    for (size_t i = 0; i < sizeof(b); i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            assert_int_equal(mf_ct_memeq(a, b, sizeof(a)), 0);
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    mf_secure_zero(b, sizeof(b));
    for (size_t i = 0; i < sizeof(b); i++)
        assert_int_equal(b[i], 0);
}

static void test_core__hex_round_trip_and_rejects(void **state)
{
    static const uint8_t digest[4] = {0x00, 0xab, 0x7f, 0xff};
    char hex[9];
    uint8_t back[4];

    (void)state;
    mf_hex__encode(hex, digest, 4);
    assert_string_equal(hex, "00ab7fff");
    assert_int_equal(mf_hex__decode(back, 4, hex, 8), MF_OK);
    assert_memory_equal(back, digest, 4);
    assert_int_equal(mf_hex__decode(back, 4, "00AB7FFF", 8), MF_OK);
    assert_int_equal(mf_hex__decode(back, 4, "00ab7ff", 7), MF_E_INVALID);
    assert_int_equal(mf_hex__decode(back, 4, "00ab7fzz", 8), MF_E_INVALID);
    assert_true(
        mf_hex__is_sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    assert_false(
        mf_hex__is_sha256("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
    assert_false(mf_hex__is_sha256("../../etc/passwd"));
    assert_false(
        mf_hex__is_sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8550"));
    assert_false(mf_hex__is_sha256(""));
}

/* The check value of CRC-32/ISO-HDLC (zlib's), and the same CRC fed in two pieces: the trust
 * state file and the offload queue's records on disk depend on both. */
static void test_core__crc32_known_vectors(void **state)
{
    static const char check[] = "123456789";

    (void)state;
    assert_int_equal(mf_crc32__update(0, "", 0), 0);
    assert_int_equal(mf_crc32__update(0, check, 9), 0xCBF43926u);
    assert_int_equal(mf_crc32__update(mf_crc32__update(0, check, 4), check + 4, 5), 0xCBF43926u);
    assert_int_equal(mf_crc32__update(0, "a", 1), 0xE8B7BE43u);
}

/* The character rule that the server's name checks and the device's manifest parser share. */
static void test_core__name_chars(void **state)
{
    char longest[65], too_long[66];

    (void)state;
    memset(longest, 'a', 64);
    longest[64] = '\0';
    memset(too_long, 'a', 65);
    too_long[65] = '\0';
    assert_true(mf_name__chars_ok("mnist-v1.2_b", 64));
    assert_true(mf_name__chars_ok("..", 64)); /* the server refuses it on top */
    assert_true(mf_name__chars_ok(longest, 64));
    assert_false(mf_name__chars_ok(too_long, 64));
    assert_false(mf_name__chars_ok("", 64));
    assert_false(mf_name__chars_ok("a/b", 64));
    assert_false(mf_name__chars_ok("a b", 64));
    assert_false(mf_name__chars_ok("caf\xc3\xa9", 64));
}

struct log_capture {
    int lines;
    int last_level;
    char module[32];
    char msg[300];
};

static void capture_log(void *payload, int level, const char *module, const char *msg)
{
    struct log_capture *cap = payload;

    cap->lines++;
    cap->last_level = level;
    (void)snprintf(cap->module, sizeof(cap->module), "%s", module);
    (void)snprintf(cap->msg, sizeof(cap->msg), "%s", msg);
}

static void test_core__fail_sets_message_and_returns_code(void **state)
{
    struct mf_ctx ctx;
    char big[600];

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_string_equal(mf_ctx__errmsg(&ctx), "");
    assert_int_equal(mf_fail(&ctx, MF_E_LIMIT, "manifest too large (%d bytes)", 9000), MF_E_LIMIT);
    assert_string_equal(mf_ctx__errmsg(&ctx), "manifest too large (9000 bytes)");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_int_equal(mf_fail(&ctx, MF_E_INVALID, "%s", big), MF_E_INVALID);
    assert_int_equal(strlen(mf_ctx__errmsg(&ctx)), MF_ERRMSG_MAX - 1); /* truncated, no alloc */
    mf_ctx__clear(&ctx);
    assert_string_equal(mf_ctx__errmsg(&ctx), "");
}

static void test_core__log_goes_to_callback_only(void **state)
{
    struct log_capture cap = {0};
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, capture_log, &cap, "agent");
    MF_LOG_WARN(&ctx, "slot %s is %d bytes", "b", 42);
    assert_int_equal(cap.lines, 1);
    assert_int_equal(cap.last_level, MF_LOG_WARN);
    assert_string_equal(cap.module, "agent");
    assert_string_equal(cap.msg, "slot b is 42 bytes");
    MF_LOG_DBG(&ctx, "compiled out unless MF_ENABLE_DEBUG_LOG %d", 1);
#ifdef MF_ENABLE_DEBUG_LOG
    assert_int_equal(cap.lines, 2);
#else
    assert_int_equal(cap.lines, 1);
#endif
    /* No callback: nothing happens, nothing crashes. */
    mf_ctx__init(&ctx, NULL, NULL, NULL, NULL);
    MF_LOG_ERR(&ctx, "dropped %d", 1);
    assert_string_equal(mf_log_level_name(MF_LOG_TRACE), "trace");
    assert_string_equal(mf_log_level_name(99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core__strerror_covers_every_code),
        cmocka_unit_test(test_core__error_numbers_are_stable),
        cmocka_unit_test(test_core__allocator_hooks_route_every_allocation),
        cmocka_unit_test(test_core__allocation_failure_is_reported),
        cmocka_unit_test(test_core__dynbuf_enforces_its_maximum),
        cmocka_unit_test(test_core__dynbuf_survives_every_allocation_failure),
        cmocka_unit_test(test_core__dynbuf_json_string),
        cmocka_unit_test(test_core__ct_memeq),
        cmocka_unit_test(test_core__hex_round_trip_and_rejects),
        cmocka_unit_test(test_core__crc32_known_vectors),
        cmocka_unit_test(test_core__name_chars),
        cmocka_unit_test(test_core__fail_sets_message_and_returns_code),
        cmocka_unit_test(test_core__log_goes_to_callback_only),
        cmocka_unit_test(test_core__version_matches_header_and_project),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
