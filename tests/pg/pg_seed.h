/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mf-server init` writes the first admin and enrollment tokens into the data directory and
 * their hashes into the SQLite store there. A test that serves the same data directory on
 * PostgreSQL (--store postgresql://...) copies those hashes into that store with this.
 */
#ifndef MF_TEST_PG_SEED_H
#define MF_TEST_PG_SEED_H

#include "mf_ctx.h"

/* Migrates the store at `url` and inserts the hashes of DATA_DIR/admin.token and
 * DATA_DIR/enroll.token unless it has tokens of that kind already. */
int mf_pgtest__seed(struct mf_ctx *ctx, const char *url, const char *data_dir);

#endif /* MF_TEST_PG_SEED_H */
