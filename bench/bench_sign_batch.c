/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signing cost per assignment by batch size (docs/formats/manifest.md §2.1): one thread,
 * mf_manifest_sign_assignment_batch() on a fresh P-256 key, every envelope built in full.
 * Times are CPU time of the process (steadier than wall time on a shared machine).
 * Run by hand: bench_sign_batch [assignments per size (default 4096)].
 */
#define _POSIX_C_SOURCE 200809L
#include "mf/sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    static mf_manifest_assignment_spec specs[MF_MANIFEST_SIGN_BATCH_MAX];
    static uint8_t *envs[MF_MANIFEST_SIGN_BATCH_MAX];
    static size_t lens[MF_MANIFEST_SIGN_BATCH_MAX];
    static char devices[MF_MANIFEST_SIGN_BATCH_MAX][32];
    size_t total = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
    mf_manifest_signer *s = NULL;
    char *pem = NULL, keyid[65];
    size_t pem_len = 0;

    if (total == 0 || mf_manifest_signer_new(&s, NULL) < 0 ||
        mf_manifest_signer_generate_key(&pem, &pem_len, keyid, s) < 0 ||
        mf_manifest_signer_add_key(NULL, s, pem, pem_len) < 0) {
        (void)fprintf(stderr, "bench_sign_batch: cannot set up a key\n");
        return 1;
    }
    mf_manifest_secret_free(NULL, pem, pem_len);
    for (size_t i = 0; i < MF_MANIFEST_SIGN_BATCH_MAX; i++) {
        (void)snprintf(devices[i], sizeof(devices[i]), "cam-%04zu", i);
        specs[i].device_id = devices[i];
        specs[i].model = "detector";
        specs[i].nonce = "0123456789abcdef0123456789abcdef";
        memset(specs[i].release_sha256, 0xab, sizeof(specs[i].release_sha256));
    }
    (void)printf("batch  cpu-us/assignment  assignments/cpu-s  bytes/envelope\n");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], done = 0, bytes = 0;
        double t0 = now_s(), dt;

        while (done < total) {
            for (size_t i = 0; i < n; i++)
                specs[i].sequence = done + i + 1;
            if (mf_manifest_sign_assignment_batch(envs, lens, s, specs, n) < 0) {
                (void)fprintf(stderr, "bench_sign_batch: %s\n", mf_manifest_signer_errmsg(s));
                return 1;
            }
            for (size_t i = 0; i < n; i++) {
                bytes += lens[i];
                mf_free(NULL, envs[i]);
            }
            done += n;
        }
        dt = now_s() - t0;
        (void)printf("%5zu  %17.2f  %17.0f  %14zu\n", n, dt * 1e6 / (double)done, (double)done / dt,
                     bytes / done);
    }
    mf_manifest_signer_free(s);
    return 0;
}
