/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Durable uplink queue over the platform port (no directory listing, no truncate needed).
 *
 * Layout under offload/<model>/: segments q-XXXXXXXX (hex sequence numbers first..last),
 * each a run of records "u32 len | u32 crc32(len || payload) | payload", and queue.meta,
 * replaced atomically (tmp + sync + durable rename), holding the segment range, the read
 * cursor (first record not yet acknowledged by the server) and the in-flight batch.
 *
 * Crash safety:
 * - Appends only ever go to the newest segment, and a segment is never appended to after
 *   a restart or a failed write: a new one is started. So a torn record can only be the
 *   last of its segment, and readers treat the first record that is short or fails its
 *   CRC as the end of that segment (the torn tail is dropped, all earlier records kept).
 * - The cursor only moves in queue.meta; segments wholly behind it are removed before the
 *   meta that forgets them is written, so a crash in between leaves a missing segment,
 *   which reads as empty.
 * - A batch is recorded as in flight (id and end position) before it is sent and cleared
 *   when acknowledged, so after a crash the same records go out again under the same id
 *   and the server drops the repeat (docs/protocol-offload.md).
 * Eviction is oldest-first by whole segments (segments are at most a quarter of the cap).
 */
#include "mf_offload_int.h"

#include <stdio.h>
#include <string.h>

#define META_MAGIC 0x4d51464du /* "MFQM" */
#define META_FORMAT 1u
#define META_SIZE 68
#define REC_HDR 8

static int seg_name(const struct mf_offload_queue *q, char *out, uint32_t seq)
{
    int n = snprintf(out, MF_OFFLOAD_STORE_NAME_MAX, "%s/q-%08x", q->dir, (unsigned)seq);

    return (n < 0 || n >= MF_OFFLOAD_STORE_NAME_MAX) ? MF_E_LIMIT : MF_OK;
}

static int meta_write(struct mf_offload_queue *q)
{
    char name[MF_OFFLOAD_STORE_NAME_MAX], tmp[MF_OFFLOAD_STORE_NAME_MAX];
    uint8_t buf[META_SIZE], *p = buf;

    (void)snprintf(name, sizeof(name), "%s/queue.meta", q->dir);
    (void)snprintf(tmp, sizeof(tmp), "%s/queue.meta.tmp", q->dir);
    p = mf_offload__put_u32(p, META_MAGIC);
    p = mf_offload__put_u32(p, META_FORMAT);
    p = mf_offload__put_u32(p, q->first_seq);
    p = mf_offload__put_u32(p, q->last_seq);
    p = mf_offload__put_u32(p, q->cur_seq);
    p = mf_offload__put_u32(p, (uint32_t)q->inflight);
    p = mf_offload__put_u64(p, q->cur_off);
    p = mf_offload__put_u32(p, q->end_seq);
    p = mf_offload__put_u32(p, 0);
    p = mf_offload__put_u64(p, q->end_off);
    memcpy(p, q->batch_id, MF_OFFLOAD_ID_LEN);
    p += MF_OFFLOAD_ID_LEN;
    (void)mf_offload__put_u32(p, mf_crc32__update(0, buf, (size_t)(p - buf)));
    return mf_offload__write_atomic(q->plat, q->ctx, tmp, name, MF_PLATFORM_OPEN_SECRET, buf,
                                    sizeof(buf));
}

/* Reads exactly `len` bytes at `off`; MF_AGAIN when the object ends first. */
static int read_full(const mf_platform_ops *pl, mf_platform_file *f, uint64_t off, void *buf,
                     size_t len)
{
    uint8_t *b = buf;

    while (len > 0) {
        size_t got = 0;
        int err = pl->read_at(pl->payload, &got, f, off, b, len);

        if (err < 0)
            return err;
        if (got == 0)
            return MF_AGAIN;
        b += got;
        off += got;
        len -= got;
    }
    return MF_OK;
}

/* Fresh state when the meta is missing; a damaged meta (impossible short of bit rot, as it
 * is replaced atomically) also restarts empty rather than leaving offload dead. */
