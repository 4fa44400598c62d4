/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifests/common without crypto: base64 (RFC 4648 vectors), DSSE PAE (the DSSE spec's
 * vector), the envelope parser and the four document parsers, each bad input in its own
 * table row with the code it must produce.
 */
#include "mf_test.h"
#include "manifest_common.h"

#include <stdio.h>
#include <string.h>

static struct mf_ctx ctx;

static int setup(void **state)
{
    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    return 0;
}

static void test_manifest_format__base64_vectors(void **state)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    uint8_t out[16];
    char buf[16];
    size_t n;

    (void)state;
    for (size_t i = 0; i < 7; i++) {
        mf_base64__encode(buf, (const uint8_t *)plain[i], strlen(plain[i]));
        assert_string_equal(buf, enc[i]);
        assert_int_equal(mf_base64__encoded_len(strlen(plain[i])), strlen(enc[i]));
        assert_int_equal(mf_base64__decode(out, sizeof(out), &n, enc[i], strlen(enc[i])), MF_OK);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(out, plain[i], n);
    }
    /* unpadded and URL-safe forms decode too (DSSE allows both) */
    assert_int_equal(mf_base64__decode(out, sizeof(out), &n, "Zm9vYg", 6), MF_OK);
    assert_int_equal(n, 4);
    assert_int_equal(mf_base64__decode(out, sizeof(out), &n, "-_8=", 4), MF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 0xfb);
    assert_int_equal(out[1], 0xff);
}

static void test_manifest_format__base64_rejects(void **state)
{
    static const char *const bad[] = {"Zm9v!", "Z", "Zg=", "=Zg=", "Zm9vY===", "Zm 9v", "Zm\n9"};
    uint8_t out[16];
    size_t n;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mf_base64__decode(out, sizeof(out), &n, bad[i], strlen(bad[i])),
                         MF_E_INVALID);
    /* never writes past cap */
    assert_int_equal(mf_base64__decode(out, 5, &n, "Zm9vYmFy", 8), MF_E_LIMIT);
}

static void test_manifest_format__pae_vector(void **state)
{
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    char longtype[MF_MANIFEST_TYPE_MAX + 2];
    char size_max[24]; /* SIZE_MAX in decimal: 20 digits on LP64, 10 on a 32-bit target */
    int w = snprintf(size_max, sizeof(size_max), "%zu", (size_t)SIZE_MAX);
    size_t n;

    (void)state;
    /* The DSSE specification's example: PAE("http://example.com/HelloWorld", "hello world") */
    n = mf_manifest__pae_prefix(prefix, "http://example.com/HelloWorld", 11);
    assert_int_equal(n, strlen("DSSEv1 29 http://example.com/HelloWorld 11 "));
    assert_memory_equal(prefix, "DSSEv1 29 http://example.com/HelloWorld 11 ", n);
    memset(longtype, 'a', sizeof(longtype) - 1);
    longtype[sizeof(longtype) - 1] = 0;
    assert_int_equal(mf_manifest__pae_prefix(prefix, longtype, 1), 0);
    longtype[MF_MANIFEST_TYPE_MAX] = 0;
    assert_true(w > 0);
    assert_int_equal(mf_manifest__pae_prefix(prefix, longtype, SIZE_MAX),
                     strlen("DSSEv1 63 ") + MF_MANIFEST_TYPE_MAX + 2 + (size_t)w);
    assert_int_equal(mf_manifest__pae_prefix(prefix, "", 1), 0);
}

#define KID "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SIG "{\"keyid\":\"" KID "\",\"sig\":\"MEUCIQ==\"}"

struct env_case {
    const char *json;
    size_t max; /* 0: 4096 */
    int rc;
};

