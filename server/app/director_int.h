/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to server/app/director*.c: the director's layout, shared by the key file half
 * (director.c) and the batching signer (director_sign.c). */
#ifndef MF_SERVER_APP_DIRECTOR_INT_H
#define MF_SERVER_APP_DIRECTOR_INT_H

#include "app/director.h"

#include <pthread.h>
#include <stdatomic.h>

/* One mf_director__sign() call waiting in the queue; lives on its caller's stack. */
struct mf_director_item {
    const mf_manifest_assignment_spec *spec;
    uint8_t *env; /* result, handed to the caller */
    size_t len;
    int err;
    int done;
    char errmsg[MF_ERRMSG_MAX];
    struct mf_director_item *next;
};

struct mf_director {
    mf_manifest_signer *signer; /* used by the leader only, outside the lock */
    pthread_mutex_t lock;       /* guards the queue, `signing` and the items' results */
    pthread_cond_t done;        /* broadcast when a batch's results are published */
    struct mf_director_item *head, **tail;
    int signing; /* 1 while a leader signs a batch outside the lock */
    unsigned max_batch;
    /* The leader's batch, allocated once for MF_DIRECTOR_BATCH_MAX items. */
    struct mf_director_item **batch;
    mf_manifest_assignment_spec *specs;
    uint8_t **envs;
    size_t *lens;
    atomic_uint_least64_t signatures, assignments;
    char keyid[65];
};

/* Allocates the batch arrays and the queue state of a zeroed director. */
int mf_director__sign_init(struct mf_director *d, struct mf_ctx *ctx);
void mf_director__sign_fini(struct mf_director *d);

#endif /* MF_SERVER_APP_DIRECTOR_INT_H */
