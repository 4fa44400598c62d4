/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: printf into a caller-owned, fixed buffer that remembers overflow, so a writer of
 * bounded JSON (check-in telemetry, offload telemetry) formats its pieces unconditionally and
 * checks once at the end. Never allocates.
 */
#ifndef MF_CORE_STRBUF_H
#define MF_CORE_STRBUF_H

#include "mf/common.h"

#include <stddef.h>

struct mf_strbuf {
    char *buf;
    size_t cap, len;
    int overflow; /* set by the first piece that did not fit; later pieces are dropped */
};

/* Starts writing at buf[0]; `cap` 0 is an overflow from the start. */
void mf_strbuf__init(struct mf_strbuf *w, char *buf, size_t cap);
/* Counts only: `len` grows by what each piece would take; nothing is written. */
void mf_strbuf__init_count(struct mf_strbuf *w);
/* Appends a formatted piece (always NUL-terminated while it fits). */
void mf_strbuf__put(struct mf_strbuf *w, const char *fmt, ...) MF_PRINTF(2, 3);

#endif /* MF_CORE_STRBUF_H */