static const struct env_case env_cases[] = {
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[" SIG "]}", 0, MF_OK},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[" SIG "]}", 20, MF_E_LIMIT},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[]}", 0, MF_OK},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[]", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[]} x", 0, MF_E_INVALID},
    {"[1]", 0, MF_E_INVALID},
    {"", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[],\"x\":[[[[1]]]]}", 0,
     MF_OK}, /* depth 5, MF_MANIFEST_MAX_DEPTH: what a batch signature's path needs */
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[],\"x\":[[[[[1]]]]]}", 0,
     MF_E_LIMIT}, /* depth 6: one more than a batch signature's path needs */
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[]}\n\t ", 0, MF_OK},
    {"{\"payloadType\":\"t\\u0000x\",\"payload\":\"aGk=\",\"signatures\":[]}", 0,
     MF_E_INVALID}, /* read as "t" before */
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"payload\":\"aGk=\",\"signatures\":[]}", 0,
     MF_E_INVALID},
    {"{\"payload\":\"aGk=\",\"signatures\":[]}", 0, MF_E_INVALID},
    {"{\"payloadType\":7,\"payload\":\"aGk=\",\"signatures\":[]}", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"!!!!\",\"signatures\":[]}", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"\",\"signatures\":[]}", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":{}}", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[7]}", 0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[{\"keyid\":\"" KID "\"}]}", 0,
     MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[{\"keyid\":"
     "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"sig\":\"MEU=\"}]}",
     0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[{\"keyid\":\"" KID
     "\",\"sig\":\"" /* 100 characters: longer than any DER P-256 signature */
     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
     "AAAAAAAAAAAA\"}]}",
     0, MF_E_INVALID},
    {"{\"payloadType\":\"t\",\"payload\":\"aGk=\",\"signatures\":[" SIG "," SIG "," SIG "," SIG
     "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG "," SIG
     "," SIG "]}",
     0, MF_E_LIMIT},
    {"{\"payloadType\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
     "\"payload\":\"aGk=\",\"signatures\":[]}",
     0, MF_E_INVALID},
};

static void test_manifest_format__envelope_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(env_cases) / sizeof(env_cases[0]); i++) {
        const struct env_case *c = &env_cases[i];
        struct mf_menvelope *env = NULL;
        int rc = mf_manifest__envelope_parse(&env, &ctx, c->json, strlen(c->json),
                                             c->max ? c->max : 4096);

        if (rc != c->rc)
            fail_msg("envelope case %zu: rc %d (%s)", i, rc, ctx.errmsg);
        assert_true(rc == MF_OK ? env != NULL : env == NULL);
        if (env) {
            assert_string_equal(env->type, "t");
            assert_int_equal(env->payload_len, 2);
            assert_memory_equal(env->payload, "hi", 2);
        }
        mf_manifest__envelope_free(&ctx, env);
    }
}

/* ---- documents: a valid base, then one mutation per row -------------------------------- */

static char spki_b64[160];

static void make_spki(void)
{
    uint8_t der[MF_MANIFEST_SPKI_LEN] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04};

    memset(der + 27, 0x11, sizeof(der) - 27);
    mf_base64__encode(spki_b64, der, sizeof(der));
}

#define KID2 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HEXA "0101010101010101010101010101010101010101010101010101010101010101"

static const char root_base[] =
    "{\"_type\":\"root\",\"spec_version\":1,\"version\":3,\"expires\":1900000000,"
    "\"keys\":{\"" KID "\":{\"keytype\":\"ecdsa-p256-sha256\",\"public\":\"@\"},"
    "\"" KID2 "\":{\"keytype\":\"ecdsa-p256-sha256\",\"public\":\"@\"}},"
    "\"roles\":{\"root\":{\"keyids\":[\"" KID "\",\"" KID2 "\"],\"threshold\":2},"
    "\"keys\":{\"keyids\":[\"" KID2 "\"],\"threshold\":1}}}";

static const char release_base[] =
    "{\"_type\":\"release\",\"spec_version\":1,\"name\":\"detector\",\"version\":\"v7\","
    "\"sequence\":7,\"sha256\":\"" HEXA "\",\"size\":8292,\"chunk_size\":4096,"
    "\"chunks\":[\"" HEXA "\",\"" HEXA "\",\"" HEXA "\"],"
    "\"deltas\":[{\"from_sha256\":\"" HEXA "\",\"sha256\":\"" HEXA "\",\"size\":99}],"
    "\"security_floor\":2,\"created\":1700000000,\"expires\":1900000000}";

static const char asg_base[] =
    "{\"_type\":\"assignment\",\"spec_version\":1,\"device_id\":\"cam-0001\","
    "\"model\":\"detector\",\"release_sha256\":\"" HEXA "\",\"nonce\":\"00ff\","
    "\"sequence\":4,\"pin\":false,\"reason\":\"rollback\"}";

