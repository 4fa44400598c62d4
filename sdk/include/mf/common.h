/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/common.h
 * @brief Macros shared by every public modelferry header.
 *
 * Public headers are C99 and C++ clean: they compile alone with -std=c99 -pedantic and
 * inside `extern "C"` (tests/unit/CMakeLists.txt checks both).
 */
#ifndef MF_COMMON_H
#define MF_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define MF_BEGIN_DECLS extern "C" {
#define MF_END_DECLS }
#else
#define MF_BEGIN_DECLS
#define MF_END_DECLS
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MF_EXTERN __attribute__((visibility("default")))
#define MF_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#define MF_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define MF_EXTERN
#define MF_WARN_UNUSED_RESULT
#define MF_PRINTF(fmt_idx, arg_idx)
#endif

/* MF_VERSION_NUMBER/STRING used to be typed here by hand; they now come from project(VERSION)
 * through the generated mf/version.h, included for callers that found them here. */
#include "mf/version.h"

#endif /* MF_COMMON_H */
