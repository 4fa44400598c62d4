/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one strict JSON reader. Everything that parses JSON it did not write itself
 * (request bodies, server answers, manifests, configs, stored documents) goes through
 * mf_json__parse(), so that every reader in the project accepts exactly the same documents
 * and no two of them can see different values in one signed text.
 *
 * The profile (docs/protocol.md "JSON profile", docs/formats/manifest.md):
 *   - exactly one value, nothing after it but JSON whitespace (space, tab, CR, LF);
 *   - valid UTF-8 only: no overlong forms, no encoded surrogates, nothing above U+10FFFF,
 *     no byte order mark;
 *   - no raw control character (< 0x20) anywhere but whitespace between tokens;
 *   - no NUL in a string, neither raw nor as \u0000; surrogate escapes only as valid pairs;
 *   - member names unique in every object, compared after unescaping;
 *   - numbers by the RFC 8259 grammar, at most MF_JSON_NUMBER_MAX bytes; an integer-form
 *     number (no fraction, no exponent) of magnitude above 2^53 is refused, so it can never
 *     be read as a neighbouring double; one with a fraction or exponent must be below 2^53
 *     in magnitude (1e400, 9007199254740993.0 are refused);
 *   - nesting at most `max_depth` levels (the top-level object or array is level 1);
 *   - at most `max_bytes` bytes.
 * The check is iterative with a fixed state (device stacks are small) and allocates
 * nothing; cJSON then builds its tree from the checked bytes.
 */
#ifndef MF_CORE_JSON_H
#define MF_CORE_JSON_H

#include "mf_ctx.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Hard bound on max_depth: the check keeps one bit per level and the duplicate-name walk one
 * pointer per level on the stack. */
#define MF_JSON_DEPTH_MAX 32
/* Depth for documents without a tighter schema bound (request bodies, configs, answers). */
#define MF_JSON_DEPTH_DEFAULT 16
/* Longest number token: cJSON reads at most 63 bytes of a number, so a longer one would be
 * split into two tokens by cJSON; it is refused instead. */
#define MF_JSON_NUMBER_MAX 63

/*
 * Parse exactly `len` bytes of `buf` under the profile above into a cJSON tree owned by the
 * caller (cJSON_Delete). `what` names the document in the message ("request body",
 * "check-in answer"), which cites the byte offset and the rule broken.
 * Returns MF_OK; MF_E_INVALID (not in the profile), MF_E_LIMIT (longer than max_bytes or
 * deeper than max_depth), MF_E_NOMEM. max_depth must be 1..MF_JSON_DEPTH_MAX.
 */
int mf_json__parse(cJSON **out, struct mf_ctx *ctx, const void *buf, size_t len, size_t max_bytes,
                   unsigned int max_depth, const char *what) MF_WARN_UNUSED_RESULT;

/* The same, and the top-level value must be an object (MF_E_INVALID otherwise). */
int mf_json__parse_object(cJSON **out, struct mf_ctx *ctx, const void *buf, size_t len,
                          size_t max_bytes, unsigned int max_depth,
                          const char *what) MF_WARN_UNUSED_RESULT;

#endif /* MF_CORE_JSON_H */
