/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small Open Inference Protocol (KServe v2) teacher for the tests, on the kit's fake server
 * (kit_http.h): every POST is answered with fixed probabilities, slowly, or with 500. What it
 * was sent is read with mf_kit_http_request(&f->http, -1), how often it answered with
 * mf_kit_http_answered(&f->http).
 */
#ifndef MF_TEACHER_FIXTURE_H
#define MF_TEACHER_FIXTURE_H

#include "kit_http.h"

#include <stddef.h>

enum teacher_fake_mode { TEACHER_FAKE_OK, TEACHER_FAKE_SLOW, TEACHER_FAKE_FAIL };

struct teacher_fake {
    struct mf_kit_http http;
    float probs[16]; /* answered data */
    size_t n;        /* classes answered */
};

void teacher_fake_start(struct teacher_fake *f, const float *probs, size_t n);
/* TEACHER_FAKE_SLOW: the answer comes after `slow_ms`. */
void teacher_fake_set(struct teacher_fake *f, enum teacher_fake_mode mode, unsigned slow_ms);
void teacher_fake_stop(struct teacher_fake *f);

#endif /* MF_TEACHER_FIXTURE_H */
