/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Release and assignment documents (docs/formats/manifest.md). Each parses into one
 * allocation that carries the allocator it came from, so the public free functions need no
 * handle. Counts come from the parsed tree (never from a length field) and are bounded
 * before anything is sized from them.
 *
 * The chunk hashes come either as the flat `chunks` list (format 1) or as the RFC 9162 root
 * `chunks_root` over them (the chunk tree, §3): the release is then a few hundred bytes for
 * any model size and the list travels as a blob of its own, checked against the root by
 * mf_trust_check_chunk_list(). A release carrying both (the transition: agents of format 1
 * read the list, newer ones the root) is refused unless the list hashes to the root.
 */
#include "manifest_json.h"
#include "mf/ct.h"
#include "mf_hex.h"
#include "mf_merkle.h"

#include <string.h>

struct release_block {
    mf_manifest_release pub; /* first: the public pointer is the block */
    mf_allocator alloc;
    char name[MF_MANIFEST_NAME_MAX + 1];
    char version[MF_MANIFEST_NAME_MAX + 1];
    /* followed by mf_manifest_delta[delta_count], then uint8_t[chunk_count][32] */
};

struct assignment_block {
    mf_manifest_assignment pub; /* first, as above */
    mf_allocator alloc;
    mf_manifest_release *release; /* owned */
    char device_id[MF_MANIFEST_NAME_MAX + 1];
    char model[MF_MANIFEST_NAME_MAX + 1];
    char nonce[MF_MANIFEST_NAME_MAX + 1];
    char reason[MF_MANIFEST_REASON_MAX + 1];
};

_Static_assert(sizeof(struct release_block) % _Alignof(mf_manifest_delta) == 0,
               "deltas follow the block header without padding");

/* The required name members `keys[i]` into dst[i] (MF_MANIFEST_NAME_MAX + 1 bytes each), in
 * order: the first missing or malformed one is the error. */
static int parse_names(char *const *dst, struct mf_ctx *ctx, const cJSON *doc,
                       const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int err = mf_manifest__json_name(dst[i], ctx, doc, keys[i]);

        if (err < 0)
            return err;
    }
    return MF_OK;
}

static int parse_deltas(mf_manifest_delta *d, struct mf_ctx *ctx, const cJSON *arr)
{
    const cJSON *it;
    size_t i = 0;
    int err;

    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsObject(it))
            return mf_fail(ctx, MF_E_INVALID, "release: delta %zu is not an object", i);
        err = mf_manifest__json_hex32(d[i].from_sha256, ctx, it, "from_sha256");
        if (err < 0)
            return err;
        err = mf_manifest__json_hex32(d[i].sha256, ctx, it, "sha256");
        if (err < 0)
            return err;
        err = mf_manifest__json_u64(&d[i].size, ctx, it, "size");
        if (err < 0)
            return err;
        if (d[i].size == 0)
            return mf_fail(ctx, MF_E_INVALID, "release: delta %zu has size 0", i);
        i++;
    }
    return MF_OK;
}

static int parse_chunks(uint8_t (*chunks)[MF_MANIFEST_DIGEST_LEN], struct mf_ctx *ctx,
                        const cJSON *arr)
{
    const cJSON *it;
    size_t i = 0;

    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it) || !it->valuestring || !mf_hex__is_sha256(it->valuestring) ||
            mf_hex__decode(chunks[i], MF_MANIFEST_DIGEST_LEN, it->valuestring, MF_SHA256_HEX_LEN) <
                0)
            return mf_fail(ctx, MF_E_INVALID, "release: chunk %zu is not 64 lower-case hex", i);
        i++;
    }
    return MF_OK;
}

/* Fields that need no allocation; validated before the block is sized. */
struct release_scalars {
    uint64_t sequence, size, chunk_size, security_floor, created, expires;
};

static int parse_scalars(struct release_scalars *s, struct mf_ctx *ctx, const cJSON *doc)
{
    static const char *const keys[] = {"sequence",       "size",    "chunk_size",
                                       "security_floor", "created", "expires"};
    uint64_t *dst[] = {&s->sequence,       &s->size,    &s->chunk_size,
                       &s->security_floor, &s->created, &s->expires};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int err = mf_manifest__json_u64(dst[i], ctx, doc, keys[i]);

        if (err < 0)
            return err;
    }
    if (s->size == 0)
        return mf_fail(ctx, MF_E_INVALID, "release: size is 0");
    if (s->chunk_size == 0 || s->chunk_size > UINT32_MAX)
        return mf_fail(ctx, MF_E_INVALID, "release: chunk_size %llu outside 1..2^32-1",
                       (unsigned long long)s->chunk_size);
    if (s->expires <= s->created)
        return mf_fail(ctx, MF_E_INVALID, "release: expires %llu not after created %llu",
                       (unsigned long long)s->expires, (unsigned long long)s->created);
    return MF_OK;
}

