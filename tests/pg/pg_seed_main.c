/* SPDX-License-Identifier: Apache-2.0 */
/* mf_pg_seed URL DATA_DIR: the shell tests' way to call mf_pgtest__seed (pg_seed.h). */
#include "pg_seed.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    struct mf_ctx ctx;

    if (argc != 3) {
        (void)fprintf(stderr, "usage: mf_pg_seed URL DATA_DIR\n");
        return 2;
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "seed");
    if (mf_pgtest__seed(&ctx, argv[1], argv[2]) < 0) {
        (void)fprintf(stderr, "mf_pg_seed: %s\n", mf_ctx__errmsg(&ctx));
        return 1;
    }
    return 0;
}
