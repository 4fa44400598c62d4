/* SPDX-License-Identifier: Apache-2.0 */
/* File-system helpers the unit tests share. */
#ifndef MF_FS_TESTUTIL_H
#define MF_FS_TESTUTIL_H

/* Removes `dir` and everything below it (symlinks are removed, not followed); errors are
 * ignored: a test's scratch directory under /tmp. */
void mf_test__rmtree(const char *dir);

#endif /* MF_FS_TESTUTIL_H */
