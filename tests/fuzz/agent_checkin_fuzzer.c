/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the agent's check-in answer parser (sdk/agent/agent_checkin.c), the first
 * thing libmf does with bytes from the network. The nonce is fixed so the corpus can
 * reach the assignment parser; two tracked models exercise the duplicate check. Each parsed
 * assignment is then verified as the agent would, against the golden trust of
 * tests/data/manifest/ (fuzz_golden.c), so answers carrying real (batch) signatures reach
 * the signature and Merkle path checks.
 */
#include "mf_agent_int.h"
#include "fuzz_golden.h"

#include <cjson/cJSON.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The agent's check of one assignment: a failure names a reason, success an object. */
static void verify(const struct mf_agent_assignment *as)
{
    mf_trust *t = mf_fuzz__golden_trust(0);
    mf_manifest_assignment *a = NULL;
    int rc;

    if (!t)
        return;
    rc = mf_trust_verify_assignment(&a, t, MF_FUZZ_GOLDEN_DEVICE, MF_FUZZ_GOLDEN_NONCE,
                                    as->assignment_env, as->assignment_len, as->release_env,
                                    as->release_len, 0);
    if ((rc >= 0) != (a != NULL) || (rc < 0 && mf_trust_last_reason(t) == MF_TRUST_R_NONE))
        __builtin_trap();
    mf_manifest_assignment_free(a);
    mf_trust_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const models[] = {"detector", "classifier"};
    struct mf_agent_assignment out[2];
    struct mf_agent_trust_docs trust;
    struct cJSON *doc = NULL;
    struct mf_ctx ctx;
    size_t n = 99;
    struct mf_agent_settings poll = {0};
    int err;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    err = mf_agent__checkin_parse(&ctx, out, &n, &poll, &trust, &doc, (const char *)data, size,
                                  "00112233445566778899aabbccddeeff", models, 2);
    if (err < 0 && (n != 0 || !ctx.errmsg[0]))
        __builtin_trap(); /* a failure reports no assignment and always has a message */
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        /* A release left out (the device holds it) comes without any download hint. */
        if (out[i].release_held
                ? out[i].sha256[0] || out[i].blob[0] || out[i].release_env
                : strlen(out[i].sha256) != 64 || out[i].blob[0] != '/' || !out[i].release_env)
            __builtin_trap();
        if (!out[i].assignment_env)
            __builtin_trap();
    }
    if (err < 0 && doc)
        __builtin_trap(); /* a failure hands back no tree */
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        if (!out[i].release_held) /* else verified against the kept envelope (agent.c) */
            verify(&out[i]);
    }
    cJSON_Delete(doc);
    return 0;
}
