/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resumable, verified download of one blob into a .part storage object.
 *
 * Every byte goes through the verifier (agent_verify.c) before it is written: for a release
 * each chunk is checked against its signed hash the moment it is complete, the total is
 * bounded by the signed size, and the whole digest is compared at the end. The record
 * "<part>.prog" (agent_progress.c) binds the .part to its object and ETag and notes the
 * verified length, written after a sync of the .part at most every MF_AGENT_PERSIST_MS.
 * A restart re-verifies whatever the .part holds against the signed chunk hashes and
 * resumes at the end of the last verified chunk: after a crash of the process it fetches
 * again less than one chunk; after a power cut also what was not synced yet. (A delta blob
 * has no chunk hashes: it resumes from the recorded, synced length only.)
 *
 * The resume protocol (docs/protocol.md, blobs):
 *   - "Range: bytes=<verified>-" with "If-Range: <ETag of the first answer>";
 *   - a 206 must carry "Content-Range: bytes <verified>-<size-1>/<size>" and the same ETag;
 *     anything else is refused (a wrong range could splice foreign bytes at our offset);
 *   - a 200 to a ranged request means "start again": the .part is truncated to 0 and the
 *     body is taken from byte 0, never written at the resume offset;
 *   - a chunk that fails its hash is dropped (the .part is cut back to the last verified
 *     boundary) and fetched again once; a second failure ends the download.
 * Within one call a cut connection is resumed at once while each attempt makes progress;
 * across calls the caller backs off (agent_retry.c).
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define FETCH_ATTEMPTS 4
#define BAD_CHUNK_RETRIES 1

struct fetch {
    struct mf_agent *a;
    const struct mf_agent_fetch *f;
    struct mf_agent_vfy vfy;
    struct mf_agent_progress prog; /* what the record says (etag, verified) */
    mf_platform_file *file;
    struct mf_http_response *resp;
    uint64_t range_from;   /* of the running attempt */
    int body_started;      /* the running attempt's first body byte was seen */
    int bad_chunk;         /* the running attempt failed on a chunk hash */
    int restart;           /* a 206 with another ETag: start from 0 next attempt */
    uint64_t persisted_ms; /* when the record was last written */
    /* Write-behind (options' download_buffer; none when 0): libcurl hands the sink 16 KiB
     * at a time whatever its receive buffer, so received bytes are gathered here and
     * written wcap at a time (a write per 16 KiB cost more system time than the hashing
     * took, bench/agent/README.md). Bytes enter it
     * after the verifier took them, as they went to write() before; it is written out
     * before anything that syncs or cuts the .part (flush()) and at the end of each
     * attempt, so between attempts the .part holds every byte taken. */
    uint8_t *wbuf;
    size_t wlen, wcap;
    uint64_t wat; /* offset of wbuf[0] in the .part */
};

static uint64_t now_ms(const struct mf_agent *a)
{
    return a->plat.monotonic_ms ? a->plat.monotonic_ms(a->plat.payload) : 0;
}

static int can_truncate(const struct mf_agent *a)
{
    return a->plat.version >= 2 && a->plat.truncate;
}

/* Writes out what the write-behind buffer holds. */
static int flush(struct fetch *d)
{
    const mf_platform_ops *p = &d->a->plat;
    size_t n = d->wlen;
    int err;

    if (n == 0)
        return MF_OK;
    d->wlen = 0;
    err = p->write(p->payload, d->file, d->wbuf, n);
    if (err < 0)
        return mf_fail(&d->a->ctx, err, "cannot write %s at offset %llu", d->f->part,
                       (unsigned long long)d->wat);
    return MF_OK;
}

/* Cuts the .part back to `size` bytes (writes then append from there). */
static int part_cut(struct fetch *d, uint64_t size)
{
    const mf_platform_ops *p = &d->a->plat;
    int err = flush(d);

    if (err < 0)
        return err;
    if (can_truncate(d->a))
        err = p->truncate(p->payload, d->file, size);
    else if (size == 0) {
        p->close(p->payload, d->file);
        d->file = NULL;
        err = p->open(p->payload, &d->file, d->f->part, MF_PLATFORM_OPEN_WRITE);
    } else
        err = MF_E_STATE;
    if (err < 0)
        return mf_fail(&d->a->ctx, err == MF_E_STATE ? MF_E_IO : err,
                       "cannot cut %s back to %llu bytes", d->f->part, (unsigned long long)size);
    return MF_OK;
}

