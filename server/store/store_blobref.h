/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blob lifetime by reference (docs/architecture.md, "Blob lifetime"): the one answer to "who
 * refers to this sha256", shared by both backends. Blobs are content-addressed and shared
 * (a sample's input may be the very bytes of a released model), so a blob file may go only
 * when no row of any table names it, decided in the transaction that deletes the last row.
 *
 * The ops are the blobs domain's (struct mf_store_blobs_ops, store_blobref.c), written once
 * for both backends; samples_delete reads blob_ref inside its transaction
 * (mf_store__blob_ref_read, store_engine.h).
 */
#ifndef MF_SERVER_STORE_BLOBREF_H
#define MF_SERVER_STORE_BLOBREF_H

#include <stddef.h>

/* A column whose values are sha256s of files in the blob store. */
struct mf_store_blob_col {
    const char *table;
    const char *column;
};

/* Every such column of the schema; a new one must be added here (test_server_store's
 * schema walk fails until it is, on both stores). */
extern const struct mf_store_blob_col mf_store__blob_cols[];
extern const size_t mf_store__n_blob_cols;

#endif /* MF_SERVER_STORE_BLOBREF_H */
