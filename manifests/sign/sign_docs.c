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

#include <string.h>

/* Chunk lists the builder accepts; devices apply their own (smaller) bound. */
#define SIGN_MAX_CHUNKS (1u << 20)

static cJSON *add_hex(cJSON *obj, const char *key, const uint8_t *digest)
{
    char hex[MF_SHA256_HEX_LEN + 1];

    mf_hex__encode(hex, digest, MF_MANIFEST_DIGEST_LEN);
    return cJSON_AddStringToObject(obj, key, hex);
}

static cJSON *doc_new(const char *type, uint64_t version_or_seq, const char *num_key)
{
    cJSON *doc = cJSON_CreateObject();

    if (doc && (!cJSON_AddStringToObject(doc, "_type", type) ||
                !cJSON_AddNumberToObject(doc, "spec_version", MF_MANIFEST_SPEC_VERSION) ||
                !cJSON_AddNumberToObject(doc, num_key, (double)version_or_seq))) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
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
    keys = doc ? cJSON_AddObjectToObject(doc, "keys") : NULL;
    roles = doc ? cJSON_AddObjectToObject(doc, "roles") : NULL;
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

static int check_root(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    struct mf_mkeyset *ks = mf_ctx__alloc(ctx, sizeof(*ks));
    int err;

    if (!ks)
        return mf_fail(ctx, MF_E_NOMEM, "no memory to check a root");
    err = mf_manifest__parse_root(ks, ctx, p, n);
    mf_ctx__free(ctx, ks);
    return err;
}

static int check_keys(struct mf_ctx *ctx, const uint8_t *p, size_t n)
{
    struct mf_mkeyset *ks = mf_ctx__alloc(ctx, sizeof(*ks));
    int err;

    if (!ks)
        return mf_fail(ctx, MF_E_NOMEM, "no memory to check a keys document");
    err = mf_manifest__parse_keys(ks, ctx, p, n);
    mf_ctx__free(ctx, ks);
    return err;
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

static int add_release_lists(cJSON *doc, const mf_manifest_release_spec *spec)
{
    cJSON *chunks = cJSON_AddArrayToObject(doc, "chunks");
    cJSON *deltas = cJSON_AddArrayToObject(doc, "deltas");

    if (!chunks || !deltas)
        return MF_E_NOMEM;
    for (size_t i = 0; i < spec->chunk_count; i++) {
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
    cJSON *doc = doc_new("release", spec->sequence, "sequence");

    mf_ctx__clear(&s->ctx);
    *env_out = NULL;
    *env_len = 0;
    if (!spec->name || !spec->version)
        return mf_fail(&s->ctx, MF_E_INVALID, "release spec without name or version");
    if (!doc || !cJSON_AddStringToObject(doc, "name", spec->name) ||
        !cJSON_AddStringToObject(doc, "version", spec->version) ||
        !add_hex(doc, "sha256", spec->sha256) ||
        !cJSON_AddNumberToObject(doc, "size", (double)spec->size) ||
        !cJSON_AddNumberToObject(doc, "chunk_size", spec->chunk_size) ||
        !cJSON_AddNumberToObject(doc, "security_floor", (double)spec->security_floor) ||
        !cJSON_AddNumberToObject(doc, "created", (double)spec->created) ||
        !cJSON_AddNumberToObject(doc, "expires", (double)spec->expires) ||
        add_release_lists(doc, spec) < 0) {
        cJSON_Delete(doc);
        return mf_fail(&s->ctx, MF_E_NOMEM, "no memory to build a release");
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

int mf_sign__assignment_payload(char **json_out, struct mf_manifest_signer *s,
                                const mf_manifest_assignment_spec *spec)
{
    cJSON *doc;
    int err;

    *json_out = NULL;
    if (!spec->device_id || !spec->model || !spec->nonce)
        return mf_fail(&s->ctx, MF_E_INVALID, "assignment spec without device, model or nonce");
    doc = doc_new("assignment", spec->sequence, "sequence");
    if (!doc || !cJSON_AddStringToObject(doc, "device_id", spec->device_id) ||
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
