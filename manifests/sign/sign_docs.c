/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds the four documents of docs/formats/manifest.md from spec structs and signs them.
 * Every built payload is run through the same parser the device uses before it is signed,
 * so the signer cannot emit a document a device would refuse (and the rules live in one
 * place: manifests/common).
 */
#include "sign_internal.h"
#include "manifest_json.h"
#include "mf_hex.h"
#include "mf_merkle.h"

#include <stdio.h>
#include <string.h>

/* Chunk lists the builder accepts; devices apply their own (smaller) bound. */
#define SIGN_MAX_CHUNKS (1u << 20)

static cJSON *add_hex(cJSON *obj, const char *key, const uint8_t *digest)
{
    char hex[MF_SHA256_HEX_LEN + 1];

    mf_hex__encode(hex, digest, MF_MANIFEST_DIGEST_LEN);
    return cJSON_AddStringToObject(obj, key, hex);
}

/* A document with its type and its version or sequence; NULL when out of memory or when the
 * number is above 2^53 (no JSON number carries it exactly: the device would read another). */
static cJSON *doc_new(const char *type, uint64_t version_or_seq, const char *num_key)
{
    cJSON *doc = version_or_seq <= MF_MANIFEST_JSON_UINT_MAX ? cJSON_CreateObject() : NULL;
    char digits[24];

    /* As digits: cJSON prints numbers of more than 15 digits rounded (2^53 as
     * 9.00719925474099e+15), which would sign another version or sequence than asked. */
    (void)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)version_or_seq);
    if (doc && (!cJSON_AddStringToObject(doc, "_type", type) ||
                !cJSON_AddNumberToObject(doc, "spec_version", MF_MANIFEST_SPEC_VERSION) ||
                !cJSON_AddRawToObject(doc, num_key, digits))) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

/* doc_new's failure: a number out of range, or no memory. */
static int doc_failed(struct mf_manifest_signer *s, const char *type, uint64_t version_or_seq)
{
    if (version_or_seq > MF_MANIFEST_JSON_UINT_MAX)
        return mf_fail(&s->ctx, MF_E_INVALID, "%s: %llu is above 2^53", type,
                       (unsigned long long)version_or_seq);
    return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a %s document", type);
}

/* Adds one role and its keys (into the shared "keys" map, once per key id). */
static int add_role(cJSON *keys, cJSON *roles, struct mf_manifest_signer *s, const char *name,
                    const mf_manifest_role_spec *spec)
{
    cJSON *role = cJSON_AddObjectToObject(roles, name);
    cJSON *ids = role ? cJSON_AddArrayToObject(role, "keyids") : NULL;

    if (!ids || !cJSON_AddNumberToObject(role, "threshold", spec->threshold))
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory for role '%s'", name);
    for (size_t i = 0; i < spec->count; i++) {
        uint8_t der[MF_MANIFEST_SPKI_LEN], id[MF_MANIFEST_DIGEST_LEN];
        char hex[MF_SHA256_HEX_LEN + 1], b64[128];
        EVP_PKEY *k;
        cJSON *entry;
        int err =
            mf_sign__read_pem(&k, &s->ctx, spec->public_pems[i], strlen(spec->public_pems[i]), 0);

        if (err < 0)
            return err;
        err = mf_sign__spki(der, id, &s->ctx, k);
        EVP_PKEY_free(k);
        if (err < 0)
            return err;
        mf_hex__encode(hex, id, sizeof(id));
        mf_base64__encode(b64, der, sizeof(der));
        if (!cJSON_AddItemToArray(ids, cJSON_CreateString(hex)))
            return mf_fail(&s->ctx, MF_E_NOMEM, "no memory for role '%s'", name);
        if (cJSON_GetObjectItemCaseSensitive(keys, hex))
            continue;
        entry = cJSON_AddObjectToObject(keys, hex);
        if (!entry || !cJSON_AddStringToObject(entry, "keytype", "ecdsa-p256-sha256") ||
            !cJSON_AddStringToObject(entry, "public", b64))
            return mf_fail(&s->ctx, MF_E_NOMEM, "no memory for key %zu of '%s'", i, name);
    }
    return MF_OK;
}

