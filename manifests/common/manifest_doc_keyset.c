/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Root and keys documents. Both are a key map plus two roles:
 *   {"_type": "root"|"keys", "spec_version": 1, "version": N, "expires": T,
 *    "keys": {"<keyid>": {"keytype": "ecdsa-p256-sha256", "public": base64(SPKI DER)}},
 *    "roles": {"<role>": {"keyids": ["<keyid>", ...], "threshold": k}, ...}}
 * Roles are {root, keys} in a root and {release, director} in a keys document. A role lists
 * each key once and only keys of the map, so counting distinct valid signers against
 * `threshold` cannot be inflated by repeating an id.
 */
#include "manifest_json.h"
#include "mf_hex.h"

#include <string.h>

/* DER header of SubjectPublicKeyInfo{id-ecPublicKey, prime256v1} with an uncompressed
 * point: only this one encoding is accepted, so a key has exactly one key id. */
static const uint8_t spki_p256_prefix[] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48,
                                           0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
                                           0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04};

static int parse_key(struct mf_mkey *key, struct mf_ctx *ctx, const cJSON *item)
{
    const char *s;
    size_t n;
    int err;

    if (!item->string || !mf_hex__is_sha256(item->string))
        return mf_fail(ctx, MF_E_INVALID, "key id '%.64s' is not 64 lower-case hex digits",
                       item->string ? item->string : "");
    (void)mf_hex__decode(key->id, sizeof(key->id), item->string, MF_SHA256_HEX_LEN);
    if (!cJSON_IsObject(item))
        return mf_fail(ctx, MF_E_INVALID, "key %.16s is not an object", item->string);
    err = mf_manifest__json_str(&s, ctx, item, "keytype", MF_MANIFEST_NAME_MAX);
    if (err < 0)
        return err;
    if (strcmp(s, "ecdsa-p256-sha256") != 0)
        return mf_fail(ctx, MF_E_INVALID, "key %.16s: keytype '%.64s' is not supported",
                       item->string, s);
    err = mf_manifest__json_str(&s, ctx, item, "public", 128);
    if (err < 0)
        return err;
    err = mf_base64__decode(key->der, sizeof(key->der), &n, s, strlen(s));
    if (err < 0 || n != MF_MANIFEST_SPKI_LEN ||
        memcmp(key->der, spki_p256_prefix, sizeof(spki_p256_prefix)) != 0)
        return mf_fail(ctx, MF_E_INVALID,
                       "key %.16s: public is not base64 of an uncompressed P-256 SPKI",
                       item->string);
    return MF_OK;
}

static int find_key(const struct mf_mkeyset *ks, const uint8_t *id)
{
    for (size_t i = 0; i < ks->nkeys; i++) {
        if (memcmp(ks->keys[i].id, id, MF_MANIFEST_DIGEST_LEN) == 0)
            return (int)i;
    }
    return -1;
}

static int parse_role(struct mf_mrole *role, struct mf_ctx *ctx, const struct mf_mkeyset *ks,
                      const cJSON *roles, const char *name)
{
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(roles, name);
    const cJSON *ids, *it;
    uint64_t threshold;
    size_t n;
    int err;

    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "role '%s' missing or not an object", name);
    err = mf_manifest__json_array(&ids, &n, ctx, obj, "keyids", MF_MANIFEST_MAX_KEYS);
    if (err < 0)
        return err;
    role->n = 0;
    cJSON_ArrayForEach(it, ids)
    {
        uint8_t *id = role->ids[role->n];

        if (!cJSON_IsString(it) || !mf_hex__is_sha256(it->valuestring))
            return mf_fail(ctx, MF_E_INVALID, "role '%s': key id %zu is not 64 hex digits", name,
                           role->n);
        (void)mf_hex__decode(id, MF_MANIFEST_DIGEST_LEN, it->valuestring, MF_SHA256_HEX_LEN);
        if (find_key(ks, id) < 0)
            return mf_fail(ctx, MF_E_INVALID, "role '%s': key %.16s is not in 'keys'", name,
                           it->valuestring);
        for (size_t j = 0; j < role->n; j++) {
            if (memcmp(role->ids[j], id, MF_MANIFEST_DIGEST_LEN) == 0)
                return mf_fail(ctx, MF_E_INVALID, "role '%s': key %.16s listed twice", name,
                               it->valuestring);
        }
        role->n++;
    }
    err = mf_manifest__json_u64(&threshold, ctx, obj, "threshold");
    if (err < 0)
        return err;
    if (threshold < 1 || threshold > n)
        return mf_fail(ctx, MF_E_INVALID, "role '%s': threshold %llu outside 1..%zu", name,
                       (unsigned long long)threshold, n);
    role->threshold = (unsigned int)threshold;
    return MF_OK;
}

static int parse_keyset(struct mf_mkeyset *ks, struct mf_ctx *ctx, const uint8_t *payload,
                        size_t len, const char *type, const char *role0, const char *role1)
{
    const cJSON *keys, *roles, *it;
    cJSON *doc = NULL;
    int err;

    memset(ks, 0, sizeof(*ks));
    err = mf_manifest__json_doc(&doc, ctx, payload, len, type);
    if (err < 0)
        return err;
    err = mf_manifest__json_u64(&ks->version, ctx, doc, "version");
    if (err < 0)
        goto out;
    if (ks->version == 0) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: version must be at least 1", type);
        goto out;
    }
    err = mf_manifest__json_u64(&ks->expires, ctx, doc, "expires");
    if (err < 0)
        goto out;
    keys = cJSON_GetObjectItemCaseSensitive(doc, "keys");
    if (!cJSON_IsObject(keys)) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: member 'keys' missing or not an object", type);
        goto out;
    }
    cJSON_ArrayForEach(it, keys)
    {
        if (ks->nkeys == MF_MANIFEST_MAX_KEYS) {
            err = mf_fail(ctx, MF_E_LIMIT, "%s: more than %d keys", type, MF_MANIFEST_MAX_KEYS);
            goto out;
        }
        err = parse_key(&ks->keys[ks->nkeys], ctx, it);
        if (err < 0)
            goto out;
        ks->nkeys++;
    }
    roles = cJSON_GetObjectItemCaseSensitive(doc, "roles");
    if (!cJSON_IsObject(roles)) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: member 'roles' missing or not an object", type);
        goto out;
    }
    err = parse_role(&ks->role[0], ctx, ks, roles, role0);
    if (err < 0)
        goto out;
    err = parse_role(&ks->role[1], ctx, ks, roles, role1);
out:
    cJSON_Delete(doc);
    return err;
}

int mf_manifest__parse_root(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                            size_t len)
{
    return parse_keyset(out, ctx, payload, len, "root", "root", "keys");
}

int mf_manifest__parse_keys(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                            size_t len)
{
    return parse_keyset(out, ctx, payload, len, "keys", "release", "director");
}
