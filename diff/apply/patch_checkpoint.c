/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checkpoint and restore of an apply at a block boundary (STYLE rule 29). The opaque state
 * holds the patch header, the block index and the running sha256 of the output so far,
 * sealed with a truncated sha256 over the state and both public offsets, so a torn or stale
 * checkpoint written to flash is rejected instead of producing a wrong image. The sha256 is
 * stored as its words, length and pending block (format 2), never as the context's memory:
 * that holds the block function sdk/digest picked, a code pointer no file may supply (format
 * 1 stored mbedTLS's context raw; such checkpoints are refused and the apply starts over).
 */
#include "patch_state.h"

#include <string.h>

#define CK_TAG "MFCK"
#define CK_VERSION 2
#define CK_HDR_OFF 8
#define CK_BLOCK_OFF (CK_HDR_OFF + MF_DELTA_HEADER_SIZE)
#define CK_SHA_OFF (CK_BLOCK_OFF + 4)
#define CK_SEAL_OFF (MF_PATCH_CHECKPOINT_STATE_SIZE - 8)

#define CK_SHA_SIZE (8 * 4 + 8 + MF_SHA256_BLOCK_LEN) /* words, length, pending block */

_Static_assert(CK_SHA_OFF + CK_SHA_SIZE <= CK_SEAL_OFF,
               "sha256 state does not fit the checkpoint state");

static void sha_put(uint8_t *dst, const struct mf_sha256 *h)
{
    for (int i = 0; i < 8; i++)
        mf_delta__put32(dst + 4 * i, h->state[i]);
    mf_delta__put64(dst + 32, h->len);
    memcpy(dst + 40, h->buf, MF_SHA256_BLOCK_LEN);
}

/* The running digest of `len` output bytes, on this CPU's block function. */
static void sha_get(struct mf_sha256 *h, const uint8_t *src)
{
    mf_sha256__init(h);
    for (int i = 0; i < 8; i++)
        h->state[i] = mf_delta__get32(src + 4 * i);
    h->len = mf_delta__get64(src + 32);
    memcpy(h->buf, src + 40, MF_SHA256_BLOCK_LEN);
}

static void seal(uint8_t out[8], const mf_patch_checkpoint *ck)
{
    uint8_t offs[16], digest[32];
    struct mf_sha256 s;

    mf_delta__put64(offs, ck->patch_offset);
    mf_delta__put64(offs + 8, ck->new_offset);
    mf_sha256__init(&s);
    mf_sha256__update(&s, ck->state, CK_SEAL_OFF);
    mf_sha256__update(&s, offs, sizeof(offs));
    mf_sha256__final(&s, digest);
    memcpy(out, digest, 8);
}

int mf_patch_checkpoint_get(mf_patch_checkpoint *out, const mf_patch *p)
{
    if (p->st == MF_PATCH_ST_HEADER)
        return MF_E_STATE;
    memset(out, 0, sizeof(*out));
    out->patch_offset = p->snap_patch_off;
    out->new_offset = p->snap_new_off;
    memcpy(out->state, CK_TAG, 4);
    out->state[4] = CK_VERSION;
    mf_delta__header_write(out->state + CK_HDR_OFF, &p->hdr);
    mf_delta__put32(out->state + CK_BLOCK_OFF, p->snap_block);
    sha_put(out->state + CK_SHA_OFF, &p->snap_sha);
    seal(out->state + CK_SEAL_OFF, out);
    return MF_OK;
}

int mf_patch_restore(mf_patch *p, const mf_patch_checkpoint *ck)
{
    uint8_t want[8];
    struct mf_delta_header h;
    uint32_t block;

    if (p->st != MF_PATCH_ST_HEADER || p->fill != 0)
        return mf_fail(&p->ctx, MF_E_STATE, "restore needs a fresh applier");
    seal(want, ck);
    if (memcmp(ck->state, CK_TAG, 4) != 0 || ck->state[4] != CK_VERSION ||
        !mf_ct_memeq(want, ck->state + CK_SEAL_OFF, 8))
        return mf_fail(&p->ctx, MF_E_INVALID, "checkpoint corrupt or from another version");
    if (mf_delta__header_parse(&h, &p->ctx, ck->state + CK_HDR_OFF) < 0)
        return MF_E_INVALID;
    block = mf_delta__get32(ck->state + CK_BLOCK_OFF);
    if (block >= h.block_count || ck->new_offset >= h.new_size)
        return mf_fail(&p->ctx, MF_E_INVALID, "checkpoint block %u out of range", (unsigned)block);
    if (mf_delta__get64(ck->state + CK_SHA_OFF + 32) != ck->new_offset)
        return mf_fail(&p->ctx, MF_E_INVALID, "checkpoint digest covers %llu bytes, not %llu",
                       (unsigned long long)mf_delta__get64(ck->state + CK_SHA_OFF + 32),
                       (unsigned long long)ck->new_offset);
    if (h.window > p->window)
        return mf_fail(&p->ctx, MF_E_LIMIT, "patch needs a %u-byte window, max_window is %zu",
                       (unsigned)h.window, p->window);
    if (p->opts.source_size && p->opts.source_size != h.old_size)
        return mf_fail(&p->ctx, MF_E_INVALID, "old image is %llu bytes, patch expects %llu",
                       (unsigned long long)p->opts.source_size, (unsigned long long)h.old_size);
    p->hdr = h;
    p->block_index = block;
    p->patch_off = ck->patch_offset;
    p->new_off = ck->new_offset;
    sha_get(&p->sha, ck->state + CK_SHA_OFF);
    p->st = MF_PATCH_ST_BLOCK;
    p->snap_patch_off = p->patch_off;
    p->snap_new_off = p->new_off;
    p->snap_block = block;
    p->snap_sha = p->sha;
    return MF_OK;
}
