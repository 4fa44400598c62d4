/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safetensors: strict header validation (cJSON) over a borrowed buffer, and the writer.
 * Names and metadata are copied out of the cJSON tree into one owned block, so the tree is
 * freed before parse returns and lookups never touch JSON again.
 */
#include "mf_safetensors.h"

#include "mf_ctx.h"
#include "mf_json.h"
#include "mf_dynbuf.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; add byte swapping for this target"
#endif

#define META_KEY "__metadata__"
#define MAX_META 64u
#define MAX_META_LEN 1024u

struct mf_safetensors {
    mf_allocator alloc;
    size_t n;
    mf_st_tensor *t;
    size_t n_meta;
    char **meta; /* key, value, key, value ... */
    char *strings;
};

static const struct {
    const char *name;
    mf_st_dtype dtype;
    size_t size;
} dtype_table[] = {
    {"F32", MF_ST_F32, 4},
    {"I8", MF_ST_I8, 1},
    {"U8", MF_ST_U8, 1},
    {"I32", MF_ST_I32, 4},
};

#define DTYPE_COUNT (sizeof(dtype_table) / sizeof(dtype_table[0]))

size_t mf_st_dtype_size(mf_st_dtype dtype)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == dtype)
            return dtype_table[i].size;
    return 0;
}

static const char *dtype_name(mf_st_dtype dtype)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == dtype)
            return dtype_table[i].name;
    return NULL;
}

void mf_safetensors_free(mf_safetensors *st)
{
    mf_allocator a;

    if (!st)
        return;
    a = st->alloc;
    mf_free(&a, st->t);
    mf_free(&a, st->meta);
    mf_free(&a, st->strings);
    mf_free(&a, st);
}

size_t mf_safetensors_count(const mf_safetensors *st)
{
    return st->n;
}

const mf_st_tensor *mf_safetensors_at(const mf_safetensors *st, size_t i)
{
    return i < st->n ? &st->t[i] : NULL;
}

const char *mf_safetensors_meta(const mf_safetensors *st, const char *key)
{
    for (size_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[2 * i], key) == 0)
            return st->meta[2 * i + 1];
    return NULL;
}

/* A JSON number that is a non-negative integer representable exactly (< 2^53). */
static int json_u64(uint64_t *v, const cJSON *j)
{
    double d;

    if (!cJSON_IsNumber(j))
        return -1;
    d = j->valuedouble;
    if (!(d >= 0.0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        return -1;
    *v = (uint64_t)d;
    return 0;
}

/* Validates one tensor entry (everything but its place among the others). */
static int parse_tensor(mf_st_tensor *t, uint64_t *begin, struct mf_ctx *ctx, const cJSON *e,
                        uint64_t data_len)
{
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL, *f;
    uint64_t nbytes = 1, end;
    size_t k = 0;

    if (!cJSON_IsObject(e))
        return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s' is not an object", e->string);
    cJSON_ArrayForEach(f, e)
    {
        if (strcmp(f->string, "dtype") == 0 && !dt)
            dt = f;
        else if (strcmp(f->string, "shape") == 0 && !shape)
            shape = f;
        else if (strcmp(f->string, "data_offsets") == 0 && !offs)
            offs = f;
        else
            return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s': unexpected key '%s'",
                           e->string, f->string);
    }
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return mf_fail(ctx, MF_E_INVALID,
                       "safetensors: tensor '%s' needs dtype, shape and data_offsets", e->string);
    for (k = 0; k < DTYPE_COUNT; k++)
        if (strcmp(dt->valuestring, dtype_table[k].name) == 0)
            break;
    if (k == DTYPE_COUNT)
        return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s': unsupported dtype '%.16s'",
                       e->string, dt->valuestring);
    t->dtype = dtype_table[k].dtype;
    nbytes = dtype_table[k].size;
    t->rank = 0;
    cJSON_ArrayForEach(f, shape)
    {
        uint64_t d;
        if (t->rank == MF_SAFETENSORS_MAX_RANK)
            return mf_fail(ctx, MF_E_LIMIT, "safetensors: tensor '%s' has more than %u dims",
                           e->string, MF_SAFETENSORS_MAX_RANK);
        if (json_u64(&d, f) < 0)
            return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s': bad dimension", e->string);
        /* Any dim above the data size is impossible; this also keeps the product bounded. */
        if (d > data_len)
            return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s': dimension %llu too big",
                           e->string, (unsigned long long)d);
        t->shape[t->rank++] = d;
        if (d != 0 && nbytes > data_len / d)
            return mf_fail(ctx, MF_E_INVALID,
                           "safetensors: tensor '%s' needs more bytes than the file has",
                           e->string);
        nbytes *= d;
    }
    if (cJSON_GetArraySize(offs) != 2 || json_u64(begin, cJSON_GetArrayItem(offs, 0)) < 0 ||
        json_u64(&end, cJSON_GetArrayItem(offs, 1)) < 0)
        return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s': bad data_offsets", e->string);
    if (*begin > end || end > data_len)
        return mf_fail(ctx, MF_E_INVALID,
                       "safetensors: tensor '%s': offsets [%llu, %llu] outside %llu data bytes",
                       e->string, (unsigned long long)*begin, (unsigned long long)end,
                       (unsigned long long)data_len);
    if (end - *begin != nbytes)
        return mf_fail(ctx, MF_E_INVALID,
                       "safetensors: tensor '%s': %llu bytes for a shape needing %llu", e->string,
                       (unsigned long long)(end - *begin), (unsigned long long)nbytes);
    t->nbytes = nbytes;
    return MF_OK;
}

