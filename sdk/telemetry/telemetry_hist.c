/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Log-bucketed latency histogram (mf/telemetry.h): exact below 16 us, then 8 buckets per
 * power of two, like HdrHistogram with 3 significant bits. Fixed buckets are what makes
 * merging exact (add bucket by bucket) and percentiles of a fleet honest (read from the
 * merged counts instead of averaging per-device percentiles).
 */
#include "mf/telemetry.h"

#define SUB_BITS 3u
#define LINEAR 16u /* values below are their own bucket */

unsigned mf_telemetry_bucket(uint64_t us)
{
    unsigned e = 0;

    if (us < LINEAR)
        return (unsigned)us;
    if (us > UINT32_MAX)
        return MF_TELEMETRY_LAT_BUCKETS - 1;
    for (uint64_t v = us; v > 1; v >>= 1)
        e++;
    return LINEAR + (e - 4) * 8u + (unsigned)((us >> (e - SUB_BITS)) & 7u);
}

uint64_t mf_telemetry_bucket_low(unsigned i)
{
    unsigned e, sub;

    if (i < LINEAR)
        return i;
    if (i >= MF_TELEMETRY_LAT_BUCKETS)
        i = MF_TELEMETRY_LAT_BUCKETS - 1;
    e = (i - LINEAR) / 8u + 4u;
    sub = (i - LINEAR) % 8u;
    return (uint64_t)(8u + sub) << (e - SUB_BITS);
}

uint64_t mf_telemetry_bucket_high(unsigned i)
{
    if (i < LINEAR)
        return i;
    if (i >= MF_TELEMETRY_LAT_BUCKETS - 1)
        return UINT32_MAX;
    return mf_telemetry_bucket_low(i + 1) - 1;
}

/* Exact merging of `n` buckets: add, saturating. */
static void merge(uint32_t *dst, const uint32_t *src, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        dst[i] = dst[i] > UINT32_MAX - src[i] ? UINT32_MAX : dst[i] + src[i];
}

void mf_telemetry_hist_merge(uint32_t dst[MF_TELEMETRY_LAT_BUCKETS],
                             const uint32_t src[MF_TELEMETRY_LAT_BUCKETS])
{
    merge(dst, src, MF_TELEMETRY_LAT_BUCKETS);
}

/* Nearest-rank quantile of `n` buckets: the upper bound (high(i)) of the bucket holding the
 * sample of rank ceil(q * total), at least 1; 0 for an empty histogram. */
static uint64_t quantile(const uint32_t *hist, unsigned n, double q, uint64_t (*high)(unsigned))
{
    uint64_t total = 0, rank, cum = 0;

    for (unsigned i = 0; i < n; i++)
        total += hist[i];
    if (total == 0)
        return 0;
    if (!(q > 0.0))
        q = 0.0;
    if (q > 1.0)
        q = 1.0;
    rank = (uint64_t)(q * (double)total);
    if ((double)rank < q * (double)total)
        rank++;
    if (rank == 0)
        rank = 1;
    for (unsigned i = 0; i < n; i++) {
        cum += hist[i];
        if (cum >= rank)
            return high(i);
    }
    return high(n - 1);
}

uint64_t mf_telemetry_hist_quantile(const uint32_t hist[MF_TELEMETRY_LAT_BUCKETS], double q)
{
    return quantile(hist, MF_TELEMETRY_LAT_BUCKETS, q, mf_telemetry_bucket_high);
}

/* Coarse bucket c holds latency buckets 2c and 2c + 1. */
static uint64_t coarse_high(unsigned c)
{
    return mf_telemetry_bucket_high(2u * c + 1u);
}

void mf_telemetry_coarse_merge(uint32_t dst[MF_TELEMETRY_COARSE_BUCKETS],
                               const uint32_t src[MF_TELEMETRY_COARSE_BUCKETS])
{
    merge(dst, src, MF_TELEMETRY_COARSE_BUCKETS);
}

uint64_t mf_telemetry_coarse_quantile(const uint32_t hist[MF_TELEMETRY_COARSE_BUCKETS], double q)
{
    return quantile(hist, MF_TELEMETRY_COARSE_BUCKETS, q, coarse_high);
}
