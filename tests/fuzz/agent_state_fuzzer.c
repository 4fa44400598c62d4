/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the per-model state file parser (sdk/agent/agent_state.c). Whatever parses
 * must format back and parse again to the same state (round trip).
 */
#include "mf_agent_int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_agent_model_state st, again;
    struct mf_dynbuf buf;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (mf_agent__state_parse(&ctx, &st, (const char *)data, size) < 0)
        return 0;
    mf_dynbuf__init(&buf, NULL, MF_AGENT_SMALL_FILE_MAX);
    if (mf_agent__state_format(&buf, &st) < 0 ||
        mf_agent__state_parse(&ctx, &again, (const char *)buf.data, buf.len) < 0 ||
        memcmp(&st, &again, sizeof(st)) != 0)
        __builtin_trap();
    mf_dynbuf__free(&buf);
    return 0;
}
