/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: layout of the apply handle, shared by patch_apply.c and patch_checkpoint.c. */
#ifndef MF_DIFF_PATCH_STATE_H
#define MF_DIFF_PATCH_STATE_H

#include "mf/patch.h"
#include "mf/ct.h"
#include "delta_format.h"
#include "delta_planes.h"
#include "mf_ctx.h"

#include "mf_sha256.h"

struct ZSTD_DCtx_s;

enum mf_patch_st {
    MF_PATCH_ST_HEADER,  /* collecting the file header */
    MF_PATCH_ST_BLOCK,   /* collecting a block header: a resume point */
    MF_PATCH_ST_PAYLOAD, /* collecting a block payload */
    MF_PATCH_ST_EMIT,    /* producing the block's output */
    MF_PATCH_ST_FINISH,  /* all blocks out: check the digest */
    MF_PATCH_ST_DONE,
    MF_PATCH_ST_FAILED
};

/* Progress inside the current block. */
struct mf_patch_cursor {
    uint32_t produced; /* block output generated so far */
    uint32_t ctrl_pos, diff_pos, extra_pos;
    uint64_t add_left, copy_left;
    int64_t old_pos;
    int64_t pending_seek;
};

struct mf_patch {
    struct mf_ctx ctx;
    mf_patch_options opts;
    mf_allocator heap_alloc; /* valid when on_heap */
    int on_heap;
    size_t window;
    struct ZSTD_DCtx_s *dctx;
    uint8_t *dbuf, *stage; /* the block's decoded payload (window bytes); output staging */

    enum mf_patch_st st;
    uint8_t hbuf[MF_DELTA_HEADER_SIZE];
    size_t fill;
    struct mf_delta_header hdr;
    struct mf_delta_block blk;
    uint32_t block_index;
    uint64_t patch_off; /* patch bytes consumed */
    uint64_t new_off;   /* output bytes handed out */
    struct mf_patch_cursor cur;
    size_t zout;                   /* decoded payload bytes in dbuf so far */
    size_t zhint;                  /* last ZSTD_decompressStream result: 0 at a frame end */
    struct mf_delta_sparse sparse; /* NUMERIC sparse residuals: cursor into dbuf */
    struct mf_delta_float fl;      /* NUMERIC float planes: cursors into dbuf */
    const uint8_t *emit;
    size_t emit_len, emit_pos;
    struct mf_sha256 sha; /* sdk/digest: SHA-NI where the CPU has it */

    /* Last block boundary with all earlier output handed out. */
    uint64_t snap_patch_off, snap_new_off;
    uint32_t snap_block;
    struct mf_sha256 snap_sha;
};

#endif /* MF_DIFF_PATCH_STATE_H */
