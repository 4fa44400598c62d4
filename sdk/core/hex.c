/* SPDX-License-Identifier: Apache-2.0 */
/* Lower-case hex for digests and tokens. */
#include "mf_hex.h"
#include "mf/error.h"

#include <string.h>

void mf_hex__encode(char *out, const uint8_t *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int mf_hex__decode(uint8_t *out, size_t n, const char *in, size_t in_len)
{
    if (in_len != 2 * n)
        return MF_E_INVALID;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_value(in[2 * i]);
        int lo = hex_value(in[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return MF_E_INVALID;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return MF_OK;
}

int mf_hex__is_sha256(const char *s)
{
    size_t i;

    for (i = 0; s[i]; i++) {
        if (i >= MF_SHA256_HEX_LEN ||
            !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    }
    return i == MF_SHA256_HEX_LEN;
}
