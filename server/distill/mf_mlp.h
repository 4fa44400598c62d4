/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_mlp.h
 * @brief Float MLP (ReLU hidden layers, linear logits) with a seeded mini-batch Adam trainer
 * on hard labels and/or temperature-softened soft labels. Cloud side: the example's teacher
 * and the float stage of the student's distillation (mf_distill.h).
 *
 * Loss per sample, with p_T = softmax(z / T):
 *   hard only:  CE(y, p_1)
 *   soft only:  T^2 * CE(q, p_T)
 *   both:       alpha * T^2 * CE(q, p_T) + (1 - alpha) * CE(y, p_1)
 * Training is deterministic for a given seed and thread count: each thread owns a fixed
 * slice of every mini-batch and the partial gradients are summed in thread order.
 */
#ifndef MF_DISTILL_MLP_H
#define MF_DISTILL_MLP_H

#include "mf/alloc.h"
#include "mf/error.h"

struct mf_ctx;

MF_BEGIN_DECLS

#define MF_MLP_MAX_LAYERS 4u   /**< weight layers */
#define MF_MLP_MAX_WIDTH 4096u /**< units in any layer */
#define MF_MLP_MAX_THREADS 8u
#define MF_TRAIN_NO_LABEL 255u /**< label value of a sample whose true class is unknown */

typedef struct mf_mlp {
    uint32_t n_layers;                     /**< weight layers */
    uint32_t sizes[MF_MLP_MAX_LAYERS + 1]; /**< sizes[0] inputs ... sizes[n_layers] outputs */
    float *w[MF_MLP_MAX_LAYERS];           /**< layer l: [sizes[l]][sizes[l+1]], row-major */
    float *b[MF_MLP_MAX_LAYERS];           /**< layer l: [sizes[l+1]] */
    float in_scale;                        /**< real input = byte * in_scale */
    mf_allocator alloc;
} mf_mlp;

/**
 * @brief Allocates an MLP with He-uniform weights drawn from `seed` and zero biases.
 * @param sizes `n_sizes` layer widths (2..MF_MLP_MAX_LAYERS+1 of them).
 * @return MF_OK; MF_E_INVALID (shape); MF_E_NOMEM. Free with mf_mlp_free().
 */
MF_EXTERN int mf_mlp_new(mf_mlp **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                         const uint32_t *sizes, uint32_t n_sizes, float in_scale,
                         uint64_t seed) MF_WARN_UNUSED_RESULT;

MF_EXTERN void mf_mlp_free(mf_mlp *m);

/**
 * @brief Logits of `n` inputs of sizes[0] bytes each, `threads` workers (1 is fine).
 * @param logits_out n * sizes[n_layers] floats.
 * @return MF_OK or MF_E_NOMEM (scratch).
 */
MF_EXTERN int mf_mlp_logits(float *logits_out, struct mf_ctx *ctx, const mf_mlp *m,
                            const uint8_t *x, size_t n, uint32_t threads) MF_WARN_UNUSED_RESULT;

/** A training set; all arrays are borrowed for the duration of the call. */
typedef struct mf_train_set {
    size_t n;                /**< samples */
    const uint8_t *x;        /**< n * sizes[0] input bytes */
    const uint8_t *y;        /**< n labels, or MF_TRAIN_NO_LABEL; NULL: no sample has one */
    const float *soft;       /**< n * n_out target probabilities; NULL: no sample has one */
    const uint8_t *has_soft; /**< n flags for `soft`; NULL: every row of `soft` is valid */
} mf_train_set;

#define MF_TRAIN_OPTIONS_VERSION 1

typedef struct mf_train_options {
    unsigned int version;
    uint32_t epochs;    /**< passes over the set (default 30) */
    uint32_t batch;     /**< mini-batch size (default 64) */
    float lr;           /**< Adam step size at the start (default 3e-3) */
    float lr_final;     /**< step size reached at the last epoch, cosine decay (3e-4) */
    float weight_decay; /**< L2 on weights, added to the gradient (default 0) */
    float temperature;  /**< T of the soft-label term (default 2) */
    float alpha;        /**< weight of the soft term where both labels exist (0.5) */
    uint64_t seed;      /**< shuffling (default 1) */
    uint32_t threads;   /**< worker threads, 1..MF_MLP_MAX_THREADS (default 2) */
} mf_train_options;

/** @brief Fills defaults. @return MF_OK or MF_E_INVALID for an unknown version. */
MF_EXTERN int mf_train_options_init(mf_train_options *o, unsigned int version);

/**
 * @brief Trains `m` in place.
 * @param final_loss_out NULL or receives the mean loss of the last epoch.
 * @return MF_OK; MF_E_INVALID (a sample with neither label, bad option); MF_E_NOMEM.
 */
MF_EXTERN int mf_mlp_train(mf_mlp *m, struct mf_ctx *ctx, const mf_train_set *set,
                           const mf_train_options *o, float *final_loss_out) MF_WARN_UNUSED_RESULT;

/**
 * @brief Saves as safetensors: "layers.<l>.weight" F32 [out, in] (PyTorch orientation),
 * "layers.<l>.bias" F32 [out], "input_scale" F32 [1]; metadata format "mf-float-mlp" and
 * the caller's `meta` pairs (for example a cache key).
 * @return MF_OK, MF_E_IO, MF_E_NOMEM.
 */
MF_EXTERN int mf_mlp_save(const mf_mlp *m, struct mf_ctx *ctx, const char *path,
                          const char *const *meta, size_t n_meta) MF_WARN_UNUSED_RESULT;

/**
 * @brief Loads a file written by mf_mlp_save().
 * @param key_name, key_value NULL, or a metadata pair that MUST match (MF_E_NOTFOUND if not).
 * @return MF_OK; MF_E_IO; MF_E_INVALID; MF_E_NOTFOUND; MF_E_NOMEM.
 */
MF_EXTERN int mf_mlp_load(mf_mlp **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                          const char *path, const char *key_name,
                          const char *key_value) MF_WARN_UNUSED_RESULT;

MF_END_DECLS

#endif /* MF_DISTILL_MLP_H */
