/* SPDX-License-Identifier: Apache-2.0 */
/* Fork-join over pthreads for the trainer (see distill_parallel.h). */
#include "distill_parallel.h"

#include "mf_mlp.h"

#include <pthread.h>

struct trampoline {
    void (*fn)(void *);
    void *arg;
};

static void *run_block(void *p)
{
    struct trampoline *t = p;

    t->fn(t->arg);
    return NULL;
}

void mf_distill__parallel(void (*fn)(void *), void *args, size_t arg_size, uint32_t n)
{
    pthread_t tid[MF_MLP_MAX_THREADS];
    struct trampoline tr[MF_MLP_MAX_THREADS];
    int started[MF_MLP_MAX_THREADS] = {0};
    char *base = args;

    if (n > MF_MLP_MAX_THREADS)
        n = MF_MLP_MAX_THREADS;
    for (uint32_t i = 1; i < n; i++) {
        tr[i].fn = fn;
        tr[i].arg = base + i * arg_size;
        started[i] = pthread_create(&tid[i], NULL, run_block, &tr[i]) == 0;
    }
    fn(base);
    for (uint32_t i = 1; i < n; i++) {
        if (started[i])
            (void)pthread_join(tid[i], NULL);
        else
            fn(base + i * arg_size);
    }
}
