/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the mf delta container (docs/formats/delta.md), shared by apply and create.
 * Everything is little-endian and fixed-width so the device parses headers without any
 * allocation; only block payloads are zstd frames.
 */
#ifndef MF_DIFF_DELTA_FORMAT_H
#define MF_DIFF_DELTA_FORMAT_H

#include "mf_ctx.h"

#include <stddef.h>
#include <stdint.h>

#define MF_DELTA_MAGIC "MFDLTA"
#define MF_DELTA_MAGIC_LEN 6
#define MF_DELTA_VERSION 1
#define MF_DELTA_HEADER_SIZE 104
#define MF_DELTA_BLOCK_HEADER_SIZE 32
/* A block never produces more than this; keeps every length a u32 and bounds COPY reads. */
#define MF_DELTA_MAX_BLOCK_OUT (1u << 30)

enum mf_delta_kind {
    MF_DELTA_STORED = 0,  /* payload = new bytes verbatim */
    MF_DELTA_ZSTD = 1,    /* payload = zstd(new bytes) */
    MF_DELTA_COPY = 2,    /* no payload: new = old[old_off, +new_len] */
    MF_DELTA_BSDIFF = 3,  /* payload = zstd(ctrl | diff | extra), bsdiff semantics */
    MF_DELTA_NUMERIC = 4, /* payload = zstd(byte planes of new - old per word) */
    MF_DELTA_KIND_COUNT
};

/* NUMERIC flag: residuals are zigzag-coded so small negative steps have zero high bytes. */
#define MF_DELTA_NUM_ZIGZAG 0x1u
/* NUMERIC flag: the payload lists only the non-zero residual words (delta_planes.h). */
#define MF_DELTA_NUM_SPARSE 0x2u
/* NUMERIC flag: no old image; the planes hold the new words themselves (old_off is 0). */
#define MF_DELTA_NUM_RAW 0x4u
/* NUMERIC flag, with RAW only (dense, no zigzag, word 2 or 4): each word is rotated left by
 * one bit (the float's sign to bit 0, its exponent to the top byte) and the lower planes
 * hold their bytes ordered by the top byte's value (delta_planes.h, "float planes"). */
#define MF_DELTA_NUM_FLOAT 0x8u

struct mf_delta_header {
    uint16_t version;
    uint32_t flags;
    uint32_t block_count;
    uint64_t old_size;
    uint64_t new_size;
    uint32_t window; /* largest payload and largest decoded payload of any block */
    uint8_t old_sha256[32];
    uint8_t new_sha256[32];
};

struct mf_delta_block {
    uint8_t kind;
    uint8_t word;   /* NUMERIC: 1, 2 or 4 */
    uint16_t flags; /* NUMERIC: MF_DELTA_NUM_* */
    uint32_t new_len;
    uint32_t payload_len;
    uint32_t decoded_len; /* bytes after zstd; 0 for STORED and COPY */
    uint64_t old_off;     /* COPY/NUMERIC source; BSDIFF initial old position */
    uint32_t ctrl_len;    /* BSDIFF */
    uint32_t diff_len;    /* BSDIFF; extra = decoded_len - ctrl_len - diff_len */
};

static inline uint32_t mf_delta__get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t mf_delta__get64(const uint8_t *p)
{
    return (uint64_t)mf_delta__get32(p) | (uint64_t)mf_delta__get32(p + 4) << 32;
}

static inline void mf_delta__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void mf_delta__put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Serialise into exactly MF_DELTA_HEADER_SIZE / MF_DELTA_BLOCK_HEADER_SIZE bytes. */
void mf_delta__header_write(uint8_t *out, const struct mf_delta_header *h);
void mf_delta__block_write(uint8_t *out, const struct mf_delta_block *b);

/* Parse and check everything that does not need the old image: MF_OK or MF_E_INVALID. */
int mf_delta__header_parse(struct mf_delta_header *out, struct mf_ctx *ctx, const uint8_t *in);
/* `remaining` = new bytes not yet produced; `h` gives sizes and window. */
int mf_delta__block_parse(struct mf_delta_block *out, struct mf_ctx *ctx, const uint8_t *in,
                          const struct mf_delta_header *h, uint64_t remaining);

/* Static name of a block kind ("?" when unknown). */
const char *mf_delta__kind_name(unsigned int kind);

/*
 * LEB128 varint of the BSDIFF control stream. get returns bytes consumed, 0 when the input
 * ends early or the value exceeds 63 bits.
 */
size_t mf_delta__varint_put(uint8_t *out, uint64_t v);
size_t mf_delta__varint_get(uint64_t *out, const uint8_t *in, size_t len);

static inline uint64_t mf_delta__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mf_delta__unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif /* MF_DIFF_DELTA_FORMAT_H */
