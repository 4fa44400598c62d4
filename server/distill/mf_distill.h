/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_distill.h
 * @brief The built-in trainer of the example model family (cloud side): distils an int8
 * student (mf_student_model.h) from hard labels and/or teacher soft labels, quantises it,
 * checks it with an independent int8 reference, and evaluates students, teachers and their
 * cascade. Recipe and measured figures: docs/example-model.md.
 */
#ifndef MF_DISTILL_H
#define MF_DISTILL_H

#include "mf_dataset.h"
#include "mf_mlp.h"
#include "mf_student_model.h"

struct mf_ctx;

MF_BEGIN_DECLS

/* ---- quantisation and the int8 reference ---------------------------------------------- */

/**
 * @brief Post-training quantisation of a 2-layer float MLP to an int8 student: per-tensor
 * symmetric weight scales (max |w| / 127), float biases, and a hidden-activation scale
 * calibrated on `calib` inputs (max over them of the int8 first layer's ReLU output / 255).
 * @param temperature the confidence temperature stored in the student.
 * @return MF_OK; MF_E_INVALID (not 2 layers, bounds, no calibration data); MF_E_NOMEM.
 */
MF_EXTERN int mf_distill_quantize(mf_student_model **out, struct mf_ctx *ctx, const mf_mlp *fm,
                                  const uint8_t *calib, size_t n_calib,
                                  float temperature) MF_WARN_UNUSED_RESULT;

/**
 * @brief The trainer's own int8 forward pass, written from the arithmetic specification
 * in mf_student.h independently of the device code; tests require both to agree on every
 * input. `logits_out` receives n_out floats.
 */
MF_EXTERN void mf_distill_ref_logits(const mf_student_model *m, const uint8_t *x,
                                     float *logits_out);

/**
 * @brief The float MLP a student stands for (dequantised weights), for warm starts.
 * @return MF_OK or MF_E_NOMEM.
 */
MF_EXTERN int mf_distill_dequantize(mf_mlp **out, struct mf_ctx *ctx,
                                    const mf_student_model *s) MF_WARN_UNUSED_RESULT;

/* ---- distillation --------------------------------------------------------------------- */

#define MF_DISTILL_OPTIONS_VERSION 1

typedef struct mf_distill_options {
    unsigned int version;
    uint32_t hidden;                    /**< hidden units of a fresh student (default 32) */
    float in_scale;                     /**< input byte scale, e.g. 1/255 (default 1/255) */
    float score_temperature;            /**< temperature shipped in the student (1) */
    mf_train_options train;             /**< epochs, batch, lr, T, alpha, seed, threads */
    const mf_student_model *warm_start; /**< NULL, or start from this student's weights */
    uint64_t init_seed;                 /**< weight initialisation of a fresh student (7) */
} mf_distill_options;

MF_EXTERN int mf_distill_options_init(mf_distill_options *o, unsigned int version);

/**
 * @brief Trains a float student on `set` and quantises it, calibrating on `set`'s inputs.
 * @param n_in input bytes per sample, n_out classes (2-layer student n_in-hidden-n_out).
 * @param float_out NULL, or receives the float student (caller frees with mf_mlp_free()).
 * @return MF_OK; MF_E_INVALID (options, set, warm start of other dims); MF_E_NOMEM.
 */
MF_EXTERN int mf_distill_student(mf_student_model **out, mf_mlp **float_out, struct mf_ctx *ctx,
                                 const mf_train_set *set, uint32_t n_in, uint32_t n_out,
                                 const mf_distill_options *o) MF_WARN_UNUSED_RESULT;

/**
 * @brief Teacher soft labels softmax(z / T) for `n` inputs into `probs_out` (n * n_out).
 * @return MF_OK or MF_E_NOMEM.
 */
MF_EXTERN int mf_distill_soft_labels(float *probs_out, struct mf_ctx *ctx, const mf_mlp *teacher,
                                     const uint8_t *x, size_t n, float temperature,
                                     uint32_t threads) MF_WARN_UNUSED_RESULT;

/* ---- teacher cache -------------------------------------------------------------------- */

/**
 * @brief Loads the teacher cached at `cache_path` if it was trained on the same data with
 * the same recipe (a key of sizes, options and a hash of `train` stored in the file);
 * otherwise trains a new one (sizes[0] MUST equal train->dim) and writes the cache.
 * @param trained_out NULL, or set to 1 when a new teacher was trained, 0 when loaded.
 * @param cache_path NULL: train and do not cache.
 * @return MF_OK; MF_E_INVALID; MF_E_IO (cache not writable); MF_E_NOMEM.
 */
MF_EXTERN int mf_teacher_load_or_train(mf_mlp **out, int *trained_out, struct mf_ctx *ctx,
                                       const mf_dataset *train, const uint32_t *sizes,
                                       uint32_t n_sizes, const mf_train_options *o,
                                       const char *cache_path) MF_WARN_UNUSED_RESULT;

/* ---- evaluation ----------------------------------------------------------------------- */

/** @return the fraction of `pred[i] == label[i]` over n (0 when n is 0). */
MF_EXTERN double mf_eval_accuracy(const uint8_t *pred, const uint8_t *label, size_t n);

/** Per-input outputs of a student/teacher pair; arrays of n, borrowed. */
typedef struct mf_cascade_inputs {
    size_t n;
    const uint8_t *student_pred;
    const float *student_score; /**< higher = more confident (mf_confidence.h) */
    const uint8_t *teacher_pred;
    const uint8_t *label;
} mf_cascade_inputs;

/**
 * @brief Cascade: the student answers where score >= threshold, the teacher elsewhere.
 * @param acc_out cascade accuracy; @param rate_out realised offload fraction.
 */
MF_EXTERN void mf_eval_cascade(double *acc_out, double *rate_out, const mf_cascade_inputs *in,
                               float threshold);

/**
 * @brief The random-offload baseline: the expected cascade accuracy when round(rate * n)
 * inputs, drawn uniformly at random, go to the teacher (exact expectation, no sampling).
 */
MF_EXTERN double mf_eval_cascade_random(const mf_cascade_inputs *in, double rate);

/**
 * @brief Threshold as the r-quantile of calibration scores: with the scores sorted, the
 * value at index floor(r * n), so that "score < threshold" offloads a fraction r of the
 * calibration set (less with ties). r >= 1 gives +inf, r <= 0 -inf.
 * @return MF_OK; MF_E_INVALID (n == 0); MF_E_NOMEM.
 */
MF_EXTERN int mf_eval_quantile_threshold(float *threshold_out, struct mf_ctx *ctx,
                                         const float *scores, size_t n,
                                         double r) MF_WARN_UNUSED_RESULT;

/**
 * @brief Runs a student over `n` inputs: predictions and scores of the given kind at the
 * student's own temperature (either output may be NULL).
 */
MF_EXTERN void mf_eval_student(uint8_t *pred_out, float *score_out, const mf_student *s,
                               const uint8_t *x, size_t n, int score_kind);

/** @brief Arg-max over rows of `logits` (n rows of k). */
MF_EXTERN void mf_eval_argmax(uint8_t *pred_out, const float *logits, size_t n, uint32_t k);

MF_END_DECLS

#endif /* MF_DISTILL_H */
