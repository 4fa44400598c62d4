/* SPDX-License-Identifier: Apache-2.0 */
/* The fake Open Inference Protocol teacher of the teacher tests (teacher_fixture.h). */
#include "teacher_fixture.h"
#include "mf_test.h"

#include <stdio.h>
#include <string.h>

void teacher_fake_set(struct teacher_fake *f, enum teacher_fake_mode mode, unsigned slow_ms)
{
    struct mf_kit_http_reply r = {.status = 200};
    char body[1024];
    size_t n = 0;

    n += (size_t)snprintf(body + n, sizeof(body) - n,
                          "{\"model_name\":\"teach\",\"model_version\":\"k-3\",\"outputs\":"
                          "[{\"name\":\"probs\",\"shape\":[1,%zu],\"datatype\":\"FP32\","
                          "\"data\":[",
                          f->n);
    for (size_t i = 0; i < f->n; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%s%.9g", i ? "," : "",
                              (double)f->probs[i]);
    (void)snprintf(body + n, sizeof(body) - n, "]}]}");
    r.body = body;
    if (mode == TEACHER_FAKE_SLOW)
        r.delay_ms = slow_ms;
    if (mode == TEACHER_FAKE_FAIL)
        r = (struct mf_kit_http_reply){.status = 500, .body = "{}"};
    mf_kit_http_set_default(&f->http, &r);
}

void teacher_fake_start(struct teacher_fake *f, const float *probs, size_t n)
{
    assert_true(n <= sizeof(f->probs) / sizeof(f->probs[0]));
    memcpy(f->probs, probs, n * sizeof(float));
    f->n = n;
    mf_kit_http_start(&f->http, NULL, NULL);
    teacher_fake_set(f, TEACHER_FAKE_OK, 0);
}

void teacher_fake_stop(struct teacher_fake *f)
{
    mf_kit_http_stop(&f->http);
}
