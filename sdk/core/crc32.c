/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32 for torn-write detection (mf_crc32.h). */
#include "mf_crc32.h"

uint32_t mf_crc32__update(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;

    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