/* Serialises doc, checks it with the device parser via `check`, signs it. Frees doc. */
typedef int (*check_fn)(struct mf_ctx *ctx, const uint8_t *payload, size_t len);

static int finish(uint8_t **env_out, size_t *env_len, struct mf_manifest_signer *s, cJSON *doc,
                  const char *payload_type, check_fn check)
{
    char *json = doc ? cJSON_PrintUnformatted(doc) : NULL;
    int err;

    cJSON_Delete(doc);
    if (!json)
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a document");
    err = check(&s->ctx, (const uint8_t *)json, strlen(json));
    if (err >= 0)
        err = mf_manifest_sign_payload(env_out, env_len, s, payload_type, json, strlen(json));
    cJSON_free(json);
    return err;
}

static int keyset_doc(uint8_t **env_out, size_t *env_len, struct mf_manifest_signer *s,
                      const char *type, uint64_t version, uint64_t expires,
                      const char *const names[2], const mf_manifest_role_spec *const specs[2],
                      const char *payload_type, check_fn check)
{
    cJSON *doc = doc_new(type, version, "version");
    cJSON *keys, *roles;
    int err = MF_OK;

    mf_ctx__clear(&s->ctx);
    *env_out = NULL;
    *env_len = 0;
    if (!doc)
        return doc_failed(s, type, version);
    keys = cJSON_AddObjectToObject(doc, "keys");
    roles = cJSON_AddObjectToObject(doc, "roles");
    if (!keys || !roles || !cJSON_AddNumberToObject(doc, "expires", (double)expires)) {
        cJSON_Delete(doc);
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a %s document", type);
    }
    for (int i = 0; i < 2 && err >= 0; i++)
        err = add_role(keys, roles, s, names[i], specs[i]);
    if (err < 0) {
        cJSON_Delete(doc);
        return err;
    }
    return finish(env_out, env_len, s, doc, payload_type, check);
}

typedef int (*keyset_parse_fn)(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                               size_t len);

/* Both keyset documents are checked alike: the device's parser `parse` on a scratch keyset. */
static int check_keyset(struct mf_ctx *ctx, const uint8_t *p, size_t n, keyset_parse_fn parse,
                        const char *what)
{
    struct mf_mkeyset *ks = mf_ctx__alloc(ctx, sizeof(*ks));
    int err;

    if (!ks)
        return mf_fail(ctx, MF_E_NOMEM, "no memory to check %s", what);
    err = parse(ks, ctx, p, n);
    mf_ctx__free(ctx, ks);
    return err;
}

static int check_root(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    return check_keyset(ctx, p, n, mf_manifest__parse_root, "a root");
}

static int check_keys(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    return check_keyset(ctx, p, n, mf_manifest__parse_keys, "a keys document");
}

int mf_manifest_sign_root(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                          const mf_manifest_root_spec *spec)
{
    static const char *const names[2] = {"root", "keys"};
    const mf_manifest_role_spec *const specs[2] = {&spec->root, &spec->keys};

    return keyset_doc(env_out, env_len, s, "root", spec->version, spec->expires, names, specs,
                      MF_MANIFEST_TYPE_ROOT, check_root);
}

int mf_manifest_sign_keys(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                          const mf_manifest_keys_spec *spec)
{
    static const char *const names[2] = {"release", "director"};
    const mf_manifest_role_spec *const specs[2] = {&spec->release, &spec->director};

    return keyset_doc(env_out, env_len, s, "keys", spec->version, spec->expires, names, specs,
                      MF_MANIFEST_TYPE_KEYS, check_keys);
}

static int check_release(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    mf_manifest_release *r = NULL;
    int err = mf_manifest__parse_release(&r, ctx, p, n, SIGN_MAX_CHUNKS);

    mf_manifest_release_free(r);
    return err;
}

/* "chunks_root" always (the RFC 9162 root over the chunk hashes, mf_merkle.h), the flat
 * "chunks" unless the spec asks for the chunk tree alone, and "deltas". */
