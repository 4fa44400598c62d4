/* SPDX-License-Identifier: Apache-2.0 */
/* The blob reference columns and the statements built from them (see store_blobref.h). */
#include "store/store_blobref.h"

/*
 * One list makes both the column table and the reference query, so the two cannot drift.
 * deltas.from_sha256 and to_sha256 name model blobs too: the delta worker reads them, and a
 * delta may outlive the version row its source came from.
 */
#define BLOB_COLUMNS(X)                                                                            \
    X("model_versions", "sha256")                                                                  \
    X("deltas", "delta_sha256")                                                                    \
    X("deltas", "from_sha256")                                                                     \
    X("deltas", "to_sha256")                                                                       \
    X("offload_samples", "input_sha256")

#define AS_COL(t, c) {t, c},
#define AS_SELECT(t, c) "SELECT '" t "." c "' FROM " t " WHERE " c " = $1 UNION ALL "

const struct mf_store_blob_col mf_store__blob_cols[] = {BLOB_COLUMNS(AS_COL)};
const size_t mf_store__n_blob_cols = sizeof(mf_store__blob_cols) / sizeof(mf_store__blob_cols[0]);

/* UNION ALL under LIMIT 1: both engines stop at the first row found, so a blob named by a
 * version never reaches the sample index. The last arm only closes the chain. */
const char mf_store__blob_ref_sql[] = BLOB_COLUMNS(AS_SELECT) "SELECT '' WHERE 1 = 0 LIMIT 1";

const char mf_store__blob_released_sql[] =
    "SELECT 1 FROM model_versions WHERE sha256 = $1 AND sequence > 0"
    " UNION ALL SELECT 1 FROM deltas d JOIN model_versions v"
    " ON v.sha256 = d.to_sha256 AND v.sequence > 0 WHERE d.delta_sha256 = $1 LIMIT 1";
