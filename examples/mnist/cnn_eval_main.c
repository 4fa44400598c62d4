/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-example-cnn-eval: the evaluator contract (docs/distill.md) for the int8 CNN family of
 * mf_cnn_student.h, a family the server knows nothing about. Reads DIR/job.json, the model
 * file and the inputs it names, runs the C inference on every input and writes the logits
 * (or, for "kind": "probabilities", softmax at the model's temperature) as a float32 .npy.
 * Usage: mf-example-cnn-eval DIR
 */
#include "mf_cli.h"
#include "mf_cnn_student.h"
#include "mf_confidence.h"
#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mf_sample_check.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_HEADER 128u
#define MAX_ITEMS 1000000u

static const char usage[] =
    "NAME\n"
    "    mf-example-cnn-eval - evaluator command for the int8 CNN student family\n"
    "SYNOPSIS\n"
    "    mf-example-cnn-eval DIR\n"
    "    mf-example-cnn-eval --help | --version\n"
    "DESCRIPTION\n"
    "    Reads DIR/job.json (the distillation evaluator contract), the model and the inputs it\n"
    "    names, and writes the model's outputs to the file it names (float32 .npy).\n";

struct job {
    uint64_t n;
    char model[256], inputs[256], outputs[256];
    int probabilities;
};

static int job_string(char *dst, size_t cap, struct mf_ctx *ctx, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    if (!cJSON_IsString(v) || strstr(v->valuestring, "..") || v->valuestring[0] == '/' ||
        strlen(v->valuestring) >= cap)
        return mf_fail(ctx, MF_E_INVALID, "job.json: \"%s\" is not a relative file name", key);
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return MF_OK;
}

static int job_read(struct job *j, struct mf_ctx *ctx, const char *dir)
{
    char path[4096];
    uint8_t *buf = NULL;
    size_t len = 0;
    cJSON *o;
    const cJSON *n, *dim, *classes, *kind;
    int err;

    (void)snprintf(path, sizeof(path), "%s/job.json", dir);
    err = mf_file_read_all(&buf, &len, ctx, NULL, path, 1u << 16);
    if (err < 0)
        return err;
    o = cJSON_ParseWithLength((const char *)buf, len);
    mf_free(&ctx->alloc, buf);
    if (!o)
        return mf_fail(ctx, MF_E_INVALID, "job.json is not JSON");
    n = cJSON_GetObjectItemCaseSensitive(o, "n");
    dim = cJSON_GetObjectItemCaseSensitive(o, "dim");
    classes = cJSON_GetObjectItemCaseSensitive(o, "classes");
    kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!cJSON_IsNumber(n) || n->valuedouble < 1 || n->valuedouble > MAX_ITEMS)
        err = mf_fail(ctx, MF_E_INVALID, "job.json: \"n\" must be 1..%u", MAX_ITEMS);
    else if (!cJSON_IsNumber(dim) || dim->valuedouble != MF_CNN_SIDE * MF_CNN_SIDE ||
             !cJSON_IsNumber(classes) || classes->valuedouble != MF_CNN_CLASSES)
        err = mf_fail(ctx, MF_E_INVALID, "job.json: the CNN family takes dim %u and %u classes",
                      MF_CNN_SIDE * MF_CNN_SIDE, MF_CNN_CLASSES);
    else if (!cJSON_IsString(kind) || (strcmp(kind->valuestring, "logits") != 0 &&
                                       strcmp(kind->valuestring, "probabilities") != 0))
        err = mf_fail(ctx, MF_E_INVALID, "job.json: \"kind\" is logits or probabilities");
    if (err == MF_OK) {
        j->n = (uint64_t)n->valuedouble;
        j->probabilities = strcmp(kind->valuestring, "probabilities") == 0;
        err = job_string(j->model, sizeof(j->model), ctx, o, "model");
    }
    if (err == MF_OK)
        err = job_string(j->inputs, sizeof(j->inputs), ctx, o, "inputs");
    if (err == MF_OK)
        err = job_string(j->outputs, sizeof(j->outputs), ctx, o, "outputs");
    cJSON_Delete(o);
    return err;
}

