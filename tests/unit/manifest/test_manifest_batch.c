/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch-signed assignments (docs/formats/manifest.md, "Batch signatures"): every envelope of
 * a batch of any size verifies through the device's own mf_trust_verify_assignment(), a
 * batch of one is a plain signature, and each way of tampering with the batch member, the
 * leaf or the signer is refused. Envelopes are edited as JSON (cJSON) so each case changes
 * exactly one thing.
 */
#include "manifest_fixture.h"
#include "manifest_common.h"
#include "mf_base64.h"
#include "mf_hex.h"
#include "mf_sha256.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static struct fx fx;
static uint8_t *rel;
static size_t rel_len;
static uint8_t rel_digest[MF_MANIFEST_DIGEST_LEN];

static int setup(void **state)
{
    (void)state;
    fx_init(&fx);
    rel = fx_release_v1(&rel_len, rel_digest, &fx);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mf_free(NULL, rel);
    fx_free(&fx);
    return 0;
}

/* ---- fixtures ---------------------------------------------------------------------------- */

static mf_manifest_signer *signer_by(const int *by)
{
    mf_manifest_signer *s = NULL;

    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    for (; *by >= 0; by++)
        assert_int_equal(mf_manifest_signer_add_key(NULL, s, fx.priv[*by], fx.priv_len[*by]),
                         MF_OK);
    return s;
}

static char devices[MF_MANIFEST_SIGN_BATCH_MAX][32];

/* Signs n assignments (device cam-<i>, sequence i + 1) as one batch by `by`. */
static void sign_batch(uint8_t **envs, size_t *lens, size_t n, const int *by)
{
    static mf_manifest_assignment_spec specs[MF_MANIFEST_SIGN_BATCH_MAX];
    mf_manifest_signer *s = signer_by(by);

    for (size_t i = 0; i < n; i++) {
        (void)snprintf(devices[i], sizeof(devices[i]), "cam-%04zu", i);
        memset(&specs[i], 0, sizeof(specs[i]));
        specs[i].device_id = devices[i];
        specs[i].model = FX_MODEL;
        memcpy(specs[i].release_sha256, rel_digest, sizeof(rel_digest));
        specs[i].nonce = FX_NONCE;
        specs[i].sequence = i + 1;
    }
    assert_int_equal(mf_manifest_sign_assignment_batch(envs, lens, s, specs, n), MF_OK);
    mf_manifest_signer_free(s);
}

static void free_all(uint8_t **envs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mf_free(NULL, envs[i]);
}

/* Verifies envelope i of a batch on a device `t` (NULL: a fresh fixture trust). */
static int verify_on(mf_trust *t, const void *env, size_t len, size_t i)
{
    mf_manifest_assignment *a = NULL;
    mf_trust *own = t ? NULL : fx_trust(&fx, NULL);
    int rc = mf_trust_verify_assignment(&a, t ? t : own, devices[i], FX_NONCE, env, len, rel,
                                        rel_len, FX_NOW);

    if (rc == MF_OK)
        assert_int_equal(a->sequence, i + 1);
    else
        assert_int_not_equal(mf_trust_last_reason(t ? t : own), MF_TRUST_R_NONE);
    mf_manifest_assignment_free(a);
    mf_trust_free(own);
    return rc;
}

/* ---- JSON surgery ------------------------------------------------------------------------ */

typedef void (*edit_fn)(cJSON *env, cJSON *sig, cJSON *batch, const void *arg);

/* `doc` printed into an envelope from the default allocator; frees doc. */
static uint8_t *print_free(size_t *len, cJSON *doc)
{
    char *s = cJSON_PrintUnformatted(doc);
    uint8_t *out;

    cJSON_Delete(doc);
    assert_non_null(s);
    *len = strlen(s);
    out = mf_alloc(NULL, *len + 1);
    memcpy(out, s, *len + 1);
    cJSON_free(s);
    return out;
}

/* A copy of `env` with `fn` applied to its first signature (and its batch member). */
static uint8_t *edit(size_t *len, const uint8_t *env, size_t env_len, edit_fn fn, const void *arg)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)env, env_len);
    cJSON *sig, *batch;

    assert_non_null(doc);
    sig = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "signatures"), 0);
    batch = cJSON_GetObjectItem(sig, "batch");
    fn(doc, sig, batch, arg);
    return print_free(len, doc);
}

