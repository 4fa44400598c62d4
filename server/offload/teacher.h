/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Teachers: the big models that label what a device's student was unsure about. One
 * teacher per model, reached through a connector picked by name from a static table
 * (teacher.c): "kserve" (KServe v2 / Open Inference Protocol over HTTP), "command" (an
 * external program, stdin/stdout contract in docs/protocol-offload.md) and "builtin" (the
 * example family's float teacher, loaded from its safetensors file).
 *
 * Every call is bounded three ways: a timeout (the smaller of the configured one and the
 * caller's deadline), a concurrency limit (a call beyond it fails at once instead of
 * queueing behind a slow teacher) and a circuit breaker: after `breaker_failures`
 * consecutive failures the teacher is "open" and calls fail at once for `breaker_open_ms`;
 * then one trial call is let through ("half-open"): its success closes the breaker, its
 * failure opens it again. Safe to call from any number of threads.
 */
#ifndef MF_SERVER_OFFLOAD_TEACHER_H
#define MF_SERVER_OFFLOAD_TEACHER_H

#include "mf_ctx.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define MF_TEACHER_ARGV_MAX 16
#define MF_TEACHER_MAX_CLASSES 4096 /* the protocol's largest output */

struct mf_teacher_config {
    char model[MF_STORE_NAME_SIZE];       /* the student model this teacher labels */
    char connector[16];                   /* "kserve", "command" or "builtin" */
    char version[MF_STORE_NAME_SIZE];     /* teacher version stored with each label */
    char url[512];                        /* kserve: base URL, "http://host:port" */
    char remote_name[MF_STORE_NAME_SIZE]; /* kserve: {name} of /v2/models/{name}/infer */
    char input_name[MF_STORE_NAME_SIZE];  /* kserve: input tensor name (default "input") */
    char datatype[8];                     /* kserve: "UINT8" (default) or "FP32" */
    char path[1024];                      /* builtin: the teacher's safetensors file */
    char argv_store[2048];                /* command: NUL-separated arguments */
    const char *argv[MF_TEACHER_ARGV_MAX + 1];
    int output_logits;         /* 1: the teacher answers logits (softmax applied here) */
    unsigned timeout_ms;       /* per call (default 2000) */
    unsigned concurrency;      /* calls in flight at most (default 4) */
    unsigned breaker_failures; /* consecutive failures that open the breaker (default 5) */
    unsigned breaker_open_ms;  /* how long it stays open before a trial (default 10000) */
};

/* Fills the defaults above for `model` and `connector`. */
void mf_teacher__config_init(struct mf_teacher_config *c, const char *model, const char *connector);

enum mf_teacher_breaker { MF_TEACHER_CLOSED = 0, MF_TEACHER_OPEN = 1, MF_TEACHER_HALF_OPEN = 2 };

struct mf_teacher;

/* Opens the connector named in `c` (MF_E_INVALID for an unknown one or a bad setting;
 * the builtin connector loads its file here: MF_E_IO / MF_E_INVALID). Ownership: release
 * with mf_teacher__free(). */
int mf_teacher__new(struct mf_teacher **out, struct mf_ctx *ctx, const struct mf_teacher_config *c);
void mf_teacher__free(struct mf_teacher *t); /* NULL is a no-op */

/*
 * Labels one input: `n_classes` probabilities into `probs_out` (each in [0, 1]), the
 * teacher's version into `version_out`. `timeout_ms` 0 means the configured timeout.
 * MF_E_STATE (fail fast: the breaker is open, or the concurrency limit is reached);
 * MF_E_NET (the teacher failed, timed out or is unreachable: counts against the breaker);
 * MF_E_INVALID (the answer had another shape: also counts).
 */
int mf_teacher__ask(float *probs_out, char version_out[MF_STORE_NAME_SIZE], struct mf_teacher *t,
                    struct mf_ctx *ctx, const uint8_t *input, size_t len, size_t n_classes,
                    unsigned timeout_ms);

/* The breaker's state now (enum mf_teacher_breaker), for metrics and tests. */
int mf_teacher__breaker(struct mf_teacher *t);
const struct mf_teacher_config *mf_teacher__config(const struct mf_teacher *t);

/* Turns `n` logits into probabilities in place (stable softmax). */
void mf_teacher__softmax(float *v, size_t n);

#endif /* MF_SERVER_OFFLOAD_TEACHER_H */