static int meta_read(struct mf_offload_queue *q)
{
    const mf_platform_ops *pl = q->plat;
    char name[MF_OFFLOAD_STORE_NAME_MAX];
    uint8_t buf[META_SIZE];
    mf_platform_file *f = NULL;
    int err;

    (void)snprintf(name, sizeof(name), "%s/queue.meta", q->dir);
    err = pl->open(pl->payload, &f, name, MF_PLATFORM_OPEN_READ);
    if (err == MF_E_NOTFOUND)
        return MF_OK;
    if (err < 0)
        return mf_fail(q->ctx, err, "cannot open %s", name);
    err = read_full(pl, f, 0, buf, sizeof(buf));
    pl->close(pl->payload, f);
    if (err < 0)
        return mf_fail(q->ctx, err, "cannot read %s", name);
    if (err == MF_AGAIN || mf_offload__get_u32(buf) != META_MAGIC ||
        mf_offload__get_u32(buf + 4) != META_FORMAT ||
        mf_crc32__update(0, buf, META_SIZE - 4) != mf_offload__get_u32(buf + META_SIZE - 4)) {
        MF_LOG_WARN(q->ctx, "%s is damaged; the uplink queue restarts empty", name);
        return MF_OK;
    }
    q->first_seq = mf_offload__get_u32(buf + 8);
    q->last_seq = mf_offload__get_u32(buf + 12);
    q->cur_seq = mf_offload__get_u32(buf + 16);
    q->inflight = mf_offload__get_u32(buf + 20) != 0;
    q->cur_off = mf_offload__get_u64(buf + 24);
    q->end_seq = mf_offload__get_u32(buf + 32);
    q->end_off = mf_offload__get_u64(buf + 40);
    memcpy(q->batch_id, buf + 48, MF_OFFLOAD_ID_LEN);
    if (q->first_seq > q->last_seq || q->cur_seq < q->first_seq || q->cur_seq > q->last_seq) {
        MF_LOG_WARN(q->ctx, "%s is inconsistent; the uplink queue restarts empty", name);
        q->first_seq = q->last_seq = q->cur_seq = 0;
        q->cur_off = 0;
        q->inflight = 0;
    }
    return MF_OK;
}

static void reader_close(struct mf_offload_queue *q)
{
    if (q->rf)
        q->plat->close(q->plat->payload, q->rf);
    q->rf = NULL;
}

/* Reads the record at (seq, off) into q->rec: MF_OK with `*len_out`, MF_AGAIN at the end of
 * the segment's valid records (missing segment, end of file, torn or corrupt record). */
static int read_record(struct mf_offload_queue *q, size_t *len_out, uint32_t seq, uint64_t off)
{
    const mf_platform_ops *pl = q->plat;
    uint8_t hdr[REC_HDR];
    uint32_t len;
    int err;

    if (!q->rf || q->rf_seq != seq) {
        char name[MF_OFFLOAD_STORE_NAME_MAX];

        reader_close(q);
        err = seg_name(q, name, seq);
        if (err >= 0)
            err = pl->open(pl->payload, &q->rf, name, MF_PLATFORM_OPEN_READ);
        if (err == MF_E_NOTFOUND)
            return MF_AGAIN;
        if (err < 0)
            return mf_fail(q->ctx, err, "cannot open %s", name);
        q->rf_seq = seq;
    }
    err = read_full(pl, q->rf, off, hdr, sizeof(hdr));
    if (err != MF_OK)
        return err < 0 ? mf_fail(q->ctx, err, "cannot read uplink segment %u", seq) : err;
    len = mf_offload__get_u32(hdr);
    if (len == 0 || len > q->rec_cap)
        return MF_AGAIN;
    err = read_full(pl, q->rf, off + REC_HDR, q->rec, len);
    if (err != MF_OK)
        return err < 0 ? mf_fail(q->ctx, err, "cannot read uplink segment %u", seq) : err;
    if (mf_crc32__update(mf_crc32__update(0, hdr, 4), q->rec, len) != mf_offload__get_u32(hdr + 4))
        return MF_AGAIN;
    *len_out = len;
    return MF_OK;
}

