/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the agent's check-in answer parser (sdk/agent/agent_checkin.c), the first
 * thing libmf does with bytes from the network. The nonce is fixed so the corpus can
 * reach the assignment parser; two tracked models exercise the duplicate check.
 */
#include "mf_agent_int.h"

#include <cjson/cJSON.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const models[] = {"detector", "classifier"};
    struct mf_agent_assignment out[2];
    struct mf_agent_trust_docs trust;
    struct cJSON *doc = NULL;
    struct mf_ctx ctx;
    size_t n = 99;
    long poll = -1;
    int err;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    err = mf_agent__checkin_parse(&ctx, out, &n, &poll, &trust, &doc, (const char *)data, size,
                                  "00112233445566778899aabbccddeeff", models, 2);
    if (err < 0 && (n != 0 || !ctx.errmsg[0]))
        __builtin_trap(); /* a failure reports no assignment and always has a message */
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        if (strlen(out[i].sha256) != 64 || out[i].blob[0] != '/' || !out[i].release_env ||
            !out[i].assignment_env)
            __builtin_trap();
    }
    if (err < 0 && doc)
        __builtin_trap(); /* a failure hands back no tree */
    cJSON_Delete(doc);
    return 0;
}
