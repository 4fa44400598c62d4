/* SPDX-License-Identifier: Apache-2.0 */
/* The webhook delivery thread (webhook_sender.h). */
#include "webhooks/webhook_sender.h"

#include "common/worker_thread.h"
#include "mf/ct.h"
#include "mf_hex.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

struct mf_webhook_sender {
    struct mf_ctx ctx;
    struct mf_store *store;
    struct mf_webhook_options opts;
    char owner[64]; /* this node's name in claims */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
};

void mf_webhook__options_init(struct mf_webhook_options *o)
{
    memset(o, 0, sizeof(*o));
    o->interval_ms = 1000;
    o->timeout_ms = 10000;
    o->lease_s = 60;
    o->retry_base_s = 5;
    o->retry_max_s = 3600;
    o->max_attempts = 12;
}

void mf_webhook__sign(char out[MF_WEBHOOK_SIGNATURE_SIZE], const char *secret, const void *body,
                      size_t len)
{
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    memcpy(out, "sha256=", 7);
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), body, len, mac, &n) || n != 32)
        memset(mac, 0, sizeof(mac)); /* no MAC: a signature no receiver accepts */
    mf_hex__encode(out + 7, mac, 32);
    mf_secure_zero(mac, sizeof(mac));
}

int64_t mf_webhook__backoff(int64_t base, int64_t max, int attempts)
{
    int64_t wait = base;

    for (int i = 1; i < attempts && wait < max; i++)
        wait *= 2;
    return wait < max ? wait : max;
}

int mf_webhook__url_ok(const char *url)
{
    size_t n = strlen(url), scheme;

    if (strncasecmp(url, "https://", 8) == 0)
        scheme = 8;
    else if (strncasecmp(url, "http://", 7) == 0)
        scheme = 7;
    else
        return 0;
    if (n > MF_STORE_WEBHOOK_URL_MAX || n == scheme || url[scheme] == '/' || url[scheme] == ':' ||
        url[scheme] == '@')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return 0;
    }
    return 1;
}

static size_t discard(char *p, size_t size, size_t n, void *payload)
{
    (void)p;
    (void)payload;
    return size * n;
}

