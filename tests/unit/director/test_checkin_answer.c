/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in answer's JSON writer (director/checkin_answer.h): the exact text of nested
 * objects and arrays (empty ones too), escaped strings, counts, raw members and holes, which
 * strict JSON parsing accepts with nothing after the outer object; holes filled in order with
 * escaped envelopes, and an answer without holes handed over as it is. An assignment of a
 * release the device holds leaves the release out: the answer of a device with nothing to
 * do stays under 1 KiB whatever the model's size (chunk count), with real envelopes.
 */
#include "mf_test.h"
#include "manifest_world.h"
#include "director/checkin_answer.h"
#include "mf_hex.h"

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

/* Device and model names of the longest kind (64 characters each, docs/protocol.md). */
#define LONG_DEVICE "d123456789012345678901234567890123456789012345678901234567890123"
#define LONG_MODEL "m123456789012345678901234567890123456789012345678901234567890123"

struct quoted {
    const uint8_t *env;
    size_t len;
};

static int quote(struct mf_dynbuf *text, void *payload)
{
    const struct quoted *q = payload;

    return mf_dynbuf__append_json_str(text, (const char *)q->env, q->len);
}

/* A check-in answer as the director writes one (checkin_flow.c) for a device whose trust
 * is current: nonce, poll settings, one assignment of the release `rel` (held or not), its
 * assignment envelope `env` quoted into the hole. */
static char *answer_of(size_t *len, const uint8_t *rel, size_t rel_len, const char *digest,
                       const char *held, const uint8_t *env, size_t env_len)
{
    struct quoted q = {rel, rel_len};
    struct mf_answer_release r = {.model = LONG_MODEL,
                                  .version = "v2",
                                  .sha256 = digest, /* any 64 hex: a hint */
                                  .size = 3758096384u,
                                  .digest = digest,
                                  .held = held,
                                  .quoted_fn = quote,
                                  .quoted_payload = &q};
    uint8_t *envs[1] = {(uint8_t *)env};
    struct mf_answer a;
    int is_held = -1;
    char *text;

    mf_answer__init(&a);
    assert_int_equal(mf_answer__open(&a, NULL, '{'), MF_OK);
    assert_int_equal(mf_answer__str(&a, "nonce", FX_NONCE), MF_OK);
    assert_int_equal(mf_answer__count(&a, "poll_interval_s", 604800), MF_OK);
    assert_int_equal(mf_answer__count(&a, "poll_jitter_pct", 50), MF_OK);
    assert_int_equal(mf_answer__open(&a, "assignments", '['), MF_OK);
    assert_int_equal(mf_answer__release(&is_held, &a, &r), MF_OK);
    assert_int_equal(is_held, held && strcmp(held, digest) == 0);
    assert_int_equal(mf_answer__hole(&a, "assignment"), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    assert_int_equal(mf_answer__close(&a, ']'), MF_OK);
    assert_int_equal(mf_answer__close(&a, '}'), MF_OK);
    text = mf_answer__finish(len, &a, envs, &env_len);
    assert_non_null(text);
    assert_strict_json(text);
    mf_answer__free(&a);
    return text;
}

/* The release member as a device reads it (NULL when left out). */
static char *release_member(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    const cJSON *as = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "assignments"), 0);
    const char *rel = cJSON_GetStringValue(cJSON_GetObjectItem(as, "release"));
    char *out = rel ? strdup(rel) : NULL;

    assert_non_null(as);
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(as, "assignment")));
    cJSON_Delete(doc);
    return out;
}

/* 4 MiB, 512 MiB and 3.5 GB at 1 MiB chunks: 4, 512 and 3584 chunk hashes in the release
 * (the model itself made of 1-byte chunks, so the release is real and signed). With nothing
 * to do the answer is under 1 KiB for each; with the release sent it carries the envelope
 * byte for byte. */
static void test_checkin_answer__nothing_to_do_under_1k_for_any_size(void **state)
{
    static const size_t chunks[] = {4, 512, 3584};
    uint8_t digest[MF_MANIFEST_DIGEST_LEN], *model = calloc(1, 3584);
    char hex[MF_SHA256_HEX_LEN + 1], other[MF_SHA256_HEX_LEN + 1];

    (void)state;
    assert_non_null(model);
    for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        size_t rel_len, env_len, len;
        uint8_t *rel = fx_release_of(&rel_len, &world, LONG_MODEL, "v2", 2, 0, model, chunks[i], 1,
                                     BY(K_REL0));
        uint8_t *env;
        char *text, *sent;

        assert_non_null(rel);
        fx_digest(digest, rel, rel_len);
        mf_hex__encode(hex, digest, sizeof(digest));
        env = fx_assignment(&env_len, &world, LONG_DEVICE, LONG_MODEL, digest, FX_NONCE,
                            9007199254740992u, BY(K_DIR));
        /* The device holds this release: the answer is the assignment and a few fields. */
        text = answer_of(&len, rel, rel_len, hex, hex, env, env_len);
        print_message("%zu chunks: release %zu B, assignment %zu B, answer held %zu B\n", chunks[i],
                      rel_len, env_len, len);
        assert_true(len <= 1024);
        assert_null(release_member(text));
        assert_null(strstr(text, "\"blob\""));
        mf_free(NULL, text);
        /* It holds another release (or names none): the release travels. */
        memcpy(other, hex, sizeof(other));
        other[0] = other[0] == '0' ? '1' : '0';
        text = answer_of(&len, rel, rel_len, hex, other, env, env_len);
        sent = release_member(text);
        assert_non_null(sent);
        assert_int_equal(strlen(sent), rel_len);
        assert_memory_equal(sent, rel, rel_len);
        assert_true(len > rel_len);
        free(sent);
        mf_free(NULL, text);
        text = answer_of(&len, rel, rel_len, hex, NULL, env, env_len);
        sent = release_member(text);
        assert_non_null(sent);
        assert_non_null(strstr(text, "\"blob\":\"/v1/blobs/"));
        free(sent);
        mf_free(NULL, text);
        mf_free(NULL, env);
        mf_free(NULL, rel);
    }
    free(model);
}

int main(void)
{
    return MF_TEST_RUN("checkin_answer", world_setup, world_teardown,
                       cmocka_unit_test(test_checkin_answer__text_and_holes),
                       cmocka_unit_test(test_checkin_answer__no_holes),
                       cmocka_unit_test(test_checkin_answer__hole_limit),
                       cmocka_unit_test(test_checkin_answer__nothing_to_do_under_1k_for_any_size));
}
