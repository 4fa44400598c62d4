/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mfctl diff` / `mfctl patch`: offline delta tooling. Argument parsing and file handling
 * live in diff/tools/delta_cli.c, shared with the standalone mf-delta tool, so both CLIs
 * behave identically; this file only adds mfctl's --help and the --info shortcut.
 */
#include "cmd_diff.h"
#include "delta_cli.h"

#include <string.h>

/* Handles `--help` and `--info PATCH`; returns -1 when the command proper should run. */
static int common(struct mfctl *c, int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            (void)fputs(usage, c->out);
            return 0;
        }
    }
    if (argc >= 2 && strcmp(argv[1], "--info") == 0) {
        if (argc != 3) {
            (void)fputs(usage, c->err);
            return 2;
        }
        (void)fflush(c->out);
        return mf_delta_cli_info(1, argv + 2);
    }
    return -1;
}

int mfctl__cmd_diff(struct mfctl *c, int argc, char **argv)
{
    int rc = common(c, argc, argv, MFCTL_DIFF_USAGE);

    return rc >= 0 ? rc : mf_delta_cli_diff(argc - 1, argv + 1);
}

int mfctl__cmd_patch(struct mfctl *c, int argc, char **argv)
{
    int rc = common(c, argc, argv, MFCTL_PATCH_USAGE);

    return rc >= 0 ? rc : mf_delta_cli_patch(argc - 1, argv + 1);
}
