/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container awareness: pairs regions of new with regions of old that hold the same tensor
 * (safetensors: same name, element size from dtype) or the same file (tar: same member
 * name), so the block planner cuts blocks at their boundaries and the block encoder tries
 * their alignment first. Unknown or mismatched formats simply yield no hints and the
 * encoder falls back to the alignments the bsdiff covers suggest.
 */
#include "create_internal.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define SAFETENSORS_MAX_HEADER (100u * 1024u * 1024u) /* the format's own limit */
#define TAR_BLOCK 512u

int mf_diff__hint_push(struct mf_hint_list *l, struct mf_ctx *ctx, const struct mf_align_hint *h)
{
    l->v = mf_diff__list_push(ctx, l->v, &l->n, &l->cap, sizeof(*h), 64, "hint list", h);
    return l->v ? MF_OK : MF_E_NOMEM;
}

void *mf_diff__list_push(struct mf_ctx *ctx, void *v, size_t *n, size_t *cap, size_t elem,
                         size_t first, const char *what, const void *item)
{
    unsigned char *a = v;

    if (*n == *cap) {
        size_t want = *cap ? 2 * *cap : first;

        a = mf_ctx__alloc(ctx, want * elem);
        if (!a) {
            (void)mf_fail(ctx, MF_E_NOMEM, "%s of %zu entries", what, want);
            mf_ctx__free(ctx, v);
            *n = *cap = 0;
            return NULL;
        }
        if (*n)
            memcpy(a, v, *n * elem);
        mf_ctx__free(ctx, v);
        *cap = want;
    }
    memcpy(a + *n * elem, item, elem);
    (*n)++;
    return a;
}

void mf_diff__hint_list_free(struct mf_ctx *ctx, struct mf_hint_list *l)
{
    mf_ctx__free(ctx, l->v);
    memset(l, 0, sizeof(*l));
}

static unsigned int dtype_word(const char *dt)
{
    static const struct {
        const char *name;
        unsigned int word;
    } map[] = {{"F32", 4}, {"I32", 4}, {"U32", 4},  {"F64", 4},     {"I64", 4},
               {"U64", 4}, {"F16", 2}, {"BF16", 2}, {"I16", 2},     {"U16", 2},
               {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(dt, map[i].name) == 0)
            return map[i].word;
    return 0;
}

/* Parsed safetensors header, or NULL when `buf` is not one. *data_off = first data byte. */
static cJSON *safetensors_parse(const uint8_t *buf, size_t len, uint64_t *data_off)
{
    struct mf_ctx scratch;
    uint64_t hlen = 0;
    cJSON *root;

    if (len < 10)
        return NULL;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)buf[i] << (8 * i);
    if (hlen < 2 || hlen > SAFETENSORS_MAX_HEADER || hlen > len - 8 || buf[8] != '{')
        return NULL;
    *data_off = 8 + hlen;
    /* Through the strict reader too: a header with duplicate tensor names or trailing bytes
     * is not treated as safetensors (the scan falls back to plain bytes). The format pads
     * the header with spaces, which is JSON whitespace. */
    mf_ctx__init(&scratch, NULL, NULL, NULL, "diff");
    if (mf_json__parse(&root, &scratch, buf + 8, (size_t)hlen, SAFETENSORS_MAX_HEADER,
                       MF_JSON_DEPTH_DEFAULT, "safetensors header") < 0)
        return NULL;
    return root;
}

/* [begin, end) of tensor `t` in the file, 0 when malformed or outside it. */
static int tensor_range(const cJSON *t, uint64_t data_off, size_t len, uint64_t *b, uint64_t *e)
{
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    const cJSON *lo = cJSON_GetArrayItem(off, 0), *hi = cJSON_GetArrayItem(off, 1);

    if (!cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || lo->valuedouble < 0 ||
        hi->valuedouble < lo->valuedouble)
        return 0;
    *b = data_off + (uint64_t)lo->valuedouble;
    *e = data_off + (uint64_t)hi->valuedouble;
    return *e <= len;
}

