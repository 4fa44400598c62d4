/* SPDX-License-Identifier: Apache-2.0 */
/* Grouped checkin_begin (see checkin_batch.h). */
#include "director/checkin_batch.h"

#include "director/batcher.h"
#include "mf_ctx.h"

#include <stdlib.h>

struct mf_checkin_batch {
    struct mf_batcher batcher;
    struct mf_store *store;
    mf_allocator alloc;
};

/* A caller's check-in in the batcher's queue. */
struct batch_link {
    struct mf_batch_item link; /* first: the batcher hands this back */
    struct mf_store_checkin *c;
};

_Static_assert(MF_STORE_CHECKIN_BATCH_MAX <= MF_BATCHER_MAX, "a group fits the batcher");

/* The leader's run: the group's check-ins side by side for the store, results back. */
static void run_group(void *owner, struct mf_batch_item **links, size_t n)
{
    struct mf_checkin_batch *b = owner;
    struct mf_store_checkin items[MF_STORE_CHECKIN_BATCH_MAX];

    for (size_t i = 0; i < n; i++)
        items[i] = *((struct batch_link *)(void *)links[i])->c;
    (void)b->store->ops->checkin->checkin_begin(b->store, items, n);
    for (size_t i = 0; i < n; i++) {
        struct mf_store_checkin *c = ((struct batch_link *)(void *)links[i])->c;

        c->generation = items[i].generation;
        c->first = items[i].first;
        c->err = items[i].err;
        links[i]->err = items[i].err;
    }
}

int mf_checkin_batch__new(struct mf_checkin_batch **out, struct mf_ctx *ctx, struct mf_store *s,
                          size_t max)
{
    struct mf_checkin_batch *b = mf_calloc(&ctx->alloc, 1, sizeof(*b));

    *out = NULL;
    if (!b)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for the check-in batcher");
    b->store = s;
    b->alloc = ctx->alloc;
    if (max > MF_STORE_CHECKIN_BATCH_MAX)
        max = MF_STORE_CHECKIN_BATCH_MAX;
    if (mf_batcher__init(&b->batcher, max, run_group, b) != MF_OK) {
        mf_free(&ctx->alloc, b);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the check-in batcher");
    }
    *out = b;
    return MF_OK;
}

void mf_checkin_batch__free(struct mf_checkin_batch *b)
{
    mf_allocator alloc;

    if (!b)
        return;
    mf_batcher__destroy(&b->batcher);
    alloc = b->alloc;
    mf_free(&alloc, b);
}

int mf_checkin_batch__begin(struct mf_checkin_batch *b, struct mf_store_checkin *c)
{
    struct batch_link l = {.c = c};

    return mf_batcher__submit(&b->batcher, &l.link);
}

void mf_checkin_batch__stats(struct mf_checkin_batch *b, uint64_t *groups, uint64_t *checkins)
{
    mf_batcher__stats(&b->batcher, groups, checkins);
}
