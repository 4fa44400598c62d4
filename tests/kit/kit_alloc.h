/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test allocator: an mf_allocator that fails the Nth allocation (that one only, or that
 * one and every later one), counts calls and bytes, tracks the bytes held and their peak, and
 * takes its memory from cmocka's test_malloc/test_free so a leak fails the case. With
 * mf_kit_alloc_each_failure() a body runs once per N until no allocation is left to fail
 * (STYLE rule 38).
 */
#ifndef MF_KIT_ALLOC_H
#define MF_KIT_ALLOC_H

#include "mf/alloc.h"

#include <stddef.h>

enum mf_kit_alloc_mode {
    MF_KIT_ALLOC_FAIL_ONE,  /* refuse allocation `fail_at` only */
    MF_KIT_ALLOC_FAIL_FROM, /* refuse allocation `fail_at` and every later one */
};

struct mf_kit_alloc {
    mf_allocator a; /* what the code under test is given: &k->a */
    long fail_at;   /* index (from 0) of the allocation refused; -1: never */
    enum mf_kit_alloc_mode mode;
    long calls;   /* allocations asked for, refused ones included */
    long refused; /* allocations refused */
    size_t bytes; /* bytes handed out in total */
    size_t live;  /* bytes held now */
    size_t peak;  /* most bytes held at once */
};

/* Counters to zero, the hooks set, the Nth allocation to refuse (-1: none). Returns a copy of
 * k->a, for callers that keep the allocator in a variable of their own. */
mf_allocator mf_kit_alloc_init(struct mf_kit_alloc *k, long fail_at, enum mf_kit_alloc_mode mode);

/* A new fault point and zeroed call counters; the bytes held (and their peak) stay. */
void mf_kit_alloc_rearm(struct mf_kit_alloc *k, long fail_at);

/* The allocation hooks for libraries with process-wide ones (cJSON_InitHooks): they go to the
 * instance last given to mf_kit_alloc_global(); NULL sends them to test_malloc unobserved. */
void mf_kit_alloc_global(struct mf_kit_alloc *k);
void *mf_kit_alloc_global_malloc(size_t n);
void mf_kit_alloc_global_free(void *p);

/*
 * Runs `body` with allocation N refused, for N = 0, 1, 2, ... until a run in which the fault
 * point is never reached, at most `max_runs` times (the case fails beyond). `k` is rearmed
 * before each run (mode as initialised); `body` gets N and checks that the run ended cleanly.
 * Returns N of the run that reached no fault: how many allocations the body makes.
 */
long mf_kit_alloc_each_failure(struct mf_kit_alloc *k, long max_runs,
                               void (*body)(struct mf_kit_alloc *k, long n, void *payload),
                               void *payload);

#endif /* MF_KIT_ALLOC_H */
