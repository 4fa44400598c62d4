/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Full blob download into a .part storage object, verified while streaming: every chunk
 * is hashed (mbedTLS SHA-256) and counted as it is written, the total is bounded by the
 * assigned size (more bytes abort the transfer at once), and the final digest is compared
 * in constant time. Only a complete, matching, synced .part is handed to the installer.
 * Range resume slots in here later: RESUME mode, a 206 sink status, persisted progress.
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
    const char *part;
    mf_platform_file *f;
    mbedtls_sha256_context sha;
    uint64_t got;
};

static int sink(void *payload, const void *data, size_t len)
{
    struct download *d = payload;
    const mf_platform_ops *p = &d->a->plat;
    int err;

    if (d->got > d->as->size || len > d->as->size - d->got)
        return mf_fail(&d->a->ctx, MF_E_LIMIT,
                       "model %s %s: server sent more than the assigned %llu bytes", d->as->model,
                       d->as->version, (unsigned long long)d->as->size);
    if (sha256_update(&d->sha, data, len) != 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 update failed");
    err = p->write(p->payload, d->f, data, len);
    if (err < 0)
        return mf_fail(&d->a->ctx, err, "cannot write %s at offset %llu", d->part,
                       (unsigned long long)d->got);
    d->got += len;
    return MF_OK;
}

/* Size and digest checks once the transfer ended with a 200. */
static int verify(struct download *d)
{
    const struct mf_agent_assignment *as = d->as;
    uint8_t want[MF_SHA256_LEN], got[MF_SHA256_LEN];
    char got_hex[MF_SHA256_HEX_LEN + 1];

    if (d->got != as->size)
        return mf_fail(&d->a->ctx, MF_E_NET, "model %s %s: blob ended after %llu of %llu bytes",
                       as->model, as->version, (unsigned long long)d->got,
                       (unsigned long long)as->size);
    if (sha256_finish(&d->sha, got) != 0 ||
        mf_hex__decode(want, sizeof(want), as->sha256, MF_SHA256_HEX_LEN) < 0)
        return mf_fail(&d->a->ctx, MF_E_GENERIC, "SHA-256 finish failed");
    if (!mf_ct_memeq(want, got, sizeof(want))) {
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
        .max_download = as->size,
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
    mf_http__response_init(&resp, &a->http);
    req.url = (const char *)url.data;
    err = sha256_starts(&d->sha, 0) != 0 ? mf_fail(&a->ctx, MF_E_GENERIC, "SHA-256 init failed")
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
    mf_ctx__free(&a->ctx, d);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&url);
    return err;
}
