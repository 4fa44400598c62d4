/* SPDX-License-Identifier: Apache-2.0 */
/* Building replies: JSON bodies, the protocol's error body, empty replies. */
#include "http/http_req.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *error_code(unsigned status)
{
    switch (status) {
    case MHD_HTTP_BAD_REQUEST:
        return "bad_request";
    case MHD_HTTP_UNAUTHORIZED:
        return "unauthorized";
    case MHD_HTTP_FORBIDDEN:
        return "forbidden";
    case MHD_HTTP_NOT_FOUND:
        return "not_found";
    case MHD_HTTP_METHOD_NOT_ALLOWED:
        return "method_not_allowed";
    case MHD_HTTP_CONFLICT:
        return "conflict";
    case MHD_HTTP_CONTENT_TOO_LARGE:
        return "too_large";
    case MHD_HTTP_RANGE_NOT_SATISFIABLE:
        return "range_not_satisfiable";
    case MHD_HTTP_TOO_MANY_REQUESTS:
        return "too_many_requests";
    case MHD_HTTP_SERVICE_UNAVAILABLE:
        return "unavailable";
    default:
        return "internal";
    }
}

const char *mf_httpd__header(const struct mf_httpd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static void free_text(void *p)
{
    mf_free(NULL, p);
}

/* Makes `text` (len bytes, released with `release`; NULL: an empty body) the reply, which MHD
 * sends from there and releases: the reply owns it from here on, whatever happens. */
static int reply_owned(struct mf_httpd_req *r, unsigned status, char *text, size_t len,
                       void (*release)(void *), const char *ctype)
{
    if (r->resp) {
        if (text)
            release(text);
        return MF_OK;
    }
    r->resp = text ? MHD_create_response_from_buffer_with_free_callback(len, text, release)
                   : MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    if (!r->resp) {
        if (text)
            release(text);
        return mf_fail(&r->ctx, MF_E_NOMEM, "cannot create a %u response", status);
    }
    if (ctype)
        (void)MHD_add_response_header(r->resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    r->status = status;
    r->resp_bytes = len;
    return MF_OK;
}

int mf_httpd__reply_json(struct mf_httpd_req *r, unsigned status, cJSON *body)
{
    char *text;

    if (!body)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a %u reply", status);
    text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!text)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory printing a %u reply", status);
    return reply_owned(r, status, text, strlen(text), cJSON_free, "application/json");
}

int mf_httpd__reply_json_text(struct mf_httpd_req *r, unsigned status, char *text, size_t len)
{
    if (!text)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a %u reply", status);
    return reply_owned(r, status, text, len, free_text, "application/json");
}

int mf_httpd__reply_error(struct mf_httpd_req *r, unsigned status, const char *fmt, ...)
{
    char msg[MF_ERRMSG_MAX];
    cJSON *body = cJSON_CreateObject();
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (body && (!cJSON_AddStringToObject(body, "error", error_code(status)) ||
                 !cJSON_AddStringToObject(body, "message", msg))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, status, body);
}

int mf_httpd__reply_bytes(struct mf_httpd_req *r, unsigned status, const void *p, size_t len,
                          const char *ctype)
{
    if (r->resp)
        return MF_OK;
    r->resp = MHD_create_response_from_buffer(len, (void *)(uintptr_t)p, MHD_RESPMEM_MUST_COPY);
    if (!r->resp)
        return mf_fail(&r->ctx, MF_E_NOMEM, "cannot create a %u response", status);
    (void)MHD_add_response_header(r->resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    r->status = status;
    r->resp_bytes = len;
    return MF_OK;
}

int mf_httpd__reply_empty(struct mf_httpd_req *r, unsigned status)
{
    return reply_owned(r, status, NULL, 0, NULL, NULL);
}

void mf_httpd__reply_header(struct mf_httpd_req *r, const char *name, const char *value)
{
    if (r->resp)
        (void)MHD_add_response_header(r->resp, name, value);
}
