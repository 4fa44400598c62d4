/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MHD access handler: matches the routing table, authenticates from the table before any
 * handler runs, collects or streams the body, runs the handler, queues its reply, and logs
 * one line per request when MHD reports it complete. A request's memory lives in its
 * struct mf_httpd_req and is released in exactly one place, mf_httpd__on_completed().
 */
#include "http/http_req.h"

#include "blob/blob_store.h"
#include "http/http_conns.h"
#include "http/http_metrics.h"
#include "mf/ct.h"
#include "mf_hex.h"
#include "mf_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Matches `path` against `pattern`; on success stores each capture as (offset, length)
 * and returns 1. "{}" captures one non-empty segment, "{*}" (last) the rest of the path.
 */
static int pattern_match(const char *pattern, const char *path, size_t cap[][2], int *ncap)
{
    const char *p = pattern, *u = path;

    *ncap = 0;
    while (*p) {
        if (strncmp(p, "{*}", 3) == 0) {
            cap[*ncap][0] = (size_t)(u - path);
            cap[(*ncap)++][1] = strlen(u);
            return p[3] == '\0';
        }
        if (strncmp(p, "{}", 2) == 0) {
            size_t n = strcspn(u, "/");

            if (n == 0 || *ncap >= MF_HTTPD_MAX_PARAMS)
                return 0;
            cap[*ncap][0] = (size_t)(u - path);
            cap[(*ncap)++][1] = n;
            u += n;
            p += 2;
            continue;
        }
        if (*p != *u)
            return 0;
        p++;
        u++;
    }
    return *u == '\0';
}

static int method_allows(const char *route_method, const char *method)
{
    return strcmp(route_method, method) == 0 ||
           (strcmp(route_method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* Finds the route; replies 404 or 405 (with Allow) when there is none. */
static int route_request(struct mf_httpd_req *r, const char *url)
{
    char allow[64] = "";
    size_t cap[MF_HTTPD_MAX_PARAMS][2];
    int ncap;

    for (size_t i = 0; i < r->env->n_routes; i++) {
        const struct mf_httpd_route *rt = &r->env->routes[i];

        if (!pattern_match(rt->pattern, url, cap, &ncap))
            continue;
        if (!method_allows(rt->method, r->method)) {
            size_t n = strlen(allow);

            (void)snprintf(allow + n, sizeof(allow) - n, "%s%s%s", n ? ", " : "", rt->method,
                           strcmp(rt->method, "GET") == 0 ? ", HEAD" : "");
            continue;
        }
        r->route = rt;
        r->path = mf_strdup(&r->ctx.alloc, url);
        if (!r->path)
            return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory routing '%s'", url);
        for (int k = 0; k < ncap; k++) {
            r->path[cap[k][0] + cap[k][1]] = '\0'; /* captures never overlap */
            r->params[k] = r->path + cap[k][0];
        }
        return MF_OK;
    }
    if (allow[0]) {
        int err = mf_httpd__reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED,
                                        "method %s is not allowed on this path", r->method);

        mf_httpd__reply_header(r, MHD_HTTP_HEADER_ALLOW, allow);
        return err;
    }
    return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no route for %s", url);
}

/* The route's JSON body cap (its length must stay below it). */
static size_t body_max(const struct mf_httpd_req *r)
{
    return r->route && r->route->max_body ? r->route->max_body : MF_HTTPD_JSON_MAX;
}

/* JSON bodies: refuse by Content-Length before reading when it is already too big. */
static int check_declared_length(struct mf_httpd_req *r)
{
    const char *cl = mf_httpd__header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n;
    char *end;

    if (!cl)
        return MF_OK;
    n = strtoull(cl, &end, 10);
    if (end != cl && *end == '\0' && n >= body_max(r))
        return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
                                     "request body of %llu bytes exceeds %zu", n, body_max(r) - 1);
    return MF_OK;
}

static int begin_request(struct mf_httpd_req *r, const char *url)
{
    int err;

    /* Over the limit: answered at once (and closed), never left waiting for a slot. */
    if (mf_httpd__conns_over(r->env->conns)) {
        err = mf_httpd__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
                                    "server busy: over %u connections, retry later",
                                    r->env->conns->limit);
        mf_httpd__reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        return err;
    }
    err = route_request(r, url);

    if (err < 0 || r->resp)
        return err;
    err = mf_httpd__authenticate(r);
    if (err == MF_E_AUTH)
        return MF_OK; /* 401 built */
    if (err < 0 || r->resp)
        return err;
    switch (r->route->body) {
    case MF_HTTPD_BODY_NONE:
        /* Answered at the request's end (finish_request), not now: libmicrohttpd closes
         * the connection after a reply queued before it has seen the whole request, so
         * every GET (a device's range requests among them) cost a new connection. */
        return MF_OK;
    case MF_HTTPD_BODY_JSON:
        r->body.max = body_max(r);
        return check_declared_length(r);
    case MF_HTTPD_BODY_STREAM:
        return r->route->on_begin(r);
    }
    return MF_OK;
}

