/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the server's Range header parser. Input: 8 bytes of representation size
 * (little-endian), then the header text. Checks the parser's promise on every input: a
 * partial range is non-empty and lies inside the blob.
 */
#include "http/http_range.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_range r = {0, 0};
    uint64_t blob = 0;
    char *hdr;
    int kind;

    if (size < 8)
        return 0;
    for (int i = 7; i >= 0; i--)
        blob = blob << 8 | data[i];
    hdr = malloc(size - 8 + 1);
    if (!hdr)
        return 0;
    memcpy(hdr, data + 8, size - 8);
    hdr[size - 8] = '\0';
    kind = mf_httpd__range_parse(&r, hdr, blob);
    if (kind == MF_RANGE_PARTIAL && (r.length == 0 || r.first > blob - r.length))
        abort();
    if (kind != MF_RANGE_FULL && kind != MF_RANGE_PARTIAL && kind != MF_RANGE_UNSATISFIABLE)
        abort();
    free(hdr);
    return 0;
}
