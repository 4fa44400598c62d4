/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to server/director/director*.c: the director's layout, shared by the key file half
 * (director.c) and the batching signer (director_sign.c). */
#ifndef MF_SERVER_DIRECTOR_DIRECTOR_INT_H
#define MF_SERVER_DIRECTOR_DIRECTOR_INT_H

#include "director/batcher.h"
#include "director/director.h"

struct mf_director {
    /* Used only by the batcher's run function, which runs on one thread at a time. */
    mf_manifest_signer *signer;
    struct mf_batcher batcher;
    int batcher_ready;
    /* Held while the signer signs: the batcher's run and mf_director__sign_many() (the
     * check-in stage) may otherwise use it at the same time. */
    pthread_mutex_t sign_lock;
    int lock_ready;
    uint64_t many_signatures, many_assignments; /* by mf_director__sign_many(), under it */
    /* The running batch, side by side for mf_manifest_sign_assignment_batch(). */
    mf_manifest_assignment_spec specs[MF_BATCHER_MAX];
    uint8_t *envs[MF_BATCHER_MAX];
    size_t lens[MF_BATCHER_MAX];
    char keyid[65];
};

/* Sets up the batcher of a zeroed director (batches of MF_DIRECTOR_BATCH_DEFAULT). */
int mf_director__sign_init(struct mf_director *d, struct mf_ctx *ctx);
void mf_director__sign_fini(struct mf_director *d); /* after sign_init, even a failed one */

#endif /* MF_SERVER_DIRECTOR_DIRECTOR_INT_H */