static int take_body(struct mf_httpd_req *r, const char *data, size_t len)
{
    int err;

    if (r->resp || r->body_too_large || r->route->body == MF_HTTPD_BODY_NONE)
        return MF_OK; /* a reply is decided, or the route takes no body: drain, ignore */
    if (r->route->body == MF_HTTPD_BODY_STREAM)
        return r->route->on_data(r, data, len);
    err = mf_dynbuf__append(&r->body, data, len);
    if (err == MF_E_LIMIT) {
        /* The reply waits for the end of the body: MHD only queues between requests. */
        r->body_too_large = 1;
        mf_dynbuf__free(&r->body);
        mf_secure_zero(r->cred_hash, sizeof(r->cred_hash));
        return MF_OK;
    }
    if (err < 0)
        return mf_fail(&r->ctx, err, "out of memory reading a request body");
    return MF_OK;
}

static int finish_request(struct mf_httpd_req *r)
{
    if (r->resp)
        return MF_OK; /* decided while the body streamed in (e.g. 413) */
    if (r->body_too_large)
        return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
                                     "request body exceeds %zu bytes", body_max(r) - 1);
    if (r->route->body == MF_HTTPD_BODY_JSON) {
        /* The body is already capped by body_max(); the reader names byte and rule. */
        int err = mf_json__parse_object(&r->json, &r->ctx, r->body.data, r->body.len, body_max(r),
                                        MF_JSON_DEPTH_DEFAULT, "request body");

        if (err == MF_E_NOMEM)
            return err;
        if (err < 0)
            return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", mf_ctx__errmsg(&r->ctx));
    }
    return r->route->handle(r);
}

static enum MHD_Result queue_reply(struct mf_httpd_req *r, int err)
{
    enum MHD_Result ret;

    if (err < 0 && !r->resp) {
        MF_LOG_ERR(&r->ctx, "%s %s: %s", r->method, r->url, mf_ctx__errmsg(&r->ctx));
        if (mf_httpd__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error") < 0)
            return MHD_NO; /* not even an error body fits: drop the connection */
    }
    if (r->route && mf_httpd__audited(r->route, r->method))
        mf_httpd__audit(r); /* before the client sees the answer: a read after it finds it */
    if (r->is_head)
        r->resp_bytes = 0;
    /* Near the limit an idle keep-alive connection would hold a slot a new client needs. */
    if (mf_httpd__conns_close_after(r->env->conns))
        mf_httpd__reply_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(r->conn, r->status, r->resp);
    MHD_destroy_response(r->resp);
    r->resp = NULL;
    r->queued = 1;
    return ret;
}

static struct mf_httpd_req *req_new(const struct mf_httpd_env *env, struct MHD_Connection *conn,
                                    const char *method, const char *url)
{
    struct mf_httpd_req *r = mf_calloc(NULL, 1, sizeof(*r));

    if (!r)
        return NULL;
    mf_ctx__init(&r->ctx, NULL, env->log_fn, env->log_payload, "http");
    r->url = mf_strdup(&r->ctx.alloc, url);
    if (!r->url) {
        mf_free(&r->ctx.alloc, r);
        return NULL;
    }
    r->env = env;
    r->conn = conn;
    r->method = method;
    r->is_head = strcmp(method, "HEAD") == 0;
    mf_dynbuf__init(&r->body, &r->ctx.alloc, MF_HTTPD_JSON_MAX);
    (void)clock_gettime(CLOCK_MONOTONIC, &r->started);
    /* The access handler's first call: the header is complete, the body's clock starts. */
    if (env->conns && env->conns->guard)
        r->conn_mark = mf_httpd__conn_of(conn);
    mf_httpd__conn_headers_in(r->conn_mark, &r->started);
    return r;
}

size_t mf_httpd__unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *w = s;

