/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Uplink queue append throughput on the POSIX port, through the public API (score,
 * decide, encode, CRC, append), for fsync after every record (the default, sync_every=1)
 * and every 32 records. Samples are 784-byte inputs with 10 logits (the Fashion-MNIST
 * student). Run: build/bin/bench_offload_queue [dir] [samples]; dir defaults to /tmp.
 * The figure depends on the disk: state the device when quoting it.
 */
#include "mf/offload.h"
#include "mf/sys/platform_posix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run(const char *base, long n, unsigned sync_every)
{
    static const char policy[] = "{\"enabled\":true,\"threshold\":1,\"mode\":\"async\"}";
    static uint8_t input[784];
    float logits[10] = {1, 0.5f, 0.2f, 0, 0, 0, 0, 0, 0, 0};
    char dir[256];
    mf_platform_posix px;
    mf_platform_ops ops;
    mf_offload_options o;
    mf_offload *h = NULL;
    long queued = 0;
    double t0, dt;

    (void)snprintf(dir, sizeof(dir), "%s/mf-bench-queue-%u-%ld", base, sync_every, (long)getpid());
    if (mf_platform_posix_init(&ops, &px, dir) != MF_OK ||
        mf_offload_options_init(&o, MF_OFFLOAD_OPTIONS_VERSION) != MF_OK)
        return 1;
    o.model = "fmnist";
    o.model_version = "v1";
    o.platform = &ops;
    o.sync_every = sync_every;
    o.queue_max_bytes = 1024ull * 1024 * 1024;
    o.queue_ttl_s = 0;
    o.dedup_window = 256;
    if (mf_offload_new(&h, &o) != MF_OK ||
        mf_offload_set_policy_json(h, policy, sizeof(policy) - 1) != MF_OK)
        return 1;
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        mf_offload_sample s = {input, sizeof(input), logits, 10, MF_OFFLOAD_LOGITS};
        mf_offload_answer a;

        memcpy(input, &i, sizeof(i)); /* distinct inputs: nothing de-duplicated */
        if (mf_offload_ask(&a, NULL, h, &s) != MF_OK)
            return 1;
        queued += a.queued;
    }
    dt = now_s() - t0;
    printf("sync_every=%-3u %7ld samples queued in %.3f s: %9.0f samples/s, %7.1f us each, "
           "%.1f MB/s\n",
           sync_every, queued, dt, (double)queued / dt, dt / (double)n * 1e6,
           (double)queued * 784.0 / dt / 1e6);
    mf_offload_free(h);
    mf_platform_posix_close(&px);
    {
        char cmd[300];

        (void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return queued == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : "/tmp";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;

    if (run(base, n, 1) != 0 || run(base, n * 10, 32) != 0 || run(base, n * 10, 0) != 0) {
        fprintf(stderr, "bench_offload_queue failed\n");
        return 1;
    }
    return 0;
}
