/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch directories of the unit tests: made fresh under /tmp, removed with all they hold. */
#ifndef MF_KIT_FS_H
#define MF_KIT_FS_H

#include <stddef.h>
#include <stdint.h>

/* Makes a fresh directory /tmp/<prefix>-XXXXXX and writes its path to `out` (`cap` bytes);
 * the test fails when it cannot. */
void mf_kit_fs_mkdtemp(char *out, size_t cap, const char *prefix);

/* `rel` (e.g. "docs/openapi.yaml") inside the source tree the tests were built from, into
 * `out`; returns `out`. */
char *mf_kit_fs_source_path(char *out, size_t cap, const char *rel);

/* Removes `dir` and everything below it (symlinks are removed, not followed); errors are
 * ignored: a test's scratch directory. */
void mf_kit_fs_rmtree(const char *dir);

/* Reads `dir`/`name` into a test_malloc'd buffer with a NUL after the `*len` bytes; NULL when
 * the file does not exist. */
uint8_t *mf_kit_fs_slurp(const char *dir, const char *name, size_t *len);

/* 1 when `dir`/`name` exists. */
int mf_kit_fs_exists(const char *dir, const char *name);

/* The first line of `dir`/`name` (at most `cap` - 1 bytes, without its line end) into `out`:
 * a token file; the test fails when there is none. */
void mf_kit_fs_read_line(char *out, size_t cap, const char *dir, const char *name);

/* Writes `len` bytes to `path` (created or truncated); the test fails when it cannot. */
void mf_kit_fs_write(const char *path, const void *data, size_t len);

/* Inverts the bits of the byte at `offset` in `path`: damage that can never be a no-op, whatever
 * the byte held (writing a fixed byte is a no-op when it was already there). */
void mf_kit_fs_flip_byte(const char *path, long offset);

#endif /* MF_KIT_FS_H */
