/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Base64 (RFC 4648) for every module that carries bytes in JSON: DSSE payloads and signatures,
 * offloaded samples, exported inputs. Encoding uses the standard alphabet with padding;
 * decoding accepts the standard and the URL-safe alphabet, with or without padding (DSSE
 * allows both). The decoder never trusts a length from the input: it writes at most `cap`.
 */
#include "mf_base64.h"
#include "mf/error.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t mf_base64__encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void mf_base64__encode(char *out, const uint8_t *in, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        size_t rem = n - i;

        if (rem > 1)
            v |= (uint32_t)in[i + 1] << 8;
        if (rem > 2)
            v |= in[i + 2];
        out[o++] = b64_alphabet[(v >> 18) & 63];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = rem > 1 ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = rem > 2 ? b64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int mf_base64__decode(uint8_t *out, size_t cap, size_t *out_len, const char *in, size_t in_len)
{
    uint32_t acc = 0;
    size_t bits = 0, o = 0;

    /* Up to two '=' of padding, and only where they complete a 4-character group. */
    if (in_len && in[in_len - 1] == '=') {
        if (in_len % 4)
            return MF_E_INVALID;
        in_len--;
        if (in_len && in[in_len - 1] == '=')
            in_len--;
    }
    if (in_len % 4 == 1)
        return MF_E_INVALID;
    for (size_t i = 0; i < in_len; i++) {
        int v = b64_value(in[i]);

        if (v < 0)
            return MF_E_INVALID;
        acc = (acc << 6 | (uint32_t)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return MF_E_LIMIT;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    *out_len = o;
    return MF_OK;
}
