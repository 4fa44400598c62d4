/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Serialised trust state. Little-endian, CRC-32 at the end:
 *   "MFTS" u32 format(2) u64 assignment_seq u8 nsigners {32-byte director key id}...
 *   u32 nfloors {u8 len, name, u64 floor}...
 *   u32 root_len root_envelope u32 keys_len keys_envelope u32 crc32(all before)
 * Envelopes are stored as received and verified again on load, so a corrupted or edited
 * file cannot smuggle keys in; the CRC only tells a torn write from a bad signature.
 * Format 1 (before sequences were scoped to their director keys) had no nsigners/ids; it
 * still loads, its sequence attributed to every director key of its keys document, so
 * the first keys document without one of them starts a fresh sequence space.
 */
#include "trust_internal.h"
#include "mf_crc32.h"

#include <string.h>

#define STATE_MAGIC "MFTS"
#define STATE_FORMAT 2u
#define STATE_FORMAT_UNSCOPED 1u

size_t mf_trust_state_size(const mf_trust *t)
{
    size_t n = 4 + 4 + 8 + 1 + t->seq_keys.n * MF_MANIFEST_DIGEST_LEN + 4 + 4 + t->root_env_len +
               4 + t->keys_env_len + 4;

    for (size_t i = 0; i < t->nfloors; i++)
        n += 1 + strlen(t->floors[i].name) + 8;
    return n;
}

struct writer {
    uint8_t *p;
    size_t pos;
};

static void put_bytes(struct writer *w, const void *src, size_t n)
{
    if (n)
        memcpy(w->p + w->pos, src, n);
    w->pos += n;
}

static void put_uint(struct writer *w, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w->p[w->pos++] = (uint8_t)(v >> (8 * i));
}

int mf_trust_save(void *out, size_t out_size, size_t *written, mf_trust *t)
{
    struct writer w = {out, 0};
    size_t need = mf_trust_state_size(t);

    mf_trust__begin(t);
    *written = 0;
    if (!t->has_root)
        return mf_trust__end(
            t, mf_trust__fail(t, MF_TRUST_R_NO_KEYS, MF_E_STATE, "no trusted root to save"));
    if (out_size < need)
        return mf_trust__end(t, mf_fail(&t->ctx, MF_E_LIMIT,
                                        "state needs %zu bytes, buffer has %zu", need, out_size));
    put_bytes(&w, STATE_MAGIC, 4);
    put_uint(&w, STATE_FORMAT, 4);
    put_uint(&w, t->assignment_seq, 8);
    put_uint(&w, t->seq_keys.n, 1);
    for (size_t i = 0; i < t->seq_keys.n; i++)
        put_bytes(&w, t->seq_keys.id[i], MF_MANIFEST_DIGEST_LEN);
    put_uint(&w, t->nfloors, 4);
    for (size_t i = 0; i < t->nfloors; i++) {
        size_t n = strlen(t->floors[i].name);

        put_uint(&w, n, 1);
        put_bytes(&w, t->floors[i].name, n);
        put_uint(&w, t->floors[i].floor, 8);
    }
    put_uint(&w, t->root_env_len, 4);
    put_bytes(&w, t->root_env, t->root_env_len);
    put_uint(&w, t->keys_env_len, 4);
    put_bytes(&w, t->keys_env, t->keys_env_len);
    put_uint(&w, mf_crc32__update(0, w.p, w.pos), 4);
    *written = w.pos;
    return MF_OK;
}

struct reader {
    const uint8_t *p;
    size_t len, pos;
    int bad; /* set on the first read past the end; later reads return zeros */
};

static const uint8_t *get_bytes(struct reader *r, size_t n)
{
    const uint8_t *p = r->p + r->pos;

    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return NULL;
    }
    r->pos += n;
    return p;
}

static uint64_t get_uint(struct reader *r, size_t bytes)
{
    const uint8_t *p = get_bytes(r, bytes);
    uint64_t v = 0;

    for (size_t i = 0; p && i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int read_floors(struct mf_trust *tmp, struct reader *r)
{
    uint64_t n = get_uint(r, 4);

    if (n > MF_TRUST_MAX_MODELS)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: %llu floors, at most %d",
                       (unsigned long long)n, MF_TRUST_MAX_MODELS);
    for (size_t i = 0; i < n; i++) {
        struct mf_trust_floor *f = &tmp->floors[i];
        size_t len = (size_t)get_uint(r, 1);
        const uint8_t *name = get_bytes(r, len);

        if (!name || len > MF_MANIFEST_NAME_MAX)
            return mf_fail(&tmp->ctx, MF_E_INVALID, "state: floor %zu truncated", i);
        memcpy(f->name, name, len);
        f->name[len] = '\0';
        f->floor = get_uint(r, 8);
        if (!mf_manifest__name_ok(f->name) || mf_trust__floor_of(tmp, f->name) != 0)
            return mf_fail(&tmp->ctx, MF_E_INVALID, "state: floor %zu has a bad name", i);
        tmp->nfloors = i + 1;
    }
    return MF_OK;
}

static int read_signers(struct mf_trust_keyids *out, struct mf_trust *tmp, struct reader *r)
{
    uint64_t n = get_uint(r, 1);

    if (n > MF_MANIFEST_MAX_KEYS)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: %llu director keys, at most %d",
                       (unsigned long long)n, MF_MANIFEST_MAX_KEYS);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *id = get_bytes(r, MF_MANIFEST_DIGEST_LEN);

        if (!id)
            return mf_fail(&tmp->ctx, MF_E_INVALID, "state: director key %zu truncated", i);
        memcpy(out->id[i], id, MF_MANIFEST_DIGEST_LEN);
    }
    out->n = (size_t)n;
    return MF_OK;
}

