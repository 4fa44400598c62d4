/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming apply of mf deltas (docs/formats/delta.md): an I/O-free state machine.
 *
 * Memory is one workspace carved at init: the handle, a static zstd DCtx with its input
 * block buffer, one buffer of `window` bytes for a block's decoded payload, and a 64 KiB stage
 * where output is built from old-image reads. The compressed payload is never held: it is
 * streamed through the DCtx straight into the decoded buffer as it arrives, and because that
 * buffer stays put for the whole block (ZSTD_d_stableOutBuffer) zstd keeps no window of its
 * own. Sparse residuals are merged from their compact form while the block is emitted rather
 * than expanded. The block's output then leaves through the stage as the caller drains `out`.
 * Block boundaries are the resume points: the handle keeps a snapshot of the patch offset,
 * output offset and running sha256 taken each time a block's output is fully drained.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "mf/patch.h"
#include "delta_format.h"
#include "delta_planes.h"
#include "patch_state.h"

#include <assert.h>
#include <string.h>
#include <zstd.h>

#define STAGE_SIZE (64u * 1024u)

static size_t align_up(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

int mf_patch_options_init(mf_patch_options *opts, unsigned int version)
{
    if (version != MF_PATCH_OPTIONS_VERSION)
        return MF_E_INVALID;
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    opts->max_window = MF_PATCH_DEFAULT_WINDOW;
    return MF_OK;
}

/* Smallest zstd window log that covers `window`: no frame may declare more. */
static int window_log(size_t window)
{
    int wlog = ZSTD_WINDOWLOG_MIN;

    while (((size_t)1 << wlog) < window)
        wlog++;
    return wlog;
}

/*
 * The static DCtx in streaming mode with a stable output buffer: the context and its input
 * buffer of one zstd block, at most min(frame window, ZSTD_BLOCKSIZE_MAX) (what
 * ZSTD_estimateDStreamSize counts, minus the window buffer a stable output makes needless).
 */
static size_t dctx_size(size_t window)
{
    size_t block = (size_t)1 << window_log(window);

    if (block > ZSTD_BLOCKSIZE_MAX)
        block = ZSTD_BLOCKSIZE_MAX;
    return ZSTD_estimateDCtxSize() + block;
}

size_t mf_patch_workspace_size(const mf_patch_options *opts)
{
    if (opts->max_window < MF_PATCH_MIN_WINDOW || opts->max_window > MF_DELTA_MAX_BLOCK_OUT)
        return 0;
    return align_up(sizeof(struct mf_patch)) + align_up(dctx_size(opts->max_window)) +
           align_up(opts->max_window) + STAGE_SIZE;
}

size_t mf_patch_out_size(void)
{
    return STAGE_SIZE;
}

int mf_patch_init_static(mf_patch **out, void *ws, size_t ws_size, const mf_patch_options *opts)
{
    size_t need = mf_patch_workspace_size(opts);
    uint8_t *base = ws;
    struct mf_patch *p;
    size_t off, dsize;

    *out = NULL;
    if (opts->version != MF_PATCH_OPTIONS_VERSION || !opts->source_read || need == 0)
        return MF_E_INVALID;
    if (ws_size < need)
        return MF_E_LIMIT;
    p = ws;
    memset(p, 0, sizeof(*p));
    mf_ctx__init(&p->ctx, NULL, NULL, NULL, "diff");
    p->opts = *opts;
    p->window = opts->max_window;
    off = align_up(sizeof(*p));
    dsize = align_up(dctx_size(p->window));
    p->dctx = ZSTD_initStaticDCtx(base + off, dsize);
    if (!p->dctx)
        return MF_E_INVALID;
    /* A payload decodes into the window-sized buffer, so no frame may declare a larger
     * window (which also bounds zstd's block buffer to what dctx_size() counted). */
    if (ZSTD_isError(ZSTD_DCtx_setParameter(p->dctx, ZSTD_d_windowLogMax, window_log(p->window))) ||
        ZSTD_isError(ZSTD_DCtx_setParameter(p->dctx, ZSTD_d_stableOutBuffer, 1)))
        return MF_E_INVALID;
    off += dsize;
    p->dbuf = base + off;
    off += align_up(p->window);
    p->stage = base + off;
    mf_sha256__init(&p->sha);
    p->st = MF_PATCH_ST_HEADER;
    *out = p;
    return MF_OK;
}

int mf_patch_new(mf_patch **out, const mf_patch_options *opts, const mf_allocator *alloc)
{
    size_t need = mf_patch_workspace_size(opts);
    void *ws;
    int err;

    *out = NULL;
    if (need == 0)
        return MF_E_INVALID;
    ws = mf_alloc(alloc, need);
    if (!ws)
        return MF_E_NOMEM;
    err = mf_patch_init_static(out, ws, need, opts);
    if (err < 0) {
        mf_free(alloc, ws);
        return err;
    }
    (*out)->heap_alloc = alloc ? *alloc : *mf_allocator_default();
    (*out)->on_heap = 1;
    return MF_OK;
}

void mf_patch_free(mf_patch *p)
{
    mf_allocator a;

    if (!p || !p->on_heap)
        return;
    a = p->heap_alloc;
    mf_sha256__abort(&p->sha);
    mf_free(&a, p);
}

const char *mf_patch_errmsg(const mf_patch *p)
{
    return mf_ctx__errmsg(&p->ctx);
}

uint64_t mf_patch_new_offset(const mf_patch *p)
{
    return p->new_off;
}

/* Remembers the block boundary just reached as the resume point. */
static void take_snapshot(struct mf_patch *p)
{
    p->snap_patch_off = p->patch_off;
    p->snap_new_off = p->new_off;
    p->snap_block = p->block_index;
    p->snap_sha = p->sha;
}

/* Copies up to `need - *fill` input bytes into `dst`; returns 1 once `dst` is full. */
static int collect(struct mf_patch *p, uint8_t *dst, size_t need, size_t *fill, mf_inbuf *in)
{
    size_t n = need - *fill;

    if (n > in->size - in->pos)
        n = in->size - in->pos;
    if (n) {
        memcpy(dst + *fill, (const uint8_t *)in->src + in->pos, n);
        in->pos += n;
        *fill += n;
        p->patch_off += n;
    }
    return *fill == need;
}

static int read_old(struct mf_patch *p, uint8_t *dst, uint64_t off, size_t len)
{
    int got;

    if (len == 0)
        return MF_OK;
    got = p->opts.source_read(p->opts.source_payload, off, dst, len);
    if (got < 0)
        return mf_fail(&p->ctx, MF_E_IO, "old image read of %zu bytes at %llu failed (%d)", len,
                       (unsigned long long)off, got);
    if ((size_t)got != len)
        return mf_fail(&p->ctx, MF_E_IO, "old image short read at %llu: %d of %zu bytes",
                       (unsigned long long)off, got, len);
    return MF_OK;
}

static int on_header(struct mf_patch *p)
{
    int err = mf_delta__header_parse(&p->hdr, &p->ctx, p->hbuf);

    if (err < 0)
        return err;
    if (p->hdr.window > p->window)
        return mf_fail(&p->ctx, MF_E_LIMIT, "patch needs a %u-byte window, max_window is %zu",
                       (unsigned)p->hdr.window, p->window);
    if (p->opts.source_size && p->opts.source_size != p->hdr.old_size)
        return mf_fail(&p->ctx, MF_E_INVALID, "old image is %llu bytes, patch expects %llu",
                       (unsigned long long)p->opts.source_size,
                       (unsigned long long)p->hdr.old_size);
    mf_sha256__init(&p->sha);
    return MF_OK;
}

/* Starts a block's payload: zstd kinds get a fresh frame sequence into dbuf. */
static void payload_begin(struct mf_patch *p)
{
    memset(&p->cur, 0, sizeof(p->cur));
    p->cur.old_pos = (int64_t)p->blk.old_off;
    p->fill = 0;
    p->zout = 0;
    p->zhint = 0;
    (void)ZSTD_DCtx_reset(p->dctx, ZSTD_reset_session_only);
}

/* Streams the payload bytes available in `in` through the DCtx into dbuf; `*done` is set
 * once all payload_len bytes went in. */
static int payload_stream(struct mf_patch *p, mf_inbuf *in, int *done)
{
    const struct mf_delta_block *b = &p->blk;
    size_t avail = in->size - in->pos, want = b->payload_len - p->fill;
    ZSTD_inBuffer zi = {(const uint8_t *)in->src + in->pos, avail < want ? avail : want, 0};
    ZSTD_outBuffer zo = {p->dbuf, b->decoded_len, p->zout};

    *done = 0;
    if (zi.size) {
        size_t r = ZSTD_decompressStream(p->dctx, &zo, &zi);

        if (ZSTD_isError(r))
            return mf_fail(&p->ctx, MF_E_INVALID, "block %u: bad zstd payload (%s)",
                           (unsigned)p->block_index, ZSTD_getErrorName(r));
        p->zhint = r;
        p->zout = zo.pos;
        in->pos += zi.pos;
        p->fill += zi.pos;
        p->patch_off += zi.pos;
    }
    *done = p->fill == b->payload_len;
    return MF_OK;
}

/* The payload is in: checks what it decoded to and prepares the block's emit cursor. */
static int payload_end(struct mf_patch *p)
{
    const struct mf_delta_block *b = &p->blk;

    if (b->kind == MF_DELTA_STORED || b->kind == MF_DELTA_COPY)
        return MF_OK;
    if (p->zhint != 0 || p->zout != b->decoded_len)
        return mf_fail(&p->ctx, MF_E_INVALID, "block %u: zstd payload %s %zu bytes, expected %u",
                       (unsigned)p->block_index, p->zhint ? "ends inside a frame after" : "is",
                       p->zout, (unsigned)b->decoded_len);
    if (b->kind == MF_DELTA_NUMERIC && (b->flags & MF_DELTA_NUM_SPARSE) &&
        mf_delta__sparse_begin(&p->sparse, b->new_len / b->word, b->word, p->dbuf, b->decoded_len) <
            0)
        return mf_fail(&p->ctx, MF_E_INVALID, "block %u: malformed sparse residuals",
                       (unsigned)p->block_index);
    if (b->kind == MF_DELTA_NUMERIC && (b->flags & MF_DELTA_NUM_FLOAT))
        mf_delta__float_begin(&p->fl, p->dbuf, b->new_len / b->word, b->word);
    return MF_OK;
}

/* BSDIFF: fills the stage with up to STAGE_SIZE bytes following the control stream. */
static int gen_bsdiff(struct mf_patch *p, size_t want)
{
    const struct mf_delta_block *b = &p->blk;
    struct mf_patch_cursor *c = &p->cur;
    const uint8_t *ctrl = p->dbuf, *diff = p->dbuf + b->ctrl_len;
    const uint8_t *extra = diff + b->diff_len;
    uint32_t extra_len = b->new_len - b->diff_len;
    size_t fill = 0;

    while (fill < want) {
        if (c->add_left) {
            size_t k = want - fill < c->add_left ? want - fill : (size_t)c->add_left;
            int err;

            if (c->old_pos < 0 || (uint64_t)c->old_pos + k > p->hdr.old_size ||
                k > b->diff_len - c->diff_pos)
                return mf_fail(&p->ctx, MF_E_INVALID,
                               "block %u: add of %zu at old %lld out of "
                               "bounds",
                               (unsigned)p->block_index, k, (long long)c->old_pos);
            err = read_old(p, p->stage + fill, (uint64_t)c->old_pos, k);
            if (err < 0)
                return err;
            for (size_t i = 0; i < k; i++)
                p->stage[fill + i] = (uint8_t)(p->stage[fill + i] + diff[c->diff_pos + i]);
            c->diff_pos += (uint32_t)k;
            c->old_pos += (int64_t)k;
            c->add_left -= k;
            fill += k;
        } else if (c->copy_left) {
            size_t k = want - fill < c->copy_left ? want - fill : (size_t)c->copy_left;

            if (k > extra_len - c->extra_pos)
                return mf_fail(&p->ctx, MF_E_INVALID, "block %u: extra stream overrun",
                               (unsigned)p->block_index);
            memcpy(p->stage + fill, extra + c->extra_pos, k);
            c->extra_pos += (uint32_t)k;
            c->copy_left -= k;
            fill += k;
        } else {
            uint64_t add, copy, seek;
            size_t n1, n2, n3;
            int64_t pos;

            n1 = mf_delta__varint_get(&add, ctrl + c->ctrl_pos, b->ctrl_len - c->ctrl_pos);
            n2 = n1 ? mf_delta__varint_get(&copy, ctrl + c->ctrl_pos + n1,
                                           b->ctrl_len - c->ctrl_pos - n1)
                    : 0;
            n3 = n2 ? mf_delta__varint_get(&seek, ctrl + c->ctrl_pos + n1 + n2,
                                           b->ctrl_len - c->ctrl_pos - n1 - n2)
                    : 0;
            if (!n3)
                return mf_fail(&p->ctx, MF_E_INVALID, "block %u: control stream truncated",
                               (unsigned)p->block_index);
            c->ctrl_pos += (uint32_t)(n1 + n2 + n3);
            if (add > b->new_len || copy > b->new_len ||
                add + copy > b->new_len - c->produced - fill)
                return mf_fail(&p->ctx, MF_E_INVALID,
                               "block %u: control entry %llu+%llu "
                               "overruns the block",
                               (unsigned)p->block_index, (unsigned long long)add,
                               (unsigned long long)copy);
            /* bsdiff semantics: the seek applies after this entry's add and copy. */
            pos = c->old_pos + (int64_t)add + mf_delta__unzigzag(seek);
            if (pos < 0 || (uint64_t)pos > p->hdr.old_size)
                return mf_fail(&p->ctx, MF_E_INVALID, "block %u: seek to old %lld out of range",
                               (unsigned)p->block_index, (long long)pos);
            c->add_left = add;
            c->copy_left = copy;
            c->pending_seek = pos - c->old_pos - (int64_t)add;
            if (!add && !copy) {
                c->old_pos = pos;
                c->pending_seek = 0;
            }
            continue;
        }
        if (!c->add_left && !c->copy_left) {
            c->old_pos += c->pending_seek;
            c->pending_seek = 0;
        }
    }
    return MF_OK;
}

/* Builds the next chunk of the current block into p->emit/emit_len. */
static int gen_chunk(struct mf_patch *p)
{
    const struct mf_delta_block *b = &p->blk;
    uint32_t done = p->cur.produced;
    size_t n = b->new_len - done < STAGE_SIZE ? b->new_len - done : STAGE_SIZE;
    int err = MF_OK;

    switch ((enum mf_delta_kind)b->kind) {
    case MF_DELTA_STORED:
    case MF_DELTA_ZSTD:
        p->emit = p->dbuf;
        n = b->new_len;
        break;
    case MF_DELTA_COPY:
        err = read_old(p, p->stage, b->old_off + done, n);
        p->emit = p->stage;
        break;
    case MF_DELTA_NUMERIC:
        if (b->flags & MF_DELTA_NUM_FLOAT) {
            mf_delta__float_merge(p->stage, &p->fl, p->dbuf, b->new_len / b->word, done / b->word,
                                  n / b->word, b->word);
            p->emit = p->stage;
            break;
        }
        if (b->flags & MF_DELTA_NUM_RAW)
            memset(p->stage, 0, n); /* raw planes: the base words are zero */
        else
            err = read_old(p, p->stage, b->old_off + done, n);
        if (err == MF_OK && (b->flags & MF_DELTA_NUM_SPARSE))
            mf_delta__sparse_merge(p->stage, &p->sparse, p->dbuf, b->new_len / b->word,
                                   done / b->word, n / b->word, b->word, b->flags);
        else if (err == MF_OK)
            mf_delta__planes_merge(p->stage, p->dbuf, b->new_len / b->word, done / b->word,
                                   n / b->word, b->word, b->flags);
        p->emit = p->stage;
        break;
    case MF_DELTA_BSDIFF:
        err = gen_bsdiff(p, n);
        p->emit = p->stage;
        break;
    case MF_DELTA_KIND_COUNT:
        assert(0 && "kind validated by mf_delta__block_parse");
        return MF_E_INVALID;
    }
    if (err < 0)
        return err;
    p->emit_len = n;
    p->emit_pos = 0;
    p->cur.produced += (uint32_t)n;
    return MF_OK;
}

static int block_end(struct mf_patch *p)
{
    const struct mf_delta_block *b = &p->blk;
    const struct mf_patch_cursor *c = &p->cur;

    if (b->kind == MF_DELTA_BSDIFF &&
        (c->ctrl_pos != b->ctrl_len || c->diff_pos != b->diff_len ||
         c->extra_pos != b->new_len - b->diff_len || c->add_left || c->copy_left))
        return mf_fail(&p->ctx, MF_E_INVALID, "block %u: streams not fully consumed",
                       (unsigned)p->block_index);
    return MF_OK;
}

static int finish(struct mf_patch *p)
{
    uint8_t digest[32];

    mf_sha256__final(&p->sha, digest);
    if (!mf_ct_memeq(digest, p->hdr.new_sha256, sizeof(digest)))
        return mf_fail(&p->ctx, MF_E_SIGNATURE,
                       "sha256 of the new image differs from the patch header");
    return MF_OK;
}

/* Hands out emitted bytes; returns 1 when the chunk is fully drained. */
static int drain(struct mf_patch *p, mf_outbuf *out)
{
    size_t n = p->emit_len - p->emit_pos;

    if (n > out->size - out->pos)
        n = out->size - out->pos;
    if (n) {
        memcpy((uint8_t *)out->dst + out->pos, p->emit + p->emit_pos, n);
        mf_sha256__update(&p->sha, p->emit + p->emit_pos, n);
        out->pos += n;
        p->emit_pos += n;
        p->new_off += n;
    }
    return p->emit_pos == p->emit_len;
}

static int step(struct mf_patch *p, mf_outbuf *out, mf_inbuf *in)
{
    int err;

    switch (p->st) {
    case MF_PATCH_ST_HEADER:
        if (!collect(p, p->hbuf, MF_DELTA_HEADER_SIZE, &p->fill, in))
            return MF_AGAIN;
        err = on_header(p);
        if (err < 0)
            return err;
        p->fill = 0;
        p->st = p->hdr.block_count ? MF_PATCH_ST_BLOCK : MF_PATCH_ST_FINISH;
        take_snapshot(p);
        return MF_OK;
    case MF_PATCH_ST_BLOCK:
        if (!collect(p, p->hbuf, MF_DELTA_BLOCK_HEADER_SIZE, &p->fill, in))
            return MF_AGAIN;
        err =
            mf_delta__block_parse(&p->blk, &p->ctx, p->hbuf, &p->hdr, p->hdr.new_size - p->new_off);
        if (err < 0)
            return err;
        if (p->block_index + 1 == p->hdr.block_count &&
            p->blk.new_len != p->hdr.new_size - p->new_off)
            return mf_fail(&p->ctx, MF_E_INVALID, "last block ends before the new size");
        payload_begin(p);
        p->st = MF_PATCH_ST_PAYLOAD;
        return MF_OK;
    case MF_PATCH_ST_PAYLOAD: {
        int done = 1;

        /* STORED is its own output: collected into dbuf; COPY has no payload. */
        if (p->blk.kind == MF_DELTA_STORED)
            done = collect(p, p->dbuf, p->blk.payload_len, &p->fill, in);
        else if (p->blk.kind != MF_DELTA_COPY) {
            err = payload_stream(p, in, &done);
            if (err < 0)
                return err;
        }
        if (!done)
            return MF_AGAIN;
        p->fill = 0;
        err = payload_end(p);
        if (err < 0)
            return err;
        p->emit_len = p->emit_pos = 0;
        p->st = MF_PATCH_ST_EMIT;
        return MF_OK;
    }
    case MF_PATCH_ST_EMIT:
        if (!drain(p, out))
            return MF_AGAIN;
        if (p->cur.produced < p->blk.new_len)
            return gen_chunk(p);
        err = block_end(p);
        if (err < 0)
            return err;
        p->block_index++;
        p->st = p->block_index == p->hdr.block_count ? MF_PATCH_ST_FINISH : MF_PATCH_ST_BLOCK;
        if (p->st == MF_PATCH_ST_BLOCK)
            take_snapshot(p);
        return MF_OK;
    case MF_PATCH_ST_FINISH:
        err = finish(p);
        if (err < 0)
            return err;
        p->st = MF_PATCH_ST_DONE;
        return MF_OK;
    case MF_PATCH_ST_DONE:
        return MF_OK;
    case MF_PATCH_ST_FAILED:
        break;
    }
    return mf_fail(&p->ctx, MF_E_STATE, "apply called after a failure");
}

int mf_patch_apply(mf_patch *p, mf_outbuf *out, mf_inbuf *in)
{
    assert(p && out && in && in->pos <= in->size && out->pos <= out->size);
    if (p->st == MF_PATCH_ST_FAILED)
        return mf_fail(&p->ctx, MF_E_STATE, "apply called after a failure");
    while (p->st != MF_PATCH_ST_DONE) {
        int r = step(p, out, in);

        if (r < 0) {
            p->st = MF_PATCH_ST_FAILED;
            return r;
        }
        if (r == MF_AGAIN)
            return MF_AGAIN;
    }
    return MF_OK;
}
