/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Full blob download into a .part storage object, verified while streaming against the
 * verified release: bytes are hashed (mbedTLS SHA-256) as they arrive, and each time a
 * chunk of the release's chunk_size is complete its digest is compared in constant time
 * with the signed chunk hash, aborting the transfer at the first bad chunk (a tampered
 * blob costs at most one chunk of traffic). The total is bounded by the signed size (more
 * bytes abort at once) and the whole-blob digest is compared at the end. Only a complete,
 * matching, synced .part is handed to the installer. Range resume slots in here later: a
 * resume restarts at a chunk boundary, so it never trusts unverified bytes.
 */
#include "mf_agent_int.h"

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <string.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#define sha256_starts mbedtls_sha256_starts
#define sha256_update mbedtls_sha256_update
#define sha256_finish mbedtls_sha256_finish
#else
#define sha256_starts mbedtls_sha256_starts_ret
#define sha256_update mbedtls_sha256_update_ret
#define sha256_finish mbedtls_sha256_finish_ret
#endif

struct download {
    struct mf_agent *a;
    const struct mf_agent_assignment *as;
    const mf_manifest_release *rel;
    const char *part;
    mf_platform_file *f;
    mbedtls_sha256_context sha;   /* the whole blob */
    mbedtls_sha256_context chunk; /* the chunk being received */
    uint64_t got;
    uint32_t in_chunk; /* bytes of the current chunk so far */
    size_t chunk_index;
};

/* Closes the current chunk: its digest must be the signed one. */
static int chunk_done(struct download *d)
{
    uint8_t got[MF_SHA256_LEN];

    if (d->chunk_index >= d->rel->chunk_count || sha256_finish(&d->chunk, got) != 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "chunk %zu of model %s has no signed hash",
                       d->chunk_index, d->as->model);
    if (!mf_ct_memeq(got, d->rel->chunks[d->chunk_index], sizeof(got)))
        return mf_fail(&d->a->ctx, MF_E_SIGNATURE,
                       "model %s %s: chunk %zu (bytes from %llu) does not match its signed "
                       "sha256; download aborted",
                       d->as->model, d->as->version, d->chunk_index,
                       (unsigned long long)d->chunk_index * d->rel->chunk_size);
    d->chunk_index++;
    d->in_chunk = 0;
    if (sha256_starts(&d->chunk, 0) != 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 init failed");
    return MF_OK;
}

/* Hashes `len` bytes into the whole and the chunk digests, closing chunks as they fill. */
static int hash_chunks(struct download *d, const uint8_t *data, size_t len)
{
    if (sha256_update(&d->sha, data, len) != 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 update failed");
    while (len > 0) {
        size_t room = d->rel->chunk_size - d->in_chunk;
        size_t take = len < room ? len : room;
        int err;

        if (sha256_update(&d->chunk, data, take) != 0)
            return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 update failed");
        d->in_chunk += (uint32_t)take;
        data += take;
        len -= take;
        if (d->in_chunk == d->rel->chunk_size) {
            err = chunk_done(d);
            if (err < 0)
                return err;
        }
    }
    return MF_OK;
}

static int sink(void *payload, const void *data, size_t len)
{
    struct download *d = payload;
    const mf_platform_ops *p = &d->a->plat;
    int err;

    if (d->got > d->rel->size || len > d->rel->size - d->got)
        return mf_fail(&d->a->ctx, MF_E_LIMIT,
                       "model %s %s: server sent more than the signed %llu bytes", d->as->model,
                       d->as->version, (unsigned long long)d->rel->size);
    /* Verify before writing: a bad chunk never reaches storage. */
    err = hash_chunks(d, data, len);
    if (err < 0)
        return err;
    err = p->write(p->payload, d->f, data, len);
    if (err < 0)
        return mf_fail(&d->a->ctx, err, "cannot write %s at offset %llu", d->part,
                       (unsigned long long)d->got);
    d->got += len;
    return MF_OK;
}

/* Size, last chunk and digest checks once the transfer ended with a 200. */
static int verify(struct download *d)
{
    const struct mf_agent_assignment *as = d->as;
    uint8_t got[MF_SHA256_LEN];
    char got_hex[MF_SHA256_HEX_LEN + 1];
    int err;

    if (d->got != d->rel->size)
        return mf_fail(&d->a->ctx, MF_E_NET, "model %s %s: blob ended after %llu of %llu bytes",
                       as->model, as->version, (unsigned long long)d->got,
                       (unsigned long long)d->rel->size);
    if (d->in_chunk) {
        err = chunk_done(d); /* the shorter last chunk */
        if (err < 0)
            return err;
    }
    if (sha256_finish(&d->sha, got) != 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 finish failed");
    if (!mf_ct_memeq(d->rel->sha256, got, sizeof(got))) {
        mf_hex__encode(got_hex, got, sizeof(got));
        return mf_fail(&d->a->ctx, MF_E_SIGNATURE,
                       "model %s %s: sha256 mismatch, assigned %.12s..., received %.12s...",
                       as->model, as->version, as->sha256, got_hex);
    }
    return MF_OK;
}

int mf_agent__download(struct mf_agent *a, const char *part, const struct mf_agent_assignment *as)
{
    const mf_platform_ops *p = &a->plat;
    /* On the heap: the SHA-256 context would push this frame past the 512-byte ceiling. */
    struct download *d = mf_ctx__alloc(&a->ctx, sizeof(*d));
    struct mf_http_request req = {
        .method = "GET",
        .bearer = a->credential,
        .sink = sink,
        .sink_status = 200,
        .max_download = as->verified->release->size,
        .no_timeout = 1, /* big blobs on slow links: the stall limit applies instead */
    };
    struct mf_http_response resp;
    struct mf_dynbuf url;
    int err;

    if (!d)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to download model %s", as->model);
    memset(d, 0, sizeof(*d));
    d->a = a;
    d->as = as;
    d->rel = as->verified->release;
    d->part = part;
    req.sink_payload = d;
    err = mf_agent__url(a, &url, as->blob);
    if (err >= 0) {
        err = p->open(p->payload, &d->f, part, MF_PLATFORM_OPEN_WRITE);
        if (err < 0) {
            mf_dynbuf__free(&url);
            err = mf_fail(&a->ctx, err, "cannot create %s", part);
        }
    }
    if (err < 0) {
        mf_ctx__free(&a->ctx, d);
        return err;
    }
    mbedtls_sha256_init(&d->sha);
    mbedtls_sha256_init(&d->chunk);
    mf_http__response_init(&resp, &a->http);
    req.url = (const char *)url.data;
    err = sha256_starts(&d->sha, 0) != 0 || sha256_starts(&d->chunk, 0) != 0
              ? mf_fail(&a->ctx, MF_E_GENERIC, "SHA-256 init failed")
              : mf_http__perform(&a->http, &resp, &req);
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&a->http, &resp, (const char *)url.data);
    if (err >= 0)
        err = verify(d);
    if (err >= 0 && p->sync(p->payload, d->f) < 0)
        err = mf_fail(&a->ctx, MF_E_IO, "cannot sync %s", part);
    p->close(p->payload, d->f);
    if (err < 0)
        (void)p->remove(p->payload, part);
    mbedtls_sha256_free(&d->sha);
    mbedtls_sha256_free(&d->chunk);
    mf_ctx__free(&a->ctx, d);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&url);
    return err;
}