/* The end of a document parse, success or not: the tree goes, and so does the block when
 * `err` says its fill failed (or it is NULL). Returns err. */
static int parse_end(struct mf_ctx *ctx, cJSON *doc, void *block, int err)
{
    cJSON_Delete(doc);
    if (err < 0)
        mf_free(&ctx->alloc, block);
    return err;
}

static int release_fill(struct release_block *b, struct mf_ctx *ctx, const cJSON *doc,
                        const struct release_scalars *s, const cJSON *chunks, const cJSON *deltas)
{
    mf_manifest_release *r = &b->pub;
    mf_manifest_delta *d = (mf_manifest_delta *)(b + 1);
    uint8_t(*c)[MF_MANIFEST_DIGEST_LEN] = (uint8_t(*)[MF_MANIFEST_DIGEST_LEN])(d + r->delta_count);
    static const char *const keys[] = {"name", "version"};
    char *const dst[] = {b->name, b->version};
    int err;

    err = parse_names(dst, ctx, doc, keys, 2);
    if (err < 0)
        return err;
    err = mf_manifest__json_hex32(r->sha256, ctx, doc, "sha256");
    if (err < 0)
        return err;
    err = parse_deltas(d, ctx, deltas);
    if (err < 0)
        return err;
    if (chunks) {
        err = parse_chunks(c, ctx, chunks);
        if (err < 0)
            return err;
    }
    if (r->has_chunks_root) {
        uint8_t got[MF_MANIFEST_DIGEST_LEN];

        err = mf_manifest__json_hex32(r->chunks_root, ctx, doc, "chunks_root");
        if (err < 0)
            return err;
        if (chunks && (mf_merkle__root_of(got, (const uint8_t(*)[32])c, r->chunk_count) != 0 ||
                       !mf_ct_memeq(got, r->chunks_root, sizeof(got))))
            return mf_fail(ctx, MF_E_INVALID, "release: chunks do not hash to chunks_root");
    }
    r->name = b->name;
    r->version = b->version;
    r->sequence = s->sequence;
    r->size = s->size;
    r->chunk_size = (uint32_t)s->chunk_size;
    r->chunks = chunks ? (const uint8_t(*)[MF_MANIFEST_DIGEST_LEN])c : NULL;
    r->deltas = d;
    r->security_floor = s->security_floor;
    r->created = s->created;
    r->expires = s->expires;
    return MF_OK;
}

int mf_manifest__parse_release(mf_manifest_release **out, struct mf_ctx *ctx,
                               const uint8_t *payload, size_t len, size_t max_chunks)
{
    struct release_scalars s;
    struct release_block *b = NULL;
    const cJSON *chunks, *deltas;
    size_t nchunks, ndeltas, size;
    uint64_t count;
    cJSON *doc = NULL;
    int has_root, err;

    *out = NULL;
    err = mf_manifest__json_doc(&doc, ctx, payload, len, "release");
    if (err < 0)
        return err;
    err = parse_scalars(&s, ctx, doc);
    if (err < 0)
        goto fail;
    count = (s.size - 1) / s.chunk_size + 1;
    has_root = cJSON_GetObjectItemCaseSensitive(doc, "chunks_root") != NULL;
    chunks = NULL;
    nchunks = 0;
    if (!has_root || cJSON_GetObjectItemCaseSensitive(doc, "chunks")) {
        err = mf_manifest__json_array(&chunks, &nchunks, ctx, doc, "chunks", max_chunks);
        if (err < 0)
            goto fail;
        if (nchunks != count) {
            err = mf_fail(ctx, MF_E_INVALID, "release: %zu chunk hashes for size %llu / chunk %llu",
                          nchunks, (unsigned long long)s.size, (unsigned long long)s.chunk_size);
            goto fail;
        }
    } else if (count > SIZE_MAX / MF_MANIFEST_DIGEST_LEN) {
        err = mf_fail(ctx, MF_E_INVALID, "release: %llu chunks do not fit this device",
                      (unsigned long long)count);
        goto fail;
    }
    err = mf_manifest__json_array(&deltas, &ndeltas, ctx, doc, "deltas", MF_MANIFEST_MAX_DELTAS);
    if (err < 0)
        goto fail;
    /* Both counts are bounded above, so this cannot overflow. */
    size = sizeof(*b) + ndeltas * sizeof(mf_manifest_delta) + nchunks * MF_MANIFEST_DIGEST_LEN;
    b = mf_ctx__alloc(ctx, size);
    if (!b) {
        err = mf_fail(ctx, MF_E_NOMEM, "release: no memory for %zu bytes", size);
        goto fail;
    }
    memset(b, 0, size);
    b->alloc = ctx->alloc;
    b->pub.chunk_count = (size_t)count;
    b->pub.has_chunks_root = has_root;
    b->pub.delta_count = ndeltas;
    err = release_fill(b, ctx, doc, &s, chunks, deltas);
fail:
    err = parse_end(ctx, doc, b, err);
    if (err == MF_OK)
        *out = &b->pub;
    return err;
}

