/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch uplink of the queue: POST /v1/offload/batch with an idempotent batch id.
 * Sequence per batch (see offload_queue.c for the storage side):
 *   1. read records from the cursor (expired ones are skipped but consumed);
 *   2. record the batch as in flight (id + end position) durably;
 *   3. send; 4. on the server's ack, move the cursor past the batch.
 * A crash or a lost ack between 2 and 4 makes the next drain resend exactly the same
 * records under the same id, which the server acknowledges without storing them twice.
 * Failures back off exponentially (backoff_min_ms doubling up to backoff_max_ms) with
 * "equal jitter" (half fixed, half random), so a fleet that lost the server together does
 * not come back in lockstep.
 */
#include "mf_offload_int.h"
#include "mf_hex.h"

#include <string.h>

struct batch {
    struct mf_dynbuf body;
    struct mf_offload_qpos end;
    uint8_t id[MF_OFFLOAD_ID_LEN];
    char id_hex[MF_OFFLOAD_ID_HEX + 1];
    uint64_t consumed; /* records the batch moves the cursor past (sent + expired) */
    uint64_t sent;
};

/* Adds one record, or rolls back and returns MF_AGAIN when it would overflow the batch. */
static int add_record(mf_offload *o, struct batch *b, const struct mf_offload_record *r, int fixed)
{
    size_t before = b->body.len;
    int err = mf_dynbuf__append(&b->body, b->sent ? "," : "", b->sent ? 1 : 0);

    if (err >= 0)
        err = mf_offload__wire_sample(&b->body, o->model, r);
    if (err >= 0 && !fixed && b->sent > 0 && b->body.len > o->opts.batch_max_bytes)
        err = MF_AGAIN;
    if (err != MF_OK) {
        b->body.len = before;
        b->body.data[before] = '\0';
        return err == MF_AGAIN
                   ? MF_AGAIN
                   : mf_fail(&o->ctx, err, "cannot build an uplink batch (%s)", mf_strerror(err));
    }
    b->sent++;
    return MF_OK;
}

/* Collects the next batch: the in-flight one again, or new records from the cursor. */
static int collect(mf_offload *o, struct batch *b)
{
    struct mf_offload_queue *q = &o->queue;
    struct mf_offload_qpos pos = {q->cur_seq, q->cur_off};
    struct mf_offload_qpos fixed_end = {q->end_seq, q->end_off};
    const struct mf_offload_qpos *end = q->inflight ? &fixed_end : NULL;
    int64_t now = o->plat.wall_clock_s(o->plat.payload);
    struct mf_offload_record *r = &o->drain_rec;
    int err;

    err = mf_dynbuf__appendf(&b->body, "{\"batch_id\":\"%s\",\"model\":\"%s\",\"samples\":[",
                             b->id_hex, o->model);
    if (err < 0)
        return mf_fail(&o->ctx, err, "cannot start an uplink batch (%s)", mf_strerror(err));
    for (;;) {
        struct mf_offload_qpos prev = pos;

        if (!end && b->sent >= o->opts.batch_max_samples)
            break;
        err = mf_offload__queue_next(q, &pos, r, end);
        if (err != MF_OK)
            break;
        if (mf_offload__queue_expired(q, r, now)) {
            b->consumed++;
            continue;
        }
        err = add_record(o, b, r, end != NULL);
        if (err == MF_AGAIN)
            pos = prev;
        if (err != MF_OK)
            break;
        b->consumed++;
    }
    if (err < 0)
        return err; /* the queue or add_record() set the message */
    b->end = end ? fixed_end : pos;
    err = mf_dynbuf__append(&b->body, "]}", 2);
    if (err < 0)
        return mf_fail(&o->ctx, err, "cannot close an uplink batch (%s)", mf_strerror(err));
    return MF_OK;
}

