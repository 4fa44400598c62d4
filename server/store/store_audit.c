/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit domain of the store, both backends (struct mf_store_audit_ops, semantics in
 * store.h; docs/operations.md, "Audit log"): the rows the router writes for every admin
 * request and the rollout engine for each automatic event, the paged listing, and the
 * retention bound. A rollout event, its audit row and its webhook deliveries are written in
 * one transaction, so the history of a rollout, the audit log and what webhooks receive never
 * disagree.
 */
#include "store/store_engine.h"

#include <string.h>

/* The catalogue of this domain. */
static const struct mf_sql sql_audit_add =
    MF_SQL("INSERT INTO audit_log(at, actor_id, actor, action, target, status, detail)"
           " VALUES(?, ?, ?, ?, ?, ?, ?)",
           "writing an audit row");
/* ?3 matches the token id or the token name; ?4 is a prefix of the action. */
static const struct mf_sql sql_audit_list = {
    .sqlite = "SELECT seq, at, actor_id, actor, action, target, status, detail FROM audit_log"
              " WHERE (?1 = 0 OR at >= ?1) AND (?2 = 0 OR at < ?2)"
              " AND (?3 = '' OR actor_id = ?3 OR actor = ?3)"
              " AND (?4 = '' OR substr(action, 1, length(?4)) = ?4)"
              " AND (?5 = 0 OR seq < ?5) ORDER BY seq DESC LIMIT ?6",
    .pg = "SELECT seq, at, actor_id, actor, action, target, status, detail FROM audit_log"
          " WHERE (?1::bigint = 0 OR at >= ?1::bigint) AND (?2::bigint = 0 OR at < ?2::bigint)"
          " AND (?3::text = '' OR actor_id = ?3 OR actor = ?3)"
          " AND (?4::text = '' OR substr(action, 1, length(?4::text)) = ?4)"
          " AND (?5::bigint = 0 OR seq < ?5::bigint) ORDER BY seq DESC LIMIT ?6",
    .what = "listing the audit log",
    .stream = 1,
};
/* Older than the age bound, or beyond the newest `keep` rows. */
static const struct mf_sql sql_audit_prune =
    MF_SQL("DELETE FROM audit_log WHERE at < ?1"
           " OR seq <= (SELECT coalesce(max(seq), 0) FROM audit_log) - ?2",
           "pruning the audit log");
/* One delivery per registered webhook, due at once. */
static const struct mf_sql sql_outbox_add =
    MF_SQL("INSERT INTO webhook_outbox(webhook_id, event_id, body, next_at, created_at)"
           " SELECT id, ?1, ?2, ?3, ?3 FROM webhooks",
           "queueing webhook deliveries");
/* Deliveries that ended (delivered or failed for good) go with the audit rows of their age. */
static const struct mf_sql sql_outbox_prune =
    MF_SQL("DELETE FROM webhook_outbox WHERE state IN ('delivered','failed') AND created_at < ?",
           "pruning the webhook outbox");

static int audit_insert(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                        const struct mf_store_audit *a)
{
    return mf_store__run(NULL, s, tx, ctx, &sql_audit_add, NULL, NULL, "ittttit", a->at,
                         a->actor_id, a->actor, a->action, a->target, (int64_t)a->status,
                         a->detail);
}

static int audit_add(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_audit *a)
{
    return audit_insert(s, NULL, ctx, a);
}

static int visit_audit(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_audit a;

    mf_store__cols(row, 0, "iittttnt", &a.seq, &a.at, MF_STORE_TEXT(a.actor_id),
                   MF_STORE_TEXT(a.actor), MF_STORE_TEXT(a.action), MF_STORE_TEXT(a.target),
                   &a.status, MF_STORE_TEXT(a.detail));
    return ((mf_store_audit_fn)w->fn)(w->payload, &a);
}

static int audit_list(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_audit_query *q,
                      mf_store_audit_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_audit_list, visit_audit, (void (*)(void))fn, payload,
                          "iittii", q->since, q->until, q->token ? q->token : "",
                          q->action ? q->action : "", q->before_seq, q->limit);
}

static int audit_prune(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx, int64_t before,
                       int64_t keep)
{
    int err;

    *deleted_out = 0;
    err =
        mf_store__run(deleted_out, s, NULL, ctx, &sql_audit_prune, NULL, NULL, "ii", before, keep);
    return err == MF_OK
               ? mf_store__run(NULL, s, NULL, ctx, &sql_outbox_prune, NULL, NULL, "i", before)
               : err;
}

struct event_args {
    const struct mf_store_rollout_event *e;
    const struct mf_store_audit *a;
    const char *event_id, *body;
    int64_t now;
};

static int event_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct event_args *x = arg;
    int err = mf_store__event_insert(s, tx, ctx, x->e);

    if (err == MF_OK && x->a)
        err = audit_insert(s, tx, ctx, x->a);
    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_outbox_add, NULL, NULL, "tti", x->event_id,
                            x->body, x->now);
    return err;
}

static int audit_event_record(struct mf_store *s, struct mf_ctx *ctx,
                              const struct mf_store_rollout_event *e,
                              const struct mf_store_audit *a, const char *event_id,
                              const char *body, int64_t now)
{
    struct event_args x = {e, a, event_id, body, now};

    return mf_store__in_tx(s, ctx, event_tx, &x);
}

/* clang-format off */
const struct mf_store_audit_ops mf_store__audit_ops = {
    .audit_add = audit_add, .audit_list = audit_list, .audit_prune = audit_prune,
    .event_record = audit_event_record,
};
/* clang-format on */
