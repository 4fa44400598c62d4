/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the distill config parser (server/distill/job/distill_config.c). Whatever it
 * accepts must hold its invariants: names within bounds, fractions and rates in range,
 * a held-out range with begin < end or none, positive trainer settings, a release key.
 */
#include "distill/job/distill_job.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mf_distill_config cfg; /* 16 models with paths: not on the stack */
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (mf_distill__config_parse(&cfg, &ctx, (const char *)data, size) != MF_OK)
        return 0;
    for (size_t i = 0; i < cfg.n; i++) {
        const struct mf_distill_model_cfg *m = &cfg.models[i];

        if (!m->model[0] || strlen(m->model) >= sizeof(m->model) || !m->release_key[0] ||
            !(m->seed_fraction > 0 && m->seed_fraction < 1) ||
            !(m->target_rate > 0 && m->target_rate < 1) || m->epochs == 0 || m->hidden == 0 ||
            m->timeout_s == 0 || m->chunk_size < 4096 ||
            (m->heldout_end && m->heldout_begin >= m->heldout_end) || (m->command && !m->argv[0]))
            abort();
    }
    mf_distill__config_free(&cfg);
    return 0;
}