static int send_batch(mf_offload *o, struct batch *b)
{
    struct mf_http_request req = {0};
    struct mf_http_response resp;
    mf_offload_telemetry *t = mf_offload__telemetry_slot(o);
    int err = mf_offload__http(o);

    if (err < 0)
        return err;
    o->http.cfg.connect_timeout_ms = o->opts.connect_timeout_ms;
    o->http.cfg.request_timeout_ms = o->opts.request_timeout_ms;
    req.method = "POST";
    req.url = o->batch_url;
    req.bearer = o->credential[0] ? o->credential : NULL;
    req.content_type = "application/json";
    req.body = b->body.data;
    req.body_len = b->body.len;
    mf_http__response_init(&resp, &o->http);
    err = mf_http__perform(&o->http, &resp, &req);
    t->bytes_up += b->body.len;
    t->bytes_down += resp.body.len;
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&o->http, &resp, "offload batch");
    if (err >= 0)
        err = mf_offload__wire_parse_ack(&o->ctx, b->id_hex, (const char *)resp.body.data,
                                         resp.body.len);
    mf_http__response_free(&resp);
    return err;
}

/* One batch: MF_OK sent (or only expired records consumed), MF_AGAIN nothing to send. */
static int drain_one(mf_offload *o)
{
    struct mf_offload_queue *q = &o->queue;
    struct batch b;
    int err;

    memset(&b, 0, sizeof(b));
    mf_dynbuf__init(&b.body, &o->ctx.alloc, o->opts.batch_max_bytes + 2 * o->max_record + 1024);
    if (q->inflight) {
        memcpy(b.id, q->batch_id, sizeof(b.id));
    } else {
        (void)mf_offload__put_u64(b.id, mf_offload__rng_next(&o->rng));
        (void)mf_offload__put_u64(b.id + 8, mf_offload__rng_next(&o->rng));
    }
    mf_hex__encode(b.id_hex, b.id, sizeof(b.id));
    err = collect(o, &b);
    if (err >= 0 && b.consumed == 0 && !q->inflight)
        err = MF_AGAIN;
    if (err == MF_OK && !q->inflight)
        err = mf_offload__queue_begin(q, b.id, &b.end, b.consumed);
    if (err == MF_OK && b.sent > 0)
        err = send_batch(o, &b);
    if (err == MF_OK)
        err = mf_offload__queue_commit(q, b.consumed);
    mf_dynbuf__free(&b.body);
    return err;
}

/* May the queue use the link now? */
static int link_allows(const mf_offload *o)
{
    int metered = o->has_policy ? o->policy.metered : MF_OFFLOAD_METERED_DEFER;

    if (o->link == MF_OFFLOAD_LINK_OFFLINE)
        return 0;
    if (o->has_policy && !o->policy.enabled)
        return 0; /* edge-only: nothing leaves the device, queued samples wait */
    return o->link != MF_OFFLOAD_LINK_METERED || metered == MF_OFFLOAD_METERED_ALLOW;
}

static void backoff(mf_offload *o, uint64_t now)
{
    uint32_t d = o->backoff_ms ? o->backoff_ms * 2 : o->opts.backoff_min_ms;

    if (d > o->opts.backoff_max_ms || d < o->backoff_ms)
        d = o->opts.backoff_max_ms;
    o->backoff_ms = d;
    o->next_drain_ms = now + d / 2 + mf_offload__rng_next(&o->rng) % (d / 2 + 1);
}

int mf_offload_drain(mf_offload *o, unsigned int max_batches)
{
    uint64_t now = o->plat.monotonic_ms(o->plat.payload);

    mf_ctx__clear(&o->ctx);
    if (!o->server_url)
        return mf_fail(&o->ctx, MF_E_STATE, "offload has no server URL");
    if (o->queue.count == 0 && !o->queue.inflight)
        return MF_OK;
    if (!link_allows(o) || now < o->next_drain_ms)
        return MF_AGAIN;
    for (unsigned int i = 0; i < max_batches; i++) {
        int err = drain_one(o);

        if (err == MF_AGAIN)
            return MF_OK;
        if (err < 0) {
            backoff(o, now);
            MF_LOG_WARN(&o->ctx, "uplink batch failed, next try in %u ms: %s",
                        (unsigned)(o->next_drain_ms - now), o->ctx.errmsg);
            return err;
        }
        o->backoff_ms = 0;
    }
    return (o->queue.count == 0 && !o->queue.inflight) ? MF_OK : MF_AGAIN;
}

uint64_t mf_offload_queue_count(const mf_offload *o)
{
    return o->queue.count;
}

uint64_t mf_offload_next_drain_ms(const mf_offload *o)
{
    return o->next_drain_ms;
}
