/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The distillation loop's job (docs/distill.md): for a model configured in the distill
 * config file, a run trains a candidate student from the seed set plus the fleet's
 * teacher-labelled samples, gates it against the deployed version on a held-out set that
 * never enters training, and only then publishes it (blob, signed release, calibration
 * histogram, deltas) and starts its canary rollout. Runs are rows of the store
 * (distill_runs) and execute as "distill" jobs, so each runs once across nodes; a fault
 * at any step before the release leaves the fleet on the current version.
 *
 *   distill_config.c   the config file
 *   distill_data.c     seed / calibration / held-out splits and the uplinked samples
 *   distill_command.c  what the trainer and evaluator commands share: work dir, spawn,
 *                      timeout, stderr capture, the record's note
 *   distill_trainer_cmd.c    the external trainer contract
 *   distill_evaluator_cmd.c  the external evaluator contract, its .npy outputs
 *   distill_gate.c     evaluation of parent and candidate, the gate's verdict
 *   distill_publish.c  blob, version, signed release, calibration, deltas, canary
 *   distill_job.c      the run's state machine, provenance record, auto trigger
 */
#ifndef MF_SERVER_DISTILL_JOB_H
#define MF_SERVER_DISTILL_JOB_H

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_dataset.h"
#include "mf_student_model.h"
#include "store/store.h"

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define MF_DISTILL_JOB_KIND "distill" /* arg: the run id in decimal */
#define MF_DISTILL_MAX_MODELS 16
#define MF_DISTILL_PATH_MAX 1024
#define MF_DISTILL_ARGV_MAX 16
#define MF_DISTILL_STDERR_MAX 4096 /* bytes of a command's stderr tail kept in the record */
#define MF_DISTILL_MAX_CLASSES 64  /* outputs per input an evaluator may write */

struct mf_distill_model_cfg {
    char model[MF_STORE_NAME_SIZE];
    /* data: IDX files (gzip or plain); held-out items [heldout_begin, heldout_end) */
    char train_images[MF_DISTILL_PATH_MAX], train_labels[MF_DISTILL_PATH_MAX];
    char heldout_images[MF_DISTILL_PATH_MAX], heldout_labels[MF_DISTILL_PATH_MAX];
    size_t heldout_begin, heldout_end; /* 0, 0: every item */
    double seed_fraction;              /* of train, with true labels (0.1) */
    size_t calibration;                /* train items after the seed set (5000) */
    uint64_t split_seed;               /* permutation of train (1) */
    /* trainer */
    int command;           /* 0: built-in C trainer; 1: external command */
    char argv_store[2048]; /* command: NUL-separated arguments */
    const char *argv[MF_DISTILL_ARGV_MAX + 1];
    unsigned timeout_s; /* command (600) */
    /* evaluator: 0 = the example family's in-process evaluator; 1 = external command */
    int eval_command;
    char eval_argv_store[2048];
    const char *eval_argv[MF_DISTILL_ARGV_MAX + 1];
    unsigned eval_timeout_s; /* (600) */
    int eval_logits;         /* its outputs are logits (softmaxed here), else probabilities */
    uint32_t epochs, hidden; /* built-in (20, 32) */
    float temperature;       /* soft targets (2) */
    int warm_start;          /* start from the parent's weights (0) */
    uint64_t train_seed;     /* (1) */
    /* samples */
    double min_teacher_confidence; /* drop samples the teacher was unsure of (0.5) */
    size_t max_samples;            /* newest first (50000) */
    size_t auto_samples;           /* run by itself after this many new samples; 0: manual */
    /* offload target and gate */
    double target_rate;     /* offload rate the threshold is fitted for (0.1) */
    double gate_tolerance;  /* candidate cascade >= parent cascade - this (0) */
    int gate_paired;        /* "gate_test": 0 "raw" (default), 1 "paired" (a confidence bound) */
    double gate_confidence; /* of the paired bound (0.95) */
    /* release */
    char release_key[MF_DISTILL_PATH_MAX]; /* PEM of a release key of the keys document */
    char version_prefix[16];               /* version = prefix + sequence ("d") */
    uint64_t security_floor;
    uint64_t expires_s;  /* release lifetime (365 days) */
    uint32_t chunk_size; /* (65536) */
    char *rollout_plan;  /* the canary plan's JSON text (heap), NULL: none */
};

struct mf_distill_config {
    size_t n;
    struct mf_distill_model_cfg models[MF_DISTILL_MAX_MODELS];
};

int mf_distill__config_parse(struct mf_distill_config *out, struct mf_ctx *ctx, const char *json,
                             size_t len);
int mf_distill__config_load(struct mf_distill_config *out, struct mf_ctx *ctx, const char *path);
void mf_distill__config_free(struct mf_distill_config *c);
const struct mf_distill_model_cfg *mf_distill__config_model(const struct mf_distill_config *c,
                                                            const char *model);

