/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the end-to-end offload test (test_offload_e2e.c, the real server in-process) and
 * the device client the integration test runs against the real mf-server program
 * (test_offload_e2e_client.c): deterministic sample inputs, and the two HTTP calls an app
 * makes besides the offload library's own (enrolment, the check-in that brings the policy).
 */
#ifndef MF_OFFLOAD_E2E_FIXTURE_H
#define MF_OFFLOAD_E2E_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#define E2E_INPUT_LEN 784 /* one 28 x 28 image */
#define E2E_CLASSES 3

/* Input number `variant`: distinct for distinct variants (the first 4 bytes hold it). */
void e2e_input(uint8_t out[E2E_INPUT_LEN], uint32_t variant);
/* Logits of variant `variant`: max-softmax between 0.55 and 0.65, uncertain below 0.8. */
void e2e_logits(float out[E2E_CLASSES], uint32_t variant);

/*
 * One HTTP request to base_url + path (bearer token or NULL, JSON body or NULL); the answer
 * body goes to `out` (NUL-terminated, cut at cap - 1). Returns the status, -1 on a
 * transport failure.
 */
long e2e_http(char *out, size_t cap, const char *base_url, const char *method, const char *path,
              const char *bearer, const char *body);
/* Enrols `device_id` with the enrolment token; the credential into `cred`. 0 or -1. */
int e2e_enroll(char *cred, size_t cap, const char *base_url, const char *enroll_token,
               const char *device_id);
/* Checks in as running `model` `version`; the policy object for `model` (JSON) into `out`.
 * 0, or -1 when the answer holds none. */
int e2e_checkin_policy(char *out, size_t cap, const char *base_url, const char *cred,
                       const char *model, const char *version);

#endif /* MF_OFFLOAD_E2E_FIXTURE_H */
