/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl adapter (see mf_http.h). Everything that reaches libcurl goes through
 * mf_http__perform(), so the safety settings (protocols, no redirects, timeouts, stall
 * limit, body bounds) are set in one place for the agent and for mfctl.
 */
#include "mf_http.h"
#include "mf_json.h"
#include "mf/ct.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Per-request state shared with the libcurl callbacks. */
struct xfer {
    struct mf_http *h;
    struct mf_http_response *resp;
    const struct mf_http_request *req;
    uint64_t received; /* 2xx bytes handed to the sink */
    int abort_err;     /* set by a callback that stopped the transfer */
    char range[32];    /* "<from>-" for CURLOPT_RANGE */
    curl_off_t last_dl, last_ul;
    uint64_t last_change_ms; /* when a byte last moved */
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Stall detector: libcurl's low-speed limit averages over several seconds, so a burst
 * followed by silence goes unnoticed for a long time. This aborts once no byte has moved
 * for low_speed_time_s (libcurl calls it about once per second even when idle).
 */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct xfer *x = userdata;
    uint64_t now = now_ms();

    (void)dltotal;
    (void)ultotal;
    if (dlnow != x->last_dl || ulnow != x->last_ul) {
        x->last_dl = dlnow;
        x->last_ul = ulnow;
        x->last_change_ms = now;
        return 0;
    }
    if (now - x->last_change_ms < (uint64_t)x->h->cfg.low_speed_time_s * 1000u)
        return 0;
    x->abort_err = mf_fail(x->h->ctx, MF_E_NET, "%s stalled: no data for %ld s", x->req->url,
                           x->h->cfg.low_speed_time_s);
    return 1;
}

int mf_http__init(struct mf_http *h, struct mf_ctx *ctx, const struct mf_http_config *cfg)
{
    memset(h, 0, sizeof(*h));
    h->ctx = ctx;
    h->cfg = *cfg;
    h->curl = curl_easy_init();
    if (!h->curl)
        return mf_fail(ctx, MF_E_NOMEM, "cannot create a libcurl handle");
    return MF_OK;
}

void mf_http__cleanup(struct mf_http *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

void mf_http__response_init(struct mf_http_response *r, struct mf_http *h)
{
    r->status = 0;
    /* +1: the dynbuf counts its NUL terminator against the maximum. */
    mf_dynbuf__init(&r->body, &h->ctx->alloc, h->cfg.max_body + 1);
}

void mf_http__response_free(struct mf_http_response *r)
{
    mf_dynbuf__free(&r->body);
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;
    size_t n = size * nmemb;
    long status = 0;
    int err;

    (void)curl_easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &status);
    if (x->req->sink && (status == (x->req->sink_status ? x->req->sink_status : 200) ||
                         (x->req->sink_status_alt && status == x->req->sink_status_alt))) {
        uint64_t max = x->req->max_download;

        if (max && (x->received > max || n > max - x->received)) {
            x->abort_err = mf_fail(x->h->ctx, MF_E_LIMIT, "%s sent more than %llu bytes",
                                   x->req->url, (unsigned long long)max);
            return 0;
        }
        x->received += n;
        err = x->req->sink(x->req->sink_payload, data, n);
        if (err < 0) {
            x->abort_err = err;
            return 0;
        }
        return n;
    }
    err = mf_dynbuf__append(&x->resp->body, data, n);
    if (err < 0) {
        x->abort_err = err == MF_E_LIMIT
                           ? mf_fail(x->h->ctx, MF_E_LIMIT, "response body of %s exceeds %zu bytes",
                                     x->req->url, x->h->cfg.max_body)
                           : mf_fail(x->h->ctx, err, "no memory for the body of %s", x->req->url);
        return 0;
    }
    return n;
}

/* Case-insensitive "Name:" prefix match of a raw header line; returns the value start. */
static const char *header_value(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);

    if (len <= n || line[n] != ':')
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = line[i];

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return NULL;
    }
    line += n + 1;
    while (*line == ' ' || *line == '\t')
        line++;
    return line;
}

/* Reads a decimal number of at most 19 digits; returns the end or NULL. */
static const char *parse_u64(uint64_t *out, const char *p, const char *end)
{
    const char *start = p;

    *out = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - start < 19)
        *out = *out * 10 + (uint64_t)(*p++ - '0');
    return p == start || (p < end && *p >= '0' && *p <= '9') ? NULL : p;
}

