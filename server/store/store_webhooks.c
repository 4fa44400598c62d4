/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhooks domain of the store, both backends (struct mf_store_webhooks_ops, semantics in
 * store.h; docs/operations.md, "Webhooks"): the URLs ops registered and the outbox of their
 * deliveries. A delivery is claimed like a job (store_jobs.c): in one transaction, on SQLite
 * under BEGIN IMMEDIATE's write lock, on PostgreSQL with FOR UPDATE SKIP LOCKED, so one node
 * holds a delivery at a time, and its lease lets another node take it over only once the
 * holder is gone (then the receiver may see the event twice: it dedups by event id).
 */
#include "store/store_engine.h"

#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

/* The catalogue of this domain. */
static const struct mf_sql sql_webhook_add =
    MF_SQL("INSERT INTO webhooks(url, secret, created_at) VALUES(?, ?, ?) RETURNING id",
           "registering a webhook");
static const struct mf_sql sql_outbox_drop =
    MF_SQL("DELETE FROM webhook_outbox WHERE webhook_id = ?", "dropping a webhook's deliveries");
static const struct mf_sql sql_webhook_remove =
    MF_SQL("DELETE FROM webhooks WHERE id = ?", "removing a webhook");
#define COUNT_STATE(states)                                                                        \
    "(SELECT count(*) FROM webhook_outbox o WHERE o.webhook_id = w.id AND o.state IN " states ")"
static const struct mf_sql sql_webhooks_list = MF_SQL_LIST(
    "SELECT w.id, w.url, w.created_at, " COUNT_STATE("('pending','sending')") ", " COUNT_STATE(
        "('failed')") ", " COUNT_STATE("('delivered')") " FROM webhooks w ORDER BY w.id",
    "listing webhooks");
static const struct mf_sql sql_claim = MF_SQL_LEASE_CLAIM(
    "webhook_outbox", "sending",
    "(state = 'pending' AND next_at <= ?2) OR (state = 'sending' AND lease_until <= ?2)",
    "id, webhook_id, event_id, body, attempts", "claiming a webhook delivery");
static const struct mf_sql sql_target =
    MF_SQL("SELECT url, secret FROM webhooks WHERE id = ?", "reading a webhook");
static const struct mf_sql sql_done =
    MF_SQL("UPDATE webhook_outbox SET state = 'delivered', delivered_at = ?3, lease_until = 0,"
           " last_error = ''" MF_SQL_LEASE_HELD("sending"),
           "ending a webhook delivery");
static const struct mf_sql sql_retry = MF_SQL(
    "UPDATE webhook_outbox SET next_at = ?3, last_error = ?5, " MF_SQL_LEASE_RETRY("?4", "pending")
        MF_SQL_LEASE_HELD("sending"),
    "rescheduling a webhook delivery");

static int webhooks_add(int64_t *id_out, struct mf_store *s, struct mf_ctx *ctx, const char *url,
                        const char *secret, int64_t now)
{
    int found = 0;
    int err;

    *id_out = 0;
    err = mf_store__first(&found, s, NULL, ctx, &sql_webhook_add, mf_store__take_i64, id_out, "tti",
                          url, secret, now);
    if (err == MF_E_STATE)
        err = mf_fail(ctx, MF_E_STATE, "webhook %.*s is registered already", 200, url);
    return err;
}

struct remove_args {
    int64_t id;
};

static int remove_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct remove_args *a = arg;
    char missing[64];
    int err = mf_store__run(NULL, s, tx, ctx, &sql_outbox_drop, NULL, NULL, "i", a->id);

    (void)snprintf(missing, sizeof(missing), "no webhook %lld", (long long)a->id);
    return err == MF_OK ? mf_store__change(s, tx, ctx, MF_E_NOTFOUND, missing, &sql_webhook_remove,
                                           "i", a->id)
                        : err;
}

static int webhooks_remove(struct mf_store *s, struct mf_ctx *ctx, int64_t id)
{
    struct remove_args a = {id};

    return mf_store__in_tx(s, ctx, remove_tx, &a);
}

static int visit_webhook(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_webhook h;

    mf_store__cols(row, 0, "itiiii", &h.id, MF_STORE_TEXT(h.url), &h.created_at, &h.pending,
                   &h.failed, &h.delivered);
    return ((mf_store_webhook_fn)w->fn)(w->payload, &h);
}

MF_STORE_LISTING(webhooks_list, mf_store_webhook_fn, &sql_webhooks_list, visit_webhook)

struct claim_args {
    struct mf_store_delivery *out;
    const char *owner;
    int64_t now, lease_s;
};

static int take_delivery(void *payload, const struct mf_store_cursor *row)
{
    struct mf_store_delivery *d = payload;

    mf_store__cols(row, 0, "iittn", &d->id, &d->webhook_id, MF_STORE_TEXT(d->event_id),
                   MF_STORE_TEXT(d->body), &d->attempts);
    return MF_OK;
}

static int take_target(void *payload, const struct mf_store_cursor *row)
{
    struct mf_store_delivery *d = payload;

    mf_store__cols(row, 0, "tt", MF_STORE_TEXT(d->url), MF_STORE_TEXT(d->secret));
    return MF_OK;
}

static int claim_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct claim_args *a = arg;
    int found = 0;
    int err = mf_store__first(&found, s, tx, ctx, &sql_claim, take_delivery, a->out, "tii",
                              a->owner, a->now, a->lease_s);

    if (err == MF_OK && !found)
        return mf_fail(ctx, MF_E_NOTFOUND, "no webhook delivery is due");
    if (err == MF_OK)
        err = mf_store__first(&found, s, tx, ctx, &sql_target, take_target, a->out, "i",
                              a->out->webhook_id);
    /* remove drops a webhook's rows with it, in its own transaction: never seen here. */
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_STATE, "delivery %lld names no webhook", (long long)a->out->id);
    return err;
}

static int webhooks_claim(struct mf_store_delivery *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *owner, int64_t now, int64_t lease_s)
{
    struct claim_args a = {out, owner, now, lease_s};
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_store__in_tx(s, ctx, claim_tx, &a);
    if (err < 0)
        mf_secure_zero(out->secret, sizeof(out->secret));
    return err;
}

static int held_by(char *missing, size_t size, int64_t id, const char *owner)
{
    return snprintf(missing, size, "webhook delivery %lld is not held by '%.64s'", (long long)id,
                    owner);
}

static int webhooks_done(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                         int64_t now)
{
    char missing[160];

    (void)held_by(missing, sizeof(missing), id, owner);
    return mf_store__change(s, NULL, ctx, MF_E_STATE, missing, &sql_done, "iti", id, owner, now);
}

static int webhooks_retry(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                          int64_t next_at, int max_attempts, const char *error)
{
    char missing[160];

    (void)held_by(missing, sizeof(missing), id, owner);
    return mf_store__change(s, NULL, ctx, MF_E_STATE, missing, &sql_retry, "itiit", id, owner,
                            next_at, (int64_t)max_attempts, error);
}

/* clang-format off */
const struct mf_store_webhooks_ops mf_store__webhooks_ops = {
    .webhook_add = webhooks_add, .webhook_remove = webhooks_remove,
    .webhooks_list = webhooks_list, .delivery_claim = webhooks_claim,
    .delivery_done = webhooks_done, .delivery_retry = webhooks_retry,
};
/* clang-format on */
