/* SPDX-License-Identifier: Apache-2.0 */
/* The failing, counting, leak-checked test allocator (kit_alloc.h). */
#include "kit_alloc.h"
#include "mf_test.h"

/* Each block remembers its size so frees can be counted; the pad keeps payloads 16-byte
 * aligned like malloc's. */
struct kit_hdr {
    size_t size;
    size_t pad;
};

static struct mf_kit_alloc *g_global;

static void *kit_alloc_fn(void *payload, size_t size)
{
    struct mf_kit_alloc *k = payload;
    long n = k->calls++;
    struct kit_hdr *h;

    if (k->fail_at >= 0 &&
        (k->mode == MF_KIT_ALLOC_FAIL_FROM ? n >= k->fail_at : n == k->fail_at)) {
        k->refused++;
        return NULL;
    }
    h = test_malloc(sizeof(*h) + size);
    h->size = size;
    k->bytes += size;
    k->live += size;
    if (k->live > k->peak)
        k->peak = k->live;
    return h + 1;
}

static void kit_free_fn(void *payload, void *ptr)
{
    struct mf_kit_alloc *k = payload;
    struct kit_hdr *h = (struct kit_hdr *)ptr - 1;

    k->live -= h->size;
    test_free(h);
}

mf_allocator mf_kit_alloc_init(struct mf_kit_alloc *k, long fail_at, enum mf_kit_alloc_mode mode)
{
    *k = (struct mf_kit_alloc){.fail_at = fail_at, .mode = mode};
    k->a.alloc = kit_alloc_fn;
    k->a.free = kit_free_fn;
    k->a.payload = k;
    return k->a;
}

void mf_kit_alloc_rearm(struct mf_kit_alloc *k, long fail_at)
{
    k->fail_at = fail_at;
    k->calls = 0;
    k->refused = 0;
}

void mf_kit_alloc_global(struct mf_kit_alloc *k)
{
    g_global = k;
}

void *mf_kit_alloc_global_malloc(size_t n)
{
    static struct mf_kit_alloc quiet; /* no fault, counts nobody looks at */

    if (!quiet.a.alloc)
        (void)mf_kit_alloc_init(&quiet, -1, MF_KIT_ALLOC_FAIL_ONE);
    return kit_alloc_fn(g_global ? g_global : &quiet, n);
}

void mf_kit_alloc_global_free(void *p)
{
    struct kit_hdr *h;

    if (!p)
        return;
    if (g_global) {
        kit_free_fn(g_global, p);
        return;
    }
    h = (struct kit_hdr *)p - 1;
    test_free(h);
}

long mf_kit_alloc_each_failure(struct mf_kit_alloc *k, long max_runs,
                               void (*body)(struct mf_kit_alloc *k, long n, void *payload),
                               void *payload)
{
    for (long n = 0; n < max_runs; n++) {
        mf_kit_alloc_rearm(k, n);
        body(k, n, payload);
        if (k->calls <= n)
            return n; /* the fault point was never reached: every allocation has failed once */
    }
    fail_msg("the body still allocates after %ld failed allocations", max_runs);
    return -1;
}