/* "bytes a-b/n", or an unknown total ("/" then an asterisk) as 0; else range_ok stays 0. */
static void parse_content_range(struct mf_http_headers *hd, const char *v, const char *end)
{
    hd->has_content_range = 1;
    hd->range_ok = 0;
    if (end - v < 6 || memcmp(v, "bytes ", 6) != 0)
        return;
    v = parse_u64(&hd->range_first, v + 6, end);
    if (!v || v >= end || *v != '-')
        return;
    v = parse_u64(&hd->range_last, v + 1, end);
    if (!v || v >= end || *v != '/')
        return;
    v++;
    if (v < end && *v == '*') {
        hd->range_total = 0;
        v++;
    } else {
        v = parse_u64(&hd->range_total, v, end);
        if (!v)
            return;
    }
    hd->range_ok = v == end && hd->range_first <= hd->range_last;
}

void mf_http__parse_header(struct mf_http_headers *hd, const char *line, size_t len)
{
    const char *end = line + len;
    const char *v;

    while (end > line && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    len = (size_t)(end - line);
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        const char *sp = memchr(line, ' ', len);
        uint64_t code = 0;

        memset(hd, 0, sizeof(*hd)); /* a new response (after a 100 Continue, say) */
        if (sp && parse_u64(&code, sp + 1, end) && code < 1000)
            hd->status = (long)code;
        return;
    }
    v = header_value(line, len, "etag");
    if (v) {
        size_t n = (size_t)(end - v);

        if (n <= MF_HTTP_ETAG_MAX) {
            memcpy(hd->etag, v, n);
            hd->etag[n] = '\0';
        }
        return;
    }
    v = header_value(line, len, "content-range");
    if (v)
        parse_content_range(hd, v, end);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;

    mf_http__parse_header(&x->h->headers, data, size * nmemb);
    return size * nmemb;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct xfer *x = userdata;
    long n = x->req->source(x->req->source_payload, buf, size * nitems);

    if (n < 0) {
        x->abort_err = (int)n;
        return CURL_READFUNC_ABORT;
    }
    return (size_t)n;
}

/* Adds the header line `name` + `value`, built in a buffer wiped afterwards (tokens). */
static int add_header(struct curl_slist **list, struct mf_ctx *ctx, const char *name,
                      const char *value)
{
    struct mf_dynbuf line;
    struct curl_slist *next;
    int err;

    mf_dynbuf__init(&line, &ctx->alloc, 4096);
    err = mf_dynbuf__appendf(&line, "%s%s", name, value);
    if (err < 0) {
        mf_dynbuf__free(&line);
        return mf_fail(ctx, err, "HTTP header too long or no memory");
    }
    next = curl_slist_append(*list, (const char *)line.data);
    mf_secure_zero(line.data, line.len);
    mf_dynbuf__free(&line);
    if (!next)
        return mf_fail(ctx, MF_E_NOMEM, "no memory for an HTTP header");
    *list = next;
    return MF_OK;
}

static int build_headers(struct curl_slist **out, struct mf_http *h,
                         const struct mf_http_request *req)
{
    int err = MF_OK;

    *out = NULL;
    /* No "Expect: 100-continue" round trip before uploads. */
    err = add_header(out, h->ctx, "Expect:", "");
    if (err >= 0 && req->bearer)
        err = add_header(out, h->ctx, "Authorization: Bearer ", req->bearer);
    if (err >= 0 && req->content_type)
        err = add_header(out, h->ctx, "Content-Type: ", req->content_type);
    if (err >= 0 && req->extra_header)
        err = add_header(out, h->ctx, "", req->extra_header);
    if (err >= 0 && req->if_range && req->range_from > 0)
        err = add_header(out, h->ctx, "If-Range: ", req->if_range);
    return err;
}

