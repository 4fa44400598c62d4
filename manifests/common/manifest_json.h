/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to manifests/common: bounded access to cJSON trees. Every getter checks type and
 * range and names the offending member in the ctx message; nothing from the input is used
 * as a length without a bound.
 */
#ifndef MF_MANIFEST_JSON_H
#define MF_MANIFEST_JSON_H

#include "manifest_common.h"

#include <cjson/cJSON.h>

/* Largest integer a JSON number carries exactly (2^53); bigger values are refused. */
#define MF_MANIFEST_JSON_INT_MAX 9007199254740992.0
/* The same bound for the signer's integers (compared as integers: 2^53 + 1 is 2^53 as a
 * double). */
#define MF_MANIFEST_JSON_UINT_MAX (UINT64_C(1) << 53)

/* Parses exactly `len` bytes into an object with the strict reader (mf_json.h): nesting
 * deeper than MF_MANIFEST_MAX_DEPTH, duplicate member names, NUL in strings, trailing bytes
 * and inexact integers are refused, so that every JSON reader sees the same document.
 * `what` names the document in messages. */
int mf_manifest__json_parse(cJSON **out, struct mf_ctx *ctx, const uint8_t *buf, size_t len,
                            const char *what);
/* Checks "_type" == type and "spec_version" == MF_MANIFEST_SPEC_VERSION. */
int mf_manifest__json_header(struct mf_ctx *ctx, const cJSON *doc, const char *type);
/* The opening of every signed document: mf_manifest__json_parse() then
 * mf_manifest__json_header() against `type`; on error *out is NULL and nothing is held. */
int mf_manifest__json_doc(cJSON **out, struct mf_ctx *ctx, const uint8_t *buf, size_t len,
                          const char *type);
/* Required string member of at most max_len characters; borrowed from the tree. */
int mf_manifest__json_str(const char **out, struct mf_ctx *ctx, const cJSON *obj, const char *key,
                          size_t max_len);
/* Required string member that passes mf_manifest__name_ok(); copied into out (65 bytes). */
int mf_manifest__json_name(char *out, struct mf_ctx *ctx, const cJSON *obj, const char *key);
/* Required integer member in [0, 2^53]. */
int mf_manifest__json_u64(uint64_t *out, struct mf_ctx *ctx, const cJSON *obj, const char *key);
/* Required member holding 64 lower-case hex digits. */
int mf_manifest__json_hex32(uint8_t *out, struct mf_ctx *ctx, const cJSON *obj, const char *key);
/* Required array member with at most max items; borrowed. */
int mf_manifest__json_array(const cJSON **out, size_t *count, struct mf_ctx *ctx, const cJSON *obj,
                            const char *key, size_t max);

#endif /* MF_MANIFEST_JSON_H */
