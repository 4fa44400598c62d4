/* SPDX-License-Identifier: Apache-2.0 */
/* Syntax of the names that reach the server in paths and bodies (docs/protocol.md). */
#ifndef MF_SERVER_COMMON_NAMES_H
#define MF_SERVER_COMMON_NAMES_H

#define MF_NAME_MAX 64

/* 1 when `s` matches [A-Za-z0-9._-]{1,64} and is not "." or "..": device ids, model names
 * and versions. Such a name is safe as a path component and in a log line. */
int mf_names__valid_id(const char *s);

/* 1 when `s` is exactly 64 lower-case hex digits: a blob name (closes path traversal). */
int mf_names__valid_sha256(const char *s);

/* 1 when `s` is exactly 32 hex digits of either case: a check-in nonce. */
int mf_names__valid_nonce(const char *s);

#endif /* MF_SERVER_COMMON_NAMES_H */