/* ---- data (distill_data.c) ---- */
struct mf_distill_data {
    mf_dataset *train, *heldout;
    size_t n_seed, n_calib;
    size_t *perm; /* train permutation: seed = perm[0..n_seed), calib = the next n_calib */
    /* training set: seed rows then uplinked rows */
    size_t n, n_hard, n_audit, n_dropped_unsure, n_dropped_heldout, n_dropped_shape;
    uint8_t *x, *y, *has_soft;
    float *soft;
    cJSON *sample_ids;       /* array of the sample ids used */
    cJSON *teacher_versions; /* array of distinct teacher versions */
    int64_t max_seq;
};

int mf_distill__data_load(struct mf_distill_data *d, struct mf_ctx *ctx,
                          const struct mf_distill_model_cfg *c);
/* Appends the labelled samples of c->model with seq <= until (newest first, at most
 * c->max_samples) to the training set after the seed rows. */
int mf_distill__data_samples(struct mf_distill_data *d, struct mf_ctx *ctx, struct mf_store *s,
                             const char *blob_root, const struct mf_distill_model_cfg *c,
                             int64_t until);
void mf_distill__data_free(struct mf_distill_data *d);

/* ---- commands (distill_command.c) ---- */
struct mf_distill_cmd {
    const char *role;        /* "trainer" or "evaluator": messages and log lines */
    const char *const *argv; /* NULL-terminated; the work dir is appended */
    unsigned timeout_s;
    int64_t run_id; /* log lines: "distill run ID ROLE: line" */
};

/* Writes dir/name atomically. */
int mf_distill__dir_put(struct mf_ctx *ctx, const char *dir, const char *name, const void *p,
                        size_t n);
/* Writes `o` as JSON text to dir/name and deletes it; a NULL `o` or `ok` 0 (an add that
 * failed) is out of memory. */
int mf_distill__dir_put_json(struct mf_ctx *ctx, const char *dir, const char *name, cJSON *o,
                             int ok);
/* Creates dir and dir/out (either may exist). */
int mf_distill__dir_make(struct mf_ctx *ctx, const char *dir);
/* Removes dir/names[i] (NULL-terminated), dir/stderr.txt, dir/out and dir. */
void mf_distill__dir_remove(const char *dir, const char *const *names);
/* Runs c->argv + dir in a process group of its own, its stderr to dir/stderr.txt; kills
 * the group after c->timeout_s. `note` (NULL: none) gets "command" (the argv) and
 * "stderr" (its tail, MF_DISTILL_STDERR_MAX bytes) whatever the outcome; the lines are
 * logged too. MF_OK for exit status 0; MF_E_LIMIT (timeout), MF_E_GENERIC (non-zero exit or
 * a signal), MF_E_IO (cannot start). */
int mf_distill__command_run(struct mf_ctx *ctx, const struct mf_distill_cmd *c, const char *dir,
                            cJSON *note);
/* note[key] = the lower-case hex SHA-256 of p[0..n) (no-op for a NULL note). */
void mf_distill__note_sha256(cJSON *note, const char *key, const void *p, size_t n);

/* ---- external trainer (distill_trainer_cmd.c) ---- */
/* Runs c->argv with a training directory `dir` (created, removed after; `parent` is the
 * parent's file, NULL for none) and returns the bytes of out/model.safetensors in `out`
 * (SHA-256 in note.output_sha256); the caller judges them. MF_E_LIMIT (timeout),
 * MF_E_GENERIC (non-zero exit), MF_E_INVALID (no or oversized output), MF_E_IO. */
int mf_distill__train_command(struct mf_dynbuf *out, struct mf_ctx *ctx,
                              const struct mf_distill_model_cfg *c, const struct mf_distill_data *d,
                              const uint8_t *parent, size_t parent_len, const char *dir,
                              int64_t run_id, cJSON *note);

/* ---- a model's outputs on the gate's items (distill_evaluator_cmd.c, distill_gate.c) ---- */
struct mf_distill_outputs {
    size_t n_heldout, n_calib;
    uint8_t *pred; /* held-out items: the predicted class */
    float *score;  /* held-out items: max-softmax confidence */
    float *calib;  /* calibration items: max-softmax confidence */
};

struct mf_distill_eval_cmd {
    struct mf_distill_cmd cmd;
    size_t classes; /* outputs per input */
    int logits;     /* 1: softmax the outputs; 0: they are probabilities */
};

int mf_distill__outputs_alloc(struct mf_distill_outputs *o, struct mf_ctx *ctx, size_t n_heldout,
                              size_t n_calib);
void mf_distill__outputs_free(struct mf_distill_outputs *o, struct mf_ctx *ctx);
/* The example family's student, in process. */
int mf_distill__outputs_builtin(struct mf_distill_outputs *o, struct mf_ctx *ctx,
                                const mf_student_model *m, const struct mf_distill_data *d);
