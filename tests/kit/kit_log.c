/* SPDX-License-Identifier: Apache-2.0 */
#include "kit_log.h"

#include <stdio.h>

void mf_kit_log_errors(void *payload, int level, const char *module, const char *msg)
{
    struct mf_kit_log *log = payload;

    (void)module;
    if (level != MF_LOG_ERROR)
        return;
    log->errors++;
    (void)snprintf(log->last, sizeof(log->last), "%s", msg);
}
