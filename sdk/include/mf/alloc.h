/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/alloc.h
 * @brief Allocator hooks.
 *
 * SDK code never calls malloc/free directly: every object takes an mf_allocator at
 * creation (NULL means the libc default) and allocates only through it. Tests use this to
 * count peak heap and to fail the Nth allocation.
 */
#ifndef MF_ALLOC_H
#define MF_ALLOC_H

#include "mf/common.h"

MF_BEGIN_DECLS

typedef struct mf_allocator {
    /** Returns `size` bytes aligned for any object, or NULL. Never called with size 0. */
    void *(*alloc)(void *payload, size_t size);
    /** Releases memory from `alloc`. Never called with NULL. */
    void (*free)(void *payload, void *ptr);
    /** Passed back to both functions untouched. */
    void *payload;
} mf_allocator;

/** @return the process-wide libc allocator (malloc/free). Borrowed, static. */
MF_EXTERN const mf_allocator *mf_allocator_default(void);

/**
 * @brief Allocates through `a` (NULL: the default allocator).
 * @return the memory, or NULL when `size` is 0 or the allocator fails.
 * Ownership: release with mf_free() on the same allocator.
 */
MF_EXTERN void *mf_alloc(const mf_allocator *a, size_t size);

/** @brief Like mf_alloc() but zero-filled and overflow-checked (`n * size`). */
MF_EXTERN void *mf_calloc(const mf_allocator *a, size_t n, size_t size);

/** @brief Releases `p` through `a`. mf_free(a, NULL) is a no-op. */
MF_EXTERN void mf_free(const mf_allocator *a, void *p);

/**
 * @brief Copies a NUL-terminated string into memory from `a`.
 * @return the copy or NULL. Ownership: release with mf_free().
 */
MF_EXTERN char *mf_strdup(const mf_allocator *a, const char *s);

MF_END_DECLS

#endif /* MF_ALLOC_H */