static cJSON *path_of(cJSON *batch)
{
    return cJSON_GetObjectItem(batch, "path");
}

static void set_b64(cJSON *item, const uint8_t *p, size_t n)
{
    char b64[128];

    mf_base64__encode(b64, p, n);
    cJSON_SetValuestring(item, b64);
}

static void flip_path_byte(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    cJSON *el = cJSON_GetArrayItem(path_of(batch), 0);
    uint8_t h[40];
    size_t n = 0;

    (void)env, (void)sig, (void)arg;
    assert_int_equal(mf_base64__decode(h, sizeof(h), &n, el->valuestring, strlen(el->valuestring)),
                     MF_OK);
    h[7] ^= 0x01;
    set_b64(el, h, n);
}

static void swap_path(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    cJSON *a = cJSON_GetArrayItem(path_of(batch), 0);
    cJSON *b = cJSON_GetArrayItem(path_of(batch), 1);
    char tmp[64];

    (void)env, (void)sig, (void)arg;
    (void)snprintf(tmp, sizeof(tmp), "%s", a->valuestring);
    cJSON_SetValuestring(a, b->valuestring);
    cJSON_SetValuestring(b, tmp);
}

static void set_number(cJSON *batch, const char *key, double v)
{
    cJSON_SetNumberValue(cJSON_GetObjectItem(batch, key), v);
}

static void index_plus(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)sig;
    set_number(batch, "index",
               cJSON_GetObjectItem(batch, "index")->valuedouble + *(const int *)arg);
}

static void size_plus(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)sig;
    set_number(batch, "size", cJSON_GetObjectItem(batch, "size")->valuedouble + *(const int *)arg);
}

static void index_is_size(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)sig, (void)arg;
    set_number(batch, "index", cJSON_GetObjectItem(batch, "size")->valuedouble);
}

static void size_is(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)sig;
    set_number(batch, "size", *(const int *)arg);
}

static void path_longer(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)sig, (void)arg;
    cJSON_AddItemToArray(path_of(batch), cJSON_Duplicate(cJSON_GetArrayItem(path_of(batch), 0), 1));
}

static void path_shorter(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    cJSON *p = path_of(batch);

    (void)env, (void)sig, (void)arg;
    cJSON_DeleteItemFromArray(p, cJSON_GetArraySize(p) - 1);
}

static void path_elem_len(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    uint8_t h[40];

    (void)env, (void)sig;
    memset(h, 0x5a, sizeof(h));
    set_b64(cJSON_GetArrayItem(path_of(batch), 0), h, (size_t) * (const int *)arg);
}

static void payload_from(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    cJSON *other = cJSON_Parse(arg);

    (void)sig, (void)batch;
    cJSON_SetValuestring(cJSON_GetObjectItem(env, "payload"),
                         cJSON_GetObjectItem(other, "payload")->valuestring);
    cJSON_Delete(other);
}

static void drop_batch(cJSON *env, cJSON *sig, cJSON *batch, const void *arg)
{
    (void)env, (void)batch, (void)arg;
    cJSON_DeleteItemFromObject(sig, "batch");
}

/* ---- tests ------------------------------------------------------------------------------- */

/* Every envelope of batches of 1..17, 32 and 256 verifies on a device, in order, and names
 * its own device and sequence; a batch of 1 carries no batch member. */
static void test_manifest_batch__all_sizes_verify(void **state)
{
    static const size_t sizes[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                   11, 12, 13, 14, 15, 16, 17, 32, 256};
    static uint8_t *envs[MF_MANIFEST_SIGN_BATCH_MAX];
    static size_t lens[MF_MANIFEST_SIGN_BATCH_MAX];

    (void)state;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        mf_trust *t = fx_trust(&fx, NULL);

        sign_batch(envs, lens, n, BY(K_DIR));
        for (size_t i = 0; i < n; i++) {
            int rc = verify_on(t, envs[i], lens[i], i);

            if (rc != MF_OK)
                fail_msg("batch of %zu, leaf %zu: %s", n, i, mf_trust_errmsg(t));
            assert_int_equal(strstr((const char *)envs[i], "\"batch\"") == NULL, n == 1);
        }
        mf_trust_free(t);
        free_all(envs, n);
    }
}

