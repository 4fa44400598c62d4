/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 throughput of the device's digest (sdk/digest): the block function mf_sha256__init
 * picks, the portable fallback, and mbedTLS for comparison, over the same buffer fed in
 * 16 KiB updates (the agent's download callback size). Run by bench/agent/bench_agent.sh.
 * Usage: bench_sha256 [MIB=256]
 */
#include "mf_sha256.h"

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if MBEDTLS_VERSION_MAJOR < 3
#define mbedtls_sha256_starts mbedtls_sha256_starts_ret
#define mbedtls_sha256_update mbedtls_sha256_update_ret
#define mbedtls_sha256_finish mbedtls_sha256_finish_ret
#endif

#define PIECE (16u * 1024u)

static double now_s(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double run_mf(mf_sha256_blocks_fn fn, const uint8_t *buf, size_t n, uint8_t *out)
{
    struct mf_sha256 h;
    double t0 = now_s();

    mf_sha256__init_with(&h, fn);
    for (size_t off = 0; off < n; off += PIECE)
        mf_sha256__update(&h, buf + off, n - off < PIECE ? n - off : PIECE);
    mf_sha256__final(&h, out);
    return now_s() - t0;
}

static double run_mbedtls(const uint8_t *buf, size_t n, uint8_t *out)
{
    mbedtls_sha256_context c;
    double t0 = now_s();

    mbedtls_sha256_init(&c);
    (void)mbedtls_sha256_starts(&c, 0);
    for (size_t off = 0; off < n; off += PIECE)
        (void)mbedtls_sha256_update(&c, buf + off, n - off < PIECE ? n - off : PIECE);
    (void)mbedtls_sha256_finish(&c, out);
    mbedtls_sha256_free(&c);
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    size_t n = mib << 20;
    uint8_t *buf = malloc(n);
    uint8_t d[3][MF_SHA256_DIGEST_LEN];
    const char *name = NULL;
    mf_sha256_blocks_fn best = mf_sha256__blocks_best(&name);
    double t[3] = {1e9, 1e9, 1e9};

    if (!buf || mib == 0) {
        (void)fprintf(stderr, "usage: bench_sha256 [MIB>0]\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    for (int r = 0; r < 3; r++) { /* best of 3 */
        double a = run_mf(best, buf, n, d[0]), b = run_mf(mf_sha256__blocks_portable, buf, n, d[1]);
        double c = run_mbedtls(buf, n, d[2]);

        t[0] = a < t[0] ? a : t[0];
        t[1] = b < t[1] ? b : t[1];
        t[2] = c < t[2] ? c : t[2];
    }
    if (memcmp(d[0], d[1], sizeof(d[0])) != 0 || memcmp(d[0], d[2], sizeof(d[0])) != 0) {
        (void)fprintf(stderr, "bench_sha256: digests differ\n");
        return 1;
    }
    printf("sha256 over %zu MiB, best of 3: mf %s %.0f MiB/s, mf portable %.0f MiB/s, "
           "mbedTLS %.0f MiB/s\n",
           mib, name, (double)mib / t[0], (double)mib / t[1], (double)mib / t[2]);
    free(buf);
    return 0;
}