/* A float32 (n, classes) .npy version 1.0 with a 128-byte header, as numpy.save writes it. */
static void npy_f32_header(uint8_t out[NPY_HEADER], uint64_t n)
{
    char dict[NPY_HEADER];
    const int len =
        snprintf(dict, sizeof(dict),
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRIu64 ", %u), }", n,
                 MF_CNN_CLASSES);

    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (uint8_t)(NPY_HEADER - 10);
    out[9] = 0;
    memset(out + 10, ' ', NPY_HEADER - 10);
    memcpy(out + 10, dict, (size_t)len);
    out[NPY_HEADER - 1] = '\n';
}

static int evaluate(struct mf_ctx *ctx, const char *dir)
{
    struct job j;
    char path[4096];
    uint8_t *model_buf = NULL, *in_buf = NULL, *out = NULL;
    size_t model_len = 0, in_len = 0;
    mf_cnn_student *m = NULL;
    mf_npy x;
    int err = job_read(&j, ctx, dir);

    if (err == MF_OK) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, j.model);
        err = mf_file_read_all(&model_buf, &model_len, ctx, NULL, path, 1u << 20);
    }
    if (err == MF_OK) {
        m = malloc(sizeof(*m));
        err = m ? mf_cnn_student_decode(m, ctx, model_buf, model_len)
                : mf_fail(ctx, MF_E_NOMEM, "out of memory for the model");
    }
    if (err == MF_OK) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, j.inputs);
        err = mf_file_read_all(&in_buf, &in_len, ctx, NULL, path,
                               (size_t)j.n * MF_CNN_SIDE * MF_CNN_SIDE + 4096);
    }
    if (err == MF_OK)
        err = mf_npy_parse(&x, ctx, in_buf, in_len);
    if (err == MF_OK && (strcmp(x.descr, "|u1") != 0 || x.rank != 2 || x.shape[0] != j.n ||
                         x.shape[1] != MF_CNN_SIDE * MF_CNN_SIDE))
        err = mf_fail(ctx, MF_E_INVALID, "inputs are not uint8 (%" PRIu64 ", 784)", j.n);
    if (err == MF_OK) {
        out = malloc(NPY_HEADER + (size_t)j.n * MF_CNN_CLASSES * sizeof(float));
        if (!out)
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory for %" PRIu64 " outputs", j.n);
    }
    if (err == MF_OK) {
        npy_f32_header(out, j.n);
        for (uint64_t i = 0; i < j.n; i++) {
            float z[MF_CNN_CLASSES], p[MF_CNN_CLASSES];
            mf_cnn_student_logits(m, x.data + i * MF_CNN_SIDE * MF_CNN_SIDE, z);
            if (j.probabilities)
                mf_softmax(p, z, MF_CNN_CLASSES, m->temperature);
            /* x86 and ARM are little-endian, as .npy '<f4' is */
            memcpy(out + NPY_HEADER + i * sizeof(z), j.probabilities ? p : z, sizeof(z));
        }
        (void)snprintf(path, sizeof(path), "%s/%s", dir, j.outputs);
        err = mf_file_write_atomic(ctx, path, out,
                                   NPY_HEADER + (size_t)j.n * MF_CNN_CLASSES * sizeof(float));
    }
    free(out);
    free(m);
    mf_free(&ctx->alloc, model_buf);
    mf_free(&ctx->alloc, in_buf);
    if (err == MF_OK)
        (void)fprintf(stderr, "mf-example-cnn-eval: %" PRIu64 " items\n", j.n);
    return err;
}

int main(int argc, char **argv)
{
    struct mf_ctx ctx;
    int err;

    if (mf_cli__std_flags(argc, argv, "mf-example-cnn-eval", usage) == 0)
        return 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            (void)fprintf(stderr, "mf-example-cnn-eval: unknown option \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (argc != 2) {
        (void)fputs(usage, stderr);
        return 2;
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "example");
    err = evaluate(&ctx, argv[1]);
    if (err < 0) {
        (void)fprintf(stderr, "mf-example-cnn-eval: %s (%s)\n", ctx.errmsg, mf_strerror(err));
        return 1;
    }
    return 0;
}
