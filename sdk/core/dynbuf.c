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

/* Bytes a JSON string spends on byte c beyond the one (cJSON's escapes): 5 for \u00XX, 1
 * for the short forms and for '"' and '\\', 0 for the bytes that go as they are. */
/* clang-format off */
static const uint8_t json_extra[256] = {
    5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5, /* \b \t \n \f \r: short forms */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* '\\' */
};
/* clang-format on */

/* Writes the escape of byte c (json_extra[c] != 0) at p; returns the end. */
static uint8_t *json_escape(uint8_t *p, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    static const char short_form[] = "btn\0fr"; /* \b=8 .. \r=13, 11 has none */

    *p++ = '\\';
    if (c == '"' || c == '\\') {
        *p++ = c;
    } else if (json_extra[c] == 1) {
        *p++ = (uint8_t)short_form[c - '\b'];
    } else {
        memcpy(p, "u00", 3);
        p[3] = (uint8_t)hex[c >> 4];
        p[4] = (uint8_t)hex[c & 15];
        p += 5;
    }
    return p;
}

int mf_dynbuf__append_json_str(struct mf_dynbuf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t extra = 0, run = 0;
    uint8_t *p;
    int err;

    /* Sized first, then written in place, runs of plain bytes copied at once: envelopes of
     * a few KB with dozens of quotes go through here, once per check-in answer. */
    for (size_t i = 0; i < n; i++)
        extra += json_extra[u[i]];
    if (n > SIZE_MAX - 2 - extra)
        return MF_E_LIMIT;
    err = dynbuf_reserve(b, n + extra + 2);
    if (err < 0)
        return err;
    p = b->data + b->len;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (!json_extra[u[i]])
            continue;
        memcpy(p, u + run, i - run);
        p = json_escape(p + (i - run), u[i]);
        run = i + 1;
    }
    memcpy(p, u + run, n - run);
    p += n - run;
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
