/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: streaming patch apply with random in/out window sizes, including zero-room
 * calls. Input: [in-window selector][out-window selector][old length u16 LE][old][patch].
 * Properties: never crash or overrun; MF_OK only with exactly new_size bytes produced (the
 * sha256 has been checked by then); the workspace is the only allocation.
 */
#include "mf/error.h"
#include "mf/alloc.h"
#include "mf/patch.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_source {
    const uint8_t *old;
    size_t len;
};

static int fz_read(void *payload, uint64_t off, void *buf, size_t len)
{
    const struct fz_source *s = payload;

    if (off > s->len || len > s->len - off)
        return 0;
    memcpy(buf, s->old + off, len);
    return (int)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t windows[8] = {1, 2, 7, 64, 1000, 4096, 65536, (size_t)-1};
    static uint8_t out[1 << 20];
    struct fz_source src;
    mf_patch_options o;
    mf_patch *p = NULL;
    size_t in_w, out_w, ipos = 0, opos = 0, plen;
    const uint8_t *patch;
    int r = MF_AGAIN;

    if (size < 4)
        return 0;
    in_w = windows[data[0] & 7];
    out_w = windows[data[1] & 7];
    src.len = (size_t)data[2] | (size_t)data[3] << 8;
    if (src.len > size - 4)
        return 0;
    src.old = data + 4;
    patch = src.old + src.len;
    plen = size - 4 - src.len;
    if (mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION) < 0)
        abort();
    o.max_window = 65536;
    o.source_read = fz_read;
    o.source_payload = &src;
    if (mf_patch_new(&p, &o, NULL) < 0)
        abort();
    while (r == MF_AGAIN) {
        mf_inbuf in0 = {patch + ipos, 0, 0};
        mf_outbuf out0 = {out + opos, 0, 0};
        mf_inbuf in = {patch + ipos, plen - ipos < in_w ? plen - ipos : in_w, 0};
        mf_outbuf ob = {out + opos, sizeof(out) - opos < out_w ? sizeof(out) - opos : out_w, 0};

        r = mf_patch_apply(p, &out0, &in0);
        if (r != MF_AGAIN)
            break;
        if (in0.pos || out0.pos)
            abort(); /* zero-size buffers must not move */
        r = mf_patch_apply(p, &ob, &in);
        if (in.pos > in.size || ob.pos > ob.size)
            abort();
        ipos += in.pos;
        opos += ob.pos;
        if (r == MF_AGAIN && in.pos == 0 && ob.pos == 0)
            break; /* starved */
    }
    if (r == MF_OK && mf_patch_new_offset(p) != opos)
        abort();
    if (r < 0 && mf_patch_errmsg(p)[0] == '\0')
        abort(); /* every failure explains itself */
    mf_patch_free(p);
    return 0;
}