/* A batch of one is what mf_manifest_sign_assignment() writes, member for member. */
static void test_manifest_batch__one_is_plain(void **state)
{
    uint8_t *env, *plain = NULL;
    size_t len, plain_len = 0;
    const char *a, *b;

    (void)state;
    sign_batch(&env, &len, 1, BY(K_DIR));
    plain =
        fx_assignment(&plain_len, &fx, devices[0], FX_MODEL, rel_digest, FX_NONCE, 1, BY(K_DIR));
    /* ECDSA signatures are randomised: compare everything up to "sig":". */
    a = strstr((const char *)env, "\"sig\":\"");
    b = strstr((const char *)plain, "\"sig\":\"");
    assert_non_null(a);
    assert_int_equal(a - (const char *)env, b - (const char *)plain);
    assert_memory_equal(env, plain, (size_t)(a - (const char *)env));
    assert_null(strstr((const char *)env, "batch"));
    mf_free(NULL, env);
    mf_free(NULL, plain);
}

static void test_manifest_batch__bad_count(void **state)
{
    mf_manifest_assignment_spec specs[1] = {{0}};
    mf_manifest_signer *s = signer_by(BY(K_DIR));
    uint8_t *env = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(mf_manifest_sign_assignment_batch(&env, &len, s, specs, 0), MF_E_INVALID);
    assert_int_equal(mf_manifest_sign_assignment_batch(&env, &len, s, specs, 257), MF_E_INVALID);
    mf_manifest_signer_free(s);
}

struct tamper {
    const char *name;
    edit_fn fn;
    int arg;
};

/* Leaf 2 of a batch of 5 (path of 3) edited one way at a time: every edit is refused, and
 * the unedited envelope (control) verifies. */
static void test_manifest_batch__tampering_refused(void **state)
{
    static const struct tamper rows[] = {
        {"flipped path byte", flip_path_byte, 0},
        {"swapped path elements", swap_path, 0},
        {"wrong index", index_plus, 1},
        {"wrong index (down)", index_plus, -1},
        {"wrong size", size_plus, 1},
        {"wrong size (down)", size_plus, -1},
        {"index >= size", index_is_size, 0},
        {"size 0", size_is, 0},
        {"size 257", size_is, 257},
        {"path too long", path_longer, 0},
        {"path too short", path_shorter, 0},
        {"path element of 31 bytes", path_elem_len, 31},
        {"path element of 33 bytes", path_elem_len, 33},
        {"batch member dropped", drop_batch, 0},
    };
    uint8_t *envs[5];
    size_t lens[5];

    (void)state;
    sign_batch(envs, lens, 5, BY(K_DIR));
    assert_int_equal(verify_on(NULL, envs[2], lens[2], 2), MF_OK);
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        size_t len;
        uint8_t *bad = edit(&len, envs[2], lens[2], rows[r].fn, &rows[r].arg);

        if (verify_on(NULL, bad, len, 2) == MF_OK)
            fail_msg("accepted: %s", rows[r].name);
        mf_free(NULL, bad);
    }
    free_all(envs, 5);
}

/* A path too long for the deepest tree (9 hashes) is malformed; within 8 it fails the walk. */
static void test_manifest_batch__path_of_nine(void **state)
{
    uint8_t *envs[256], *bad;
    size_t lens[256], len;

    (void)state;
    sign_batch(envs, lens, 256, BY(K_DIR));
    assert_int_equal(verify_on(NULL, envs[255], lens[255], 255), MF_OK);
    bad = edit(&len, envs[255], lens[255], path_longer, NULL);
    assert_int_not_equal(verify_on(NULL, bad, len, 255), MF_OK);
    mf_free(NULL, bad);
    free_all(envs, 256);
}

/* The payload of leaf 0 under leaf 1's signature and path: the leaf is the payload's, so the
 * root differs (the device and nonce checks are not what refuses it: devices[1] is used). */
