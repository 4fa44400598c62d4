/* SPDX-License-Identifier: Apache-2.0 */
/* Atomic file writes for mf-server's data directory (file_atomic.c). */
#ifndef MF_SERVER_COMMON_FILE_ATOMIC_H
#define MF_SERVER_COMMON_FILE_ATOMIC_H

#include "mf_ctx.h"

/* Writes `text` to `path` atomically (temp, fsync, rename, fsync dir) with `mode`. MF_OK,
 * MF_E_LIMIT (path too long) or MF_E_IO. */
int mf_file__write_atomic(struct mf_ctx *ctx, const char *path, const char *text, unsigned mode);

#endif /* MF_SERVER_COMMON_FILE_ATOMIC_H */
