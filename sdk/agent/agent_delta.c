/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Delta apply into the inactive slot: the downloaded patch (a storage object) and the
 * active slot (read by offset through the platform port) go through the streaming decoder
 * of diff/apply (mf/patch.h); the new image is written sequentially to the slot's .part and
 * every output byte passes the verifier first, so each output chunk is checked against the
 * release's signed chunk hash and the whole image against its signed sha256. The delta
 * itself is unsigned (docs/protocol.md): a bad delta costs bandwidth, never a bad install.
 *
 * Power cuts: at most every MF_AGENT_CKPT_MS, at a block boundary, the .part is synced and the
 * decoder's checkpoint (mf_patch_checkpoint_get) is saved in "<part>.ckpt" through the atomic
 * store: "MFCK" u8 format=1, 32-byte release sha256, 32-byte delta sha256, u64 patch_offset, u64
 * new_offset (LE), MF_PATCH_CHECKPOINT_STATE_SIZE opaque bytes A restart restores the decoder, cuts
 * the .part back to new_offset, replays that prefix through the verifier (chunk hashes) and feeds
 * the patch from patch_offset. A checkpoint for another release or delta, or one the decoder
 * refuses, means starting over.
 *
 * A compressed full blob is a delta from the empty image (from_sha256 MF_PATCH_EMPTY_SHA256_HEX,
 * docs/protocol.md): the same decoder, workspace, verifier and checkpoints, with no old image
 * (nothing is opened, the source is 0 bytes long and the decoder refuses any reference to it).
 */
#include "mf_agent_int.h"
#include "mf/patch.h"

#include <stdio.h>
#include <string.h>

#define CK_MAGIC "MFCK"
#define CK_FORMAT 1
#define CK_LEN (4 + 1 + 2 * MF_SHA256_LEN + 16 + MF_PATCH_CHECKPOINT_STATE_SIZE)
#define OUT_BUF (64u * 1024u)

struct apply {
    struct mf_agent *a;
    const struct mf_agent_assignment *as;
    const struct mf_agent_delta_ref *dr;
    const char *part;
    mf_platform_file *old, *delta, *out;
    uint64_t old_size;
    uint64_t in_off;    /* next patch byte to read */
    uint64_t saved_new; /* new_offset of the last saved checkpoint */
    uint64_t saved_ms;  /* when it was saved */
    struct mf_agent_vfy vfy;
    mf_patch *patch;
    mf_patch_checkpoint ck;
    uint8_t rec[CK_LEN];
    char ck_name[MF_AGENT_STORE_NAME_MAX];
    uint8_t delta_sha[MF_SHA256_LEN];
    uint8_t in[MF_AGENT_IO_BUF];
    uint8_t outb[OUT_BUF];
};

/* mf_source_read_fn over the active slot. */
static int read_old(void *payload, uint64_t offset, void *buf, size_t len)
{
    struct apply *w = payload;
    const mf_platform_ops *p = &w->a->plat;
    size_t done = 0;

    if (!w->old)
        return MF_E_IO; /* compressed full blob: unreachable (source_size 0) */
    while (done < len) {
        size_t got = 0;
        int err =
            p->read_at(p->payload, &got, w->old, offset + done, (uint8_t *)buf + done, len - done);

        if (err < 0)
            return err;
        if (got == 0)
            break;
        done += got;
    }
    return (int)done;
}

static int save_checkpoint(struct apply *w)
{
    const mf_platform_ops *p = &w->a->plat;
    int err;

    if (mf_patch_checkpoint_get(&w->ck, w->patch) < 0 || w->ck.new_offset == w->saved_new)
        return MF_OK;
    err = p->sync(p->payload, w->out);
    if (err < 0)
        return mf_fail(&w->a->ctx, err, "cannot sync %s", w->part);
    memcpy(w->rec, CK_MAGIC, 4);
    w->rec[4] = CK_FORMAT;
    memcpy(w->rec + 5, w->as->verified->release->sha256, MF_SHA256_LEN);
    memcpy(w->rec + 5 + MF_SHA256_LEN, w->delta_sha, MF_SHA256_LEN);
    mf_agent__put_u64(w->rec + 5 + 2 * MF_SHA256_LEN, w->ck.patch_offset);
    mf_agent__put_u64(w->rec + 13 + 2 * MF_SHA256_LEN, w->ck.new_offset);
    memcpy(w->rec + 21 + 2 * MF_SHA256_LEN, w->ck.state, MF_PATCH_CHECKPOINT_STATE_SIZE);
    err = mf_agent__store_write(w->a, w->ck_name, w->rec, CK_LEN, 0);
    if (err >= 0)
        w->saved_new = w->ck.new_offset;
    w->saved_ms = p->monotonic_ms(p->payload);
    return err;
}