static void test_manifest_batch__other_leaf_payload(void **state)
{
    uint8_t *envs[4], *bad;
    size_t lens[4], len;
    mf_trust *t = fx_trust(&fx, NULL);
    mf_manifest_assignment *a = NULL;

    (void)state;
    sign_batch(envs, lens, 4, BY(K_DIR));
    bad = edit(&len, envs[1], lens[1], payload_from, envs[0]);
    /* As device 0 would receive it: its own payload, a foreign path. */
    assert_int_equal(
        mf_trust_verify_assignment(&a, t, devices[0], FX_NONCE, bad, len, rel, rel_len, FX_NOW),
        MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_BAD_SIGNATURE);
    assert_null(a);
    mf_free(NULL, bad);
    mf_trust_free(t);
    free_all(envs, 4);
}

/* A batch signed by a release key or an unknown key does not satisfy the director role. */
static void test_manifest_batch__non_director_key(void **state)
{
    static const int signers[] = {K_REL0, K_EVIL, K_ROOT0};
    uint8_t *envs[3];
    size_t lens[3];

    (void)state;
    for (size_t k = 0; k < sizeof(signers) / sizeof(signers[0]); k++) {
        sign_batch(envs, lens, 3, ((const int[]){signers[k], -1}));
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(verify_on(NULL, envs[i], lens[i], i), MF_E_SIGNATURE);
        free_all(envs, 3);
    }
}

/* ---- a batch member on other document types ----------------------------------------------- */

/* Replaces every signature of `env` by a valid batch-of-one signature of the same key over
 * the envelope's own PAE: what a batch signature of that document would be. */
static uint8_t *as_batch_of_one(size_t *len, const uint8_t *env, size_t env_len)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)env, env_len);
    const char *type = cJSON_GetObjectItem(doc, "payloadType")->valuestring;
    const char *p64 = cJSON_GetObjectItem(doc, "payload")->valuestring;
    char prefix[MF_MANIFEST_PAE_PREFIX_MAX + 1];
    uint8_t payload[4096], leaf[32], body[MF_MANIFEST_BATCH_BODY_LEN];
    size_t plen = 0, n;
    struct mf_sha256 sha;
    cJSON *sig;

    assert_int_equal(mf_base64__decode(payload, sizeof(payload), &plen, p64, strlen(p64)), MF_OK);
    n = mf_manifest__pae_prefix(prefix, type, plen);
    mf_sha256__init(&sha);
    mf_sha256__update(&sha, "\0", 1);
    mf_sha256__update(&sha, prefix, n);
    mf_sha256__update(&sha, payload, plen);
    mf_sha256__final(&sha, leaf);
    mf_manifest__batch_body(body, leaf, 1);
    cJSON_ArrayForEach(sig, cJSON_GetObjectItem(doc, "signatures"))
    {
        const char *id = cJSON_GetObjectItem(sig, "keyid")->valuestring;
        int k = 0;
        mf_manifest_signer *signer;
        uint8_t *benv = NULL;
        size_t blen = 0;
        cJSON *bdoc, *batch;

        while (strcmp(fx.id[k], id) != 0)
            k++;
        signer = signer_by(((const int[]){k, -1}));
        assert_int_equal(mf_manifest_sign_payload(&benv, &blen, signer,
                                                  MF_MANIFEST_TYPE_ASSIGNMENT_BATCH, body,
                                                  sizeof(body)),
                         MF_OK);
        bdoc = cJSON_ParseWithLength((const char *)benv, blen);
        cJSON_SetValuestring(
            cJSON_GetObjectItem(sig, "sig"),
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(bdoc, "signatures"), 0),
                                "sig")
                ->valuestring);
        batch = cJSON_AddObjectToObject(sig, "batch");
        cJSON_AddNumberToObject(batch, "index", 0);
        cJSON_AddNumberToObject(batch, "size", 1);
        cJSON_AddArrayToObject(batch, "path");
        cJSON_Delete(bdoc);
        mf_free(NULL, benv);
        mf_manifest_signer_free(signer);
    }
    return print_free(len, doc);
}

