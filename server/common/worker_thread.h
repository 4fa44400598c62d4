/* SPDX-License-Identifier: Apache-2.0 */
/* The start of a background thread that waits on its own lock and condition. */
#ifndef MF_SERVER_COMMON_WORKER_THREAD_H
#define MF_SERVER_COMMON_WORKER_THREAD_H

#include "mf_ctx.h"

#include <pthread.h>

/* Creates `lock` and `cond`, then starts fn(arg) on `thread`. On failure what was made is
 * destroyed again and MF_E_GENERIC names `who` ("the delta worker") and the failed part; the
 * caller frees its handle. */
int mf_worker_thread__start(pthread_t *thread, pthread_mutex_t *lock, pthread_cond_t *cond,
                            void *(*fn)(void *), void *arg, struct mf_ctx *ctx, const char *who);

#endif /* MF_SERVER_COMMON_WORKER_THREAD_H */
