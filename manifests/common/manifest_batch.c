/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crypto-free half of batch signatures (docs/formats/manifest.md §2.1): the `batch`
 * member of a signature and the 40-byte body the batch root is signed as. The member is
 * read before any signature is checked, so it is bounded here: size 1..256, index below
 * size, at most 8 path hashes of exactly 32 bytes. Whether the path fits (index, size) is
 * decided by the verifier's walk, which is where RFC 9162 defines it.
 */
#include "manifest_json.h"

#include <string.h>

void mf_manifest__batch_body(uint8_t *out, const uint8_t *root, uint32_t size)
{
    memcpy(out, root, MF_MANIFEST_DIGEST_LEN);
    for (int i = 0; i < 8; i++)
        out[MF_MANIFEST_DIGEST_LEN + i] = (uint8_t)((uint64_t)size >> (56 - 8 * i));
}

static int parse_path(struct mf_mbatch *b, struct mf_ctx *ctx, const cJSON *obj, size_t sig_idx)
{
    const cJSON *path, *item;
    size_t n, i = 0;
    int err;

    /* More hashes than the deepest tree has are malformed outright; a path within that bound
     * that does not fit (index, size) is refused by the walk. */
    err = mf_manifest__json_array(&path, &n, ctx, obj, "path", MF_MANIFEST_BATCH_DEPTH);
    if (err < 0)
        return err;
    cJSON_ArrayForEach(item, path)
    {
        /* 32 bytes are 44 base64 characters; decoding into exactly 32 bytes refuses 33. */
        uint8_t tmp[MF_MANIFEST_DIGEST_LEN + 3];
        size_t len = 0;

        if (!cJSON_IsString(item) || !item->valuestring || strlen(item->valuestring) != 44 ||
            mf_base64__decode(tmp, sizeof(tmp), &len, item->valuestring, 44) < 0 ||
            len != MF_MANIFEST_DIGEST_LEN)
            return mf_fail(ctx, MF_E_INVALID,
                           "envelope: signature %zu: batch path element %zu is not 32 bytes",
                           sig_idx, i);
        memcpy(b->path[i], tmp, MF_MANIFEST_DIGEST_LEN);
        i++;
    }
    b->path_len = n;
    return MF_OK;
}

int mf_manifest__batch_parse(struct mf_mbatch *out, struct mf_ctx *ctx, const void *json_obj,
                             size_t sig_idx)
{
    const cJSON *obj = json_obj;
    uint64_t index, size;
    int err;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "envelope: signature %zu: batch is not an object",
                       sig_idx);
    err = mf_manifest__json_u64(&index, ctx, obj, "index");
    if (err >= 0)
        err = mf_manifest__json_u64(&size, ctx, obj, "size");
    if (err < 0)
        return err;
    if (size < 1 || size > MF_MANIFEST_BATCH_MAX || index >= size)
        return mf_fail(ctx, MF_E_INVALID,
                       "envelope: signature %zu: batch index %llu / size %llu out of range "
                       "(size 1..%d)",
                       sig_idx, (unsigned long long)index, (unsigned long long)size,
                       MF_MANIFEST_BATCH_MAX);
    out->index = (uint32_t)index;
    out->size = (uint32_t)size;
    return parse_path(out, ctx, obj, sig_idx);
}