struct order {
    uint64_t begin;
    size_t i;
};

static int order_cmp(const void *a, const void *b)
{
    const struct order *x = a, *y = b;

    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->i < y->i ? -1 : (x->i > y->i);
}

/* Copies names and metadata into one block; the tree is freed by the caller afterwards. */
static int copy_strings(mf_safetensors *st, struct mf_ctx *ctx, const cJSON *root,
                        const cJSON *meta)
{
    size_t total = 0, pos = 0, ti = 0, mi = 0;
    const cJSON *e;

    cJSON_ArrayForEach(e, root)
    {
        if (e != meta)
            total += strlen(e->string) + 1;
    }
    if (meta)
        cJSON_ArrayForEach(e, meta)
        {
            total += strlen(e->string) + strlen(e->valuestring) + 2;
        }
    st->strings = mf_alloc(&st->alloc, total ? total : 1);
    if (st->n_meta)
        st->meta = mf_calloc(&st->alloc, 2 * st->n_meta, sizeof(char *));
    if (!st->strings || (st->n_meta && !st->meta))
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    cJSON_ArrayForEach(e, root)
    {
        size_t l;
        if (e == meta)
            continue;
        l = strlen(e->string) + 1;
        memcpy(st->strings + pos, e->string, l);
        st->t[ti++].name = st->strings + pos;
        pos += l;
    }
    if (meta)
        cJSON_ArrayForEach(e, meta)
        {
            size_t kl = strlen(e->string) + 1, vl = strlen(e->valuestring) + 1;
            memcpy(st->strings + pos, e->string, kl);
            st->meta[mi++] = st->strings + pos;
            pos += kl;
            memcpy(st->strings + pos, e->valuestring, vl);
            st->meta[mi++] = st->strings + pos;
            pos += vl;
        }
    return MF_OK;
}

static int check_meta(size_t *n_meta, struct mf_ctx *ctx, const cJSON *meta)
{
    const cJSON *e;

    *n_meta = 0;
    if (!cJSON_IsObject(meta))
        return mf_fail(ctx, MF_E_INVALID, "safetensors: __metadata__ is not an object");
    cJSON_ArrayForEach(e, meta)
    {
        if (!cJSON_IsString(e))
            return mf_fail(ctx, MF_E_INVALID, "safetensors: metadata '%.64s' is not a string",
                           e->string);
        if (strlen(e->string) > MAX_META_LEN || strlen(e->valuestring) > MAX_META_LEN)
            return mf_fail(ctx, MF_E_LIMIT, "safetensors: metadata entry too long");
        if (++*n_meta > MAX_META)
            return mf_fail(ctx, MF_E_LIMIT, "safetensors: more than %u metadata entries", MAX_META);
        for (const cJSON *o = meta->child; o != e; o = o->next)
            if (strcmp(o->string, e->string) == 0)
                return mf_fail(ctx, MF_E_INVALID, "safetensors: duplicate metadata '%.64s'",
                               e->string);
    }
    return MF_OK;
}

/* Tensors, sorted by offset, must tile the data area exactly: no hole, no overlap. */
static int check_tiling(mf_safetensors *st, struct mf_ctx *ctx, struct order *ord,
                        uint64_t data_len)
{
    uint64_t at = 0;
    mf_st_tensor *sorted;

    qsort(ord, st->n, sizeof(*ord), order_cmp);
    for (size_t k = 0; k < st->n; k++) {
        const mf_st_tensor *t = &st->t[ord[k].i];
        if (ord[k].begin != at)
            return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor '%s' at %llu, expected %llu",
                           t->name, (unsigned long long)ord[k].begin, (unsigned long long)at);
        at += t->nbytes;
    }
    if (at != data_len)
        return mf_fail(ctx, MF_E_INVALID, "safetensors: %llu data bytes not covered by tensors",
                       (unsigned long long)(data_len - at));
    sorted = mf_calloc(&st->alloc, st->n ? st->n : 1, sizeof(*sorted));
    if (!sorted)
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    for (size_t k = 0; k < st->n; k++)
        sorted[k] = st->t[ord[k].i];
    mf_free(&st->alloc, st->t);
    st->t = sorted;
    return MF_OK;
}