    (void)cls;
    (void)conn;
    for (const char *p = s; *p; p++) {
        uint8_t c;

        /* p[1] is read only when non-NUL, so the decode never passes the terminator. */
        if (*p != '%' || !p[1] || mf_hex__decode(&c, 1, p + 1, 2) < 0 || c == 0) {
            *w++ = *p; /* not an escape, or %00: kept as written */
            continue;
        }
        *w++ = (char)c;
        p += 2;
    }
    *w = '\0';
    return (size_t)(w - s);
}

enum MHD_Result mf_httpd__on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    struct mf_httpd_req *r = *con_cls;
    int err;

    (void)version;
    if (!r) {
        r = req_new(cls, conn, method, url);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        err = begin_request(r, url);
        if (err < 0 || r->resp)
            return queue_reply(r, err);
        return MHD_YES;
    }
    /* Body bytes feed the rate floor; the final call (no data) makes it the server's turn,
     * which no connection rule cuts short: handling, the check-in stage, the reply. */
    if (*upload_data_size)
        mf_httpd__conn_body(r->conn_mark, *upload_data_size);
    else
        mf_httpd__conn_server_turn(r->conn_mark);
    if (r->queued) {
        *upload_data_size = 0; /* replied early: discard what the client still sends */
        return MHD_YES;
    }
    if (r->suspended) {
        /* Called again after the stage resumed the connection: its answer is ready. */
        r->suspended = 0;
        err = r->stage_err;
        if (err == MF_OK && !r->resp && r->stage_text) {
            char *text = r->stage_text;

            r->stage_text = NULL;
            err = mf_httpd__reply_json_text(r, MHD_HTTP_OK, text, r->stage_len);
        }
        return queue_reply(r, err);
    }
    if (*upload_data_size) {
        err = take_body(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return err < 0 ? queue_reply(r, err) : MHD_YES;
    }
    err = finish_request(r);
    /* Handed to a stage, which owns `r` now (nothing here may read it): MHD calls again
     * once the stage resumes the connection. */
    if (r->suspended)
        return MHD_YES;
    return queue_reply(r, err);
}

void mf_httpd__on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    struct mf_httpd_req *r = *con_cls;
    struct timespec now;
    double ms;

    (void)cls;
    (void)conn;
    if (!r)
        return;
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    mf_httpd__conn_request_done(r->conn_mark, &now); /* a keep-alive's next header is due */
    ms = (double)(now.tv_sec - r->started.tv_sec) * 1e3 +
         (double)(now.tv_nsec - r->started.tv_nsec) / 1e6;
    /* One structured line per request (key=value, values without spaces), for log
     * pipelines; the URL path is safe to print: MHD rejects control characters in it. An
     * admin request names its token by id (the audit log has its name too). */
    MF_LOG_INFO(&r->ctx,
                "method=%s path=%s status=%u bytes=%" PRIu64
                " ms=%.1f device=%s admin=%d token=%s%s",
                r->method, r->url, r->status, r->resp_bytes, ms,
                r->device_id[0] ? r->device_id : "-", r->is_admin, r->is_admin ? r->token_id : "-",
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1");
    mf_metrics__request(r->env->metrics, r->route ? (int)(r->route - r->env->routes) : -1,
                        r->status, r->resp_bytes);
    mf_blob__upload_free(r->upload); /* removes an unfinished temp blob */
    mf_free(NULL, r->stage_text);    /* a stage's answer the connection never sent */
    cJSON_Delete(r->json);
    mf_dynbuf__free(&r->body);
    mf_free(&r->ctx.alloc, r->path);
    mf_free(&r->ctx.alloc, r->url);
    mf_free(&r->ctx.alloc, r);
    *con_cls = NULL;
}
