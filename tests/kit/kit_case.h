/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven cases: an input and what it must give, and the check that a parser refuses each
 * bad input of a table with a message naming what is wrong. */
#ifndef MF_KIT_CASE_H
#define MF_KIT_CASE_H

#include <stddef.h>

struct mf_ctx;

/* One case: an input and what it must give (the output, or words its error message holds). */
struct mf_kit_case {
    const char *in, *want;
};

/* The code under test: parses `in` (with `payload`, the test's own state), MF_E_INVALID and a
 * message in `ctx` when it refuses it. */
typedef int (*mf_kit_parse_fn)(void *payload, struct mf_ctx *ctx, const char *in);

/* Runs `parse` on each case's input with a fresh context; fails naming the first case it
 * accepts, or refuses with a message that lacks the case's `want`. */
void mf_kit_case_refused(const struct mf_kit_case *cases, size_t n, mf_kit_parse_fn parse,
                         void *payload);

#endif /* MF_KIT_CASE_H */
