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

#include "mf/sign.h"

#define MFCTL_DEFAULT_CHUNK (1u << 20) /* release chunk size unless --chunk-size says */

/* Hashes a model file whole and per spec->chunk_size chunk in one streaming pass; fills
 * spec->size, sha256, chunk_count and chunks (*chunks, from c's allocator: free it). */
int mfctl__hash_model(mf_manifest_release_spec *spec, uint8_t (**chunks)[32], struct mfctl *c,
                      const char *path);

/*
 * Fills the file-derived fields of `spec` (size, sha256, chunks; created; default expiry
 * and chunk size), adds the private keys `key_files` to `s` and signs the release. The
 * caller sets name, version, sequence and security_floor. keyid_out: NULL or 65 bytes for
 * the last key's id. Ownership: `*env_out` is released with mf_free(&c->ctx.alloc, p).
 */
int mfctl__release_sign(uint8_t **env_out, size_t *len_out, char *keyid_out,
                        mf_manifest_release_spec *spec, struct mfctl *c, mf_manifest_signer *s,
                        const char *file, const char *const *key_files, size_t n_keys);

/* Reads a whole file of at most `max` bytes (NUL-terminated) from c's allocator. */
int mfctl__read_file(char **out, size_t *len, struct mfctl *c, const char *path, size_t max);

#endif /* MFCTL_CMD_KEYS_H */
