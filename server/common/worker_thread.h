/* SPDX-License-Identifier: Apache-2.0 */
/* The start, wake-up and stop of a background thread that waits on its own lock and condition. */
#ifndef MF_SERVER_COMMON_WORKER_THREAD_H
#define MF_SERVER_COMMON_WORKER_THREAD_H

#include "mf_ctx.h"

#include <pthread.h>
#include <stddef.h>
#include <time.h>

/* Creates `lock` and `cond`, then starts fn(arg) on `thread`. On failure what was made is
 * destroyed again and MF_E_GENERIC names `who` ("the delta worker") and the failed part; the
 * caller frees its handle. */
int mf_worker_thread__start(pthread_t *thread, pthread_mutex_t *lock, pthread_cond_t *cond,
                            void *(*fn)(void *), void *arg, struct mf_ctx *ctx, const char *who);

/* Sets *flag to 1 under `lock` and signals `cond`: the thread's wait loop reads the flag
 * under the same lock, so the wake-up cannot fall between its test and its wait. */
void mf_worker_thread__raise(int *flag, pthread_mutex_t *lock, pthread_cond_t *cond);

/* The reverse of mf_worker_thread__start: raises *stop_flag, joins `thread`, then destroys
 * `cond` and `lock`. The thread must return once it sees the flag. */
void mf_worker_thread__stop(int *stop_flag, pthread_t thread, pthread_mutex_t *lock,
                            pthread_cond_t *cond);

/* The name a worker claims shared rows under (jobs, webhook deliveries): host, pid and the
 * handle's address, unique per worker even for two in one process. */
void mf_worker_thread__owner(char *out, size_t cap, const void *handle);

/* CLOCK_REALTIME now + interval_ms into `until`: the deadline of pthread_cond_timedwait for
 * a worker's idle poll. */
void mf_worker_thread__deadline(struct timespec *until, unsigned interval_ms);

#endif /* MF_SERVER_COMMON_WORKER_THREAD_H */
