/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Header and block-header codec of the mf delta format. Parsing checks every field that can
 * be checked without the old image, so the apply state machine only ever sees lengths that
 * fit its window and offsets that fit the old image.
 */
#include "delta_format.h"

#include <string.h>

void mf_delta__header_write(uint8_t *out, const struct mf_delta_header *h)
{
    memset(out, 0, MF_DELTA_HEADER_SIZE);
    memcpy(out, MF_DELTA_MAGIC, MF_DELTA_MAGIC_LEN);
    out[6] = (uint8_t)(h->version & 0xff);
    out[7] = (uint8_t)(h->version >> 8);
    mf_delta__put32(out + 8, h->flags);
    mf_delta__put32(out + 12, h->block_count);
    mf_delta__put64(out + 16, h->old_size);
    mf_delta__put64(out + 24, h->new_size);
    mf_delta__put32(out + 32, h->window);
    memcpy(out + 40, h->old_sha256, 32);
    memcpy(out + 72, h->new_sha256, 32);
}

int mf_delta__header_parse(struct mf_delta_header *out, struct mf_ctx *ctx, const uint8_t *in)
{
    struct mf_delta_header h;

    if (memcmp(in, MF_DELTA_MAGIC, MF_DELTA_MAGIC_LEN) != 0)
        return mf_fail(ctx, MF_E_INVALID, "not an mf delta (bad magic)");
    memset(&h, 0, sizeof(h));
    h.version = (uint16_t)(in[6] | in[7] << 8);
    h.flags = mf_delta__get32(in + 8);
    h.block_count = mf_delta__get32(in + 12);
    h.old_size = mf_delta__get64(in + 16);
    h.new_size = mf_delta__get64(in + 24);
    h.window = mf_delta__get32(in + 32);
    memcpy(h.old_sha256, in + 40, 32);
    memcpy(h.new_sha256, in + 72, 32);
    if (h.version != MF_DELTA_VERSION)
        return mf_fail(ctx, MF_E_INVALID, "unsupported delta version %u", (unsigned)h.version);
    if (h.flags != 0 || mf_delta__get32(in + 36) != 0)
        return mf_fail(ctx, MF_E_INVALID, "unknown delta header flags 0x%x", (unsigned)h.flags);
    if (h.window < 4096 || h.window > MF_DELTA_MAX_BLOCK_OUT)
        return mf_fail(ctx, MF_E_INVALID, "delta window %u out of range", (unsigned)h.window);
    if (h.new_size > INT64_MAX || h.old_size > INT64_MAX)
        return mf_fail(ctx, MF_E_INVALID, "delta image size out of range");
    if ((h.new_size == 0) != (h.block_count == 0) || h.block_count > h.new_size)
        return mf_fail(ctx, MF_E_INVALID, "block count %u does not fit new size %llu",
                       (unsigned)h.block_count, (unsigned long long)h.new_size);
    *out = h;
    return MF_OK;
}

void mf_delta__block_write(uint8_t *out, const struct mf_delta_block *b)
{
    out[0] = b->kind;
    out[1] = b->word;
    out[2] = (uint8_t)(b->flags & 0xff);
    out[3] = (uint8_t)(b->flags >> 8);
    mf_delta__put32(out + 4, b->new_len);
    mf_delta__put32(out + 8, b->payload_len);
    mf_delta__put32(out + 12, b->decoded_len);
    mf_delta__put64(out + 16, b->old_off);
    mf_delta__put32(out + 24, b->ctrl_len);
    mf_delta__put32(out + 28, b->diff_len);
}

