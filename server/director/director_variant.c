/* SPDX-License-Identifier: Apache-2.0 */
/* The director's variant rule (see director_variant.h). */
#include "director/director_variant.h"

#include <string.h>

int mf_variant__allows(const struct mf_store_variant_needs *needs, uint64_t size,
                       const struct mf_device_class *c)
{
    if (needs->min_ram_mb > c->ram_mb || needs->min_storage_mb > c->storage_mb)
        return 0;
    if (size > c->storage_mb * 1024u * 1024u) /* storage_mb <= 2^40: no overflow */
        return 0;
    if (needs->accelerator[0] && strcmp(needs->accelerator, c->accelerator) != 0)
        return 0;
    if ((needs->int8 && !c->int8) || (needs->fp16 && !c->fp16))
        return 0;
    return !needs->class_tag[0] || strcmp(needs->class_tag, c->tag) == 0;
}

int mf_variant__pick(const struct mf_store_variant *vs, size_t n, const struct mf_device_class *c)
{
    int best = -1;

    if (!c->declared)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct mf_store_variant *v = &vs[i];

        if (!v->release_digest[0] || v->fallback || !mf_variant__allows(&v->needs, v->size, c))
            continue;
        if (best < 0 || v->rank < vs[best].rank ||
            (v->rank == vs[best].rank && strcmp(v->variant, vs[best].variant) < 0))
            best = (int)i;
    }
    return best;
}
