/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator hook. This is the one file of the SDK allowed to call malloc/free
 * (scripts/checksrc knows it): everything else allocates through an mf_allocator.
 */
#include "mf/alloc.h"

#include <stdlib.h>
#include <string.h>

static void *libc_alloc(void *payload, size_t size)
{
    (void)payload;
    return malloc(size);
}

static void libc_free(void *payload, void *ptr)
{
    (void)payload;
    free(ptr);
}

static const mf_allocator libc_allocator = {libc_alloc, libc_free, NULL};

const mf_allocator *mf_allocator_default(void)
{
    return &libc_allocator;
}

void *mf_alloc(const mf_allocator *a, size_t size)
{
    if (!a)
        a = &libc_allocator;
    if (size == 0)
        return NULL;
    return a->alloc(a->payload, size);
}

void *mf_calloc(const mf_allocator *a, size_t n, size_t size)
{
    void *p;

    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    p = mf_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void mf_free(const mf_allocator *a, void *p)
{
    if (!p)
        return;
    if (!a)
        a = &libc_allocator;
    a->free(a->payload, p);
}

char *mf_strdup(const mf_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = mf_alloc(a, n);

    if (p)
        memcpy(p, s, n);
    return p;
}
