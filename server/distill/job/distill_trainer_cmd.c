/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The external trainer contract (docs/distill.md): the run writes its training set into a
 * fresh directory and runs the configured command with that directory as its last
 * argument; the command writes out/model.safetensors (and may write out/metrics.json).
 * The server judges the output itself (distill_job.c): without an evaluator command it must
 * decode as a student of the example family, or the run fails; with one, the evaluator's
 * outputs decide. Nothing the trainer claims is trusted.
 *
 *   job.json            {"n", "dim", "classes", "temperature", "epochs", "hidden",
 *                        "warm_start", "seed", "parent": "parent.safetensors" or null}
 *   train_x.u8          n x dim input bytes
 *   train_y.u8          n labels; 255: none (uplinked samples)
 *   train_soft.f32      n x classes teacher soft targets at the temperature, little-endian
 *   train_has_soft.u8   n flags: 1 where the soft row is valid
 *   parent.safetensors  the deployed parent's file as published (when there is one)
 */
#include "distill/job/distill_job.h"

#include <stdio.h>
#include <string.h>

#define OUTPUT_MAX (64u << 20)

static const char *const names[] = {"job.json",
                                    "train_x.u8",
                                    "train_y.u8",
                                    "train_soft.f32",
                                    "train_has_soft.u8",
                                    "parent.safetensors",
                                    "out/model.safetensors",
                                    "out/metrics.json",
                                    NULL};

static int write_job(struct mf_ctx *ctx, const char *dir, const struct mf_distill_model_cfg *c,
                     const struct mf_distill_data *d, int has_parent)
{
    cJSON *o = cJSON_CreateObject();
    int ok = 0;

    if (o && cJSON_AddNumberToObject(o, "n", (double)d->n) &&
        cJSON_AddNumberToObject(o, "dim", d->train->dim) &&
        cJSON_AddNumberToObject(o, "classes", MF_DATASET_CLASSES) &&
        cJSON_AddNumberToObject(o, "temperature", c->temperature) &&
        cJSON_AddNumberToObject(o, "epochs", c->epochs) &&
        cJSON_AddNumberToObject(o, "hidden", c->hidden) &&
        cJSON_AddBoolToObject(o, "warm_start", c->warm_start && has_parent) &&
        cJSON_AddNumberToObject(o, "seed", (double)c->train_seed) &&
        (has_parent ? cJSON_AddStringToObject(o, "parent", "parent.safetensors")
                    : cJSON_AddNullToObject(o, "parent")))
        ok = 1;
    return mf_distill__dir_put_json(ctx, dir, "job.json", o, ok);
}

static int write_inputs(struct mf_ctx *ctx, const char *dir, const struct mf_distill_model_cfg *c,
                        const struct mf_distill_data *d, const uint8_t *parent, size_t parent_len)
{
    int err = mf_distill__dir_make(ctx, dir);

    if (err == MF_OK)
        err = mf_distill__dir_put(ctx, dir, "train_x.u8", d->x, d->n * d->train->dim);
    if (err == MF_OK)
        err = mf_distill__dir_put(ctx, dir, "train_y.u8", d->y, d->n);
    if (err == MF_OK)
        err = mf_distill__dir_put(ctx, dir, "train_soft.f32", d->soft,
                                  d->n * MF_DATASET_CLASSES * sizeof(float));
    if (err == MF_OK)
        err = mf_distill__dir_put(ctx, dir, "train_has_soft.u8", d->has_soft, d->n);
    if (err == MF_OK && parent)
        err = mf_distill__dir_put(ctx, dir, "parent.safetensors", parent, parent_len);
    if (err == MF_OK)
        err = write_job(ctx, dir, c, d, parent != NULL);
    return err;
}

int mf_distill__train_command(struct mf_dynbuf *out, struct mf_ctx *ctx,
                              const struct mf_distill_model_cfg *c, const struct mf_distill_data *d,
                              const uint8_t *parent, size_t parent_len, const char *dir,
                              int64_t run_id, cJSON *note)
{
    const struct mf_distill_cmd cmd = {"trainer", c->argv, c->timeout_s, run_id};
    char path[4400];
    uint8_t *buf = NULL;
    size_t len = 0;
    int err;

    mf_distill__dir_remove(dir, names); /* a lost attempt's leftovers */
    err = write_inputs(ctx, dir, c, d, parent, parent_len);
    if (err == MF_OK)
        err = mf_distill__command_run(ctx, &cmd, dir, note);
    (void)snprintf(path, sizeof(path), "%s/out/model.safetensors", dir);
    if (err == MF_OK && mf_file_read_all(&buf, &len, ctx, &ctx->alloc, path, OUTPUT_MAX) < 0)
        err = mf_fail(ctx, MF_E_INVALID,
                      "trainer %s wrote no out/model.safetensors of at most %u "
                      "bytes",
                      c->argv[0], OUTPUT_MAX);
    if (err == MF_OK) {
        mf_distill__note_sha256(note, "output_sha256", buf, len);
        err = mf_dynbuf__append(out, buf, len) < 0
                  ? mf_fail(ctx, MF_E_NOMEM, "out of memory for the trainer's output")
                  : MF_OK;
    }
    mf_free(&ctx->alloc, buf);
    mf_distill__dir_remove(dir, names);
    return err;
}
