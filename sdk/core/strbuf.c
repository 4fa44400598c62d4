/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded printf into a caller buffer (mf_strbuf.h). */
#include "mf_strbuf.h"

#include <stdarg.h>
#include <stdio.h>

void mf_strbuf__init(struct mf_strbuf *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->overflow = cap == 0;
}

void mf_strbuf__init_count(struct mf_strbuf *w)
{
    w->buf = NULL;
    w->cap = 0;
    w->len = 0;
    w->overflow = 0;
}

void mf_strbuf__put(struct mf_strbuf *w, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (w->overflow)
        return;
    va_start(ap, fmt);
    n = w->buf ? vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (!w->buf) {
        w->overflow = n < 0;
        w->len += n < 0 ? 0 : (size_t)n;
        return;
    }
    if (n < 0 || (size_t)n >= w->cap - w->len) {
        w->overflow = 1;
        return;
    }
    w->len += (size_t)n;
}
