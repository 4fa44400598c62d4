/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: CRC-32 (IEEE, reflected, as in zlib), bitwise and table-free. */
#ifndef MF_CORE_CRC32_H
#define MF_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of `crc`'s input followed by p[0..n): start with 0, feed pieces in order. Its
 * users (the trust state file, the offload queue's records) check a few small records,
 * so no 1 KiB table is kept in device RAM or flash for it. */
uint32_t mf_crc32__update(uint32_t crc, const void *p, size_t n);

#endif /* MF_CORE_CRC32_H */
