/* SPDX-License-Identifier: Apache-2.0 */
/* Single byte-range parser (see http_range.h). */
#include "http/http_range.h"

#include <stddef.h>

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Reads 1*DIGIT at *pp, saturating at UINT64_MAX. 0 when there is no digit. */
static int read_pos(uint64_t *out, const char **pp)
{
    const char *p = *pp;
    uint64_t v = 0;

    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');

        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    *out = v;
    *pp = p;
    return 1;
}

static int unit_is_bytes(const char **pp)
{
    static const char unit[] = "bytes=";
    const char *p = *pp;

    /* The range unit is case-insensitive (RFC 9110 section 14.1). */
    for (size_t i = 0; i < sizeof(unit) - 1; i++) {
        char c = p[i];

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != unit[i])
            return 0;
    }
    *pp = p + sizeof(unit) - 1;
    return 1;
}

int mf_httpd__range_parse(struct mf_range *out, const char *header, uint64_t size)
{
    const char *p = header;
    uint64_t first = 0, last = UINT64_MAX;
    int has_first;

    if (!p || !unit_is_bytes(&p))
        return MF_RANGE_FULL;
    p = skip_ows(p);
    has_first = read_pos(&first, &p);
    if (*p != '-')
        return MF_RANGE_FULL;
    p++;
    if (!read_pos(&last, &p) && !has_first)
        return MF_RANGE_FULL; /* "bytes=-": neither end */
    p = skip_ows(p);
    if (*p != '\0')
        return MF_RANGE_FULL; /* a second range (",") or trailing junk */

    if (!has_first) {
        /* Suffix range "-n": the last n bytes; n larger than the blob means all of it. */
        if (last == 0 || size == 0)
            return MF_RANGE_UNSATISFIABLE;
        out->length = last < size ? last : size;
        out->first = size - out->length;
        return MF_RANGE_PARTIAL;
    }
    if (last < first)
        return MF_RANGE_FULL; /* syntactically invalid: ignore the header */
    if (first >= size)
        return MF_RANGE_UNSATISFIABLE;
    if (last >= size)
        last = size - 1;
    out->first = first;
    out->length = last - first + 1;
    return MF_RANGE_PARTIAL;
}
