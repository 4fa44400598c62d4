/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the per-sample forward pass shared by inference and training. */
#ifndef MF_DISTILL_MLP_INTERNAL_H
#define MF_DISTILL_MLP_INTERNAL_H

#include "mf_mlp.h"

/*
 * act[0] receives the scaled input, act[l] (1 <= l <= n_layers) the outputs of layer l:
 * ReLU activations for hidden layers, logits for the last one. Each act[l] has sizes[l]
 * floats.
 */
void mf_mlp__forward(const mf_mlp *m, const uint8_t *x, float *const *act);

/* Total floats of act[0..n_layers]. */
size_t mf_mlp__act_floats(const mf_mlp *m);

#endif /* MF_DISTILL_MLP_INTERNAL_H */
