/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: base64 shared by the manifests, offload and server code (see base64.c). */
#ifndef MF_CORE_BASE64_H
#define MF_CORE_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Characters (without the NUL) that encoding `n` bytes produces. */
size_t mf_base64__encoded_len(size_t n);
/* Writes mf_base64__encoded_len(n) characters plus NUL into out. */
void mf_base64__encode(char *out, const uint8_t *in, size_t n);
/* Decodes into out (room `cap`); MF_E_INVALID on a bad character or length, MF_E_LIMIT when
 * the result would not fit. */
int mf_base64__decode(uint8_t *out, size_t cap, size_t *out_len, const char *in, size_t in_len);

#endif /* MF_CORE_BASE64_H */
