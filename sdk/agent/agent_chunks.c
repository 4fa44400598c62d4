/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The chunk list of a chunk-tree release (docs/formats/manifest.md, "Chunk tree"): the signed
 * release names its chunks by their RFC 9162 root alone, and the check-in names a blob with
 * the chunk hashes (docs/protocol.md, "chunk_list"). That blob is unsigned: it is fetched
 * whole (32 bytes a chunk, at most MF_AGENT_CHUNK_LIST_MAX hashes, into a buffer of exactly
 * the length the signed release implies) and held to the signed chunks_root with
 * mf_trust_check_chunk_list() before a single model byte is fetched. Then the download (or a
 * delta's output) is verified chunk by chunk exactly as with a flat list (agent_verify.c): a
 * bad byte is caught at its chunk, and a resume re-verifies the .part against the same hashes.
 * The list is not kept on storage: it is small enough to fetch again on every attempt, so a
 * power cut leaves nothing of it to trust or repair.
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define WHAT_MAX (MF_AGENT_NAME_MAX * 2 + 32)

/* The list body, into the buffer the signed release sized; more bytes than that abort. */
struct list_in {
    uint8_t *dst;
    size_t len, cap; /* bytes received, bytes expected */
};

static int list_sink(void *payload, const void *data, size_t len)
{
    struct list_in *in = payload;

    if (len > in->cap - in->len)
        return MF_E_LIMIT; /* the HTTP layer's max_download stops it first */
    memcpy(in->dst + in->len, data, len);
    in->len += len;
    return MF_OK;
}

static int fetch_list(struct mf_agent *a, struct list_in *in, const char *path, const char *what)
{
    struct mf_http_request req = {
        .method = "GET",
        .bearer = a->credential,
        .sink = list_sink,
        .sink_payload = in,
        .sink_status = 200,
        .max_download = in->cap,
    };
    struct mf_http_response resp;
    struct mf_dynbuf url;
    int err = mf_agent__url(a, &url, path);

    if (err < 0)
        return err;
    req.url = (const char *)url.data;
    mf_http__response_init(&resp, &a->http);
    a->stats.requests++;
    err = mf_http__perform(&a->http, &resp, &req);
    a->stats.bytes_received += in->len;
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&a->http, &resp, what); /* a 206 or any other answer */
    else if (err == MF_E_LIMIT)
        err = mf_fail(&a->ctx, MF_E_SIGNATURE, "%s: longer than the %zu hashes of the release",
                      what, in->cap / MF_SHA256_LEN);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&url);
    return err;
}

int mf_agent__chunks_get(const mf_manifest_release **out, struct mf_agent_chunks *c,
                         struct mf_agent *a, const struct mf_agent_assignment *as,
                         const mf_manifest_release *rel)
{
    struct list_in in = {0};
    char *what; /* "chunk list of model <name> <version>", after the list (frames stay small) */
    int err;

    c->rel = NULL;
    *out = rel;
    if (rel->chunks || !rel->has_chunks_root || !as->chunk_list)
        return MF_OK; /* a flat list, or nothing to fetch: the whole sha256 decides */
    if (rel->chunk_count > MF_AGENT_CHUNK_LIST_MAX)
        return mf_fail(&a->ctx, MF_E_LIMIT,
                       "chunk list of model %s %s: %zu chunks, more than this agent's %u",
                       rel->name, rel->version, rel->chunk_count, MF_AGENT_CHUNK_LIST_MAX);
    in.cap = rel->chunk_count * MF_SHA256_LEN;
    c->rel = mf_ctx__alloc(&a->ctx, sizeof(*c->rel) + in.cap + WHAT_MAX);
    if (!c->rel)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory for the chunk list of model %s", rel->name);
    in.dst = (uint8_t *)(c->rel + 1);
    what = (char *)in.dst + in.cap;
    (void)snprintf(what, WHAT_MAX, "chunk list of model %s %s", rel->name, rel->version);
    err = fetch_list(a, &in, as->chunk_list, what);
    if (err < 0)
        return err;
    if (mf_trust_check_chunk_list(a->trust, rel, in.dst, in.len) < 0)
        return mf_fail(&a->ctx, MF_E_SIGNATURE, "%s refused: %s", what, mf_trust_errmsg(a->trust));
    *c->rel = *rel;
    c->rel->chunks = (const uint8_t(*)[MF_SHA256_LEN])in.dst;
    *out = c->rel;
    MF_LOG_DBG(&a->ctx, "%s: %zu hashes verified against the signed root", what, rel->chunk_count);
    return MF_OK;
}

void mf_agent__chunks_free(struct mf_agent *a, struct mf_agent_chunks *c)
{
    mf_ctx__free(&a->ctx, c->rel);
    c->rel = NULL;
}