/* Makes the verified prefix durable, then records it. */
static int persist(struct fetch *d)
{
    const mf_platform_ops *p = &d->a->plat;
    int err;

    if (d->vfy.verified == d->prog.verified)
        return MF_OK;
    err = flush(d);
    if (err >= 0)
        err = p->sync(p->payload, d->file);
    if (err < 0)
        return mf_fail(&d->a->ctx, err, "cannot sync %s", d->f->part);
    d->prog.verified = d->vfy.verified;
    d->persisted_ms = now_ms(d->a);
    return mf_agent__progress_save(d->a, d->f->part, &d->prog);
}

/* Checks the status and headers of an attempt's answer before its first body byte. */
static int on_first_byte(struct fetch *d)
{
    const struct mf_http_headers *hd = &d->a->http.headers;
    struct mf_agent *a = d->a;
    int err;

    d->body_started = 1;
    if (hd->status == 200) {
        if (d->range_from > 0) {
            MF_LOG_WARN(&a->ctx, "%s: server answered 200 to a range request: restarting at 0",
                        d->f->what);
            mf_agent__vfy_reset(&d->vfy);
            err = part_cut(d, 0);
            if (err < 0)
                return err;
            d->prog.verified = 0;
        }
    } else if (hd->status == 206) {
        if (d->range_from == 0)
            return mf_fail(&a->ctx, MF_E_NET, "%s: 206 answer to a request without Range",
                           d->f->what);
        if (!hd->range_ok || hd->range_first != d->range_from || hd->range_total != d->f->size ||
            hd->range_last != d->f->size - 1)
            return mf_fail(
                &a->ctx, MF_E_NET,
                "%s: wrong Content-Range for bytes %llu-%llu/%llu (got %s%llu-%llu/%llu)",
                d->f->what, (unsigned long long)d->range_from, (unsigned long long)d->f->size - 1,
                (unsigned long long)d->f->size, hd->range_ok ? "" : "unparsable ",
                (unsigned long long)hd->range_first, (unsigned long long)hd->range_last,
                (unsigned long long)hd->range_total);
        if (d->prog.etag[0] && hd->etag[0] && strcmp(d->prog.etag, hd->etag) != 0) {
            d->restart = 1;
            return mf_fail(&a->ctx, MF_E_NET, "%s: 206 with ETag %s, resumed on %s", d->f->what,
                           hd->etag, d->prog.etag);
        }
    }
    if (hd->etag[0])
        memcpy(d->prog.etag, hd->etag, sizeof(d->prog.etag));
    return MF_OK;
}

/* Hands `len` bytes taken by the verifier at offset `at` to the .part, through the
 * write-behind buffer (pieces as large as the buffer go straight to storage). */
static int put(struct fetch *d, const void *data, size_t len, uint64_t at)
{
    const mf_platform_ops *p = &d->a->plat;
    int err = MF_OK;

    if (d->wlen + len > d->wcap)
        err = flush(d);
    if (err < 0 || len == 0)
        return err;
    if (len >= d->wcap) {
        err = p->write(p->payload, d->file, data, len);
        if (err < 0)
            return mf_fail(&d->a->ctx, err, "cannot write %s at offset %llu", d->f->part,
                           (unsigned long long)at);
        return MF_OK;
    }
    if (d->wlen == 0)
        d->wat = at;
    memcpy(d->wbuf + d->wlen, data, len);
    d->wlen += len;
    return MF_OK;
}

static int sink(void *payload, const void *data, size_t len)
{
    struct fetch *d = payload;
    uint64_t at;
    size_t took;
    int err = MF_OK, werr;

    d->a->stats.bytes_received += len; /* counted as received, verified or not */
    if (!d->body_started)
        err = on_first_byte(d);
    at = d->vfy.got;
    if (err >= 0)
        err = mf_agent__vfy_update(&d->vfy, data, len);
    if (err == MF_E_SIGNATURE)
        d->bad_chunk = 1;
    /* Bytes of a chunk still being checked are written; a resume cuts them off. When a
     * chunk fails, the chunks this piece completed before it are written all the same: the
     * .part is cut back to the verified length next, and a cut beyond its end would fill
     * it with zeros the verifier never saw. */
    took = err >= 0 ? len : d->vfy.verified > at ? (size_t)(d->vfy.verified - at) : 0;
    werr = put(d, data, took, at);
    if (err < 0)
        return err;
    if (werr < 0)
        return werr;
    if (d->f->m) {
        d->f->m->dl_done = d->vfy.got;
        d->f->m->dl_total = d->f->size;
        (void)snprintf(d->f->m->dl_kind, sizeof(d->f->m->dl_kind), "%s", d->f->kind);
    }
    if (d->vfy.verified > d->prog.verified && now_ms(d->a) - d->persisted_ms >= MF_AGENT_PERSIST_MS)
        err = persist(d);
    if (err >= 0 && d->a->progress_fn)
        d->a->progress_fn(d->a->progress_payload, d->f->model, d->f->kind, d->vfy.got, d->f->size);
    return err;
}

