/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the mf-agent configuration parser (device/agent/agent_config.c). */
#include "agent_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_agent_config c;
    struct mf_ctx ctx;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (mf_agent_config__parse(&c, &ctx, "fuzz.json", (const char *)data, size) == MF_OK)
        mf_agent_config__free(&c, &ctx);
    else if (c.models || c.server_url || !ctx.errmsg[0])
        __builtin_trap(); /* failures leave nothing allocated and always explain */
    return 0;
}
