/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven cases (kit_case.h). */
#include "kit_case.h"
#include "mf_test.h"

#include "mf_ctx.h"

#include <string.h>

void mf_kit_case_refused(const struct mf_kit_case *cases, size_t n, mf_kit_parse_fn parse,
                         void *payload)
{
    for (size_t i = 0; i < n; i++) {
        struct mf_ctx ctx;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        if (parse(payload, &ctx, cases[i].in) != MF_E_INVALID)
            fail_msg("case %zu accepted: %s", i, cases[i].in);
        if (!strstr(mf_ctx__errmsg(&ctx), cases[i].want))
            fail_msg("case %zu (%s): message '%s' lacks '%s'", i, cases[i].in, mf_ctx__errmsg(&ctx),
                     cases[i].want);
    }
}
