/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Range request header of RFC 9110 section 14, as far as docs/protocol.md serves it: one
 * byte range (a-b, a-, -n). Anything else the server may legally ignore (multi-range, other
 * units, syntax errors) is answered with the full representation.
 */
#ifndef MF_SERVER_HTTP_RANGE_H
#define MF_SERVER_HTTP_RANGE_H

#include <stdint.h>

enum mf_range_kind {
    MF_RANGE_FULL = 0,         /* no usable Range: 200 with the whole blob */
    MF_RANGE_PARTIAL = 1,      /* 206 with bytes first .. first + length - 1 */
    MF_RANGE_UNSATISFIABLE = 2 /* 416 with Content-Range: bytes + slash + size */
};

struct mf_range {
    uint64_t first;
    uint64_t length; /* > 0 for MF_RANGE_PARTIAL */
};

/*
 * Classifies `header` (NULL: absent) against a representation of `size` bytes and, for
 * MF_RANGE_PARTIAL, fills `out`. Positions too large for 64 bits saturate, so they are
 * compared with `size` like any other large number. Never fails: returns an mf_range_kind.
 */
int mf_httpd__range_parse(struct mf_range *out, const char *header, uint64_t size);

#endif /* MF_SERVER_HTTP_RANGE_H */
