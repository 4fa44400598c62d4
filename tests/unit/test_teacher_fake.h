/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small Open Inference Protocol (KServe v2) server for the tests: one thread on
 * 127.0.0.1 with an ephemeral port answering POST /v2/models/{name}/infer with fixed
 * probabilities, slowly, with 500, or recording what it was sent. Bounded: it polls its
 * stop flag every 50 ms.
 */
#ifndef MF_TEST_TEACHER_FAKE_H
#define MF_TEST_TEACHER_FAKE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum fake_mode { FAKE_OK = 0, FAKE_SLOW = 1, FAKE_FAIL = 2 };

struct fake_oip {
    int fd;
    uint16_t port;
    pthread_t thread;
    pthread_mutex_t lock;
    volatile int stop;
    int mode;              /* enum fake_mode */
    unsigned slow_ms;      /* FAKE_SLOW: delay before answering */
    float probs[16];       /* answered data */
    size_t n;              /* classes answered */
    unsigned calls;        /* requests answered */
    char last_path[128];   /* of the last request */
    char last_body[65536]; /* of the last request, NUL-terminated */
};

void fake_oip_start(struct fake_oip *f, const float *probs, size_t n);
void fake_oip_set(struct fake_oip *f, int mode, unsigned slow_ms);
unsigned fake_oip_calls(struct fake_oip *f);
void fake_oip_stop(struct fake_oip *f);

#endif /* MF_TEST_TEACHER_FAKE_H */
