/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: encodes one block of an mf delta, trying every applicable encoding. */
#ifndef MF_DIFF_BLOCK_ENCODE_H
#define MF_DIFF_BLOCK_ENCODE_H

#include "create_internal.h"
#include "delta_planes.h"

struct ZSTD_CCtx_s;

/* Read-only inputs shared by every worker. */
struct mf_block_inputs {
    const uint8_t *old;
    size_t old_len;
    const uint8_t *new_img;
    size_t new_len;
    const struct mf_cover_list *covers;
    size_t window;
    int level;
};

/* A worker's scratch: one zstd context and four window-sized buffers. */
struct mf_block_worker {
    struct ZSTD_CCtx_s *cctx;
    uint8_t *decoded; /* candidate before zstd (window bytes) */
    uint8_t *sparse;  /* sparse form of a NUMERIC candidate (window bytes) */
    uint8_t *trial;   /* compressBound(window) */
    size_t trial_cap;
    struct mf_delta_float fl; /* float planes: the sort's cursors */
};

/* A block to encode: new[start, +len), with an optional container alignment. */
struct mf_block_job {
    uint64_t start;
    uint32_t len;
    const struct mf_align_hint *hint;
    uint8_t *out; /* block header + payload, allocated from ctx */
    size_t out_len;
    uint32_t window_used;
    uint32_t nblocks; /* blocks in `out`: a job is split where halves encode smaller */
};

int mf_diff__worker_init(struct mf_block_worker *w, struct mf_ctx *ctx, size_t window);
void mf_diff__worker_free(struct mf_block_worker *w, struct mf_ctx *ctx);
int mf_diff__block_encode(struct mf_block_job *job, struct mf_block_worker *w, struct mf_ctx *ctx,
                          const struct mf_block_inputs *in);

#endif /* MF_DIFF_BLOCK_ENCODE_H */
