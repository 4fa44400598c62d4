/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: lower-case hex encoding for digests and tokens. */
#ifndef MF_CORE_HEX_H
#define MF_CORE_HEX_H

#include <stddef.h>
#include <stdint.h>

#define MF_SHA256_LEN 32
#define MF_SHA256_HEX_LEN 64

/* Writes 2*n hex digits plus NUL into `out` (room for 2*n+1 bytes). */
void mf_hex__encode(char *out, const uint8_t *in, size_t n);
/* Decodes exactly 2*n hex digits (either case) of `in`; MF_OK or MF_E_INVALID. */
int mf_hex__decode(uint8_t *out, size_t n, const char *in, size_t in_len);
/* 1 when `s` is exactly 64 lower-case hex digits (a sha256 as used in URLs and stores). */
int mf_hex__is_sha256(const char *s);

#endif /* MF_CORE_HEX_H */
