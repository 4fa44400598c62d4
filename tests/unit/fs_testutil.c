/* SPDX-License-Identifier: Apache-2.0 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fs_testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void mf_test__rmtree(const char *dir)
{
    (void)nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}
