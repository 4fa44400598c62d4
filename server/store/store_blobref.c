/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The blobs domain of the store, both backends (struct mf_store_blobs_ops, semantics in
 * store.h; store_blobref.h): the one answer to "who refers to this sha256", and whether a
 * released version names a blob. One column list makes both the column table and the
 * reference query, so the two cannot drift.
 */
#include "store/store_blobref.h"
#include "store/store_engine.h"

/*
 * deltas.from_sha256 and to_sha256 name model blobs too: the delta worker reads them, and a
 * delta may outlive the version row its source came from.
 */
#define BLOB_COLUMNS(X)                                                                            \
    X("model_versions", "sha256")                                                                  \
    X("model_versions", "chunks_sha256")                                                           \
    X("model_variants", "sha256")                                                                  \
    X("deltas", "delta_sha256")                                                                    \
    X("deltas", "from_sha256")                                                                     \
    X("deltas", "to_sha256")                                                                       \
    X("offload_samples", "input_sha256")

#define AS_COL(t, c) {t, c},
#define AS_SELECT(t, c) "SELECT '" t "." c "' FROM " t " WHERE " c " = ?1 UNION ALL "

const struct mf_store_blob_col mf_store__blob_cols[] = {BLOB_COLUMNS(AS_COL)};
const size_t mf_store__n_blob_cols = sizeof(mf_store__blob_cols) / sizeof(mf_store__blob_cols[0]);

/* The catalogue of this domain, the same text on both. UNION ALL under LIMIT 1: both engines
 * stop at the first row found, so a blob named by a version never reaches the sample index.
 * A released variant (migration 12) is released bytes like a released version, and so is
 * a released version's chunk list (migration 15).
 * The last arm only closes the chain. */
static const struct mf_sql sql_blob_ref =
    MF_SQL(BLOB_COLUMNS(AS_SELECT) "SELECT '' WHERE 1 = 0 LIMIT 1", "checking blob references");
static const struct mf_sql sql_blob_released =
    MF_SQL("SELECT 1 FROM model_versions WHERE sha256 = ?1 AND sequence > 0"
           " UNION ALL SELECT 1 FROM model_versions WHERE chunks_sha256 = ?1 AND sequence > 0"
           " UNION ALL SELECT 1 FROM deltas d JOIN model_versions v"
           " ON v.sha256 = d.to_sha256 AND v.sequence > 0 WHERE d.delta_sha256 = ?1"
           " UNION ALL SELECT 1 FROM model_variants WHERE sha256 = ?1 AND release_digest <> ''"
           " UNION ALL SELECT 1 FROM deltas d JOIN model_variants x"
           " ON x.sha256 = d.to_sha256 AND x.release_digest <> '' WHERE d.delta_sha256 = ?1"
           " LIMIT 1",
           "checking a blob's release");

static int take_who(void *payload, const struct mf_store_cursor *row)
{
    mf_store__col_text(payload, MF_STORE_BLOB_REF_MAX, row, 0);
    return MF_OK;
}

int mf_store__blob_ref_read(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s,
                            struct mf_store_tx *tx, struct mf_ctx *ctx, const char *sha256)
{
    int found = 0;

    who_out[0] = '\0';
    return mf_store__first(&found, s, tx, ctx, &sql_blob_ref, take_who, who_out, "t", sha256);
}

static int blobs_blob_ref(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s,
                          struct mf_ctx *ctx, const char *sha256)
{
    return mf_store__blob_ref_read(who_out, s, NULL, ctx, sha256);
}

static int blobs_blob_released(int *released_out, struct mf_store *s, struct mf_ctx *ctx,
                               const char *sha256)
{
    return mf_store__first(released_out, s, NULL, ctx, &sql_blob_released, NULL, NULL, "t", sha256);
}

/* clang-format off */
const struct mf_store_blobs_ops mf_store__blobs_ops = {
    .blob_ref = blobs_blob_ref, .blob_released = blobs_blob_released,
};
/* clang-format on */
