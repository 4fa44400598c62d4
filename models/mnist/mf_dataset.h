/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_dataset.h
 * @brief Labelled image sets for the example: IDX files (MNIST, Fashion-MNIST; plain or
 * gzip) and scikit-learn's digits.csv.gz, plus seeded, deterministic splits.
 *
 * Parsers are strict: wrong magic, truncated or trailing bytes, dimensions over the caps,
 * labels out of range and count mismatches fail with MF_E_INVALID or MF_E_LIMIT and a
 * message in the ctx. Nothing is downloaded; files are read from where Debian installs them.
 */
#ifndef MF_EXAMPLE_DATASET_H
#define MF_EXAMPLE_DATASET_H

#include "mf/alloc.h"
#include "mf/error.h"

struct mf_ctx;

MF_BEGIN_DECLS

#define MF_DATASET_MAX_ITEMS (1u << 20)  /**< items per set */
#define MF_DATASET_MAX_SIDE 256u         /**< rows and columns of an image */
#define MF_DATASET_MAX_FILE (256u << 20) /**< bytes of one (decompressed) input file */
#define MF_DATASET_CLASSES 10u           /**< labels are 0..9 */

/** Debian's install paths (packages dataset-fashion-mnist and python3-sklearn). */
#define MF_FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define MF_DIGITS_CSV "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

typedef struct mf_dataset {
    size_t n;          /**< items */
    uint32_t rows;     /**< image height */
    uint32_t cols;     /**< image width */
    uint32_t dim;      /**< rows * cols: bytes per item in `x` */
    uint8_t max_value; /**< largest legal pixel value: 255 (IDX) or 16 (digits) */
    uint8_t *x;        /**< n * dim pixels, item-major */
    uint8_t *y;        /**< n labels, each < MF_DATASET_CLASSES */
    mf_allocator alloc;
} mf_dataset;

/**
 * @brief Parses an IDX image file (magic 0x00000803) and its label file (0x00000801).
 * @param out receives the set; the caller frees it with mf_dataset_free().
 * @param alloc NULL for the default allocator.
 * @return MF_OK; MF_E_INVALID (magic, truncation, trailing bytes, counts, labels);
 *         MF_E_LIMIT (dims over the caps); MF_E_NOMEM.
 */
MF_EXTERN int mf_dataset_parse_idx(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                                   const uint8_t *images, size_t images_len, const uint8_t *labels,
                                   size_t labels_len) MF_WARN_UNUSED_RESULT;

/** @brief Reads (gunzipping if needed) and parses an IDX image/label pair. Adds MF_E_IO. */
MF_EXTERN int mf_dataset_load_idx(mf_dataset **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                                  const char *images_path,
                                  const char *labels_path) MF_WARN_UNUSED_RESULT;

/**
 * @brief Loads Fashion-MNIST's "train" or "t10k" split from `dir` (NULL: MF_FASHION_DIR).
 * @return as mf_dataset_load_idx().
 */
MF_EXTERN int mf_dataset_load_fashion(mf_dataset **out, struct mf_ctx *ctx,
                                      const mf_allocator *alloc, const char *dir,
                                      const char *split) MF_WARN_UNUSED_RESULT;

/**
 * @brief Parses digits CSV text: one item per line, 64 pixel values 0..16 then a label 0..9,
 * comma-separated, "\n" or "\r\n" line ends.
 * @return MF_OK; MF_E_INVALID (bad field, value or column count); MF_E_LIMIT; MF_E_NOMEM.
 */
MF_EXTERN int mf_dataset_parse_digits(mf_dataset **out, struct mf_ctx *ctx,
                                      const mf_allocator *alloc, const uint8_t *text,
                                      size_t len) MF_WARN_UNUSED_RESULT;

/** @brief Reads (gunzipping) and parses digits.csv.gz; `path` NULL means MF_DIGITS_CSV. */
MF_EXTERN int mf_dataset_load_digits(mf_dataset **out, struct mf_ctx *ctx,
                                     const mf_allocator *alloc,
                                     const char *path) MF_WARN_UNUSED_RESULT;

/**
 * @brief Copies items `idx[0..n)` of `src` into a new set (n may be 0).
 * @return MF_OK or MF_E_NOMEM. Ownership: free `*out` with mf_dataset_free().
 */
MF_EXTERN int mf_dataset_select(mf_dataset **out, struct mf_ctx *ctx, const mf_dataset *src,
                                const size_t *idx, size_t n) MF_WARN_UNUSED_RESULT;

/** @brief Releases a set; NULL is a no-op. */
MF_EXTERN void mf_dataset_free(mf_dataset *ds);

/**
 * @brief Fills `perm_out[0..n)` with a permutation of 0..n-1 that depends only on `seed`
 * (Fisher-Yates over splitmix64), so splits are reproducible across runs and machines.
 */
MF_EXTERN void mf_dataset_permutation(size_t *perm_out, size_t n, uint64_t seed);

/** @brief Next value of the splitmix64 generator at `*state` (shared by every seeded step). */
MF_EXTERN uint64_t mf_rng_next(uint64_t *state);

/** @brief Uniform double in [0, 1) from mf_rng_next(). */
MF_EXTERN double mf_rng_uniform(uint64_t *state);

/**
 * @brief Reads a whole file, gunzipping it when it is gzip (plain files pass through).
 * @param out receives the bytes (from `alloc`; release with mf_free()); *len_out their count.
 * @return MF_OK; MF_E_IO (cannot open/read or corrupt gzip); MF_E_LIMIT (over `max`);
 *         MF_E_NOMEM.
 */
MF_EXTERN int mf_file_read_all(uint8_t **out, size_t *len_out, struct mf_ctx *ctx,
                               const mf_allocator *alloc, const char *path,
                               size_t max) MF_WARN_UNUSED_RESULT;

/**
 * @brief Writes `len` bytes to `path` atomically (temporary file, fsync, rename).
 * @return MF_OK or MF_E_IO.
 */
MF_EXTERN int mf_file_write_atomic(struct mf_ctx *ctx, const char *path, const void *data,
                                   size_t len) MF_WARN_UNUSED_RESULT;

MF_END_DECLS

#endif /* MF_EXAMPLE_DATASET_H */
