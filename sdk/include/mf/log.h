/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/log.h
 * @brief Log callback.
 *
 * The SDK never prints. It hands each log line to the registered mf_log_fn; with none
 * registered, lines are dropped. Key material and full tokens are never logged.
 */
#ifndef MF_LOG_H
#define MF_LOG_H

#include "mf/common.h"

MF_BEGIN_DECLS

typedef enum mf_log_level {
    MF_LOG_ERROR = 0,
    MF_LOG_WARN = 1,
    MF_LOG_INFO = 2,
    MF_LOG_DEBUG = 3,
    MF_LOG_TRACE = 4
} mf_log_level;

/**
 * @brief Receives one log line.
 * @param payload the pointer registered with the callback.
 * @param level an mf_log_level.
 * @param module short static name of the emitting module ("agent", "http", ...).
 * @param msg one line without a trailing newline; valid only during the call.
 */
typedef void (*mf_log_fn)(void *payload, int level, const char *module, const char *msg);

/** @return "error", "warn", "info", "debug" or "trace"; "?" for other values. Static. */
MF_EXTERN const char *mf_log_level_name(int level);

/**
 * @brief A ready-made sink for programs (not used by the SDK on its own): writes
 * "LEVEL module: msg" to stderr for lines at or below the level pointed to by `payload`
 * (an `int *`; NULL means MF_LOG_INFO).
 */
MF_EXTERN void mf_log_stderr(void *payload, int level, const char *module, const char *msg);

MF_END_DECLS

#endif /* MF_LOG_H */
