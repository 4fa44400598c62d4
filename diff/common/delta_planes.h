/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the numeric-tensor transform of NUMERIC blocks. A block of `nwords` little-endian
 * words of `word` bytes is coded as residual[i] = new[i] - old[i] (mod 2^(8*word)), optionally
 * zigzagged, then split into `word` byte planes: plane k holds byte k of every residual, so
 * plane k starts at planes + k * nwords. Fine-tuned weights leave the high planes almost all
 * zero and zstd turns them into long runs.
 */
#ifndef MF_DIFF_DELTA_PLANES_H
#define MF_DIFF_DELTA_PLANES_H

#include <stddef.h>
#include <stdint.h>

/* Encoder: fills `planes` (nwords * word bytes); `old_words` NULL means all-zero words. */
void mf_delta__planes_split(uint8_t *planes, const uint8_t *old_words, const uint8_t *new_words,
                            size_t nwords, unsigned int word, unsigned int flags);

/*
 * Decoder: `buf` holds old words [first, first + count) on entry and the new words on return;
 * `planes` is the whole decoded payload of the block (nwords words per plane).
 */
void mf_delta__planes_merge(uint8_t *buf, const uint8_t *planes, size_t nwords, size_t first,
                            size_t count, unsigned int word, unsigned int flags);

/*
 * Sparse form (flag MF_DELTA_NUM_SPARSE), for residuals that are mostly zero words:
 *   varint count | count gaps (zero words skipped before each listed word: one byte if
 *   below 255, else 255 and a varint of gap - 255) |
 *   `word` planes of `count` bytes each (the listed words' bytes).
 * sparse_size returns the encoded size, or 0 when it would exceed `cap`.
 */
size_t mf_delta__sparse_encode(uint8_t *out, size_t cap, const uint8_t *planes, size_t nwords,
                               unsigned int word);
/*
 * Decoder of the sparse form: a cursor over the listed words, so the residuals are added
 * while the block is emitted, in order, without expanding them into dense planes (which
 * would take a second window of memory).
 */
struct mf_delta_sparse {
    size_t count;    /* listed words */
    size_t listed;   /* listed words already merged */
    size_t next;     /* word index of listed word `listed` */
    size_t gap_pos;  /* offset of the gap after it */
    size_t vals_pos; /* offset of the value planes */
};

/* Checks the whole encoding of `in` (len bytes) and starts `c` at word 0; MF_OK or
 * MF_E_INVALID if malformed. */
int mf_delta__sparse_begin(struct mf_delta_sparse *c, size_t nwords, unsigned int word,
                           const uint8_t *in, size_t len);
/* Adds the residuals of listed words in [first, first + count) to `buf`, which holds those
 * words of old (zeros for raw blocks); calls must cover the block in increasing order. */
void mf_delta__sparse_merge(uint8_t *buf, struct mf_delta_sparse *c, const uint8_t *in,
                            size_t nwords, size_t first, size_t count, unsigned int word,
                            unsigned int flags);

/*
 * Float planes (flag MF_DELTA_NUM_FLOAT, raw blocks of words of 2 or 4 bytes): each word u
 * is rotated left by one bit, so a float's sign goes to bit 0 and its exponent fills the top
 * byte (fp32, bf16; fp16 puts 5 exponent and 3 mantissa bits there). The top plane holds the
 * top bytes in word order; every lower plane holds its bytes of the words in the order of a
 * stable sort by top byte (all words whose top byte is 0 first, then 1, ...). The mantissa
 * bytes of one exponent then sit together, and the encoder gives each such run its own zstd
 * frame (own Huffman table): an order-1 model of mantissa given exponent, decoded by the
 * plain zstd frames the decoder already reads. Same length as the plain planes.
 */
/* Decoder cursor: the next position in the lower planes of each top byte value. */
struct mf_delta_float {
    uint32_t pos[256];
};
/* Encoder: fills `planes` (nwords * word bytes); `scratch` holds the cursors meanwhile. */
void mf_delta__float_split(uint8_t *planes, struct mf_delta_float *scratch,
                           const uint8_t *new_words, size_t nwords, unsigned int word);
/* Histogram of the top plane (the run lengths of the lower planes). */
void mf_delta__float_counts(uint32_t counts[256], const uint8_t *top, size_t nwords);
void mf_delta__float_begin(struct mf_delta_float *c, const uint8_t *planes, size_t nwords,
                           unsigned int word);
/* Writes words [first, first + count) of the block into `buf`; calls must cover the block in
 * increasing order (each word moves its top byte's cursor). */
void mf_delta__float_merge(uint8_t *buf, struct mf_delta_float *c, const uint8_t *planes,
                           size_t nwords, size_t first, size_t count, unsigned int word);

#endif /* MF_DIFF_DELTA_PLANES_H */
