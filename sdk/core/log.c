/* SPDX-License-Identifier: Apache-2.0 */
/* Log level names and the opt-in stderr sink used by the daemons and CLIs. */
#include "mf/log.h"

#include <stdio.h>

const char *mf_log_level_name(int level)
{
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};

    if (level < MF_LOG_ERROR || level > MF_LOG_TRACE)
        return "?";
    return names[level];
}

void mf_log_stderr(void *payload, int level, const char *module, const char *msg)
{
    int max = payload ? *(const int *)payload : MF_LOG_INFO;

    if (level > max)
        return;
    (void)fprintf(stderr, "%-5s %s: %s\n", mf_log_level_name(level), module, msg);
}