static int add_release_lists(cJSON *doc, const mf_manifest_release_spec *spec)
{
    uint8_t root[MF_MANIFEST_DIGEST_LEN];
    cJSON *chunks = spec->chunk_tree_only ? NULL : cJSON_AddArrayToObject(doc, "chunks");
    cJSON *deltas;

    if (!spec->chunks || mf_merkle__root_of(root, spec->chunks, spec->chunk_count) != 0)
        return MF_E_INVALID;
    if (!add_hex(doc, "chunks_root", root) || (!chunks && !spec->chunk_tree_only))
        return MF_E_NOMEM;
    deltas = cJSON_AddArrayToObject(doc, "deltas");
    if (!deltas)
        return MF_E_NOMEM;
    for (size_t i = 0; chunks && i < spec->chunk_count; i++) {
        char hex[MF_SHA256_HEX_LEN + 1];

        mf_hex__encode(hex, spec->chunks[i], MF_MANIFEST_DIGEST_LEN);
        if (!cJSON_AddItemToArray(chunks, cJSON_CreateString(hex)))
            return MF_E_NOMEM;
    }
    for (size_t i = 0; i < spec->delta_count; i++) {
        cJSON *d = cJSON_CreateObject();

        if (!cJSON_AddItemToArray(deltas, d) ||
            !add_hex(d, "from_sha256", spec->deltas[i].from_sha256) ||
            !add_hex(d, "sha256", spec->deltas[i].sha256) ||
            !cJSON_AddNumberToObject(d, "size", (double)spec->deltas[i].size))
            return MF_E_NOMEM;
    }
    return MF_OK;
}

int mf_manifest_sign_release(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                             const mf_manifest_release_spec *spec)
{
    cJSON *doc;
    int err;

    mf_ctx__clear(&s->ctx);
    *env_out = NULL;
    *env_len = 0;
    if (!spec->name || !spec->version)
        return mf_fail(&s->ctx, MF_E_INVALID, "release spec without name or version");
    doc = doc_new("release", spec->sequence, "sequence");
    if (!doc)
        return doc_failed(s, "release", spec->sequence);
    if (!cJSON_AddStringToObject(doc, "name", spec->name) ||
        !cJSON_AddStringToObject(doc, "version", spec->version) ||
        !add_hex(doc, "sha256", spec->sha256) ||
        !cJSON_AddNumberToObject(doc, "size", (double)spec->size) ||
        !cJSON_AddNumberToObject(doc, "chunk_size", spec->chunk_size) ||
        !cJSON_AddNumberToObject(doc, "security_floor", (double)spec->security_floor) ||
        !cJSON_AddNumberToObject(doc, "created", (double)spec->created) ||
        !cJSON_AddNumberToObject(doc, "expires", (double)spec->expires)) {
        cJSON_Delete(doc);
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a release");
    }
    err = add_release_lists(doc, spec);
    if (err < 0) {
        cJSON_Delete(doc);
        return err == MF_E_INVALID
                   ? mf_fail(&s->ctx, err, "release spec of %s %s without chunk hashes", spec->name,
                             spec->version)
                   : mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a release");
    }
    return finish(env_out, env_len, s, doc, MF_MANIFEST_TYPE_RELEASE, check_release);
}

static int check_assignment(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    mf_manifest_assignment *a = NULL;
    int err = mf_manifest__parse_assignment(&a, ctx, p, n);

    mf_manifest_assignment_free(a);
    return err;
}

static char *put(char *p, const char *s)
{
    size_t n = strlen(s);

    memcpy(p, s, n);
    return p + n;
}

/* Its longest: 120 bytes of member names and punctuation, a 20-digit number, the digest's
 * 64 hex digits, three names and the NUL. */
#define DIRECT_ASSIGNMENT_MAX 512
_Static_assert(DIRECT_ASSIGNMENT_MAX >= 120 + 20 + 64 + 3 * MF_MANIFEST_NAME_MAX + 1,
               "the direct assignment fits its buffer");
_Static_assert(MF_MANIFEST_SPEC_VERSION == 1, "the direct assignment writes spec_version 1");