/* Checks that depend on the kind; `b` has passed the kind-independent checks. */
static int block_check_kind(struct mf_ctx *ctx, const struct mf_delta_block *b,
                            const struct mf_delta_header *h)
{
    uint64_t old_end = b->old_off + b->new_len;
    int unused_zero = b->word == 0 && b->flags == 0 && b->ctrl_len == 0 && b->diff_len == 0;

    switch ((enum mf_delta_kind)b->kind) {
    case MF_DELTA_STORED:
        if (!unused_zero || b->payload_len != b->new_len || b->decoded_len != 0 || b->old_off)
            return mf_fail(ctx, MF_E_INVALID, "stored block fields inconsistent");
        return MF_OK;
    case MF_DELTA_ZSTD:
        if (!unused_zero || b->decoded_len != b->new_len || b->old_off || !b->payload_len)
            return mf_fail(ctx, MF_E_INVALID, "zstd block fields inconsistent");
        return MF_OK;
    case MF_DELTA_COPY:
        if (!unused_zero || b->payload_len || b->decoded_len)
            return mf_fail(ctx, MF_E_INVALID, "copy block fields inconsistent");
        if (old_end > h->old_size)
            return mf_fail(ctx, MF_E_INVALID, "copy block reads old up to %llu past size %llu",
                           (unsigned long long)old_end, (unsigned long long)h->old_size);
        return MF_OK;
    case MF_DELTA_BSDIFF:
        if (b->word || b->flags || !b->payload_len || b->ctrl_len > b->decoded_len ||
            b->decoded_len - b->ctrl_len != b->new_len || b->diff_len > b->new_len)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff block stream lengths inconsistent");
        if (b->old_off > h->old_size)
            return mf_fail(ctx, MF_E_INVALID, "bsdiff block starts at old %llu past size %llu",
                           (unsigned long long)b->old_off, (unsigned long long)h->old_size);
        return MF_OK;
    case MF_DELTA_NUMERIC:
        if ((b->word != 1 && b->word != 2 && b->word != 4) || b->new_len % b->word ||
            (b->flags & ~(MF_DELTA_NUM_ZIGZAG | MF_DELTA_NUM_SPARSE | MF_DELTA_NUM_RAW |
                          MF_DELTA_NUM_FLOAT)) ||
            ((b->flags & MF_DELTA_NUM_FLOAT) &&
             (b->flags != (MF_DELTA_NUM_RAW | MF_DELTA_NUM_FLOAT) || b->word == 1)) ||
            ((b->flags & MF_DELTA_NUM_RAW) && b->old_off) || b->ctrl_len || b->diff_len ||
            !b->payload_len ||
            ((b->flags & MF_DELTA_NUM_SPARSE) ? b->decoded_len == 0 || b->new_len > h->window
                                              : b->decoded_len != b->new_len))
            return mf_fail(ctx, MF_E_INVALID, "numeric block fields inconsistent (word %u)",
                           (unsigned)b->word);
        if (!(b->flags & MF_DELTA_NUM_RAW) && old_end > h->old_size)
            return mf_fail(ctx, MF_E_INVALID, "numeric block reads old up to %llu past size %llu",
                           (unsigned long long)old_end, (unsigned long long)h->old_size);
        return MF_OK;
    case MF_DELTA_KIND_COUNT:
        break;
    }
    return mf_fail(ctx, MF_E_INVALID, "unknown block kind %u", (unsigned)b->kind);
}

int mf_delta__block_parse(struct mf_delta_block *out, struct mf_ctx *ctx, const uint8_t *in,
                          const struct mf_delta_header *h, uint64_t remaining)
{
    struct mf_delta_block b;

    b.kind = in[0];
    b.word = in[1];
    b.flags = (uint16_t)(in[2] | in[3] << 8);
    b.new_len = mf_delta__get32(in + 4);
    b.payload_len = mf_delta__get32(in + 8);
    b.decoded_len = mf_delta__get32(in + 12);
    b.old_off = mf_delta__get64(in + 16);
    b.ctrl_len = mf_delta__get32(in + 24);
    b.diff_len = mf_delta__get32(in + 28);
    if (b.new_len == 0 || b.new_len > remaining || b.new_len > MF_DELTA_MAX_BLOCK_OUT)
        return mf_fail(ctx, MF_E_INVALID, "block output length %u invalid (%llu bytes left)",
                       (unsigned)b.new_len, (unsigned long long)remaining);
    if (b.payload_len > h->window || b.decoded_len > h->window)
        return mf_fail(ctx, MF_E_INVALID, "block payload %u/%u exceeds declared window %u",
                       (unsigned)b.payload_len, (unsigned)b.decoded_len, (unsigned)h->window);
    if (b.old_off > h->old_size)
        return mf_fail(ctx, MF_E_INVALID, "block old offset %llu past old size",
                       (unsigned long long)b.old_off);
    if (block_check_kind(ctx, &b, h) < 0)
        return MF_E_INVALID;
    *out = b;
    return MF_OK;
}

const char *mf_delta__kind_name(unsigned int kind)
{
    static const char *const names[MF_DELTA_KIND_COUNT] = {"stored", "zstd", "copy", "bsdiff",
                                                           "numeric"};

    return kind < MF_DELTA_KIND_COUNT ? names[kind] : "?";
}

size_t mf_delta__varint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t mf_delta__varint_get(uint64_t *out, const uint8_t *in, size_t len)
{
    uint64_t v = 0;

    for (size_t i = 0; i < len && i < 9; i++) {
        v |= (uint64_t)(in[i] & 0x7f) << (7 * i);
        if (!(in[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0; /* truncated, or more than 63 bits */
}
