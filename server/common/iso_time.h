/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Times as the admin API shows and takes them: ISO 8601 UTC, "2026-12-02T03:37:25Z"
 * (docs/protocol.md). The store keeps Unix seconds; only answers and query arguments are
 * ISO text, so a reader never has to convert raw seconds.
 */
#ifndef MF_SERVER_COMMON_ISO_TIME_H
#define MF_SERVER_COMMON_ISO_TIME_H

#include <stdint.h>

#define MF_ISO_TIME_SIZE 21 /* "YYYY-MM-DDTHH:MM:SSZ" and its NUL */

/* Writes `t` (Unix seconds, >= 0) as ISO 8601 UTC into `out`; "" for a time it cannot
 * show. Returns `out`. */
const char *mf_iso_time__format(char out[MF_ISO_TIME_SIZE], int64_t t);

/* Reads "YYYY-MM-DDTHH:MM:SSZ" (exactly that form) or a decimal count of Unix seconds into
 * *out; 0 on success, -1 for anything else (out untouched). */
int mf_iso_time__parse(int64_t *out, const char *s);

#endif /* MF_SERVER_COMMON_ISO_TIME_H */
