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

int mf_dynbuf__append_json_str(struct mf_dynbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0; /* start of the bytes not yet appended */
    int err = mf_dynbuf__append(b, "\"", 1);

    for (size_t i = 0; err == MF_OK && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t len = 2;

        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            len = 6;
        }
        err = mf_dynbuf__append(b, s + run, i - run);
        if (err == MF_OK)
            err = mf_dynbuf__append(b, esc, len);
        run = i + 1;
    }
    if (err == MF_OK)
        err = mf_dynbuf__append(b, s + run, n - run);
    return err == MF_OK ? mf_dynbuf__append(b, "\"", 1) : err;
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
