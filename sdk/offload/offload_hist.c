/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixed-bin score histograms: mergeable by adding bins, so the server can sum devices and
 * derive a fleet threshold as a quantile with the same code the device derives its own
 * from a calibration set (mf_offload_hist_quantile). Pure functions over the bins, apart
 * from the handle (offload.c: the calibrated threshold), the ask path (offload_ask.c: every
 * score counted) and the telemetry that reports them (offload_telemetry.c, which reads the
 * handle's policy: the quantile in that file made the two call each other).
 */
#include "mf_offload_int.h"

#include <float.h>

void mf_offload__hist_add(uint32_t hist[MF_OFFLOAD_HIST_BINS], float score)
{
    int bin = (int)(score * MF_OFFLOAD_HIST_BINS);

    if (!(score > 0.0f))
        bin = 0;
    if (bin >= MF_OFFLOAD_HIST_BINS)
        bin = MF_OFFLOAD_HIST_BINS - 1;
    if (hist[bin] != UINT32_MAX)
        hist[bin]++;
}

float mf_offload_hist_quantile(const uint32_t hist[MF_OFFLOAD_HIST_BINS], float rate)
{
    double total = 0.0, want, cum = 0.0;

    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++)
        total += hist[i];
    if (total == 0.0)
        return -1.0f;
    if (!(rate > 0.0f))
        return 0.0f;
    if (rate >= 1.0f)
        return 1.0f;
    /*
     * `rate` is a float: 0.1f is 0.10000000149, so 0.1 of 10 samples would ask for 1.0000000149
     * samples and step past the bin that holds exactly the first one. Take off one float
     * rounding step so a whole-number target lands on its own bin.
     */
    want = (double)rate * total;
    want -= want * (double)FLT_EPSILON;
    for (int i = 0; i < MF_OFFLOAD_HIST_BINS; i++) {
        if (hist[i] && cum + hist[i] >= want)
            return (float)((i + (want - cum) / hist[i]) / MF_OFFLOAD_HIST_BINS);
        cum += hist[i];
    }
    return 1.0f;
}
