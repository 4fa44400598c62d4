/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_safetensors.h
 * @brief Strict reader and writer of the safetensors container (Hugging Face), used for the
 * example's student and teacher so data teams open them with standard tools.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON
 * `{"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *   "__metadata__": {"key": "string", ...}}`, then the tensor bytes (little-endian).
 *
 * The reader rejects: N over MF_SAFETENSORS_MAX_HEADER or past the buffer, JSON that is not
 * one object, unknown keys or dtypes, shapes whose byte size does not equal end - begin,
 * offsets outside the data, holes or overlaps between tensors, duplicate names, non-string
 * metadata, more than MF_SAFETENSORS_MAX_TENSORS tensors or MF_SAFETENSORS_MAX_RANK dims.
 */
#ifndef MF_EXAMPLE_SAFETENSORS_H
#define MF_EXAMPLE_SAFETENSORS_H

#include "mf/alloc.h"
#include "mf/error.h"

struct mf_ctx;
struct mf_dynbuf;

MF_BEGIN_DECLS

#define MF_SAFETENSORS_MAX_HEADER (1u << 20)
#define MF_SAFETENSORS_MAX_TENSORS 256u
#define MF_SAFETENSORS_MAX_RANK 4u
#define MF_SAFETENSORS_MAX_NAME 128u

typedef enum mf_st_dtype { MF_ST_F32 = 0, MF_ST_I8 = 1, MF_ST_U8 = 2, MF_ST_I32 = 3 } mf_st_dtype;

/** One tensor of a parsed file; `data` points into the caller's buffer. */
typedef struct mf_st_tensor {
    const char *name;
    mf_st_dtype dtype;
    uint32_t rank;
    uint64_t shape[MF_SAFETENSORS_MAX_RANK];
    uint64_t nbytes;
    const uint8_t *data; /**< not aligned in general: copy before casting */
} mf_st_tensor;

typedef struct mf_safetensors mf_safetensors;

/**
 * @brief Parses and validates a safetensors buffer.
 * @param out receives the index; free with mf_safetensors_free(). It borrows `buf`, which
 *        MUST outlive it.
 * @return MF_OK; MF_E_INVALID (any rule above); MF_E_LIMIT (header, rank or count caps);
 *         MF_E_NOMEM.
 */
MF_EXTERN int mf_safetensors_parse(mf_safetensors **out, struct mf_ctx *ctx,
                                   const mf_allocator *alloc, const uint8_t *buf,
                                   size_t len) MF_WARN_UNUSED_RESULT;

MF_EXTERN void mf_safetensors_free(mf_safetensors *st);

/** @return the number of tensors. */
MF_EXTERN size_t mf_safetensors_count(const mf_safetensors *st);

/** @return tensor `i` (< count), borrowed from `st`. Tensors are in data-offset order. */
MF_EXTERN const mf_st_tensor *mf_safetensors_at(const mf_safetensors *st, size_t i);

/** @return the metadata value for `key`, or NULL; borrowed from `st`. */
MF_EXTERN const char *mf_safetensors_meta(const mf_safetensors *st, const char *key);

/**
 * @brief Looks up tensor `name` and checks its dtype and shape.
 * @param shape `rank` expected dimensions.
 * @return MF_OK; MF_E_NOTFOUND; MF_E_INVALID (dtype or shape differ).
 */
MF_EXTERN int mf_safetensors_get(const mf_st_tensor **out, struct mf_ctx *ctx,
                                 const mf_safetensors *st, const char *name, mf_st_dtype dtype,
                                 uint32_t rank, const uint64_t *shape) MF_WARN_UNUSED_RESULT;

/** A tensor to write; `data` holds product(shape) * dtype-size little-endian bytes. */
typedef struct mf_st_entry {
    const char *name;
    mf_st_dtype dtype;
    uint32_t rank;
    uint64_t shape[MF_SAFETENSORS_MAX_RANK];
    const void *data;
} mf_st_entry;

/**
 * @brief Appends a safetensors file holding `n` tensors (in order) and `n_meta` metadata
 * pairs `meta[2i]` = key, `meta[2i+1]` = value to `out`.
 * @return MF_OK; MF_E_INVALID (bad name, rank, duplicate); MF_E_LIMIT; MF_E_NOMEM.
 */
MF_EXTERN int mf_safetensors_write(struct mf_dynbuf *out, struct mf_ctx *ctx, const mf_st_entry *t,
                                   size_t n, const char *const *meta,
                                   size_t n_meta) MF_WARN_UNUSED_RESULT;

/** @return the byte size of one element of `dtype`. */
MF_EXTERN size_t mf_st_dtype_size(mf_st_dtype dtype);

MF_END_DECLS

#endif /* MF_EXAMPLE_SAFETENSORS_H */
