/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small, table-free hashes for the uplink queue: FNV-1a 64 as the content hash that
 * de-duplicates identical inputs, and splitmix64 for audit draws and backoff jitter. The
 * CRC-32 on every record, which detects a torn or corrupted tail, is sdk/core's
 * (mf_crc32.h), shared with the trust state file.
 */
#include "mf_offload_int.h"

uint64_t mf_offload__fnv1a64(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t mf_offload__rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
