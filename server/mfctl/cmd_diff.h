/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to mfctl: `mfctl diff` and `mfctl patch`, thin wrappers over diff/tools/delta_cli. */
#ifndef MFCTL_CMD_DIFF_H
#define MFCTL_CMD_DIFF_H

#include "mfctl.h"

#define MFCTL_DIFF_USAGE                                                                           \
    "usage: mfctl diff [--format mf|bsdiff40] [--threads N] [--level L] [--window BYTES]\n"        \
    "                  OLD NEW PATCH\n"                                                            \
    "       mfctl diff --info PATCH\n"                                                             \
    "Writes a patch turning OLD into NEW (offline; docs/formats/delta.md). The mf format\n"        \
    "(default) applies on devices in bounded memory; bsdiff40 is classic bsdiff 4.3.\n"            \
    "--info prints a patch's header and the encoding of every block.\n"

#define MFCTL_PATCH_USAGE                                                                          \
    "usage: mfctl patch [--format mf|bsdiff40] [--window BYTES]\n"                                 \
    "                   [--expect-sha256 HEX | --unverified] OLD PATCH NEW\n"                      \
    "       mfctl patch --info PATCH\n"                                                            \
    "Applies PATCH to OLD and writes NEW (format detected when --format is omitted). mf\n"         \
    "patches stream in a fixed workspace (1.2 MiB for the default 512 KiB window; a patch\n"       \
    "made with a larger --window needs the same --window here) and are checked against\n"          \
    "their sha256. BSDIFF40 has NO checksum: a corrupt or wrong patch can give a wrong\n"          \
    "image, so it is applied only with --expect-sha256 HEX (the sha256 NEW must have) or,\n"       \
    "knowingly, --unverified. NEW is written as NEW.part and renamed into place only once\n"       \
    "complete and checked; on any failure or mismatch no NEW is left.\n"

int mfctl__cmd_diff(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_patch(struct mfctl *c, int argc, char **argv);

#endif /* MFCTL_CMD_DIFF_H */
