/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the response header reader of the libcurl adapter (sdk/http/http_client.c,
 * mf_http__parse_header): status line, ETag, Content-Range. Input lines are split at '\n'
 * as libcurl delivers them. Invariants: a parsed range is ordered, the ETag fits its
 * buffer and is NUL-terminated, the status is a 3-digit number or 0.
 */
#include "mf_http.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_http_headers hd;
    const char *p = (const char *)data, *end = p + size;

    memset(&hd, 0, sizeof(hd));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

        mf_http__parse_header(&hd, p, n);
        if ((hd.range_ok && hd.range_first > hd.range_last) || hd.status < 0 || hd.status > 999 ||
            memchr(hd.etag, '\0', sizeof(hd.etag)) == NULL)
            __builtin_trap();
        p += n;
    }
    return 0;
}
