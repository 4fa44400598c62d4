/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flags every modelferry program answers the same way (docs/operations.md, "Programs"):
 * `--help` (or `-h`) prints the program's man-page-style usage on stdout and exits 0,
 * `--version` prints "PROG X.Y.Z" from the project version (generated mf/version.h) and
 * exits 0. Header-only and for programs only: no library of the SDK prints (STYLE rule 31).
 * Unknown flags stay each program's own business: a message naming the flag, exit 2.
 */
#ifndef MF_CLI_H
#define MF_CLI_H

#include "mf/version.h"

#include <stdio.h>
#include <string.h>

/* 0 after answering --help/-h or --version found among argv[1..argc-1] (the caller exits 0),
 * -1 when neither is there. Any position counts, so `mf-server serve --help` is help too;
 * the first of them decides. */
static inline int mf_cli__std_flags(int argc, char **argv, const char *prog, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            (void)printf("%s %s\n", prog, MF_VERSION_STRING);
            return 0;
        }
    }
    return -1;
}

#endif /* MF_CLI_H */