/* base with the first `from` replaced by `to`, '@' replaced by the SPKI; static buffer. */
static const char *mutate(const char *base, const char *from, const char *to)
{
    static char out[4096];
    char tmp[4096];
    const char *hit = from ? strstr(base, from) : NULL;
    size_t o = 0;

    if (from && !hit)
        fail_msg("mutation '%s' not found", from);
    if (hit)
        (void)snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)(hit - base), base, to,
                       hit + strlen(from));
    else
        (void)snprintf(tmp, sizeof(tmp), "%s", base);
    for (const char *p = tmp; *p; p++) {
        if (*p == '@') {
            memcpy(out + o, spki_b64, strlen(spki_b64));
            o += strlen(spki_b64);
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
    return out;
}

struct doc_case {
    const char *from, *to; /* NULL: the base itself */
    int rc;
};

static const struct doc_case root_cases[] = {
    {NULL, NULL, MF_OK},
    {"\"spec_version\":1", "\"spec_version\":2", MF_E_INVALID},
    {"\"_type\":\"root\"", "\"_type\":\"keys\"", MF_E_INVALID},
    {"\"version\":3", "\"version\":0", MF_E_INVALID},
    {"\"version\":3", "\"version\":-3", MF_E_INVALID},
    {"\"version\":3", "\"version\":3.5", MF_E_INVALID},
    {"\"version\":3", "\"version\":1e300", MF_E_INVALID},
    {"\"version\":3", "\"version\":\"3\"", MF_E_INVALID},
    {"\"threshold\":2", "\"threshold\":0", MF_E_INVALID},
    {"\"threshold\":2", "\"threshold\":3", MF_E_INVALID},
    {"\"keyids\":[\"" KID2 "\"]", "\"keyids\":[\"" HEXA "\"]", MF_E_INVALID}, /* not in keys */
    {"\"keyids\":[\"" KID2 "\"]", "\"keyids\":[\"" KID2 "\",\"" KID2 "\"]", MF_E_INVALID},
    {"ecdsa-p256-sha256", "rsa-pss-sha256", MF_E_INVALID},
    {"\"public\":\"@\"", "\"public\":\"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAC\"", MF_E_INVALID},
    {",\"keys\":{\"keyids\"", ",\"nokeys\":{\"keyids\"", MF_E_INVALID}, /* role missing */
    {"\"" KID "\":{", "\"" KID "x\":{", MF_E_INVALID},                  /* bad key id */
    {"\"expires\":1900000000,", "", MF_E_INVALID},
};

static const struct doc_case release_cases[] = {
    {NULL, NULL, MF_OK},
    /* Reviewer cases: each was read as the text before the NUL, or as 2^53. */
    {"\"name\":\"detector\"", "\"name\":\"detector\\u0000-not-this-model\"", MF_E_INVALID},
    {"\"sequence\":7", "\"sequence\":9007199254740993", MF_E_INVALID},
    {"\"sequence\":7", "\"sequence\":7\x01", MF_E_INVALID},
    {"\"size\":8292", "\"size\":20000", MF_E_INVALID}, /* 5 chunks needed, 3 given */
    {"\"size\":8292", "\"size\":0", MF_E_INVALID},
    {"\"chunk_size\":4096", "\"chunk_size\":0", MF_E_INVALID},
    {"\"chunk_size\":4096", "\"chunk_size\":4294967296", MF_E_INVALID},
    {"\"chunks\":[\"01", "\"chunks\":[\"0A", MF_E_INVALID},
    {"\"name\":\"detector\"", "\"name\":\"det ector\"", MF_E_INVALID},
    {"\"name\":\"detector\"", "\"name\":\"\"", MF_E_INVALID},
    {"\"version\":\"v7\"", "\"version\":\"v7/../x\"", MF_E_INVALID},
    {"\"created\":1700000000", "\"created\":1900000000", MF_E_INVALID},
    {"\"sequence\":7", "\"sequence\":7,\"sequence\":8", MF_E_INVALID},
    {",\"deltas\":[", ",\"deltax\":[", MF_E_INVALID},
    {"\"size\":99", "\"size\":0", MF_E_INVALID},
    {"\"from_sha256\"", "\"from\"", MF_E_INVALID},
    {"\"security_floor\":2", "\"security_floor\":null", MF_E_INVALID},
    {"\"chunks\":[", "\"chunks\":[[],", MF_E_INVALID},
};

static const struct doc_case asg_cases[] = {
    {NULL, NULL, MF_OK},
    {"\"sequence\":4", "\"sequence\":0", MF_E_INVALID},
    {"\"pin\":false", "\"pin\":\"no\"", MF_E_INVALID},
    {"\"device_id\":\"cam-0001\"", "\"device_id\":\"cam 0001\"", MF_E_INVALID},
    {"\"nonce\":\"00ff\",", "", MF_E_INVALID},
    {"\"release_sha256\":\"01", "\"release_sha256\":\"1", MF_E_INVALID},
    {"\"reason\":\"rollback\"", "\"reason\":7", MF_E_INVALID},
    {",\"pin\":false,\"reason\":\"rollback\"", "", MF_OK}, /* both optional */
};

static int parse_root(const char *json)
{
    struct mf_mkeyset *ks = mf_alloc(NULL, sizeof(*ks));
    int rc = mf_manifest__parse_root(ks, &ctx, (const uint8_t *)json, strlen(json));

    if (rc == MF_OK) {
        assert_int_equal(ks->version, 3);
        assert_int_equal(ks->nkeys, 2);
        assert_int_equal(ks->role[MF_ROLE_ROOT].n, 2);
        assert_int_equal(ks->role[MF_ROLE_ROOT].threshold, 2);
        assert_int_equal(ks->role[MF_ROLE_KEYS].n, 1);
    }
    mf_free(NULL, ks);
    return rc;
}

static int parse_release(const char *json)
{
    mf_manifest_release *r = NULL;
    int rc = mf_manifest__parse_release(&r, &ctx, (const uint8_t *)json, strlen(json), 100);

    if (rc == MF_OK) {
        assert_string_equal(r->name, "detector");
        assert_int_equal(r->chunk_count, 3);
        assert_int_equal(r->chunks[2][31], 1);
        assert_int_equal(r->deltas[0].size, 99);
        assert_int_equal(r->security_floor, 2);
    } else {
        assert_null(r);
    }
    mf_manifest_release_free(r);
    return rc;
}

static int parse_asg(const char *json)
{
    mf_manifest_assignment *a = NULL;
    int rc = mf_manifest__parse_assignment(&a, &ctx, (const uint8_t *)json, strlen(json));

    if (rc == MF_OK) {
        assert_string_equal(a->nonce, "00ff");
        assert_int_equal(a->sequence, 4);
        assert_null(a->release);
    }
    mf_manifest_assignment_free(a);
    return rc;
}

static void run_doc_cases(const char *base, const struct doc_case *cases, size_t n,
                          int (*parse)(const char *), const char *what)
{
    for (size_t i = 0; i < n; i++) {
        const char *json = mutate(base, cases[i].from, cases[i].to);
        int rc = parse(json);

        if (rc != cases[i].rc)
            fail_msg("%s case %zu (%s): rc %d (%s)", what, i, cases[i].to ? cases[i].to : "-", rc,
                     ctx.errmsg);
    }
}

static void test_manifest_format__root_table(void **state)
{
    (void)state;
    make_spki();
    run_doc_cases(root_base, root_cases, sizeof(root_cases) / sizeof(root_cases[0]), parse_root,
                  "root");
}

static void test_manifest_format__release_table(void **state)
{
    mf_manifest_release *r = NULL;
    const char *json = mutate(release_base, NULL, NULL);

    (void)state;
    run_doc_cases(release_base, release_cases, sizeof(release_cases) / sizeof(release_cases[0]),
                  parse_release, "release");
    /* the chunk bound applies before anything is sized from the list */
    assert_int_equal(mf_manifest__parse_release(&r, &ctx, (const uint8_t *)json, strlen(json), 2),
                     MF_E_LIMIT);
    assert_null(r);
}

static void test_manifest_format__assignment_table(void **state)
{
    char json[1024];

    (void)state;
    run_doc_cases(asg_base, asg_cases, sizeof(asg_cases) / sizeof(asg_cases[0]), parse_asg,
                  "assignment");
    /* a reason one character over the limit */
    (void)snprintf(json, sizeof(json), "%.*s\"reason\":\"%0*d\"}",
                   (int)(strstr(asg_base, "\"reason\"") - asg_base), asg_base,
                   MF_MANIFEST_REASON_MAX + 1, 0);
    assert_int_equal(parse_asg(json), MF_E_INVALID);
}

static void test_manifest_format__names(void **state)
{
    (void)state;
    assert_true(mf_manifest__name_ok("cam-0001"));
    assert_true(mf_manifest__name_ok("v1.2.3_rc-1"));
    assert_false(mf_manifest__name_ok(""));
    assert_false(mf_manifest__name_ok("../etc"));
    assert_false(mf_manifest__name_ok("a b"));
    assert_true(
        mf_manifest__name_ok("0123456789012345678901234567890123456789012345678901234567890123"));
    assert_false(
        mf_manifest__name_ok("01234567890123456789012345678901234567890123456789012345678901234"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_format__base64_vectors),
        cmocka_unit_test(test_manifest_format__base64_rejects),
        cmocka_unit_test(test_manifest_format__pae_vector),
        cmocka_unit_test(test_manifest_format__envelope_table),
        cmocka_unit_test(test_manifest_format__root_table),
        cmocka_unit_test(test_manifest_format__release_table),
        cmocka_unit_test(test_manifest_format__assignment_table),
        cmocka_unit_test(test_manifest_format__names),
    };
    return cmocka_run_group_tests_name("manifest_format", tests, setup, NULL);
}