static int parse_root(mf_safetensors *st, struct mf_ctx *ctx, const cJSON *root,
                      const uint8_t *data, uint64_t data_len)
{
    const cJSON *meta = NULL, *e;
    struct order *ord = NULL;
    size_t n = 0, i = 0;
    int err;

    if (!cJSON_IsObject(root))
        return mf_fail(ctx, MF_E_INVALID, "safetensors: header is not a JSON object");
    cJSON_ArrayForEach(e, root)
    {
        if (strlen(e->string) == 0 || strlen(e->string) > MF_SAFETENSORS_MAX_NAME)
            return mf_fail(ctx, MF_E_INVALID, "safetensors: tensor name of %zu bytes",
                           strlen(e->string));
        /* Count before the quadratic duplicate scan, so a huge header fails fast. */
        if (strcmp(e->string, META_KEY) != 0 && ++n > MF_SAFETENSORS_MAX_TENSORS)
            return mf_fail(ctx, MF_E_LIMIT, "safetensors: more than %u tensors",
                           MF_SAFETENSORS_MAX_TENSORS);
        for (const cJSON *o = root->child; o != e; o = o->next)
            if (strcmp(o->string, e->string) == 0)
                return mf_fail(ctx, MF_E_INVALID, "safetensors: duplicate key '%s'", e->string);
        if (strcmp(e->string, META_KEY) == 0)
            meta = e;
    }
    if (meta) {
        err = check_meta(&st->n_meta, ctx, meta);
        if (err < 0)
            return err;
    }
    st->n = n;
    st->t = mf_calloc(&st->alloc, n ? n : 1, sizeof(*st->t));
    ord = mf_calloc(&st->alloc, n ? n : 1, sizeof(*ord));
    if (!st->t || !ord) {
        mf_free(&st->alloc, ord);
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    }
    err = copy_strings(st, ctx, root, meta);
    cJSON_ArrayForEach(e, root)
    {
        if (err < 0)
            break;
        if (e == meta)
            continue;
        err = parse_tensor(&st->t[i], &ord[i].begin, ctx, e, data_len);
        if (err == MF_OK)
            st->t[i].data = data + ord[i].begin;
        ord[i].i = i;
        i++;
    }
    if (err == MF_OK)
        err = check_tiling(st, ctx, ord, data_len);
    mf_free(&st->alloc, ord);
    return err;
}

int mf_safetensors_parse(mf_safetensors **out, struct mf_ctx *ctx, const mf_allocator *alloc,
                         const uint8_t *buf, size_t len)
{
    const mf_allocator *a = alloc ? alloc : mf_allocator_default();
    mf_safetensors *st;
    cJSON *root;
    uint64_t hlen = 0;
    int err;

    *out = NULL;
    if (len < 8)
        return mf_fail(ctx, MF_E_INVALID, "safetensors: %zu bytes, need at least 8", len);
    for (int k = 7; k >= 0; k--)
        hlen = hlen << 8 | buf[k];
    if (hlen > MF_SAFETENSORS_MAX_HEADER)
        return mf_fail(ctx, MF_E_LIMIT, "safetensors: header of %llu bytes exceeds %u",
                       (unsigned long long)hlen, MF_SAFETENSORS_MAX_HEADER);
    if (hlen < 2 || hlen > len - 8)
        return mf_fail(ctx, MF_E_INVALID, "safetensors: header length %llu, file has %zu bytes",
                       (unsigned long long)hlen, len);
    if (buf[8] != '{')
        return mf_fail(ctx, MF_E_INVALID, "safetensors: header does not start with '{'");
    /* The spec pads the header with spaces (JSON whitespace); the reader sees exactly the
     * header bytes and refuses duplicate tensor names. */
    err = mf_json__parse_object(&root, ctx, buf + 8, (size_t)hlen, MF_SAFETENSORS_MAX_HEADER,
                                MF_JSON_DEPTH_DEFAULT, "safetensors header");
    if (err < 0)
        return err;
    st = mf_calloc(a, 1, sizeof(*st));
    if (!st) {
        cJSON_Delete(root);
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    }
    st->alloc = *a;
    err = parse_root(st, ctx, root, buf + 8 + hlen, len - 8 - hlen);
    cJSON_Delete(root);
    if (err < 0) {
        mf_safetensors_free(st);
        return err;
    }
    *out = st;
    return MF_OK;
}

