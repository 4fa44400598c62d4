/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bearer tokens of docs/protocol.md: a kind prefix (mfa_, mfe_, mfd_) and 32 random bytes in
 * lower-case hex. The server only ever stores and looks up their SHA-256.
 */
#ifndef MF_SERVER_TOKEN_H
#define MF_SERVER_TOKEN_H

#include "mf_ctx.h"
#include "mf_hex.h"

#include <stddef.h>
#include <stdint.h>

#define MF_TOKEN_RANDOM_LEN 32
#define MF_TOKEN_PREFIX_LEN 4
#define MF_TOKEN_LEN (MF_TOKEN_PREFIX_LEN + 2 * MF_TOKEN_RANDOM_LEN) /* 68 */

enum mf_token_kind { MF_TOKEN_ADMIN = 0, MF_TOKEN_ENROLL = 1, MF_TOKEN_DEVICE = 2 };

/* Fills `out` (MF_TOKEN_LEN + 1 bytes) with a fresh token of `kind` from OpenSSL's CSPRNG.
 * MF_OK or MF_E_GENERIC when the generator fails. */
int mf_token__generate(char *out, struct mf_ctx *ctx, enum mf_token_kind kind);

/* Kind of a well-formed token (prefix + exactly 64 lower-case hex digits), or -1. */
int mf_token__kind(const char *s, size_t len);

/* SHA-256 of the token text: what the store keeps and looks up. */
void mf_token__hash(uint8_t out[MF_SHA256_LEN], const char *token, size_t len);

/* "admin", "enroll" or "device": the store's name for a kind. Static. */
const char *mf_token__kind_name(enum mf_token_kind kind);

#endif /* MF_SERVER_TOKEN_H */