/*
 * The assignment every check-in signs (no reason; a sequence JSON numbers carry exactly),
 * written straight into its bytes: the director signs one per check-in, and building,
 * printing and parsing back a cJSON document was a large share of a check-in's CPU (the
 * profile: bench/server/README.md).
 * The device parser's own rules are applied to the fields instead (names, sequence), which
 * are all it would check, and the bytes are the ones the general builder prints for the same
 * document (test_manifest_batch__payload_bytes holds both to that). Returns 0 when the spec is not
 * that common one (the caller builds it the general way), 1 when *json_out is written, or
 * an error.
 */
static int assignment_payload_direct(char **json_out, struct mf_manifest_signer *s,
                                     const mf_manifest_assignment_spec *spec)
{
    char hex[MF_SHA256_HEX_LEN + 1], seq[24];
    char *json, *p;

    if (spec->reason || spec->sequence < 1 || spec->sequence > MF_MANIFEST_JSON_UINT_MAX)
        return 0;
    if (!mf_manifest__name_ok(spec->device_id) || !mf_manifest__name_ok(spec->model) ||
        !mf_manifest__name_ok(spec->nonce))
        return mf_fail(&s->ctx, MF_E_INVALID,
                       "assignment spec with an invalid device id, model or nonce");
    json = cJSON_malloc(DIRECT_ASSIGNMENT_MAX);
    if (!json)
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build an assignment");
    mf_hex__encode(hex, spec->release_sha256, MF_MANIFEST_DIGEST_LEN);
    (void)snprintf(seq, sizeof(seq), "%llu", (unsigned long long)spec->sequence);
    p = put(json, "{\"_type\":\"assignment\",\"spec_version\":1,\"sequence\":");
    p = put(put(p, seq), ",\"device_id\":\"");
    p = put(put(p, spec->device_id), "\",\"model\":\"");
    p = put(put(p, spec->model), "\",\"release_sha256\":\"");
    p = put(put(p, hex), "\",\"nonce\":\"");
    p = put(put(p, spec->nonce), spec->pin ? "\",\"pin\":true}" : "\",\"pin\":false}");
    *p = '\0';
    *json_out = json;
    return 1;
}

int mf_sign__assignment_payload(char **json_out, struct mf_manifest_signer *s,
                                const mf_manifest_assignment_spec *spec)
{
    cJSON *doc;
    int err;

    *json_out = NULL;
    if (!spec->device_id || !spec->model || !spec->nonce)
        return mf_fail(&s->ctx, MF_E_INVALID, "assignment spec without device, model or nonce");
    err = assignment_payload_direct(json_out, s, spec);
    if (err != 0)
        return err < 0 ? err : MF_OK;
    doc = doc_new("assignment", spec->sequence, "sequence");
    if (!doc)
        return doc_failed(s, "assignment", spec->sequence);
    if (!cJSON_AddStringToObject(doc, "device_id", spec->device_id) ||
        !cJSON_AddStringToObject(doc, "model", spec->model) ||
        !add_hex(doc, "release_sha256", spec->release_sha256) ||
        !cJSON_AddStringToObject(doc, "nonce", spec->nonce) ||
        !cJSON_AddBoolToObject(doc, "pin", spec->pin != 0) ||
        (spec->reason && !cJSON_AddStringToObject(doc, "reason", spec->reason))) {
        cJSON_Delete(doc);
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build an assignment");
    }
    *json_out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!*json_out)
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build an assignment");
    err = check_assignment(&s->ctx, (const uint8_t *)*json_out, strlen(*json_out));
    if (err < 0) {
        cJSON_free(*json_out);
        *json_out = NULL;
    }
    return err;
}

int mf_manifest_sign_assignment(uint8_t **env_out, size_t *env_len, mf_manifest_signer *s,
                                const mf_manifest_assignment_spec *spec)
{
    char *json = NULL;
    int err;

    mf_ctx__clear(&s->ctx);
    *env_out = NULL;
    *env_len = 0;
    err = mf_sign__assignment_payload(&json, s, spec);
    if (err >= 0)
        err = mf_manifest_sign_payload(env_out, env_len, s, MF_MANIFEST_TYPE_ASSIGNMENT, json,
                                       strlen(json));
    cJSON_free(json);
    return err;
}