/* Format 1 recorded no signers: the sequence was accepted under some director key of the
 * stored keys document (format 1 never reset it), so all of them own it. */
static void migrate_signers(struct mf_trust *tmp)
{
    const struct mf_mrole *dir = &tmp->keys.role[MF_ROLE_DIRECTOR];

    tmp->seq_keys.n = 0;
    if (!tmp->has_keys || tmp->assignment_seq == 0)
        return;
    memcpy(tmp->seq_keys.id, dir->ids, dir->n * MF_MANIFEST_DIGEST_LEN);
    tmp->seq_keys.n = dir->n;
}

/* Rebuilds a complete state in `tmp`, verifying both envelopes again. */
static int read_state(struct mf_trust *tmp, const uint8_t *buf, size_t len)
{
    struct reader r = {buf, len - 4, 0, 0};
    const uint8_t *root, *keys;
    size_t root_len, keys_len;
    uint64_t seq, format;
    int err;

    if (memcmp(get_bytes(&r, 4), STATE_MAGIC, 4) != 0)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: not a trust state");
    format = get_uint(&r, 4);
    if (format != STATE_FORMAT && format != STATE_FORMAT_UNSCOPED)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: format %llu, this device reads %u and %u",
                       (unsigned long long)format, STATE_FORMAT_UNSCOPED, STATE_FORMAT);
    seq = get_uint(&r, 8);
    if (seq > MF_TRUST_SEQUENCE_MAX)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: assignment sequence %llu above 2^53",
                       (unsigned long long)seq);
    err = format == STATE_FORMAT ? read_signers(&tmp->seq_keys, tmp, &r) : MF_OK;
    if (err >= 0)
        err = read_floors(tmp, &r);
    if (err < 0)
        return err;
    root_len = (size_t)get_uint(&r, 4);
    root = get_bytes(&r, root_len);
    keys_len = (size_t)get_uint(&r, 4);
    keys = get_bytes(&r, keys_len);
    if (r.bad || !root || r.pos != r.len)
        return mf_fail(&tmp->ctx, MF_E_INVALID, "state: lengths do not add up to %zu bytes", len);
    err = mf_trust__accept_first_root(tmp, root, root_len);
    if (err >= 0 && keys_len)
        err = mf_trust__accept_keys(tmp, keys, keys_len, MF_TRUST_TIME_UNKNOWN);
    tmp->assignment_seq = seq;
    if (format == STATE_FORMAT_UNSCOPED)
        migrate_signers(tmp);
    return err;
}

static void adopt(struct mf_trust *t, struct mf_trust *tmp)
{
    mf_ctx__free(&t->ctx, t->root_env);
    mf_ctx__free(&t->ctx, t->keys_env);
    t->has_root = tmp->has_root;
    t->root = tmp->root;
    t->root_env = tmp->root_env;
    t->root_env_len = tmp->root_env_len;
    t->has_keys = tmp->has_keys;
    t->keys = tmp->keys;
    memcpy(t->keys_digest, tmp->keys_digest, sizeof(t->keys_digest));
    t->keys_env = tmp->keys_env;
    t->keys_env_len = tmp->keys_env_len;
    t->assignment_seq = tmp->assignment_seq;
    t->seq_keys = tmp->seq_keys;
    memcpy(t->floors, tmp->floors, sizeof(t->floors));
    t->nfloors = tmp->nfloors;
}

static uint32_t stored_crc(const uint8_t *buf, size_t len)
{
    struct reader r = {buf, len, len - 4, 0};

    return (uint32_t)get_uint(&r, 4);
}

int mf_trust_load(mf_trust *t, const void *state, size_t len)
{
    const uint8_t *buf = state;
    size_t max = 64 + t->opts.max_root_bytes + t->opts.max_keys_bytes + 1 +
                 MF_MANIFEST_MAX_KEYS * MF_MANIFEST_DIGEST_LEN +
                 MF_TRUST_MAX_MODELS * (1 + MF_MANIFEST_NAME_MAX + 8);
    struct mf_trust *tmp;
    int err;

    mf_trust__begin(t);
    if (len > max)
        return mf_trust__end(
            t, mf_fail(&t->ctx, MF_E_LIMIT, "state of %zu bytes exceeds %zu", len, max));
    if (len < 8 || mf_crc32__update(0, buf, len - 4) != stored_crc(buf, len))
        return mf_trust__end(t, mf_trust__fail(t, MF_TRUST_R_STATE_CORRUPT, MF_E_INVALID,
                                               "state: checksum mismatch (%zu bytes)", len));
    tmp = mf_ctx__alloc(&t->ctx, sizeof(*tmp));
    if (!tmp)
        return mf_trust__end(t, mf_fail(&t->ctx, MF_E_NOMEM, "no memory to load a state"));
    memset(tmp, 0, sizeof(*tmp));
    tmp->ctx = t->ctx;
    tmp->opts = t->opts;
    err = read_state(tmp, buf, len);
    if (err < 0) {
        memcpy(t->ctx.errmsg, tmp->ctx.errmsg, sizeof(t->ctx.errmsg));
        t->reason = err == MF_E_NOMEM ? MF_TRUST_R_RESOURCE : MF_TRUST_R_STATE_CORRUPT;
        mf_ctx__free(&t->ctx, tmp->root_env);
        mf_ctx__free(&t->ctx, tmp->keys_env);
    } else {
        adopt(t, tmp);
    }
    mf_secure_zero(tmp, sizeof(*tmp));
    mf_ctx__free(&t->ctx, tmp);
    return mf_trust__end(t, err);
}