/* Restores the verified prefix of the .part named by the progress record, or starts from
 * zero. With chunk hashes everything the .part holds is re-verified (the record may lag
 * behind); without, only what the record says was synced. */
static int prepare(struct fetch *d)
{
    struct mf_agent *a = d->a;
    const mf_platform_ops *p = &a->plat;
    uint64_t have = 0;
    int err = can_truncate(a) ? mf_agent__progress_load(a, &d->prog, d->f->part) : MF_E_NOTFOUND;

    if (err >= 0 &&
        (d->prog.size != d->f->size || !mf_ct_memeq(d->prog.sha256, d->f->sha256, MF_SHA256_LEN)))
        err = MF_E_INVALID; /* the record is about another object */
    if (err >= 0)
        err = p->size(p->payload, &have, d->f->part);
    if (err >= 0 && d->f->rel)
        d->prog.verified = have < d->f->size ? have : d->f->size;
    else if (err >= 0 && have < d->prog.verified)
        err = MF_E_INVALID; /* fewer bytes than were synced: storage lost them */
    if (err >= 0 && d->prog.verified > 0)
        err = mf_agent__vfy_replay(&d->vfy, a, d->f->part, d->prog.verified, d->f->rel != NULL);
    d->prog.verified = d->vfy.verified;
    if (err >= 0)
        err = p->open(p->payload, &d->file, d->f->part, MF_PLATFORM_OPEN_RESUME);
    if (err >= 0 && d->file)
        err = part_cut(d, d->vfy.verified);
    if (err >= 0) {
        if (d->vfy.verified && d->vfy.verified < d->f->size)
            a->stats.resumes++;
        if (d->vfy.verified)
            MF_LOG_INFO(&a->ctx, "%s: resuming at %llu of %llu bytes (verified)", d->f->what,
                        (unsigned long long)d->vfy.verified, (unsigned long long)d->f->size);
        return MF_OK;
    }
    /* Nothing usable: start from byte 0 with a fresh record. */
    mf_ctx__clear(&a->ctx);
    if (d->file)
        p->close(p->payload, d->file);
    d->file = NULL;
    mf_agent__vfy_reset(&d->vfy);
    memset(&d->prog, 0, sizeof(d->prog));
    memcpy(d->prog.sha256, d->f->sha256, MF_SHA256_LEN);
    d->prog.size = d->f->size;
    /* Remove, then append-open: with O_APPEND-like writes a later cut-back (truncate)
     * keeps writes at the end of the file instead of leaving a hole. */
    mf_agent__progress_drop(a, d->f->part, 1);
    err = p->open(p->payload, &d->file, d->f->part,
                  can_truncate(a) ? MF_PLATFORM_OPEN_RESUME : MF_PLATFORM_OPEN_WRITE);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot create %s", d->f->part);
    return MF_OK;
}

/* One GET of the missing bytes. MF_OK when the object is complete. */
static int attempt(struct fetch *d, const char *url)
{
    struct mf_agent *a = d->a;
    struct mf_http_request req = {
        .method = "GET",
        .url = url,
        .bearer = a->credential,
        .sink = sink,
        .sink_payload = d,
        .sink_status = 200,
        .sink_status_alt = 206,
        .max_download = d->f->size,
        .no_timeout = 1, /* big blobs on slow links: the stall limit applies instead */
        .max_recv_bytes_per_s = a->max_recv_bytes_per_s,
        .recv_buffer = (long)a->download_buffer,
    };
    int err;

    d->range_from = d->vfy.got;
    d->body_started = 0;
    d->bad_chunk = 0;
    req.range_from = d->range_from;
    req.if_range = d->prog.etag[0] ? d->prog.etag : NULL;
    a->stats.requests++;
    err = mf_http__perform(&a->http, d->resp, &req);
    if (d->file) {
        int ferr = flush(d); /* whatever ended the attempt, the .part holds what was taken */

        err = err < 0 ? err : ferr;
    }
    if (err >= 0 && d->resp->status != 200 && d->resp->status != 206)
        return mf_http__fail_status(&a->http, d->resp, url);
    if (err >= 0 && !d->body_started && d->f->size > 0)
        err = mf_fail(&a->ctx, MF_E_NET, "%s: empty answer", d->f->what);
    if (err >= 0)
        err = mf_agent__vfy_finish(&d->vfy);
    return err;
}

