/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: run one function on N argument blocks, N-1 of them on fresh pthreads. */
#ifndef MF_DISTILL_PARALLEL_H
#define MF_DISTILL_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Calls fn(args + i * arg_size) for i in [0, n): block 0 on the calling thread, the others
 * on new threads, and joins them all. If a thread cannot be created its block runs on the
 * caller after the others, so the result never depends on thread availability.
 */
void mf_distill__parallel(void (*fn)(void *), void *args, size_t arg_size, uint32_t n);

#endif /* MF_DISTILL_PARALLEL_H */
