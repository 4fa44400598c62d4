/* SPDX-License-Identifier: Apache-2.0 */
/* mf-delta: standalone diff/patch/info tool (the same commands as `mfctl diff|patch`). */
#include "delta_cli.h"
#include "mf_cli.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "NAME\n"
    "    mf-delta - make, apply and inspect model deltas (docs/formats/delta.md)\n"
    "SYNOPSIS\n"
    "    mf-delta diff [--format mf|bsdiff40] [--threads N] [--level L] [--window BYTES]\n"
    "                  OLD NEW PATCH\n"
    "    mf-delta patch [--format mf|bsdiff40] [--window BYTES]\n"
    "                   [--expect-sha256 HEX | --unverified] OLD PATCH NEW\n"
    "    mf-delta info PATCH\n"
    "    mf-delta --help | --version\n"
    "DESCRIPTION\n"
    "    diff writes the delta that turns OLD into NEW; patch rebuilds NEW from OLD and the\n"
    "    delta with a device's bounded memory and checks NEW's SHA-256 (an mf delta carries\n"
    "    it; BSDIFF40 has no checksum: it needs --expect-sha256, or --unverified); info\n"
    "    prints a delta's header.\n"
    "EXIT STATUS\n"
    "    0 success; 1 failure (message on stderr); 2 bad usage.\n";

int main(int argc, char **argv)
{
    if (mf_cli__std_flags(argc, argv, "mf-delta", usage_text) == 0)
        return 0;
    if (argc >= 2 && strcmp(argv[1], "diff") == 0)
        return mf_delta_cli_diff(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "patch") == 0)
        return mf_delta_cli_patch(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "info") == 0)
        return mf_delta_cli_info(argc - 2, argv + 2);
    if (argc >= 2)
        (void)fprintf(stderr, "mf-delta: unknown command \"%s\"\n", argv[1]);
    else
        (void)fprintf(stderr, "mf-delta: no command given (diff, patch or info)\n");
    (void)fputs("Run `mf-delta --help` for the commands.\n", stderr);
    return 2;
}
