/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the IDX and digits-CSV parsers (examples/mnist). The first byte picks the
 * parser: even = IDX, odd = digits CSV. For IDX the next two bytes (big-endian) say how many
 * of the remaining bytes are the image file; the rest is the label file.
 */
#include "mf_ctx.h"
#include "mf_dataset.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_ctx ctx;
    mf_dataset *ds = NULL;
    int err;

    if (size < 1)
        return 0;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (data[0] % 2 == 1) {
        err = mf_dataset_parse_digits(&ds, &ctx, NULL, data + 1, size - 1);
    } else {
        size_t split;
        if (size < 3)
            return 0;
        split = (size_t)data[1] << 8 | data[2];
        if (split > size - 3)
            split = size - 3;
        err = mf_dataset_parse_idx(&ds, &ctx, NULL, data + 3, split, data + 3 + split,
                                   size - 3 - split);
    }
    if (err == MF_OK) {
        /* Accepted sets keep their promises: labels in range, pixels within max_value. */
        for (size_t i = 0; i < ds->n; i++)
            if (ds->y[i] >= MF_DATASET_CLASSES)
                abort();
        for (size_t i = 0; i < ds->n * ds->dim; i++)
            if (ds->x[i] > ds->max_value)
                abort();
        mf_dataset_free(ds);
    } else if (ds) {
        abort();
    }
    return 0;
}