static int safetensors_hints(struct mf_hint_list *out, struct mf_ctx *ctx, const uint8_t *old,
                             size_t old_len, const uint8_t *nw, size_t new_len)
{
    uint64_t old_data = 0, new_data = 0;
    cJSON *oj = safetensors_parse(old, old_len, &old_data);
    cJSON *nj = oj ? safetensors_parse(nw, new_len, &new_data) : NULL;
    const cJSON *t;
    int err = MF_OK;

    cJSON_ArrayForEach(t, nj)
    {
        const cJSON *ot = cJSON_GetObjectItemCaseSensitive(oj, t->string);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *odt = cJSON_GetObjectItemCaseSensitive(ot, "dtype");
        uint64_t nb, ne, ob, oe;
        struct mf_align_hint h;

        if (!ot || !cJSON_IsString(dt) || !cJSON_IsString(odt) ||
            strcmp(dt->valuestring, odt->valuestring) != 0 ||
            !tensor_range(t, new_data, new_len, &nb, &ne) ||
            !tensor_range(ot, old_data, old_len, &ob, &oe) || ne - nb != oe - ob || ne == nb)
            continue;
        h = (struct mf_align_hint){nb, ob, ne - nb, dtype_word(dt->valuestring)};
        err = mf_diff__hint_push(out, ctx, &h);
        if (err < 0)
            break;
    }
    cJSON_Delete(oj);
    cJSON_Delete(nj);
    return err;
}

/* Size field of a ustar header (octal); UINT64_MAX when malformed. */
static uint64_t tar_size(const uint8_t *h)
{
    uint64_t v = 0;

    for (int i = 124; i < 136 && h[i] != 0 && h[i] != ' '; i++) {
        if (h[i] < '0' || h[i] > '7')
            return UINT64_MAX;
        v = v * 8 + (uint64_t)(h[i] - '0');
    }
    return v;
}

static int is_tar(const uint8_t *buf, size_t len)
{
    return len >= TAR_BLOCK && memcmp(buf + 257, "ustar", 5) == 0;
}

/* Data offset and size of member `name` in a tar image, 0 when absent. */
static int tar_find(const uint8_t *buf, size_t len, const uint8_t *name, uint64_t *off,
                    uint64_t *size)
{
    for (uint64_t pos = 0; pos + TAR_BLOCK <= len;) {
        const uint8_t *h = buf + pos;
        uint64_t sz = tar_size(h);

        if (h[0] == 0 || sz == UINT64_MAX)
            return 0;
        if (memcmp(h, name, 100) == 0 && memcmp(h + 345, name + 100, 155) == 0) {
            *off = pos + TAR_BLOCK;
            *size = sz;
            return *off + sz <= len;
        }
        pos += TAR_BLOCK + (sz + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
    }
    return 0;
}

static int tar_hints(struct mf_hint_list *out, struct mf_ctx *ctx, const uint8_t *old,
                     size_t old_len, const uint8_t *nw, size_t new_len)
{
    for (uint64_t pos = 0; pos + TAR_BLOCK <= new_len;) {
        const uint8_t *h = nw + pos;
        uint64_t sz = tar_size(h), ooff, osz;
        uint8_t name[255];

        if (h[0] == 0 || sz == UINT64_MAX || pos + TAR_BLOCK + sz > new_len)
            break;
        memcpy(name, h, 100);
        memcpy(name + 100, h + 345, 155);
        if (sz && tar_find(old, old_len, name, &ooff, &osz)) {
            struct mf_align_hint a = {pos + TAR_BLOCK, ooff, sz, 0};
            int err = mf_diff__hint_push(out, ctx, &a);

            if (err < 0)
                return err;
        }
        pos += TAR_BLOCK + (sz + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
    }
    return MF_OK;
}

static int hint_cmp(const void *a, const void *b)
{
    const struct mf_align_hint *x = a, *y = b;

    return x->new_pos < y->new_pos ? -1 : x->new_pos > y->new_pos;
}

int mf_diff__container_hints(struct mf_hint_list *out, struct mf_ctx *ctx, const uint8_t *old,
                             size_t old_len, const uint8_t *new_img, size_t new_len)
{
    int err = MF_OK;

    memset(out, 0, sizeof(*out));
    if (is_tar(old, old_len) && is_tar(new_img, new_len))
        err = tar_hints(out, ctx, old, old_len, new_img, new_len);
    else
        err = safetensors_hints(out, ctx, old, old_len, new_img, new_len);
    if (err < 0) {
        mf_diff__hint_list_free(ctx, out);
        return err;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof(out->v[0]), hint_cmp);
    return MF_OK;
}
