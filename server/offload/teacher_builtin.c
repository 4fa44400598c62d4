/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in teacher of the example model family (examples/mnist, server/distill): the
 * float MLP that mf_distill trains and saves as safetensors (format "mf-float-mlp"), run
 * in-process. The input is the raw image bytes the student saw; the answer is its logits
 * (the registry applies softmax: configure output "logits", the default for builtin).
 */
#include "offload/teacher_int.h"

#include "mf_mlp.h"

#include <string.h>

static int builtin_open(void **state_out, struct mf_ctx *ctx, const struct mf_teacher_config *c)
{
    mf_mlp *m = NULL;
    int err;

    *state_out = NULL;
    if (!c->path[0])
        return mf_fail(ctx, MF_E_INVALID, "model %s: the builtin teacher needs a path", c->model);
    err = mf_mlp_load(&m, ctx, &ctx->alloc, c->path, NULL, NULL);
    if (err < 0)
        return err;
    *state_out = m;
    return MF_OK;
}

static void builtin_close(void *state)
{
    mf_mlp_free(state);
}

static int builtin_infer(float *out, char version_out[MF_STORE_NAME_SIZE], void *state,
                         struct mf_ctx *ctx, const struct mf_teacher_config *c,
                         const uint8_t *input, size_t len, size_t n_classes, unsigned timeout_ms)
{
    const mf_mlp *m = state;

    (void)version_out;
    (void)timeout_ms; /* one forward pass of a small MLP: microseconds */
    if (len != m->sizes[0])
        return mf_fail(ctx, MF_E_INVALID, "model %s: input of %zu bytes, the teacher takes %u",
                       c->model, len, (unsigned)m->sizes[0]);
    if (n_classes != m->sizes[m->n_layers])
        return mf_fail(ctx, MF_E_INVALID, "model %s: %zu classes asked, the teacher has %u",
                       c->model, n_classes, (unsigned)m->sizes[m->n_layers]);
    return mf_mlp_logits(out, ctx, m, input, 1, 1);
}

const struct mf_teacher_connector mf_teacher__builtin = {
    .name = "builtin",
    .open = builtin_open,
    .close = builtin_close,
    .infer = builtin_infer,
};
