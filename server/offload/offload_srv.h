/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server side of offload (docs/protocol-offload.md): per-model configuration (teacher
 * and device policy) read from the file given to `mf-server serve --offload-config`, the
 * teachers opened from it, the sample parser the two device routes share, the policy
 * object of the check-in answer with its threshold derived from score histograms, and the
 * labelling and retention work run on the store's job queue.
 */
#ifndef MF_SERVER_OFFLOAD_SRV_H
#define MF_SERVER_OFFLOAD_SRV_H

#include "mf_ctx.h"
#include "offload/teacher.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define MF_OFFLOAD_SRV_MAX_MODELS 16
#define MF_OFFLOAD_POLICY_MAX 2048        /* a configured policy object, bytes */
#define MF_OFFLOAD_BODY_MAX (1024 * 1024) /* both device routes: 413 above */
#define MF_OFFLOAD_BATCH_MAX 64           /* samples per batch (devices send 32) */
#define MF_OFFLOAD_INPUT_MAX (256 * 1024) /* decoded input bytes per sample */
#define MF_OFFLOAD_MIN_FLEET_SAMPLES 500  /* fleet scores needed before they set a threshold */
#define MF_OFFLOAD_LABEL_JOB "label"      /* job kind; arg = model name */

struct mf_offload_model_cfg {
    char name[MF_STORE_NAME_SIZE];
    int has_teacher;
    struct mf_teacher_config teacher;
    char policy[MF_OFFLOAD_POLICY_MAX]; /* policy object as configured; "" none */
    char method[16];                    /* the policy's method (histograms are per method) */
    double target_rate;                 /* 0: none */
    int fixed_threshold;                /* the policy states its own threshold */
    double threshold;                   /* that threshold */
};

struct mf_offload_config {
    size_t n;
    struct mf_offload_model_cfg models[MF_OFFLOAD_SRV_MAX_MODELS];
    unsigned retention_days; /* 0: keep samples forever */
};

/* Parses the configuration (format in docs/operations.md, "Offload"). MF_E_INVALID with
 * the offending key in the message; MF_E_IO for an unreadable file. */
int mf_offsrv__config_parse(struct mf_offload_config *out, struct mf_ctx *ctx, const char *json,
                            size_t len);
int mf_offsrv__config_load(struct mf_offload_config *out, struct mf_ctx *ctx, const char *path);

struct mf_offload_srv;

/* Opens every configured teacher. Ownership: release with mf_offsrv__srv_free(). */
int mf_offsrv__srv_new(struct mf_offload_srv **out, struct mf_ctx *ctx,
                       const struct mf_offload_config *cfg);
void mf_offsrv__srv_free(struct mf_offload_srv *srv); /* NULL is a no-op */
const struct mf_offload_config *mf_offsrv__srv_config(const struct mf_offload_srv *srv);
/* The model's configuration / teacher, or NULL. `srv` may be NULL (offload off). */
const struct mf_offload_model_cfg *mf_offsrv__model(const struct mf_offload_srv *srv,
                                                    const char *model);
struct mf_teacher *mf_offsrv__teacher(const struct mf_offload_srv *srv, const char *model);

/* One sample object of the protocol, checked and decoded. */
struct mf_offload_sample_in {
    struct mf_store_sample row; /* row.output points into `output` */
    char *output;               /* "[...]" of the student's output, ctx-allocated */
    uint8_t *input;             /* decoded input, ctx-allocated */
    size_t input_len;
    size_t n_classes;
};

/* Parses `obj` into `out` (which the caller releases with mf_offsrv__sample_free, also
 * after a failure). MF_E_INVALID naming the field, MF_E_LIMIT for an input above `max`. */
int mf_offsrv__sample_parse(struct mf_offload_sample_in *out, struct mf_ctx *ctx, const cJSON *obj,
                            size_t max_input);
void mf_offsrv__sample_free(struct mf_offload_sample_in *s, struct mf_ctx *ctx);
/* 1 when `s` is 32 lower-case hex digits. */
int mf_offsrv__is_id(const char *s);

/*
 * The threshold for `target_rate` on (model, version, method) from the stored histograms:
 * the fleet's once it holds MF_OFFLOAD_MIN_FLEET_SAMPLES scores, else the calibration
 * set's. MF_E_NOTFOUND when neither has scores. *source_out: enum mf_store_hist_source.
 */
int mf_offsrv__threshold(double *threshold_out, int *source_out, struct mf_store *s,
                         struct mf_ctx *ctx, const char *model, const char *version,
                         const char *method, double target_rate);
/*
 * The threshold the check-in gives devices of `m` on `version` (for `method`): the policy's
 * own, else the one mf_offsrv__threshold derives for its target rate, rounded to 1e-4 as
 * the policy object carries it. MF_E_NOTFOUND when there is none yet (devices then derive
 * their own from the target rate).
 */
int mf_offsrv__version_threshold(double *out, const struct mf_offload_model_cfg *m,
                                 struct mf_store *s, struct mf_ctx *ctx, const char *version,
                                 const char *method);
/* The quantile of a histogram for `rate` (-1 when empty); see mf_offload_hist_quantile. */
double mf_offsrv__hist_quantile(const uint64_t *bins, double rate);

/* Check-in: stores the telemetry objects of `req` ("offload": [...]; malformed entries are
 * skipped and counted in *skipped_out) and adds "offload": {model: policy} to `reply` for
 * each configured model the device runs. */
int mf_offsrv__checkin(int *skipped_out, cJSON *reply, struct mf_offload_srv *srv,
                       struct mf_store *s, struct mf_ctx *ctx, const cJSON *req);

/* Labels up to `max` unlabelled samples of `model` with its teacher; *made_out counts
 * them. Stops at the first teacher failure (MF_E_STATE / MF_E_NET): the samples wait. */
int mf_offsrv__label_run(int *made_out, struct mf_offload_srv *srv, struct mf_store *s,
                         struct mf_ctx *ctx, const char *blob_root, const char *model, size_t max);
/* Deletes samples of `device_id` ("" any) received before `before` (0: any time), and the
 * input blobs no sample needs any more. */
int mf_offsrv__delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *blob_root, const char *device_id, int64_t before);

/* The "label" job kind for the store's job queue (offload_jobs.c), run by the worker in
 * server/deltas. Its tick queues a label job for each model with a teacher that is not
 * known to be down and has unlabelled samples, and applies the retention policy hourly. */
struct mf_job_kind;
struct mf_offload_jobs {
    struct mf_offload_srv *srv;
    struct mf_store *store;
    char blob_root[4096];
    int64_t retention_done_at; /* wall clock of the last retention pass */
};

void mf_offsrv__jobs_kind(struct mf_job_kind *out, struct mf_offload_jobs *jobs);

#endif /* MF_SERVER_OFFLOAD_SRV_H */
