/* SPDX-License-Identifier: Apache-2.0 */
/* mf-delta: standalone diff/patch/info tool (the same commands as `mfctl diff|patch`). */
#include "delta_cli.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "diff") == 0)
        return mf_delta_cli_diff(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "patch") == 0)
        return mf_delta_cli_patch(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "info") == 0)
        return mf_delta_cli_info(argc - 2, argv + 2);
    (void)fprintf(stderr,
                  "usage: mf-delta diff [--format mf|bsdiff40] OLD NEW PATCH\n"
                  "       mf-delta patch [--format mf|bsdiff40] [--window BYTES]\n"
                  "                      [--expect-sha256 HEX | --unverified] OLD PATCH NEW\n"
                  "         (BSDIFF40 has no checksum: it needs --expect-sha256, or --unverified)\n"
                  "       mf-delta info PATCH\n");
    return 2;
}