/* Decides after a failed attempt whether to try again at once. */
static int retry_now(struct fetch *d, int err, uint64_t verified_before, int *bad_retries)
{
    if (err == MF_E_SIGNATURE && d->bad_chunk && *bad_retries < BAD_CHUNK_RETRIES) {
        (*bad_retries)++;
        MF_LOG_WARN(&d->a->ctx, "%s; fetching that chunk again", d->a->ctx.errmsg);
        mf_agent__vfy_rewind(&d->vfy);
        return part_cut(d, d->vfy.verified) >= 0;
    }
    if (err == MF_E_NET && d->restart) {
        d->restart = 0;
        d->prog.etag[0] = '\0';
        mf_agent__vfy_reset(&d->vfy);
        return part_cut(d, 0) >= 0;
    }
    if (err == MF_E_NET && d->vfy.verified > verified_before) {
        MF_LOG_WARN(&d->a->ctx, "%s (resuming at %llu)", d->a->ctx.errmsg,
                    (unsigned long long)d->vfy.verified);
        mf_agent__vfy_rewind(&d->vfy); /* unverified tail bytes are fetched again */
        return part_cut(d, d->vfy.verified) >= 0;
    }
    return 0;
}

/* After the last attempt: keep a verified prefix for a transport failure, else clean up. */
static int finish(struct fetch *d, int err)
{
    struct mf_agent *a = d->a;
    const mf_platform_ops *p = &a->plat;

    if (err >= 0) {
        /* Complete: synced and recorded as such, so a crash before the caller is done
         * with the .part (rename, delta apply) does not download it again. The caller
         * drops the record. */
        err = persist(d);
    } else if (err == MF_E_NET && d->vfy.verified > 0 && can_truncate(a)) {
        /* Keep exactly the verified prefix: the unchecked tail is fetched again anyway. */
        mf_agent__vfy_rewind(&d->vfy);
        if (part_cut(d, d->vfy.verified) < 0 || persist(d) < 0)
            MF_LOG_WARN(&a->ctx, "cannot record the progress of %s", d->f->part);
        p->close(p->payload, d->file);
        return err;
    } else if (err == MF_E_SIGNATURE && d->bad_chunk) {
        char why[MF_ERRMSG_MAX];

        memcpy(why, a->ctx.errmsg, sizeof(why));
        err = mf_fail(&a->ctx, err, "%s; download aborted", why);
    }
    p->close(p->payload, d->file);
    if (err < 0)
        mf_agent__progress_drop(a, d->f->part, 1);
    return err;
}

int mf_agent__fetch(struct mf_agent *a, const struct mf_agent_fetch *f)
{
    /* On the heap: two SHA-256 contexts would push this frame past the stack ceiling; the
     * write-behind buffer follows the response. */
    struct fetch *d =
        mf_ctx__alloc(&a->ctx, sizeof(*d) + sizeof(struct mf_http_response) + a->download_buffer);
    uint64_t before = 0;
    int bad_retries = 0;
    struct mf_dynbuf url;
    int err;

    if (!d)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to download %s", f->what);
    memset(d, 0, sizeof(*d));
    d->a = a;
    d->f = f;
    d->resp = (struct mf_http_response *)(d + 1);
    d->wbuf = (uint8_t *)(d->resp + 1);
    d->wcap = a->download_buffer;
    mf_agent__vfy_init(&d->vfy, &a->ctx, f->what, f->rel, f->size, f->sha256);
    mf_http__response_init(d->resp, &a->http);
    err = mf_agent__url(a, &url, f->blob);
    if (err >= 0)
        err = prepare(d);
    if (err >= 0 && d->vfy.got == f->size) {
        err = mf_agent__vfy_finish(&d->vfy); /* complete on storage already */
        err = finish(d, err);
    } else if (err >= 0) {
        for (int i = 0; i < FETCH_ATTEMPTS; i++) {
            /* The previous attempt's message goes only when another attempt replaces it:
             * after the last one it is the reason the failed report carries. */
            if (i > 0)
                mf_ctx__clear(&a->ctx);
            before = d->vfy.verified;
            err = attempt(d, (const char *)url.data);
            if (err >= 0 || !retry_now(d, err, before, &bad_retries))
                break;
        }
        err = finish(d, err);
    }
    mf_agent__vfy_free(&d->vfy);
    mf_http__response_free(d->resp);
    mf_dynbuf__free(&url);
    mf_ctx__free(&a->ctx, d);
    return err;
}
