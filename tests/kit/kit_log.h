/* SPDX-License-Identifier: Apache-2.0 */
/* A log sink for tests that assert on the messages a library logged. */
#ifndef MF_KIT_LOG_H
#define MF_KIT_LOG_H

#include "mf/log.h"

/* The ERROR lines seen so far: how many, and the last one (truncated to fit). */
struct mf_kit_log {
    int errors;
    char last[256];
};

/*
 * An mf_log_fn: pass it as `log_fn` with a `struct mf_kit_log *` as `log_payload`. Only
 * MF_LOG_ERROR lines are kept, because a failure's message is logged once at that level
 * (STYLE rule 32) and the lower levels vary with the build.
 */
void mf_kit_log_errors(void *payload, int level, const char *module, const char *msg);

#endif /* MF_KIT_LOG_H */