static void test_manifest_batch__only_assignments(void **state)
{
    mf_manifest_release *r = NULL;
    mf_trust *t = fx_trust(&fx, NULL);
    uint8_t *plain, *b;
    size_t plain_len, blen;

    (void)state;
    /* Control: the construction is a valid batch signature where batches are allowed. */
    plain =
        fx_assignment(&plain_len, &fx, "cam-0000", FX_MODEL, rel_digest, FX_NONCE, 1, BY(K_DIR));
    (void)snprintf(devices[0], sizeof(devices[0]), "cam-0000");
    b = as_batch_of_one(&blen, plain, plain_len);
    assert_non_null(strstr((const char *)b, "\"batch\""));
    assert_int_equal(verify_on(NULL, b, blen, 0), MF_OK);
    mf_free(NULL, plain);
    mf_free(NULL, b);

    /* Release. */
    b = as_batch_of_one(&blen, rel, rel_len);
    assert_int_equal(mf_trust_verify_release(&r, t, b, blen, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_BAD_SIGNATURE);
    mf_free(NULL, b);

    /* Keys (version 2 so only the signature can refuse it). */
    plain = fx_keys(&plain_len, &fx, 2, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS));
    assert_int_equal(mf_trust_update_keys(t, plain, plain_len, FX_NOW), MF_OK);
    mf_free(NULL, plain);
    plain = fx_keys(&plain_len, &fx, 3, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS));
    b = as_batch_of_one(&blen, plain, plain_len);
    assert_int_equal(mf_trust_update_keys(t, b, blen, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_keys_version(t), 2);
    mf_free(NULL, plain);
    mf_free(NULL, b);
    mf_trust_free(t);

    /* Root. */
    plain = fx_root_v1(&plain_len, &fx);
    b = as_batch_of_one(&blen, plain, plain_len);
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, plain, plain_len, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, b, blen, FX_NOW), MF_E_SIGNATURE);
    mf_trust_free(t);
    mf_free(NULL, plain);
    mf_free(NULL, b);
}

/* ---- assignment payload bytes ------------------------------------------------------------- */

/* The payload of an envelope, NUL-terminated (the caller frees it). */
static char *payload_of(const uint8_t *env, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)env, len);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "payload");
    size_t cap, n = 0;
    char *out;

    assert_true(cJSON_IsString(p));
    cap = strlen(p->valuestring);
    out = mf_alloc(NULL, cap + 1);
    assert_non_null(out);
    assert_int_equal(mf_base64__decode((uint8_t *)out, cap, &n, p->valuestring, cap), MF_OK);
    out[n] = '\0';
    cJSON_Delete(doc);
    return out;
}

/* The document as the general builder makes it: cJSON, members in the format's order, the
 * sequence in exact digits (cJSON rounds numbers of more than 15 digits). */
static char *built_with_cjson(const mf_manifest_assignment_spec *a)
{
    char hex[MF_SHA256_HEX_LEN + 1], seq[24];
    cJSON *doc = cJSON_CreateObject();
    char *json;

    mf_hex__encode(hex, a->release_sha256, MF_MANIFEST_DIGEST_LEN);
    cJSON_AddStringToObject(doc, "_type", "assignment");
    cJSON_AddNumberToObject(doc, "spec_version", MF_MANIFEST_SPEC_VERSION);
    (void)snprintf(seq, sizeof(seq), "%llu", (unsigned long long)a->sequence);
    cJSON_AddRawToObject(doc, "sequence", seq);
    cJSON_AddStringToObject(doc, "device_id", a->device_id);
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "release_sha256", hex);
    cJSON_AddStringToObject(doc, "nonce", a->nonce);
    cJSON_AddBoolToObject(doc, "pin", a->pin != 0);
    if (a->reason)
        cJSON_AddStringToObject(doc, "reason", a->reason);
    json = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    assert_non_null(json);
    return json;
}

/* The director's assignments are written without cJSON (sign_docs.c): the bytes signed are
 * the ones the general builder prints for the same document, the device parser reads back
 * every field (a sequence of 2^53 too, which cJSON alone would round), and what the parser
 * refuses the signer refuses, on both of the signer's paths. */
