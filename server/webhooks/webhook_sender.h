/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhook delivery (docs/operations.md, "Webhooks"): a thread on each node that claims due
 * deliveries from the store's outbox (a lease, so one node sends each at a time), POSTs the
 * event's JSON through libcurl with its HMAC-SHA256 signature, and marks it delivered on a
 * 2xx answer or schedules the next attempt with exponential backoff. A node that dies
 * mid-send leaves its lease to run out and another node sends again: delivery is at least
 * once, and the receiver makes it exactly once by the event id every attempt carries.
 *
 * Each request carries:
 *   X-Modelferry-Signature: sha256=<hex of HMAC-SHA256(secret, body)>
 *   X-Modelferry-Event: <event id>       (the same on every attempt: dedup by it)
 *   X-Modelferry-Timestamp: <Unix seconds of this attempt>
 *   X-Modelferry-Attempt: <1, 2, ...>
 */
#ifndef MF_SERVER_WEBHOOK_SENDER_H
#define MF_SERVER_WEBHOOK_SENDER_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define MF_WEBHOOK_SIGNATURE_SIZE (7 + 64 + 1) /* "sha256=" + hex + NUL */

struct mf_webhook_options {
    unsigned interval_ms; /* idle poll of the outbox (default 1000) */
    unsigned timeout_ms;  /* one POST, connection included (default 10000) */
    int64_t lease_s;      /* a claimed delivery's lease, above timeout_ms (default 60) */
    int64_t retry_base_s; /* the wait after the first failure, doubled each time (default 5) */
    int64_t retry_max_s;  /* the longest wait (default 3600) */
    int max_attempts;     /* then the delivery fails for good (default 12: about 3.5 h) */
};

void mf_webhook__options_init(struct mf_webhook_options *o);

struct mf_webhook_sender;

/* Starts the thread; it logs through `ctx`'s sink. Ownership: stop with
 * mf_webhook__sender_stop() before the store closes. */
int mf_webhook__sender_start(struct mf_webhook_sender **out, struct mf_ctx *ctx, struct mf_store *s,
                             const struct mf_webhook_options *o);
/* Stops and joins the thread (a POST in flight ends within timeout_ms); NULL is a no-op. */
void mf_webhook__sender_stop(struct mf_webhook_sender *w);

/* "sha256=<hex>" of HMAC-SHA256 under `secret` over `body`. */
void mf_webhook__sign(char out[MF_WEBHOOK_SIGNATURE_SIZE], const char *secret, const void *body,
                      size_t len);
/* The wait before attempt `attempts` + 1: base * 2^(attempts - 1), at most `max`. */
int64_t mf_webhook__backoff(int64_t base, int64_t max, int attempts);
/* 1 when `url` is an http:// or https:// URL with a host, at most MF_STORE_WEBHOOK_URL_MAX
 * bytes of printable ASCII without spaces; the server refuses anything else with 400. */
int mf_webhook__url_ok(const char *url);

#endif /* MF_SERVER_WEBHOOK_SENDER_H */