int mf_safetensors_get(const mf_st_tensor **out, struct mf_ctx *ctx, const mf_safetensors *st,
                       const char *name, mf_st_dtype dtype, uint32_t rank, const uint64_t *shape)
{
    *out = NULL;
    for (size_t i = 0; i < st->n; i++) {
        const mf_st_tensor *t = &st->t[i];
        if (strcmp(t->name, name) != 0)
            continue;
        if (t->dtype != dtype || t->rank != rank)
            return mf_fail(ctx, MF_E_INVALID, "tensor '%s': dtype %s rank %u, want %s rank %u",
                           name, dtype_name(t->dtype), t->rank, dtype_name(dtype), rank);
        for (uint32_t d = 0; d < rank; d++)
            if (t->shape[d] != shape[d])
                return mf_fail(ctx, MF_E_INVALID, "tensor '%s': dim %u is %llu, want %llu", name, d,
                               (unsigned long long)t->shape[d], (unsigned long long)shape[d]);
        *out = t;
        return MF_OK;
    }
    return mf_fail(ctx, MF_E_NOTFOUND, "tensor '%s' not found", name);
}

static int build_header(cJSON **out, struct mf_ctx *ctx, const mf_st_entry *t, size_t n,
                        const char *const *meta, size_t n_meta, uint64_t *data_len)
{
    cJSON *root = cJSON_CreateObject(), *m = NULL;
    uint64_t off = 0;

    *out = NULL;
    if (!root)
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    if (n_meta > 0) {
        m = cJSON_AddObjectToObject(root, META_KEY);
        for (size_t i = 0; m && i < n_meta; i++)
            if (!cJSON_AddStringToObject(m, meta[2 * i], meta[2 * i + 1]))
                m = NULL;
        if (!m)
            goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *e, *shape, *offs;
        uint64_t nb = mf_st_dtype_size(t[i].dtype);
        if (nb == 0 || t[i].rank > MF_SAFETENSORS_MAX_RANK || !t[i].name[0] ||
            strlen(t[i].name) > MF_SAFETENSORS_MAX_NAME || strcmp(t[i].name, META_KEY) == 0 ||
            cJSON_GetObjectItemCaseSensitive(root, t[i].name)) {
            cJSON_Delete(root);
            return mf_fail(ctx, MF_E_INVALID, "safetensors: cannot write tensor '%.64s'",
                           t[i].name);
        }
        for (uint32_t d = 0; d < t[i].rank; d++)
            nb *= t[i].shape[d];
        e = cJSON_AddObjectToObject(root, t[i].name);
        shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
        offs = shape ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        if (!offs || !cJSON_AddStringToObject(e, "dtype", dtype_name(t[i].dtype)))
            goto nomem;
        for (uint32_t d = 0; d < t[i].rank; d++)
            if (!cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d])))
                goto nomem;
        if (!cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off)) ||
            !cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + nb))))
            goto nomem;
        off += nb;
    }
    *data_len = off;
    *out = root;
    return MF_OK;
nomem:
    cJSON_Delete(root);
    return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
}

int mf_safetensors_write(struct mf_dynbuf *out, struct mf_ctx *ctx, const mf_st_entry *t, size_t n,
                         const char *const *meta, size_t n_meta)
{
    static const char spaces[8] = "        ";
    cJSON *root;
    char *json;
    uint64_t data_len, hlen;
    uint8_t lenbuf[8];
    size_t jl;
    int err;

    if (n > MF_SAFETENSORS_MAX_TENSORS || n_meta > MAX_META)
        return mf_fail(ctx, MF_E_LIMIT, "safetensors: too many tensors or metadata entries");
    err = build_header(&root, ctx, t, n, meta, n_meta, &data_len);
    if (err < 0)
        return err;
    json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json)
        return mf_fail(ctx, MF_E_NOMEM, "safetensors: out of memory");
    jl = strlen(json);
    /* Pad with spaces so the data starts 8-byte aligned, as the reference writer does. */
    hlen = (jl + 7u) & ~(uint64_t)7u;
    for (int k = 0; k < 8; k++)
        lenbuf[k] = (uint8_t)(hlen >> (8 * k));
    err = mf_dynbuf__append(out, lenbuf, 8);
    if (err == MF_OK)
        err = mf_dynbuf__append(out, json, jl);
    if (err == MF_OK)
        err = mf_dynbuf__append(out, spaces, (size_t)(hlen - jl));
    cJSON_free(json);
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        uint64_t nb = mf_st_dtype_size(t[i].dtype);
        for (uint32_t d = 0; d < t[i].rank; d++)
            nb *= t[i].shape[d];
        err = mf_dynbuf__append(out, t[i].data, (size_t)nb);
    }
    if (err < 0)
        return mf_fail(ctx, err, "safetensors: output buffer: %s", mf_strerror(err));
    return MF_OK;
}