/* Restores a matching checkpoint; MF_OK with in_off > 0 when resumed, else start at 0. */
static int try_restore(struct apply *w)
{
    struct mf_agent *a = w->a;
    const mf_platform_ops *p = &a->plat;
    struct mf_dynbuf buf;
    const uint8_t *r;
    int err;

    if (a->plat.version < 2 || !a->plat.truncate)
        return MF_E_NOTFOUND;
    err = mf_agent__store_read(a, &buf, w->ck_name, CK_LEN + 1);
    if (err < 0)
        return err;
    r = buf.data;
    err = buf.len == CK_LEN && memcmp(r, CK_MAGIC, 4) == 0 && r[4] == CK_FORMAT &&
                  memcmp(r + 5, w->as->verified->release->sha256, MF_SHA256_LEN) == 0 &&
                  memcmp(r + 5 + MF_SHA256_LEN, w->delta_sha, MF_SHA256_LEN) == 0
              ? MF_OK
              : MF_E_INVALID;
    if (err >= 0) {
        w->ck.patch_offset = mf_agent__get_u64(r + 5 + 2 * MF_SHA256_LEN);
        w->ck.new_offset = mf_agent__get_u64(r + 13 + 2 * MF_SHA256_LEN);
        memcpy(w->ck.state, r + 21 + 2 * MF_SHA256_LEN, MF_PATCH_CHECKPOINT_STATE_SIZE);
    }
    mf_dynbuf__free(&buf);
    if (err >= 0)
        err = mf_patch_restore(w->patch, &w->ck);
    if (err >= 0)
        err = mf_agent__vfy_replay(&w->vfy, a, w->part, w->ck.new_offset, 0);
    if (err >= 0)
        err = p->open(p->payload, &w->out, w->part, MF_PLATFORM_OPEN_RESUME);
    if (err >= 0)
        err = p->truncate(p->payload, w->out, w->ck.new_offset);
    if (err < 0)
        return err;
    w->in_off = w->ck.patch_offset;
    w->saved_new = w->ck.new_offset;
    w->saved_ms = p->monotonic_ms(p->payload);
    a->stats.resumes++;
    MF_LOG_INFO(&a->ctx, "model %s: delta apply resumes at %llu bytes of output", w->as->model,
                (unsigned long long)w->ck.new_offset);
    return MF_OK;
}

/* Writes the decoder's output after the verifier accepted it. */
static int drain(struct apply *w, mf_outbuf *out)
{
    const mf_platform_ops *p = &w->a->plat;
    int err;

    if (out->pos == 0)
        return MF_OK;
    err = mf_agent__vfy_update(&w->vfy, w->outb, out->pos);
    if (err >= 0) {
        err = p->write(p->payload, w->out, w->outb, out->pos);
        if (err < 0)
            err = mf_fail(&w->a->ctx, err, "cannot write %s", w->part);
    }
    out->pos = 0;
    if (err >= 0 && w->a->progress_fn)
        w->a->progress_fn(w->a->progress_payload, w->as->model, "apply", w->vfy.got, w->vfy.size);
    if (err >= 0 && w->a->plat.monotonic_ms(w->a->plat.payload) - w->saved_ms >= MF_AGENT_CKPT_MS)
        err = save_checkpoint(w);
    return err;
}

/* The decode loop: patch bytes from storage in, verified image bytes out. */
static int run(struct apply *w, const char *delta_part)
{
    const mf_platform_ops *p = &w->a->plat;
    mf_inbuf in = {w->in, 0, 0};
    mf_outbuf out = {w->outb, OUT_BUF, 0};
    int rc = MF_AGAIN, err = MF_OK;

    while (rc == MF_AGAIN && err >= 0) {
        size_t before, produced;

        if (in.pos == in.size && w->in_off < w->dr->size) {
            size_t got = 0;

            err = p->read_at(p->payload, &got, w->delta, w->in_off, w->in, sizeof(w->in));
            if (err < 0)
                return mf_fail(&w->a->ctx, err, "cannot read %s", delta_part);
            in.size = got;
            in.pos = 0;
        }
        before = in.pos;
        rc = mf_patch_apply(w->patch, &out, &in);
        w->in_off += in.pos - before;
        if (rc < 0)
            return mf_fail(&w->a->ctx, rc, "model %s: delta apply failed: %s", w->as->model,
                           mf_patch_errmsg(w->patch));
        produced = out.pos;
        err = drain(w, &out);
        /* The decoder wants more, but every patch byte was consumed and nothing came out. */
        if (err >= 0 && rc == MF_AGAIN && in.pos == in.size && w->in_off >= w->dr->size &&
            in.pos == before && produced == 0)
            return mf_fail(&w->a->ctx, MF_E_INVALID, "model %s: delta ends early", w->as->model);
    }
    if (err < 0)
        return err;
    return mf_agent__vfy_finish(&w->vfy);
}

