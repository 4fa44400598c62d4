/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_student_model.h
 * @brief An owned int8 student (weights + the mf_student view over them) and its
 * safetensors file format.
 *
 * File tensors (names as PyTorch would give them, so `safetensors.numpy.load_file` or ten
 * lines of json + numpy read it):
 *   fc1.weight I8 [hidden, in]   fc1.bias F32 [hidden]
 *   fc2.weight I8 [out, hidden]  fc2.bias F32 [out]
 *   scales F32 [5] = input, fc1.weight, hidden, fc2.weight, temperature
 * Metadata: "format" = "mf-student-int8-mlp", "format_version" = "1", plus free-form
 * "threshold" and "notes" strings.
 */
#ifndef MF_EXAMPLE_STUDENT_MODEL_H
#define MF_EXAMPLE_STUDENT_MODEL_H

#include "mf_student.h"

#include "mf/alloc.h"
#include "mf/error.h"

struct mf_ctx;
struct mf_dynbuf;

MF_BEGIN_DECLS

#define MF_STUDENT_FORMAT "mf-student-int8-mlp"
#define MF_STUDENT_MAX_FILE (1u << 22)

typedef struct mf_student_model {
    mf_student net; /**< device view; its pointers refer to the arrays below */
    int8_t *w1;
    float *b1;
    int8_t *w2;
    float *b2;
    mf_allocator alloc;
} mf_student_model;

/**
 * @brief Allocates a zeroed model with unit scales.
 * @return MF_OK; MF_E_INVALID (dims outside the mf_student bounds); MF_E_NOMEM.
 * Ownership: free with mf_student_model_free().
 */
MF_EXTERN int mf_student_model_new(mf_student_model **out, struct mf_ctx *ctx,
                                   const mf_allocator *alloc, uint32_t n_in, uint32_t n_hidden,
                                   uint32_t n_out) MF_WARN_UNUSED_RESULT;

MF_EXTERN void mf_student_model_free(mf_student_model *m);

/** @brief Appends the model as safetensors to `out`. @return MF_OK, MF_E_NOMEM, MF_E_LIMIT. */
MF_EXTERN int mf_student_model_encode(struct mf_dynbuf *out, struct mf_ctx *ctx,
                                      const mf_student_model *m) MF_WARN_UNUSED_RESULT;

/**
 * @brief Decodes a student file (strict: format tag, tensor set, shapes, finite scales).
 * @return MF_OK; MF_E_INVALID; MF_E_NOTFOUND (missing tensor); MF_E_LIMIT; MF_E_NOMEM.
 */
MF_EXTERN int mf_student_model_decode(mf_student_model **out, struct mf_ctx *ctx,
                                      const mf_allocator *alloc, const uint8_t *buf,
                                      size_t len) MF_WARN_UNUSED_RESULT;

/** @brief Writes the model file atomically. @return MF_OK, MF_E_IO, MF_E_NOMEM. */
MF_EXTERN int mf_student_model_save(const mf_student_model *m, struct mf_ctx *ctx,
                                    const char *path) MF_WARN_UNUSED_RESULT;

/** @brief Reads and decodes a model file. @return as decode, plus MF_E_IO. */
MF_EXTERN int mf_student_model_load(mf_student_model **out, struct mf_ctx *ctx,
                                    const mf_allocator *alloc,
                                    const char *path) MF_WARN_UNUSED_RESULT;

MF_END_DECLS

#endif /* MF_EXAMPLE_STUDENT_MODEL_H */
