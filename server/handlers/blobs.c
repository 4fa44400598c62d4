/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET|HEAD /v1/blobs/<sha256>: immutable, content-addressed downloads with single-range
 * resume, served from the file with sendfile (MHD fd responses), never read into memory.
 *
 * A device may fetch only a blob a release names (docs/security.md): a released version's
 * model blob or a delta towards it. Anything else, a staged upload included, answers as a
 * missing blob would, so a device learns nothing of what exists. Admin tokens fetch any
 * blob. The store's answer for a released blob is kept in the node's cache (env->released,
 * a credential cache keyed by digest) for MF_CREDCACHE_RECENT_S seconds: the range requests
 * of a download cost no store round trip, and a blob that stops being released stops being
 * served to devices at most that long after.
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"
#include "common/names.h"
#include "http/http_credcache.h"
#include "http/http_range.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int blob_headers(struct mf_httpd_req *r, const char *etag)
{
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_ETAG, etag);
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    return MF_OK;
}

/* The fd becomes MHD's: it is closed when the response is destroyed. */
static int reply_file(struct mf_httpd_req *r, unsigned status, int fd, uint64_t first, uint64_t len)
{
    r->resp = MHD_create_response_from_fd_at_offset64(len, fd, first);
    if (!r->resp) {
        (void)close(fd);
        return mf_fail(&r->ctx, MF_E_NOMEM, "cannot create a file response");
    }
    r->status = status;
    r->resp_bytes = len;
    return MF_OK;
}

/* *ok_out 1 when the requester may fetch blob `name` (a valid digest). */
static int may_fetch(int *ok_out, struct mf_httpd_req *r, const char *name)
{
    struct mf_store *s = r->env->store;
    uint8_t key[MF_SHA256_LEN];
    char hit[MF_STORE_NAME_SIZE];
    int err;

    *ok_out = 1;
    if (r->is_admin)
        return MF_OK;
    (void)mf_hex__decode(key, sizeof(key), name, MF_SHA256_HEX_LEN); /* name is valid */
    if (mf_httpd__credcache_get(hit, r->env->released, key, MF_CREDCACHE_RECENT_S))
        return MF_OK;
    err = s->ops->blobs->blob_released(ok_out, s, &r->ctx, name);
    if (err == MF_OK && *ok_out)
        mf_httpd__credcache_put(r->env->released, key, "released");
    return err;
}

int mf_handlers__blob_get(struct mf_httpd_req *r)
{
    const char *name = r->params[0];
    char etag[MF_SHA256_HEX_LEN + 3], crange[80];
    struct mf_range range = {0, 0};
    const char *if_range;
    uint64_t size = 0;
    int fd = -1, ok = 0, kind, err;

    if (!mf_names__valid_sha256(name))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "blob name must be 64 lower-case hex digits");
    err = may_fetch(&ok, r, name);
    if (err == MF_OK)
        err = ok ? mf_blob__open(&fd, &size, &r->ctx, r->env->blob_root, name) : MF_E_NOTFOUND;
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no blob %s", name);
    if (err < 0)
        return err;
    (void)snprintf(etag, sizeof(etag), "\"%s\"", name);
    kind = mf_httpd__range_parse(&range, mf_httpd__header(r, MHD_HTTP_HEADER_RANGE), size);
    /* If-Range naming another representation (or a date: ours never change, but a
     * client that sends one did not get its validator from us) means "send it all". */
    if_range = mf_httpd__header(r, MHD_HTTP_HEADER_IF_RANGE);
    if (if_range && strcmp(if_range, etag) != 0)
        kind = MF_RANGE_FULL;

    switch (kind) {
    case MF_RANGE_PARTIAL:
        err = reply_file(r, MHD_HTTP_PARTIAL_CONTENT, fd, range.first, range.length);
        (void)snprintf(crange, sizeof(crange), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
                       range.first, range.first + range.length - 1, size);
        mf_httpd__reply_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, crange);
        break;
    case MF_RANGE_UNSATISFIABLE:
        (void)close(fd);
        err = mf_httpd__reply_error(r, MHD_HTTP_RANGE_NOT_SATISFIABLE,
                                    "range '%s' is outside blob of %" PRIu64 " bytes",
                                    mf_httpd__header(r, MHD_HTTP_HEADER_RANGE), size);
        (void)snprintf(crange, sizeof(crange), "bytes */%" PRIu64, size);
        mf_httpd__reply_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, crange);
        break;
    default:
        err = reply_file(r, MHD_HTTP_OK, fd, 0, size);
        break;
    }
    if (err < 0)
        return err;
    return blob_headers(r, etag);
}