static int pos_before(const struct mf_offload_qpos *a, const struct mf_offload_qpos *b)
{
    return a->seq < b->seq || (a->seq == b->seq && a->off < b->off);
}

int mf_offload__queue_next(struct mf_offload_queue *q, struct mf_offload_qpos *pos,
                           struct mf_offload_record *r, const struct mf_offload_qpos *end)
{
    for (;;) {
        size_t len = 0;
        int err;

        if ((end && !pos_before(pos, end)) || pos->seq > q->last_seq)
            return MF_AGAIN;
        err = read_record(q, &len, pos->seq, pos->off);
        if (err == MF_OK && mf_offload__record_decode(r, q->rec, len) < 0)
            err = MF_AGAIN; /* CRC-valid but undecodable: written by a broken build */
        if (err < 0)
            return err;
        if (err == MF_OK) {
            pos->off += REC_HDR + len;
            return MF_OK;
        }
        if (pos->seq == q->last_seq)
            return MF_AGAIN;
        pos->seq++;
        pos->off = 0;
    }
}

int mf_offload__queue_expired(const struct mf_offload_queue *q, const struct mf_offload_record *r,
                              int64_t now_s)
{
    return q->ttl_s && r->created_s >= 0 && now_s >= 0 && now_s - r->created_s > (int64_t)q->ttl_s;
}

static void dedup_add(struct mf_offload_queue *q, uint64_t h)
{
    if (!q->dedup_cap)
        return;
    q->dedup[q->dedup_pos] = h;
    q->dedup_pos = (q->dedup_pos + 1) % q->dedup_cap;
    if (q->dedup_len < q->dedup_cap)
        q->dedup_len++;
}

static int dedup_has(const struct mf_offload_queue *q, uint64_t h)
{
    for (uint32_t i = 0; i < q->dedup_len; i++) {
        if (q->dedup[i] == h)
            return 1;
    }
    return 0;
}

/* Bytes of segment `seq` (the open one: what was written). */
static uint64_t seg_size(struct mf_offload_queue *q, uint32_t seq)
{
    char name[MF_OFFLOAD_STORE_NAME_MAX];
    uint64_t size = 0;

    if (q->wf && seq == q->last_seq)
        return q->w_off;
    if (seg_name(q, name, seq) < 0 || q->plat->size(q->plat->payload, &size, name) < 0)
        return 0;
    return size;
}

static void recount_bytes(struct mf_offload_queue *q)
{
    uint64_t total = 0;

    for (uint32_t s = q->cur_seq; s <= q->last_seq; s++)
        total += seg_size(q, s);
    q->bytes = total > q->cur_off ? total - q->cur_off : 0;
}

/* Removes segments [from, to); a missing one is fine (removed before a crash). */
static int remove_segments(struct mf_offload_queue *q, uint32_t from, uint32_t to)
{
    for (uint32_t s = from; s < to; s++) {
        char name[MF_OFFLOAD_STORE_NAME_MAX];
        int err = seg_name(q, name, s);

        if (q->rf && q->rf_seq == s)
            reader_close(q);
        if (err >= 0)
            err = q->plat->remove(q->plat->payload, name);
        if (err < 0 && err != MF_E_NOTFOUND)
            return mf_fail(q->ctx, err, "cannot remove %s", name);
    }
    return MF_OK;
}

static int recover(struct mf_offload_queue *q)
{
    struct mf_offload_qpos pos = {q->cur_seq, q->cur_off};
    struct mf_offload_record r;
    int err;

    q->count = 0;
    for (;;) {
        err = mf_offload__queue_next(q, &pos, &r, NULL);
        if (err != MF_OK)
            break;
        q->count++;
        dedup_add(q, r.hash);
    }
    if (err < 0)
        return err;
    /* Segments behind the cursor whose removal a crash interrupted. */
    err = remove_segments(q, q->first_seq, q->cur_seq);
    if (err < 0)
        return err;
    q->first_seq = q->cur_seq;
    recount_bytes(q);
    return MF_OK;
}

