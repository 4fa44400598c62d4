/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded growable buffer (see mf_dynbuf.h). */
#include "mf_dynbuf.h"
#include "mf/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mf_dynbuf__init(struct mf_dynbuf *b, const mf_allocator *alloc, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->alloc = alloc;
    b->max = max;
}

/* Make room for len + n + 1 bytes; doubles capacity up to max. */
static int dynbuf_reserve(struct mf_dynbuf *b, size_t n)
{
    size_t need, cap;
    uint8_t *p;

    if (n > b->max || b->len + 1 > b->max - n)
        return MF_E_LIMIT;
    need = b->len + n + 1;
    if (need <= b->cap)
        return MF_OK;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > b->max / 2 ? b->max : cap * 2;
    p = mf_alloc(b->alloc, cap);
    if (!p)
        return MF_E_NOMEM;
    if (b->len)
        memcpy(p, b->data, b->len);
    mf_free(b->alloc, b->data);
    b->data = p;
    b->cap = cap;
    return MF_OK;
}

int mf_dynbuf__append(struct mf_dynbuf *b, const void *p, size_t n)
{
    int err = dynbuf_reserve(b, n);

    if (err < 0)
        return err;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return MF_OK;
}

int mf_dynbuf__appendf(struct mf_dynbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n, err;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return MF_E_INVALID;
    err = dynbuf_reserve(b, (size_t)n);
    if (err < 0)
        return err;
    va_start(ap, fmt);
    (void)vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return MF_OK;
}

int mf_dynbuf__reserve(struct mf_dynbuf *b, size_t n)
{
    return dynbuf_reserve(b, n);
}

/* The escape of byte c in a JSON string ("" when it goes as it is), as cJSON writes it. */
static size_t json_escape(char esc[6], unsigned char c)
{
    static const char hex[] = "0123456789abcdef";

    if (c >= 0x20 && c != '"' && c != '\\')
        return 0;
    esc[0] = '\\';
    switch (c) {
    case '"':
        esc[1] = '"';
        return 2;
    case '\\':
        esc[1] = '\\';
        return 2;
    case '\b':
        esc[1] = 'b';
        return 2;
    case '\f':
        esc[1] = 'f';
        return 2;
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    default:
        memcpy(esc + 1, "u00", 3);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

int mf_dynbuf__append_json_str(struct mf_dynbuf *b, const char *s, size_t n)
{
    size_t extra = 0;
    uint8_t *p;
    char esc[6];
    int err;

    /* Sized first, then written in place: envelopes of a few KB with dozens of quotes are
     * what goes through here, once per check-in answer. */
    for (size_t i = 0; i < n; i++) {
        size_t k = json_escape(esc, (unsigned char)s[i]);

        extra += k ? k - 1 : 0;
    }
    if (n > SIZE_MAX - 2 - extra)
        return MF_E_LIMIT;
    err = dynbuf_reserve(b, n + extra + 2);
    if (err < 0)
        return err;
    p = b->data + b->len;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        size_t k = json_escape(esc, (unsigned char)s[i]);

        if (k) {
            memcpy(p, esc, k);
            p += k;
        } else {
            *p++ = (uint8_t)s[i];
        }
    }
    *p++ = '"';
    *p = 0;
    b->len = (size_t)(p - b->data);
    return MF_OK;
}

void mf_dynbuf__reset(struct mf_dynbuf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = 0;
}

void mf_dynbuf__free(struct mf_dynbuf *b)
{
    mf_free(b->alloc, b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

uint8_t *mf_dynbuf__take(struct mf_dynbuf *b, size_t *len_out)
{
    uint8_t *p = b->data;

    if (len_out)
        *len_out = b->len;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
