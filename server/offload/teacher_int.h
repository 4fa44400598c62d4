/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the teachers: the connector interface each of teacher_kserve.c, teacher_command.c
 * and teacher_builtin.c implements, and the table teacher.c picks them from.
 */
#ifndef MF_SERVER_OFFLOAD_TEACHER_INT_H
#define MF_SERVER_OFFLOAD_TEACHER_INT_H

#include "offload/teacher.h"

#include <cjson/cJSON.h>

struct mf_teacher_connector {
    const char *name;
    /* Prepares per-teacher state (may stay NULL). */
    int (*open)(void **state_out, struct mf_ctx *ctx, const struct mf_teacher_config *c);
    void (*close)(void *state);
    /* One call within `timeout_ms`: n_classes raw outputs (probabilities, or logits when
     * the config says so) into `out`, and the version if the teacher names one (else
     * leaves `version_out` alone). MF_E_NET or MF_E_INVALID with a message. */
    int (*infer)(float *out, char version_out[MF_STORE_NAME_SIZE], void *state, struct mf_ctx *ctx,
                 const struct mf_teacher_config *c, const uint8_t *input, size_t len,
                 size_t n_classes, unsigned timeout_ms);
};

extern const struct mf_teacher_connector mf_teacher__kserve;
extern const struct mf_teacher_connector mf_teacher__command;
extern const struct mf_teacher_connector mf_teacher__builtin;

/* Reads exactly `n` numbers from the JSON array `arr` into `out`; MF_E_INVALID naming
 * `what` otherwise. Shared by the connectors that parse JSON answers. */
int mf_teacher__read_floats(float *out, struct mf_ctx *ctx, const cJSON *arr, size_t n,
                            const char *what);

/* The model version a teacher names in member `key` of `obj`, copied into `version_out` when
 * it is a non-empty string that fits; anything else leaves `version_out` alone (the version
 * is optional: the caller keeps the one it configured). */
void mf_teacher__read_version(char version_out[MF_STORE_NAME_SIZE], const cJSON *obj,
                              const char *key);

#endif /* MF_SERVER_OFFLOAD_TEACHER_INT_H */