int mf_offload__queue_open(struct mf_offload_queue *q, struct mf_ctx *ctx,
                           const mf_platform_ops *plat, const struct mf_offload_queue_config *cfg)
{
    int n, err;

    memset(q, 0, sizeof(*q));
    q->ctx = ctx;
    q->plat = plat;
    n = snprintf(q->dir, sizeof(q->dir), "%s", cfg->dir);
    if (n < 0 || (size_t)n >= sizeof(q->dir))
        return mf_fail(ctx, MF_E_LIMIT, "queue directory name %s too long", cfg->dir);
    q->max_bytes = cfg->max_bytes;
    q->seg_bytes = cfg->seg_bytes;
    q->ttl_s = cfg->ttl_s;
    q->sync_every = cfg->sync_every;
    q->rec_cap = cfg->max_record;
    q->rec = mf_ctx__alloc(ctx, q->rec_cap);
    q->dedup_cap = cfg->dedup_window;
    if (q->dedup_cap)
        q->dedup = mf_calloc(&ctx->alloc, q->dedup_cap, sizeof(uint64_t));
    if (!q->rec || (q->dedup_cap && !q->dedup)) {
        mf_offload__queue_close(q);
        return mf_fail(ctx, MF_E_NOMEM, "no memory for the uplink queue");
    }
    err = meta_read(q);
    if (err >= 0)
        err = recover(q);
    if (err < 0)
        mf_offload__queue_close(q);
    return err;
}

void mf_offload__queue_close(struct mf_offload_queue *q)
{
    if (q->wf) {
        if (q->unsynced)
            (void)q->plat->sync(q->plat->payload, q->wf);
        q->plat->close(q->plat->payload, q->wf);
    }
    q->wf = NULL;
    reader_close(q);
    if (q->ctx) {
        mf_ctx__free(q->ctx, q->rec);
        mf_ctx__free(q->ctx, q->dedup);
    }
    q->rec = NULL;
    q->dedup = NULL;
}

static void writer_close(struct mf_offload_queue *q)
{
    if (!q->wf)
        return;
    if (q->unsynced)
        (void)q->plat->sync(q->plat->payload, q->wf);
    q->plat->close(q->plat->payload, q->wf);
    q->wf = NULL;
    q->unsynced = 0;
}

/* Starts segment last+1: the meta records it first, so it is never outside the range. */
static int writer_open(struct mf_offload_queue *q)
{
    char name[MF_OFFLOAD_STORE_NAME_MAX];
    uint32_t old_last = q->last_seq;
    int err;

    writer_close(q);
    q->last_seq++;
    err = meta_write(q);
    if (err < 0) {
        q->last_seq = old_last;
        return err;
    }
    err = seg_name(q, name, q->last_seq);
    if (err >= 0)
        err = q->plat->open(q->plat->payload, &q->wf, name,
                            MF_PLATFORM_OPEN_WRITE | MF_PLATFORM_OPEN_SECRET);
    if (err < 0)
        return mf_fail(q->ctx, err, "cannot create %s", name);
    q->w_off = 0;
    return MF_OK;
}

/* Drops the oldest segment (or, when only the open one is left, all of it). */
static int evict_oldest(struct mf_offload_queue *q)
{
    struct mf_offload_qpos pos = {q->cur_seq, q->cur_off};
    struct mf_offload_qpos end = {q->cur_seq + 1, 0};
    struct mf_offload_record r;
    uint64_t dropped = 0;
    int err;

    for (;;) {
        err = mf_offload__queue_next(q, &pos, &r, &end);
        if (err != MF_OK)
            break;
        dropped++;
    }
    if (err < 0)
        return err;
    if (q->inflight && q->end_seq >= q->cur_seq)
        q->inflight = 0; /* part of its range is gone: it will never be resent */
    if (q->cur_seq == q->last_seq) {
        q->cur_off = seg_size(q, q->cur_seq);
        writer_close(q); /* the next append starts a new segment */
    } else {
        err = remove_segments(q, q->cur_seq, q->cur_seq + 1);
        if (err < 0)
            return err;
        q->cur_seq++;
        q->cur_off = 0;
        q->first_seq = q->cur_seq;
    }
    err = meta_write(q);
    if (err < 0)
        return err;
    MF_LOG_WARN(q->ctx, "uplink queue full: evicted %llu oldest samples",
                (unsigned long long)dropped);
    q->count = q->count > dropped ? q->count - dropped : 0;
    recount_bytes(q);
    return MF_OK;
}