/* Decodes an evaluator's .npy (float32/64, shape (o->n_heldout + o->n_calib, classes)) into
 * o (allocated): MF_E_INVALID naming what is wrong. */
int mf_distill__outputs_parse(struct mf_distill_outputs *o, struct mf_ctx *ctx, const uint8_t *buf,
                              size_t len, size_t classes, int logits);
/* Runs the evaluator on `model` in work dir `dir` (created, removed after): o is allocated
 * and filled, note gets the command, its stderr and outputs_sha256. Errors as
 * mf_distill__command_run(), MF_E_INVALID for garbage output. */
int mf_distill__outputs_command(struct mf_distill_outputs *o, struct mf_ctx *ctx,
                                const struct mf_distill_eval_cmd *e,
                                const struct mf_distill_data *d, const uint8_t *model, size_t len,
                                const char *dir, cJSON *note);

/* ---- gate (distill_gate.c) ---- */
struct mf_distill_eval {
    double student_acc, cascade_acc, offload_rate, threshold;
};

/* The paired comparison of two cascades on the same held-out items: b items only the
 * candidate's cascade gets right, c only the parent's; the difference (b - c) / n of
 * their accuracies and its one-sided bounds at `confidence` (normal approximation of the
 * paired difference, McNemar's setting). */
struct mf_distill_paired {
    size_t n, candidate_only, parent_only;
    double difference, lower, upper, z;
};

/* Cascade i's answer: the teacher's below the threshold, else the model's. */
void mf_distill__paired(struct mf_distill_paired *out, const struct mf_distill_outputs *cand,
                        double cand_thr, const struct mf_distill_outputs *par, double par_thr,
                        const uint8_t *teacher_pred, const uint8_t *label, double confidence);
/* z with P(Z > z) = 1 - confidence for a standard normal Z; confidence in [0.5, 0.9999]. */
double mf_distill__z_one_sided(double confidence);

/* Teacher predictions on the held-out set (argmax of its answers). */
struct mf_teacher;
int mf_distill__teacher_preds(uint8_t *pred_out, struct mf_ctx *ctx, struct mf_teacher *t,
                              const mf_dataset *ds);
/* Student and cascade accuracy on held-out from a model's outputs, the threshold fitted on
 * its calibration scores for target_rate. */
int mf_distill__evaluate(struct mf_distill_eval *out, struct mf_ctx *ctx,
                         const struct mf_distill_outputs *o, const struct mf_distill_data *d,
                         const uint8_t *teacher_pred, double target_rate);
/* The calibration histogram (MF_STORE_HIST_BINS bins of max-softmax scores). */
void mf_distill__calibration_hist(uint64_t *bins, const struct mf_distill_outputs *o);

/* ---- publish (distill_publish.c) ---- */
struct mf_distill_published {
    char version[MF_STORE_NAME_SIZE];
    char sha256[MF_SHA256_HEX_LEN + 1];
    uint64_t size, sequence;
    int64_t rollout_id;
    uint64_t delta_bytes; /* the patch from the parent's file, 0 when none was kept */
};

/* Publishes `bytes` as the next version of c->model built on `parent` ("" for none) and
 * starts the canary rollout when the config has a plan and there is a parent. */
int mf_distill__publish(struct mf_distill_published *out, struct mf_ctx *ctx, struct mf_store *s,
                        const char *blob_root, const struct mf_distill_model_cfg *c,
                        const char *parent, const uint8_t *bytes, size_t len,
                        const uint64_t *calib_bins);

/* ---- the job (distill_job.c) ---- */
struct mf_offload_srv;
struct mf_delta_worker;
struct mf_distill_jobs {
    struct mf_distill_config *cfg;
    struct mf_store *store;
    struct mf_offload_srv *offload;  /* teachers for the gate */
    struct mf_delta_worker **deltas; /* woken after a release */
    struct mf_delta_worker *worker;  /* the runs' own thread; NULL on nodes without one */
    char blob_root[4096];
};

/* Creates a queued run of `model` and its job. MF_E_NOTFOUND (model not configured),
 * MF_E_STATE (a run of the model is queued or running). */
int mf_distill__run_create(struct mf_store_distill_run *out, struct mf_distill_jobs *j,
                           struct mf_ctx *ctx, const char *model, const char *trigger, int64_t now);
/* Runs run `id` to its end (the "distill" job). */
int mf_distill__run(struct mf_distill_jobs *j, struct mf_ctx *ctx, int64_t id);

struct mf_job_kind;
void mf_distill__jobs_kind(struct mf_job_kind *out, struct mf_distill_jobs *j);

#endif /* MF_SERVER_DISTILL_JOB_H */
