/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: a growable byte buffer with a hard maximum (STYLE rule 23). Everything read
 * from the network (HTTP bodies, JSON, manifests) is collected in one of these, so no
 * peer can make us grow without a bound. The content is always NUL-terminated for
 * convenience; the terminator is not counted in `len` but is counted against `max`.
 */
#ifndef MF_CORE_DYNBUF_H
#define MF_CORE_DYNBUF_H

#include "mf/alloc.h"
#include <stddef.h>
#include <stdint.h>

struct mf_dynbuf {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t max; /* largest len + 1 the buffer may ever hold */
    const mf_allocator *alloc;
};

void mf_dynbuf__init(struct mf_dynbuf *b, const mf_allocator *alloc, size_t max);
/* MF_OK, MF_E_LIMIT (would exceed max; buffer unchanged) or MF_E_NOMEM. */
int mf_dynbuf__append(struct mf_dynbuf *b, const void *p, size_t n);
int mf_dynbuf__appendf(struct mf_dynbuf *b, const char *fmt, ...) MF_PRINTF(2, 3);
/* Room for n more bytes without growing again: MF_OK, MF_E_LIMIT or MF_E_NOMEM. */
int mf_dynbuf__reserve(struct mf_dynbuf *b, size_t n);
/* Appends the n bytes at s as a JSON string literal: quoted, with '"', '\\' and control
 * characters escaped as cJSON escapes them (other bytes go as they are: s is UTF-8). On
 * failure b is unchanged. */
int mf_dynbuf__append_json_str(struct mf_dynbuf *b, const char *s, size_t n);
void mf_dynbuf__reset(struct mf_dynbuf *b); /* len = 0, keeps memory */
void mf_dynbuf__free(struct mf_dynbuf *b);  /* releases memory; b may be reused after init */
/* Hands the buffer to the caller (release with mf_free(alloc, p)); b becomes empty. */
uint8_t *mf_dynbuf__take(struct mf_dynbuf *b, size_t *len_out);

#endif /* MF_CORE_DYNBUF_H */
