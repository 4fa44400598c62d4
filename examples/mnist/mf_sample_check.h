/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf_sample_check.h
 * @brief Ground truth for the samples devices uplinked: the server never knows true labels,
 * but the example's devices stream a known dataset, so each exported sample's input bytes
 * can be looked up among the dataset's images to find its label. Used by
 * mf-example-sample-check (docs/example-model.md, "The example fleet") to measure the
 * teacher's and the student's accuracy on the hard and audit samples per model version.
 */
#ifndef MF_EXAMPLE_SAMPLE_CHECK_H
#define MF_EXAMPLE_SAMPLE_CHECK_H

#include "mf_dataset.h"

struct mf_ctx;
struct mf_dynbuf;

MF_BEGIN_DECLS

/* ---- label index: a hash table over a dataset's images --------------------------------- */

typedef struct mf_label_index mf_label_index;

/**
 * @brief Indexes every image of `ds` by its bytes (open addressing, FNV-1a 64).
 * @param ds borrowed: MUST outlive the index and stay unchanged.
 * @return MF_OK, MF_E_NOMEM. Ownership: free with mf_label_index_free().
 */
MF_EXTERN int mf_label_index_new(mf_label_index **out, struct mf_ctx *ctx,
                                 const mf_dataset *ds) MF_WARN_UNUSED_RESULT;

/** @brief Releases the index; NULL is a no-op. */
MF_EXTERN void mf_label_index_free(mf_label_index *ix);

/**
 * @brief The true label of an input.
 * @param label_out receives the label when MF_OK.
 * @param x, len the input bytes.
 * @return MF_OK; MF_E_NOTFOUND (no image of the set has these bytes, or `len` is not the
 * image size); MF_E_INVALID (equal images carry different labels: no single truth).
 */
MF_EXTERN int mf_label_index_find(uint8_t *label_out, const mf_label_index *ix, const uint8_t *x,
                                  size_t len) MF_WARN_UNUSED_RESULT;

/* ---- tally per kind and model version -------------------------------------------------- */

#define MF_SAMPLE_MAX_GROUPS 64 /**< (kind, model version) pairs one tally holds */
#define MF_SAMPLE_KIND_MAX 15

typedef struct mf_sample_group {
    char kind[MF_SAMPLE_KIND_MAX + 1]; /**< "hard" or "audit" */
    char model_version[65];
    uint64_t count;           /**< samples of the group */
    uint64_t matched;         /**< of which the true label is known */
    uint64_t labelled;        /**< of those, labelled by the teacher */
    uint64_t teacher_correct; /**< teacher argmax == truth, over `labelled` */
    uint64_t student_correct; /**< student argmax == truth, over `matched` */
} mf_sample_group;

typedef struct mf_sample_tally {
    size_t n;
    mf_sample_group g[MF_SAMPLE_MAX_GROUPS];
    uint64_t samples;   /**< every sample seen */
    uint64_t unmatched; /**< input not among the dataset's images */
    uint64_t ambiguous; /**< equal images with different labels */
    uint64_t dropped;   /**< samples of groups beyond MF_SAMPLE_MAX_GROUPS */
} mf_sample_tally;

/** Outcome of the label lookup of one sample, as mf_sample_tally_add() takes it. */
#define MF_SAMPLE_UNMATCHED (-1)
#define MF_SAMPLE_AMBIGUOUS (-2)

/**
 * @brief Counts one sample.
 * @param truth its label, MF_SAMPLE_UNMATCHED or MF_SAMPLE_AMBIGUOUS.
 * @param teacher `n` teacher probabilities, or NULL (or any NaN) when not labelled.
 * @param student the student's `n` outputs (logits or probabilities: only the argmax counts).
 */
MF_EXTERN void mf_sample_tally_add(mf_sample_tally *t, const char *kind, const char *model_version,
                                   int truth, const float *teacher, const float *student, size_t n);

/** @return index of the largest of `n` values (the first among ties), 0 when n is 0. */
MF_EXTERN size_t mf_sample_argmax(const float *v, size_t n);

/**
 * @brief Appends the tally as JSON: totals, then per group count, matched, labelled,
 * teacher and student accuracy.
 * @return MF_OK, MF_E_NOMEM, MF_E_LIMIT.
 */
MF_EXTERN int mf_sample_tally_json(struct mf_dynbuf *out,
                                   const mf_sample_tally *t) MF_WARN_UNUSED_RESULT;

/* ---- reading an export (mfctl samples export, docs/offload.md) ------------------------ */

#define MF_NPY_MAX_RANK 2

/** A parsed .npy array (version 1-3, C order, little-endian); `data` borrows the buffer. */
typedef struct mf_npy {
    char descr[8];                   /**< "|u1", "<f4" or "<i8" */
    size_t item;                     /**< bytes per element */
    uint32_t rank;                   /**< 1 or 2 */
    uint64_t shape[MF_NPY_MAX_RANK]; /**< shape[1] is 1 for rank 1 */
    const uint8_t *data;
} mf_npy;

/**
 * @brief Parses a .npy buffer of dtype |u1, <f4 or <i8, rank 1 or 2, not Fortran order,
 * whose data size is exactly the shape's.
 * @return MF_OK, MF_E_INVALID (naming what is wrong).
 */
MF_EXTERN int mf_npy_parse(mf_npy *out, struct mf_ctx *ctx, const uint8_t *buf,
                           size_t len) MF_WARN_UNUSED_RESULT;

/**
 * @brief Reads the export in directory `dir` (samples.jsonl, inputs.npy with or without
 * input_offsets.npy, student.npy, teacher.npy), looks every input up in `ix` and tallies it.
 * @return MF_OK; MF_E_IO (a file is missing or unreadable); MF_E_INVALID (files that do not
 * agree: row counts, shapes, a JSONL line without kind or model_version); MF_E_NOMEM.
 */
MF_EXTERN int mf_sample_check_export(mf_sample_tally *t, struct mf_ctx *ctx,
                                     const mf_label_index *ix,
                                     const char *dir) MF_WARN_UNUSED_RESULT;

MF_END_DECLS

#endif /* MF_EXAMPLE_SAMPLE_CHECK_H */