/* One POST; MF_OK on a 2xx answer, else MF_E_NET with why in `ctx`. */
static int post(struct mf_webhook_sender *w, const struct mf_store_delivery *d)
{
    char sig[MF_WEBHOOK_SIGNATURE_SIZE], h[4][128];
    struct curl_slist *hdr = NULL;
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode rc;
    int err = MF_OK;

    if (!c)
        return mf_fail(&w->ctx, MF_E_NOMEM, "cannot create a curl handle");
    mf_webhook__sign(sig, d->secret, d->body, strlen(d->body));
    (void)snprintf(h[0], sizeof(h[0]), "X-Modelferry-Signature: %s", sig);
    (void)snprintf(h[1], sizeof(h[1]), "X-Modelferry-Event: %s", d->event_id);
    (void)snprintf(h[2], sizeof(h[2]), "X-Modelferry-Timestamp: %lld", (long long)time(NULL));
    (void)snprintf(h[3], sizeof(h[3]), "X-Modelferry-Attempt: %d", d->attempts);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    for (size_t i = 0; i < 4; i++)
        hdr = curl_slist_append(hdr, h[i]);
    (void)curl_easy_setopt(c, CURLOPT_URL, d->url);
    (void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https"); /* checked at add, again */
    (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    (void)curl_easy_setopt(c, CURLOPT_USERAGENT, "mf-server");
    (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, d->body);
    (void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(d->body));
    (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    (void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)w->opts.timeout_ms);
    (void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)w->opts.timeout_ms);
    (void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM timeouts */
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        err = mf_fail(&w->ctx, MF_E_NET, "%s", curl_easy_strerror(rc));
    else if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status < 200 ||
             status > 299)
        err = mf_fail(&w->ctx, MF_E_NET, "answered HTTP %ld", status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return err;
}

static int stopping(struct mf_webhook_sender *w)
{
    int stop;

    (void)pthread_mutex_lock(&w->lock);
    stop = w->stop;
    (void)pthread_mutex_unlock(&w->lock);
    return stop;
}

/* Sends what is due until nothing is (or the node stops). */
static void drain(struct mf_webhook_sender *w, struct mf_store_delivery *d)
{
    struct mf_store *s = w->store;

    while (!stopping(w)) {
        int64_t now = (int64_t)time(NULL);
        int err = s->ops->webhooks->delivery_claim(d, s, &w->ctx, w->owner, now, w->opts.lease_s);

        if (err == MF_E_NOTFOUND)
            return;
        if (err < 0) {
            MF_LOG_WARN(&w->ctx, "claiming a webhook delivery: %s", mf_ctx__errmsg(&w->ctx));
            return;
        }
        err = post(w, d);
        mf_secure_zero(d->secret, sizeof(d->secret));
        now = (int64_t)time(NULL);
        if (err == MF_OK) {
            MF_LOG_INFO(&w->ctx, "webhook=%lld event_id=%s attempt=%d delivered",
                        (long long)d->webhook_id, d->event_id, d->attempts);
            err = s->ops->webhooks->delivery_done(s, &w->ctx, d->id, w->owner, now);
        } else {
            char why[MF_ERRMSG_MAX];
            int64_t wait =
                mf_webhook__backoff(w->opts.retry_base_s, w->opts.retry_max_s, d->attempts);

            (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(&w->ctx));
            MF_LOG_WARN(&w->ctx, "webhook=%lld event_id=%s attempt=%d failed (%s)%s",
                        (long long)d->webhook_id, d->event_id, d->attempts, why,
                        d->attempts >= w->opts.max_attempts ? ": given up" : "");
            err = s->ops->webhooks->delivery_retry(s, &w->ctx, d->id, w->owner, now + wait,
                                                   w->opts.max_attempts, why);
        }
        if (err < 0) /* the lease ran out meanwhile: another node has it now */
            MF_LOG_WARN(&w->ctx, "ending webhook delivery %lld: %s", (long long)d->id,
                        mf_ctx__errmsg(&w->ctx));
    }
}

static void *sender_main(void *arg)
{
    struct mf_webhook_sender *w = arg;
    struct mf_store_delivery *d = mf_calloc(NULL, 1, sizeof(*d)); /* 5 KiB: not on the stack */

    (void)pthread_mutex_lock(&w->lock);
    while (!w->stop && d) {
        struct timespec until;

        (void)pthread_mutex_unlock(&w->lock);
        drain(w, d);
        (void)pthread_mutex_lock(&w->lock);
        mf_worker_thread__deadline(&until, w->opts.interval_ms);
        while (!w->stop) {
            if (pthread_cond_timedwait(&w->cond, &w->lock, &until) != 0)
                break; /* timed out: poll the outbox again */
        }
    }
    (void)pthread_mutex_unlock(&w->lock);
    if (!d)
        MF_LOG_ERR(&w->ctx, "webhook sender: out of memory; no deliveries from this node");
    mf_free(NULL, d);
    return NULL;
}

int mf_webhook__sender_start(struct mf_webhook_sender **out, struct mf_ctx *ctx, struct mf_store *s,
                             const struct mf_webhook_options *o)
{
    struct mf_webhook_sender *w = mf_calloc(&ctx->alloc, 1, sizeof(*w));
    int err;

    *out = NULL;
    if (!w)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory starting the webhook sender");
    mf_ctx__init(&w->ctx, &ctx->alloc, ctx->log_fn, ctx->log_payload, "webhooks");
    w->store = s;
    w->opts = *o;
    mf_worker_thread__owner(w->owner, sizeof(w->owner), w);
    err = mf_worker_thread__start(&w->thread, &w->lock, &w->cond, sender_main, w, ctx,
                                  "the webhook sender");
    if (err < 0) {
        mf_free(&ctx->alloc, w);
        return err;
    }
    *out = w;
    return MF_OK;
}

void mf_webhook__sender_stop(struct mf_webhook_sender *w)
{
    mf_allocator alloc;

    if (!w)
        return;
    mf_worker_thread__stop(&w->stop, w->thread, &w->lock, &w->cond);
    alloc = w->ctx.alloc;
    mf_free(&alloc, w);
}
