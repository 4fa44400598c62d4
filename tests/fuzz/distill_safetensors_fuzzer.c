/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the strict safetensors header parser and the student file decoder on top
 * of it (examples/mnist). Every accepted file must have tensors that lie inside the input
 * and tile its data area, and a decoded student must pass mf_student_check() and run.
 */
#include "mf_ctx.h"
#include "mf_safetensors.h"
#include "mf_student_model.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_ctx ctx;
    mf_safetensors *st = NULL;
    mf_student_model *m = NULL;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (mf_safetensors_parse(&st, &ctx, NULL, data, size) == MF_OK) {
        uint64_t total = 0;
        for (size_t i = 0; i < mf_safetensors_count(st); i++) {
            const mf_st_tensor *t = mf_safetensors_at(st, i);
            if (t->data < data || t->data + t->nbytes > data + size)
                abort();
            total += t->nbytes;
        }
        if (total > size)
            abort();
        mf_safetensors_free(st);
    }
    if (mf_student_model_decode(&m, &ctx, NULL, data, size) == MF_OK) {
        uint8_t x[MF_STUDENT_MAX_IN];
        float logits[MF_STUDENT_MAX_OUT];
        if (mf_student_check(&m->net) != MF_OK)
            abort();
        memset(x, 0xff, sizeof(x));
        (void)mf_student_predict(&m->net, x, logits);
        mf_student_model_free(m);
    }
    return 0;
}