static void set_options(struct mf_http *h, struct xfer *x, struct curl_slist *headers)
{
    const struct mf_http_request *req = x->req;
    CURL *c = h->curl;

    curl_easy_reset(c); /* keeps the connection cache */
    (void)curl_easy_setopt(c, CURLOPT_URL, req->url);
    (void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    (void)curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    (void)curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    (void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->curl_err);
    (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    (void)curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    (void)curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    /* CURLOPT_RANGE, not RESUME_FROM: libcurl then hands a 200 answer to the sink, where
     * the caller restarts from byte 0, instead of failing the transfer itself. */
    if (req->range_from > 0) {
        (void)snprintf(x->range, sizeof(x->range), "%llu-", (unsigned long long)req->range_from);
        (void)curl_easy_setopt(c, CURLOPT_RANGE, x->range);
    }
    if (req->recv_buffer > 0)
        (void)curl_easy_setopt(c, CURLOPT_BUFFERSIZE, req->recv_buffer);
    if (req->max_recv_bytes_per_s > 0)
        (void)curl_easy_setopt(c, CURLOPT_MAX_RECV_SPEED_LARGE,
                               (curl_off_t)req->max_recv_bytes_per_s);
    if (h->cfg.connect_timeout_ms > 0)
        (void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->cfg.connect_timeout_ms);
    if (h->cfg.request_timeout_ms > 0 && !req->no_timeout)
        (void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->cfg.request_timeout_ms);
    if (h->cfg.low_speed_time_s > 0) {
        (void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, h->cfg.low_speed_bytes);
        (void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->cfg.low_speed_time_s);
        x->last_change_ms = now_ms();
        (void)curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        (void)curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        (void)curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    }
    if (h->cfg.ca_file)
        (void)curl_easy_setopt(c, CURLOPT_CAINFO, h->cfg.ca_file);
    if (req->sink && req->max_download)
        (void)curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)req->max_download);
    if (req->source) {
        (void)curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        (void)curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        (void)curl_easy_setopt(c, CURLOPT_READDATA, x);
        (void)curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->upload_size);
    } else if (req->body) {
        (void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
    }
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0 &&
        !(req->source && strcmp(req->method, "PUT") == 0))
        (void)curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    if (strcmp(req->method, "HEAD") == 0)
        (void)curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
}

static int map_curl_error(struct mf_http *h, CURLcode rc, const char *url)
{
    const char *why = h->curl_err[0] ? h->curl_err : curl_easy_strerror(rc);

    switch ((int)rc) { /* int: -Wswitch-enum would demand all ~100 CURLcodes */
    case CURLE_FILESIZE_EXCEEDED:
        return mf_fail(h->ctx, MF_E_LIMIT, "%s announced a body larger than allowed", url);
    case CURLE_PARTIAL_FILE:
        return mf_fail(h->ctx, MF_E_NET, "truncated response from %s: %s", url, why);
    case CURLE_OPERATION_TIMEDOUT:
        return mf_fail(h->ctx, MF_E_NET, "timeout talking to %s: %s", url, why);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return mf_fail(h->ctx, MF_E_INVALID, "unusable URL %s: %s", url, why);
    case CURLE_OUT_OF_MEMORY:
        return mf_fail(h->ctx, MF_E_NOMEM, "libcurl out of memory for %s", url);
    default:
        return mf_fail(h->ctx, MF_E_NET, "request to %s failed: %s", url, why);
    }
}

int mf_http__perform(struct mf_http *h, struct mf_http_response *resp,
                     const struct mf_http_request *req)
{
    struct xfer x = {.h = h, .resp = resp, .req = req};
    struct curl_slist *headers = NULL;
    CURLcode rc;
    int err;

    resp->status = 0;
    memset(&h->headers, 0, sizeof(h->headers));
    mf_dynbuf__reset(&resp->body);
    h->curl_err[0] = '\0';
    if (!h->curl) {
        h->curl = curl_easy_init(); /* released by mf_http__cleanup() since the last request */
        if (!h->curl)
            return mf_fail(h->ctx, MF_E_NOMEM, "cannot create a libcurl handle");
    }
    err = build_headers(&headers, h, req);
    if (err < 0) {
        curl_slist_free_all(headers);
        return err;
    }
    set_options(h, &x, headers);
    rc = curl_easy_perform(h->curl);
    (void)curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    /* Detach the header list before freeing it: the handle outlives this call. */
    (void)curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    if (x.abort_err < 0)
        return x.abort_err;
    if (rc != CURLE_OK)
        return map_curl_error(h, rc, req->url);
    return MF_OK;
}

int mf_http__fail_status(struct mf_http *h, const struct mf_http_response *resp, const char *what)
{
    const char *msg = "";
    cJSON *doc = NULL;
    int code;

    switch (resp->status) {
    case 401:
    case 403:
        code = MF_E_AUTH;
        break;
    case 404:
        code = MF_E_NOTFOUND;
        break;
    case 413:
        code = MF_E_LIMIT;
        break;
    default:
        code = MF_E_NET;
        break;
    }
    if (resp->body.len) {
        const cJSON *m;

        /* A body outside the profile just gives no message; the mf_fail below replaces the
         * reader's. */
        if (mf_json__parse_object(&doc, h->ctx, resp->body.data, resp->body.len, resp->body.len,
                                  MF_JSON_DEPTH_DEFAULT, "error answer") < 0)
            doc = NULL;
        m = cJSON_GetObjectItemCaseSensitive(doc, "message");
        if (cJSON_IsString(m))
            msg = m->valuestring;
    }
    code = mf_fail(h->ctx, code, "%s: HTTP %ld%s%s", what, resp->status, msg[0] ? ": " : "", msg);
    cJSON_Delete(doc);
    return code;
}
