/* SPDX-License-Identifier: Apache-2.0 */
/* Background threads of the server: the delta worker, the check-in stage, the connection
 * sweeper, the webhook sender (worker_thread.h). */
#include "common/worker_thread.h"

#include <stdio.h>
#include <unistd.h>

int mf_worker_thread__start(pthread_t *thread, pthread_mutex_t *lock, pthread_cond_t *cond,
                            void *(*fn)(void *), void *arg, struct mf_ctx *ctx, const char *who)
{
    if (pthread_mutex_init(lock, NULL) != 0)
        return mf_fail(ctx, MF_E_GENERIC, "cannot create %s's lock", who);
    if (pthread_cond_init(cond, NULL) != 0) {
        (void)pthread_mutex_destroy(lock);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create %s's condition", who);
    }
    /* Last: once it runs, the thread may take the lock and wait on the condition. */
    if (pthread_create(thread, NULL, fn, arg) != 0) {
        (void)pthread_cond_destroy(cond);
        (void)pthread_mutex_destroy(lock);
        return mf_fail(ctx, MF_E_GENERIC, "cannot start %s's thread", who);
    }
    return MF_OK;
}

void mf_worker_thread__raise(int *flag, pthread_mutex_t *lock, pthread_cond_t *cond)
{
    (void)pthread_mutex_lock(lock);
    *flag = 1;
    (void)pthread_cond_signal(cond);
    (void)pthread_mutex_unlock(lock);
}

void mf_worker_thread__stop(int *stop_flag, pthread_t thread, pthread_mutex_t *lock,
                            pthread_cond_t *cond)
{
    mf_worker_thread__raise(stop_flag, lock, cond);
    (void)pthread_join(thread, NULL);
    (void)pthread_cond_destroy(cond);
    (void)pthread_mutex_destroy(lock);
}

void mf_worker_thread__owner(char *out, size_t cap, const void *handle)
{
    char host[64] = "node";

    (void)gethostname(host, sizeof(host) - 1);
    (void)snprintf(out, cap, "%.31s:%ld:%p", host, (long)getpid(), handle);
}

void mf_worker_thread__deadline(struct timespec *until, unsigned interval_ms)
{
    (void)clock_gettime(CLOCK_REALTIME, until);
    until->tv_sec += interval_ms / 1000;
    until->tv_nsec += (long)(interval_ms % 1000) * 1000000L;
    if (until->tv_nsec >= 1000000000L) {
        until->tv_sec++;
        until->tv_nsec -= 1000000000L;
    }
}
