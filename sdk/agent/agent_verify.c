/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The byte verifier every download and every delta apply feeds. Each byte is hashed once:
 *   - a signed release: one SHA-256 per chunk, compared in constant time with the release's
 *     signed chunk hash as soon as the chunk is complete, and the total held to the signed
 *     size. That proves the whole object: the signed list names every chunk and the size
 *     fixes where the last one ends, so bytes that pass are exactly the bytes the signer
 *     hashed, and the release's signed sha256 (the object's identity: state file, delta
 *     bases) is theirs without a second pass over them (it used to cost half the speed of a
 *     download, bench/agent/README.md);
 *   - anything else (a delta blob, unsigned: it carries only its sha256): a running
 *     SHA-256 of the whole object, compared at the end.
 * A chunk-tree release (docs/formats/manifest.md §3) carries no flat list: its bytes are held
 * to the release's signed sha256 as a whole (mf_agent__rel_chunks() gives NULL), so nothing
 * unproven is ever installed, and a resume keeps only the prefix the progress record says
 * was synced.
 * It also re-reads a prefix already on storage (mf_agent__vfy_replay): that is how a resume
 * rebuilds the running digests without trusting anything but the signed hashes, so no
 * digest state ever has to be persisted.
 */
#include "mf_agent_int.h"

#include <assert.h>
#include <string.h>

const mf_manifest_release *mf_agent__rel_chunks(const mf_manifest_release *rel)
{
    return rel && rel->chunks ? rel : NULL;
}

void mf_agent__vfy_init(struct mf_agent_vfy *v, struct mf_ctx *ctx, const char *what,
                        const mf_manifest_release *rel, uint64_t size, const uint8_t *sha256)
{
    memset(v, 0, sizeof(*v));
    v->ctx = ctx;
    v->what = what;
    v->rel = mf_agent__rel_chunks(rel);
    v->size = size;
    memcpy(v->sha256, sha256, MF_SHA256_LEN);
    mf_sha256__init(&v->whole);
    mf_sha256__init(&v->chunk);
}

void mf_agent__vfy_reset(struct mf_agent_vfy *v)
{
    mf_sha256__abort(&v->whole);
    mf_sha256__abort(&v->chunk);
    mf_sha256__init(&v->whole);
    mf_sha256__init(&v->chunk);
    v->got = 0;
    v->in_chunk = 0;
    v->chunk_index = 0;
    v->verified = 0;
}

void mf_agent__vfy_rewind(struct mf_agent_vfy *v)
{
    /* Without chunk hashes nothing is held back (verified == got): the whole digest stays. */
    mf_sha256__abort(&v->chunk);
    mf_sha256__init(&v->chunk);
    v->got = v->verified;
    v->in_chunk = 0;
}

void mf_agent__vfy_free(struct mf_agent_vfy *v)
{
    mf_sha256__abort(&v->whole);
    mf_sha256__abort(&v->chunk);
}

/* Closes the current chunk: its digest must be the signed one. */
static int chunk_done(struct mf_agent_vfy *v)
{
    uint8_t got[MF_SHA256_LEN];

    if (v->chunk_index >= v->rel->chunk_count)
        return mf_fail(v->ctx, MF_E_SIGNATURE, "%s: chunk %zu has no signed hash", v->what,
                       v->chunk_index);
    mf_sha256__final(&v->chunk, got);
    mf_sha256__init(&v->chunk);
    if (!mf_ct_memeq(got, v->rel->chunks[v->chunk_index], sizeof(got)))
        return mf_fail(v->ctx, MF_E_SIGNATURE,
                       "%s: chunk %zu (bytes from %llu) does not match its signed sha256", v->what,
                       v->chunk_index, (unsigned long long)v->chunk_index * v->rel->chunk_size);
    v->chunk_index++;
    v->in_chunk = 0;
    v->verified = v->got;
    return MF_OK;
}

int mf_agent__vfy_update(struct mf_agent_vfy *v, const void *data, size_t len)
{
    const uint8_t *p = data;

    if (v->got > v->size || len > v->size - v->got)
        return mf_fail(v->ctx, MF_E_LIMIT, "%s: more than the signed %llu bytes", v->what,
                       (unsigned long long)v->size);
    if (!v->rel) {
        mf_sha256__update(&v->whole, p, len);
        v->got += len;
        v->verified = v->got; /* no chunk hashes: only the final digest decides */
        return MF_OK;
    }
    while (len > 0) {
        size_t room = v->rel->chunk_size - v->in_chunk;
        size_t take = len < room ? len : room;
        int err;

        mf_sha256__update(&v->chunk, p, take);
        v->in_chunk += (uint32_t)take;
        v->got += take;
        p += take;
        len -= take;
        if (v->in_chunk == v->rel->chunk_size || v->got == v->size) {
            err = chunk_done(v);
            if (err < 0)
                return err;
        }
    }
    return MF_OK;
}

int mf_agent__vfy_finish(struct mf_agent_vfy *v)
{
    uint8_t got[MF_SHA256_LEN];
    char got_hex[MF_SHA256_HEX_LEN + 1];

    if (v->got != v->size)
        return mf_fail(v->ctx, MF_E_NET, "%s: ended after %llu of %llu bytes", v->what,
                       (unsigned long long)v->got, (unsigned long long)v->size);
    if (v->rel) {
        /* Every chunk was checked as it completed; the parser made the signed list exactly
         * as long as the signed size needs, so all of them were. */
        assert(v->chunk_index == v->rel->chunk_count && v->verified == v->size);
        return MF_OK;
    }
    mf_sha256__final(&v->whole, got);
    mf_sha256__init(&v->whole);
    if (!mf_ct_memeq(v->sha256, got, sizeof(got))) {
        mf_hex__encode(got_hex, got, sizeof(got));
        return mf_fail(v->ctx, MF_E_SIGNATURE, "%s: sha256 mismatch, received %.12s...", v->what,
                       got_hex);
    }
    return MF_OK;
}

int mf_agent__vfy_replay(struct mf_agent_vfy *v, struct mf_agent *a, const char *name,
                         uint64_t upto, int tolerant)
{
    const mf_platform_ops *p = &a->plat;
    mf_platform_file *f = NULL;
    uint8_t *buf;
    int err;

    mf_agent__vfy_reset(v);
    if (upto == 0)
        return MF_OK;
    buf = mf_ctx__alloc(&a->ctx, MF_AGENT_IO_BUF);
    if (!buf)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to re-read %s", name);
    err = p->open(p->payload, &f, name, MF_PLATFORM_OPEN_READ);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot open %s", name);
    while (err >= 0 && v->got < upto) {
        uint64_t left = upto - v->got;
        size_t want = left < MF_AGENT_IO_BUF ? (size_t)left : MF_AGENT_IO_BUF;
        size_t got = 0;

        err = p->read_at(p->payload, &got, f, v->got, buf, want);
        if (err < 0)
            err = mf_fail(&a->ctx, err, "cannot read %s at %llu", name, (unsigned long long)v->got);
        else if (got == 0)
            err = mf_fail(&a->ctx, MF_E_IO, "%s ends at %llu, expected %llu", name,
                          (unsigned long long)v->got, (unsigned long long)upto);
        else
            err = mf_agent__vfy_update(v, buf, got);
    }
    if (f)
        p->close(p->payload, f);
    mf_ctx__free(&a->ctx, buf);
    if (tolerant) {
        /* Keep what verifies: a power cut may have lost or torn the unsynced tail. */
        mf_agent__vfy_rewind(v);
        mf_ctx__clear(&a->ctx);
        return MF_OK;
    }
    return err;
}