static void test_manifest_batch__payload_bytes(void **state)
{
    static const char long_name[] =
        "a123456789b123456789c123456789d123456789e123456789f123456789g123";
    static const char too_long[] =
        "a123456789b123456789c123456789d123456789e123456789f123456789g1234";
    const mf_manifest_assignment_spec ok[] = {
        {.device_id = "cam-0001", .model = "detector", .nonce = FX_NONCE, .sequence = 1},
        {.device_id = "Cam_9.x-Y", .model = "m.v_2-b", .nonce = "n", .sequence = 12345, .pin = 1},
        {.device_id = long_name,
         .model = long_name,
         .nonce = long_name,
         .sequence = UINT64_C(9007199254740992)},
        {.device_id = "d",
         .model = "m",
         .nonce = "abc",
         .sequence = UINT64_C(1) << 40,
         .reason = "rollback: \"quoted\" \\ and \u00e9"},
    };
    const mf_manifest_assignment_spec bad[] = {
        {.device_id = "cam 1", .model = "detector", .nonce = FX_NONCE, .sequence = 1},
        {.device_id = "cam-1", .model = "", .nonce = FX_NONCE, .sequence = 1},
        {.device_id = "cam-1", .model = "detector", .nonce = too_long, .sequence = 1},
        {.device_id = "cam-1", .model = "detector", .nonce = "x\"y", .sequence = 1},
        {.device_id = "cam-1", .model = "detector", .nonce = FX_NONCE, .sequence = 0},
        {.device_id = "cam-1",
         .model = "detector",
         .nonce = FX_NONCE,
         .sequence = UINT64_C(9007199254740993)},
        {.device_id = "cam/1",
         .model = "detector",
         .nonce = FX_NONCE,
         .sequence = 7,
         .reason = "with a reason: the general path"},
    };
    mf_manifest_signer *s = signer_by(BY(K_DIR));
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        mf_manifest_assignment_spec a = ok[i];
        mf_manifest_assignment *parsed = NULL;
        uint8_t *env = NULL;
        size_t len = 0;
        char *got, *want;

        memcpy(a.release_sha256, rel_digest, sizeof(rel_digest));
        assert_int_equal(mf_manifest_sign_assignment(&env, &len, s, &a), MF_OK);
        got = payload_of(env, len);
        want = built_with_cjson(&a);
        assert_string_equal(got, want);
        assert_int_equal(
            mf_manifest__parse_assignment(&parsed, &ctx, (const uint8_t *)got, strlen(got)), MF_OK);
        assert_string_equal(parsed->device_id, a.device_id);
        assert_string_equal(parsed->model, a.model);
        assert_string_equal(parsed->nonce, a.nonce);
        assert_true(parsed->sequence == a.sequence);
        assert_int_equal(parsed->pin, a.pin);
        assert_memory_equal(parsed->release_sha256, a.release_sha256, MF_MANIFEST_DIGEST_LEN);
        if (a.reason)
            assert_string_equal(parsed->reason, a.reason);
        else
            assert_null(parsed->reason);
        mf_manifest_assignment_free(parsed);
        cJSON_free(want);
        mf_free(NULL, got);
        mf_free(NULL, env);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mf_manifest_assignment_spec a = bad[i];
        uint8_t *env = NULL;
        size_t len = 0;

        memcpy(a.release_sha256, rel_digest, sizeof(rel_digest));
        if (mf_manifest_sign_assignment(&env, &len, s, &a) != MF_E_INVALID)
            fail_msg("bad spec %zu was signed", i);
        assert_null(env);
    }
    mf_manifest_signer_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_batch__all_sizes_verify),
        cmocka_unit_test(test_manifest_batch__one_is_plain),
        cmocka_unit_test(test_manifest_batch__bad_count),
        cmocka_unit_test(test_manifest_batch__tampering_refused),
        cmocka_unit_test(test_manifest_batch__path_of_nine),
        cmocka_unit_test(test_manifest_batch__other_leaf_payload),
        cmocka_unit_test(test_manifest_batch__non_director_key),
        cmocka_unit_test(test_manifest_batch__only_assignments),
        cmocka_unit_test(test_manifest_batch__payload_bytes),
    };
    return cmocka_run_group_tests_name("manifest_batch", tests, setup, teardown);
}