int mf_offload__queue_append(struct mf_offload_queue *q, const uint8_t *payload, size_t len,
                             uint64_t hash)
{
    const mf_platform_ops *pl = q->plat;
    uint64_t total = REC_HDR + (uint64_t)len;
    uint8_t hdr[REC_HDR];
    int err;

    if (len == 0 || len > q->rec_cap || total > q->max_bytes / 2)
        return mf_fail(q->ctx, MF_E_LIMIT, "sample of %zu bytes does not fit the uplink queue",
                       len);
    if (dedup_has(q, hash))
        return MF_AGAIN;
    while (q->bytes + total > q->max_bytes) {
        struct mf_offload_qpos before = {q->cur_seq, q->cur_off};

        err = evict_oldest(q);
        if (err < 0)
            return err;
        if (q->cur_seq == before.seq && q->cur_off == before.off)
            break; /* nothing left to evict */
    }
    if (!q->wf || (q->w_off > 0 && q->w_off + total > q->seg_bytes)) {
        err = writer_open(q);
        if (err < 0)
            return err;
    }
    mf_offload__put_u32(hdr, (uint32_t)len);
    mf_offload__put_u32(hdr + 4, mf_crc32__update(mf_crc32__update(0, hdr, 4), payload, len));
    err = pl->write(pl->payload, q->wf, hdr, sizeof(hdr));
    if (err >= 0)
        err = pl->write(pl->payload, q->wf, payload, len);
    if (err >= 0 && q->sync_every && ++q->unsynced >= q->sync_every) {
        err = pl->sync(pl->payload, q->wf);
        q->unsynced = 0;
    }
    if (err < 0) {
        /* What reached the file is a torn tail now; never append after it. */
        q->plat->close(pl->payload, q->wf);
        q->wf = NULL;
        q->unsynced = 0;
        return mf_fail(q->ctx, err, "cannot append to uplink segment %u", q->last_seq);
    }
    q->w_off += total;
    q->bytes += total;
    q->count++;
    dedup_add(q, hash);
    return MF_OK;
}

int mf_offload__queue_begin(struct mf_offload_queue *q, const uint8_t *id,
                            const struct mf_offload_qpos *end, uint64_t n_records)
{
    int err;

    (void)n_records;
    memcpy(q->batch_id, id, MF_OFFLOAD_ID_LEN);
    q->end_seq = end->seq;
    q->end_off = end->off;
    q->inflight = 1;
    /* Everything the batch holds is on stable storage before it can reach the server. */
    if (q->wf && q->unsynced) {
        err = q->plat->sync(q->plat->payload, q->wf);
        if (err < 0) {
            q->inflight = 0;
            return mf_fail(q->ctx, err, "cannot sync uplink segment %u", q->last_seq);
        }
        q->unsynced = 0;
    }
    err = meta_write(q);
    if (err < 0)
        q->inflight = 0;
    return err;
}

int mf_offload__queue_commit(struct mf_offload_queue *q, uint64_t n_records)
{
    uint32_t old = q->cur_seq;
    int err;

    err = remove_segments(q, old, q->end_seq);
    if (err < 0)
        return err;
    q->cur_seq = q->end_seq;
    q->cur_off = q->end_off;
    q->first_seq = q->cur_seq;
    q->inflight = 0;
    err = meta_write(q);
    if (err < 0)
        return err;
    q->count = q->count > n_records ? q->count - n_records : 0;
    recount_bytes(q);
    return MF_OK;
}