static int open_all(struct apply *w, const char *old_name, const char *delta_part)
{
    struct mf_agent *a = w->a;
    const mf_platform_ops *p = &a->plat;
    mf_patch_options o;
    int err;

    err = old_name ? p->open(p->payload, &w->old, old_name, MF_PLATFORM_OPEN_READ) : MF_OK;
    if (err >= 0)
        err = p->open(p->payload, &w->delta, delta_part, MF_PLATFORM_OPEN_READ);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot open %s or %s", old_name, delta_part);
    err = mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION);
    o.max_window = a->max_patch_window;
    o.source_read = read_old;
    o.source_payload = w;
    o.source_size = w->old_size;
    if (err >= 0)
        err = mf_patch_new(&w->patch, &o, &a->ctx.alloc);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot set up the delta decoder (window %zu)",
                       a->max_patch_window);
    err = try_restore(w);
    if (err >= 0)
        return MF_OK;
    /* No usable checkpoint: a fresh decoder and an empty .part. */
    if (err != MF_E_NOTFOUND)
        MF_LOG_INFO(&a->ctx, "model %s: delta checkpoint not usable (%s): applying from the start",
                    w->as->model, a->ctx.errmsg[0] ? a->ctx.errmsg : mf_strerror(err));
    mf_ctx__clear(&a->ctx);
    mf_patch_free(w->patch);
    w->patch = NULL;
    if (w->out)
        p->close(p->payload, w->out);
    w->out = NULL;
    w->in_off = 0;
    w->saved_new = 0;
    mf_agent__vfy_reset(&w->vfy);
    err = mf_patch_new(&w->patch, &o, &a->ctx.alloc);
    if (err >= 0)
        err = p->open(p->payload, &w->out, w->part, MF_PLATFORM_OPEN_WRITE);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot start the delta apply into %s", w->part);
    return MF_OK;
}

int mf_agent__delta_apply(struct mf_agent *a, const char *part, const char *old_name,
                          const char *delta_part, const struct mf_agent_assignment *as,
                          const struct mf_agent_delta_ref *dr, const mf_manifest_release *rel)
{
    const mf_platform_ops *p = &a->plat;
    /* On the heap: buffers, the checkpoint and two SHA-256 contexts. */
    struct apply *w = mf_ctx__alloc(&a->ctx, sizeof(*w));
    int err, n;

    if (!w)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to apply a delta to model %s", as->model);
    memset(w, 0, sizeof(*w));
    w->a = a;
    w->as = as;
    w->dr = dr;
    w->part = part;
    w->old_size = 0;
    (void)mf_hex__decode(w->delta_sha, sizeof(w->delta_sha), dr->sha256, MF_SHA256_HEX_LEN);
    n = snprintf(w->ck_name, sizeof(w->ck_name), "%s.ckpt", part);
    mf_agent__vfy_init(&w->vfy, &a->ctx, as->model, rel, rel->size, rel->sha256);
    if (strcmp(dr->from_sha256, MF_PATCH_EMPTY_SHA256_HEX) == 0)
        old_name = NULL; /* a compressed full blob: no old image */
    if (n <= 0 || (size_t)n >= sizeof(w->ck_name))
        err = mf_fail(&a->ctx, MF_E_LIMIT, "storage name %s.ckpt too long", part);
    else
        err = old_name ? p->size(p->payload, &w->old_size, old_name) : MF_OK;
    if (err >= 0)
        err = open_all(w, old_name, delta_part);
    if (err >= 0)
        err = run(w, delta_part);
    if (err >= 0 && p->sync(p->payload, w->out) < 0)
        err = mf_fail(&a->ctx, MF_E_IO, "cannot sync %s", part);
    if (w->old)
        p->close(p->payload, w->old);
    if (w->delta)
        p->close(p->payload, w->delta);
    if (w->out)
        p->close(p->payload, w->out);
    /* Done, or the delta is bad (the caller falls back): the checkpoint is of no further
     * use. A storage failure keeps it: the apply resumes once storage works again. */
    if (err != MF_E_IO) {
        (void)p->remove(p->payload, w->ck_name);
        if (err < 0)
            (void)p->remove(p->payload, part);
    }
    mf_patch_free(w->patch);
    mf_agent__vfy_free(&w->vfy);
    mf_ctx__free(&a->ctx, w);
    return err;
}
