/* SPDX-License-Identifier: Apache-2.0 */
/* Walks an mf patch's headers for `--info` and tooling; never decompresses a payload. */
#include "create_internal.h"
#include "delta_format.h"

#include <string.h>

int mf_diff_describe(mf_diff_header_info *out, mf_diff *d, const uint8_t *patch, size_t patch_len,
                     mf_diff_block_fn fn, void *payload)
{
    struct mf_ctx *ctx = &d->ctx;
    struct mf_delta_header h;
    uint64_t new_off = 0;
    size_t pos = MF_DELTA_HEADER_SIZE;
    int err;

    mf_ctx__clear(ctx);
    if (patch_len < MF_DELTA_HEADER_SIZE)
        return mf_fail(ctx, MF_E_INVALID, "patch of %zu bytes is shorter than a header", patch_len);
    err = mf_delta__header_parse(&h, ctx, patch);
    if (err < 0)
        return err;
    memset(out, 0, sizeof(*out));
    out->format_version = h.version;
    out->old_size = h.old_size;
    out->new_size = h.new_size;
    memcpy(out->old_sha256, h.old_sha256, 32);
    memcpy(out->new_sha256, h.new_sha256, 32);
    out->block_count = h.block_count;
    out->window = h.window;
    for (uint32_t i = 0; i < h.block_count; i++) {
        struct mf_delta_block b;
        mf_diff_block_info info;

        if (patch_len - pos < MF_DELTA_BLOCK_HEADER_SIZE)
            return mf_fail(ctx, MF_E_INVALID, "patch truncated in block %u header", (unsigned)i);
        err = mf_delta__block_parse(&b, ctx, patch + pos, &h, h.new_size - new_off);
        if (err < 0)
            return err;
        pos += MF_DELTA_BLOCK_HEADER_SIZE;
        if (patch_len - pos < b.payload_len)
            return mf_fail(ctx, MF_E_INVALID, "patch truncated in block %u payload", (unsigned)i);
        info = (mf_diff_block_info){i,
                                    mf_delta__kind_name(b.kind),
                                    b.word,
                                    new_off,
                                    b.new_len,
                                    b.payload_len,
                                    b.old_off,
                                    (b.flags & MF_DELTA_NUM_SPARSE) != 0,
                                    (b.flags & MF_DELTA_NUM_RAW) != 0,
                                    (b.flags & MF_DELTA_NUM_FLOAT) != 0};
        if (fn) {
            err = fn(payload, &info);
            if (err < 0)
                return err;
        }
        pos += b.payload_len;
        new_off += b.new_len;
    }
    if (new_off != h.new_size)
        return mf_fail(ctx, MF_E_INVALID, "blocks produce %llu bytes, header says %llu",
                       (unsigned long long)new_off, (unsigned long long)h.new_size);
    return MF_OK;
}
