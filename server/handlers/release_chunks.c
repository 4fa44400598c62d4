/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The chunk list of a release as a blob of its own (docs/formats/manifest.md, "Chunk tree"):
 * `chunk_count` raw 32-byte SHA-256s of the model's chunks, in order. A chunk-tree release (the
 * root, no flat list) gets it at publish, hashed from the stored model blob and held to the
 * signed root, so a root that does not describe the uploaded bytes is refused (400) before any
 * device is offered the release. A release with the flat list needs none (devices read the
 * list it carries; the check-in answer stays as it was). The list is stored content-addressed (its
 * sha256) and the version row names it (migration 15); check-ins name it to devices
 * (docs/protocol.md), which check it against the root with mf_trust_check_chunk_list() before the
 * download.
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"
#include "mf/ct.h"
#include "mf_merkle.h"
#include "mf_sha256.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* A list far above any model the store accepts (2^21 chunks: 2 TiB at 1 MiB chunks). */
#define CHUNK_LIST_MAX ((size_t)1 << 21)
#define READ_PIECE (256u * 1024u)

/* Hashes the model blob (fd) in chunks of `chunk_size` into list[0..n). */
static int hash_chunks(struct mf_httpd_req *r, uint8_t (*list)[32], size_t n, int fd,
                       const mf_manifest_release *rel, uint8_t *buf)
{
    struct mf_sha256 h;
    uint64_t off = 0;
    size_t i = 0, in_chunk = 0;

    mf_sha256__init(&h);
    while (off < rel->size) {
        uint64_t left = rel->size - off;
        size_t want = left < READ_PIECE ? (size_t)left : READ_PIECE;
        ssize_t got = pread(fd, buf, want, (off_t)off);

        if (got <= 0) {
            mf_sha256__abort(&h);
            return mf_fail(&r->ctx, MF_E_IO, "reading the blob of %s %s at %llu: %s", rel->name,
                           rel->version, (unsigned long long)off,
                           got < 0 ? strerror(errno) : "short");
        }
        for (size_t p = 0; p < (size_t)got;) {
            size_t take = rel->chunk_size - in_chunk;

            take = take < (size_t)got - p ? take : (size_t)got - p;
            mf_sha256__update(&h, buf + p, take);
            p += take;
            in_chunk += take;
            if (in_chunk == rel->chunk_size || off + p == rel->size) {
                mf_sha256__final(&h, list[i++]);
                mf_sha256__init(&h);
                in_chunk = 0;
            }
        }
        off += (uint64_t)got;
    }
    mf_sha256__abort(&h);
    return i == n ? MF_OK : mf_fail(&r->ctx, MF_E_STATE, "blob made %zu chunks, not %zu", i, n);
}

int mf_handlers__release_chunks(char sha_out[MF_SHA256_HEX_LEN + 1], struct mf_httpd_req *r,
                                const mf_manifest_release *rel, const struct mf_store_version *v)
{
    uint8_t(*list)[32] = NULL;
    uint8_t root[32], *buf = NULL;
    uint64_t size = 0;
    int fd = -1, err = MF_OK;

    sha_out[0] = '\0';
    if (!rel->has_chunks_root || rel->chunks)
        return MF_OK; /* the release carries its list */
    if (rel->chunk_count > CHUNK_LIST_MAX)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "release of %zu chunks: more than %zu (a larger chunk_size)",
                                     rel->chunk_count, CHUNK_LIST_MAX);
    list = mf_calloc(&r->ctx.alloc, rel->chunk_count, sizeof(*list));
    if (!list)
        return mf_fail(&r->ctx, MF_E_NOMEM, "no memory for a list of %zu chunks", rel->chunk_count);
    buf = mf_alloc(&r->ctx.alloc, READ_PIECE);
    err = buf ? mf_blob__open(&fd, &size, &r->ctx, r->env->blob_root, v->sha256)
              : mf_fail(&r->ctx, MF_E_NOMEM, "no memory to hash blob %s", v->sha256);
    if (err == MF_OK && size != rel->size)
        err = mf_fail(&r->ctx, MF_E_STATE, "blob %s holds %llu bytes, not %llu", v->sha256,
                      (unsigned long long)size, (unsigned long long)rel->size);
    if (err == MF_OK)
        err = hash_chunks(r, list, rel->chunk_count, fd, rel, buf);
    if (fd >= 0)
        (void)close(fd);
    mf_free(&r->ctx.alloc, buf);
    if (err == MF_OK &&
        (mf_merkle__root_of(root, (const uint8_t(*)[32])list, rel->chunk_count) != 0 ||
         !mf_ct_memeq(root, rel->chunks_root, sizeof(root))))
        err = mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                    "release's chunks_root does not describe the uploaded blob "
                                    "%.16s... (%zu chunks of %u bytes)",
                                    v->sha256, rel->chunk_count, rel->chunk_size);
    if (err == MF_OK && !r->resp)
        err = mf_blob__put(sha_out, &r->ctx, r->env->blob_root, list,
                           rel->chunk_count * sizeof(*list));
    mf_free(&r->ctx.alloc, list);
    return err;
}
