/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cost of one confidence score (mf_offload_score) per method, for 10 and 1000 classes:
 * logits at T = 1.7 (one expf per class) and probabilities at T = 1 (no pow).
 * Run: build/bin/bench_offload_score [iterations]. Inputs rotate through 256 random
 * vectors so the branch predictor cannot learn one.
 */
#include "mf/offload.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NVEC 256
#define MAXC 1000

static float logits[NVEC][MAXC], probs[NVEC][MAXC];

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill(void)
{
    unsigned seed = 12345;

    for (int v = 0; v < NVEC; v++) {
        for (int i = 0; i < MAXC; i++) {
            seed = seed * 1103515245u + 12345u;
            logits[v][i] = (float)((seed >> 8) % 2000) / 200.0f - 5.0f;
            probs[v][i] = (float)((seed >> 8) % 1000) / 1000.0f + 0.001f;
        }
    }
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"max_softmax", "margin", "entropy"};
    static const size_t sizes[] = {10, 1000};
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
    volatile float sink = 0;

    fill();
    printf("%-12s %7s %-13s %10s\n", "method", "classes", "input", "ns/call");
    for (size_t s = 0; s < 2; s++) {
        long n = sizes[s] == 10 ? iters : iters / 50;

        for (int m = 0; m < 3; m++) {
            for (int kind = 0; kind < 2; kind++) {
                double t0 = now_s();

                for (long i = 0; i < n; i++) {
                    const float *x =
                        kind == MF_OFFLOAD_PROBS ? probs[i & (NVEC - 1)] : logits[i & (NVEC - 1)];
                    float sc;

                    if (mf_offload_score(&sc, m, kind, x, sizes[s], kind ? 1.0f : 1.7f) == MF_OK)
                        sink += sc;
                }
                printf("%-12s %7zu %-13s %10.1f\n", names[m], sizes[s],
                       kind ? "probs,T=1" : "logits,T=1.7", (now_s() - t0) / (double)n * 1e9);
            }
        }
    }
    (void)sink;
    return 0;
}