void mf_manifest_release_free(mf_manifest_release *r)
{
    struct release_block *b = (struct release_block *)r;
    mf_allocator a;

    if (!r)
        return;
    a = b->alloc;
    mf_free(&a, b);
}

static int assignment_fill(struct assignment_block *b, struct mf_ctx *ctx, const cJSON *doc)
{
    mf_manifest_assignment *a = &b->pub;
    const cJSON *pin = cJSON_GetObjectItemCaseSensitive(doc, "pin");
    static const char *const keys[] = {"device_id", "model", "nonce"};
    char *const dst[] = {b->device_id, b->model, b->nonce};
    const char *s;
    int err;

    err = parse_names(dst, ctx, doc, keys, 3);
    if (err < 0)
        return err;
    err = mf_manifest__json_hex32(a->release_sha256, ctx, doc, "release_sha256");
    if (err < 0)
        return err;
    err = mf_manifest__json_u64(&a->sequence, ctx, doc, "sequence");
    if (err < 0)
        return err;
    if (a->sequence == 0)
        return mf_fail(ctx, MF_E_INVALID, "assignment: sequence must be at least 1");
    if (pin && !cJSON_IsBool(pin))
        return mf_fail(ctx, MF_E_INVALID, "assignment: member 'pin' is not a boolean");
    a->pin = cJSON_IsTrue(pin) ? 1 : 0;
    if (cJSON_GetObjectItemCaseSensitive(doc, "reason")) {
        err = mf_manifest__json_str(&s, ctx, doc, "reason", MF_MANIFEST_REASON_MAX);
        if (err < 0)
            return err;
        memcpy(b->reason, s, strlen(s) + 1);
        a->reason = b->reason;
    }
    a->device_id = b->device_id;
    a->model = b->model;
    a->nonce = b->nonce;
    return MF_OK;
}

int mf_manifest__parse_assignment(mf_manifest_assignment **out, struct mf_ctx *ctx,
                                  const uint8_t *payload, size_t len)
{
    struct assignment_block *b = NULL;
    cJSON *doc = NULL;
    int err;

    *out = NULL;
    err = mf_manifest__json_doc(&doc, ctx, payload, len, "assignment");
    if (err < 0)
        return err;
    b = mf_ctx__alloc(ctx, sizeof(*b));
    if (!b) {
        err = mf_fail(ctx, MF_E_NOMEM, "assignment: no memory");
        goto fail;
    }
    memset(b, 0, sizeof(*b));
    b->alloc = ctx->alloc;
    err = assignment_fill(b, ctx, doc);
fail:
    err = parse_end(ctx, doc, b, err);
    if (err == MF_OK)
        *out = &b->pub;
    return err;
}

void mf_manifest__assignment_attach(mf_manifest_assignment *a, mf_manifest_release *r)
{
    struct assignment_block *b = (struct assignment_block *)a;

    b->release = r;
    a->release = r;
}

void mf_manifest_assignment_free(mf_manifest_assignment *a)
{
    struct assignment_block *b = (struct assignment_block *)a;
    mf_allocator al;

    if (!a)
        return;
    mf_manifest_release_free(b->release);
    al = b->alloc;
    mf_free(&al, b);
}

void mf_manifest_secret_free(const mf_allocator *alloc, void *p, size_t len)
{
    if (!p)
        return;
    mf_secure_zero(p, len);
    mf_free(alloc, p);
}
