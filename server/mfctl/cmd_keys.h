/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to mfctl: `mfctl keys ...`, offline key and trust-document tooling. */
#ifndef MFCTL_CMD_KEYS_H
#define MFCTL_CMD_KEYS_H

#include "mfctl.h"

#define MFCTL_KEYS_USAGE                                                                           \
    "usage: mfctl keys gen KEY.pem\n"                                                              \
    "       mfctl keys root-init OUT --root K.pem... [--root-threshold N] --keys K.pem...\n"       \
    "                            [--keys-threshold N] [--version N] [--expires UNIX]\n"            \
    "                            [--sign PRIV.pem...]\n"                                           \
    "       mfctl keys sign-keys OUT --release K.pem... [--release-threshold N]\n"                 \
    "                            --director K.pem... [--version N] [--expires UNIX]\n"             \
    "                            --sign PRIV.pem...\n"                                             \
    "       mfctl keys sign-release OUT --name NAME --release-version V --sequence N\n"            \
    "                            --file MODEL [--chunk-size BYTES] [--floor N]\n"                  \
    "                            [--expires UNIX]\n"                                               \
    "                            --sign PRIV.pem...\n"                                             \
    "       mfctl keys verify ROOT KEYS RELEASE\n"                                                 \
    "gen writes a new P-256 private key (mode 0600, never overwrites) and prints its key id.\n"    \
    "root-init signs with --sign keys, or with the --root keys when none is given; a\n"            \
    "rotation is root-init --version N+1 signed by a threshold of the old and the new root.\n"     \
    "Role options repeat once per key (public or private PEM). Documents follow\n"                 \
    "docs/formats/manifest.md; OUT receives the DSSE envelope. verify checks a release\n"          \
    "against a root and keys document as a device would.\n"

int mfctl__cmd_keys(struct mfctl *c, int argc, char **argv);

#endif /* MFCTL_CMD_KEYS_H */
