/* SPDX-License-Identifier: Apache-2.0 */
/* The shapes admin answers share: {"<key>": [ ...rows the store walk adds... ]}, one such row
 * on its own, a body or the error that came instead, and the 4xx of an error the client
 * caused. */
#include "handlers/handlers.h"

#include "common/req_parse.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mf_handlers__reply_list(struct mf_httpd_req *r, const char *key, mf_handlers_walk_fn walk)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *list = body ? cJSON_AddArrayToObject(body, key) : NULL;
    int err = list ? walk(r, list) : MF_E_NOMEM;

    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing %s", key);
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

int mf_handlers__reply_row(struct mf_httpd_req *r, unsigned code, cJSON *list, int add_err,
                           const char *what)
{
    cJSON *row;

    if (!list || add_err < 0) {
        cJSON_Delete(list);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering %s", what);
    }
    row = cJSON_DetachItemFromArray(list, 0);
    cJSON_Delete(list);
    return mf_httpd__reply_json(r, code, row);
}

cJSON *mf_handlers__add_row(cJSON *list)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddItemToArray(list, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

const char *mf_handlers__unknown_member(const cJSON *body, const char *const *known)
{
    return mf_reqparse__unknown_key(body, known);
}

int mf_handlers__reply_changed(struct mf_httpd_req *r, int err, const char *done)
{
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", mf_ctx__errmsg(&r->ctx));
    if (err < 0)
        return err;
    MF_LOG_INFO(&r->ctx, "%s", done);
    return mf_httpd__reply_empty(r, MHD_HTTP_NO_CONTENT);
}

int mf_handlers__reply_failure(struct mf_httpd_req *r, int err)
{
    unsigned code = err == MF_E_INVALID || err == MF_E_LIMIT ? MHD_HTTP_BAD_REQUEST
                    : err == MF_E_NOTFOUND                   ? MHD_HTTP_NOT_FOUND
                    : err == MF_E_STATE                      ? MHD_HTTP_CONFLICT
                                                             : 0;

    if (!code)
        return err;
    return mf_httpd__reply_error(r, code, "%s", mf_ctx__errmsg(&r->ctx));
}

struct query_check {
    const char *const *known;
    const char *unknown; /* the first query key not in known */
};

static enum MHD_Result query_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    struct query_check *q = cls;

    (void)kind;
    (void)value;
    for (size_t i = 0; q->known[i]; i++) {
        if (strcmp(key, q->known[i]) == 0)
            return MHD_YES;
    }
    q->unknown = key;
    return MHD_NO;
}

int mf_handlers__query_check(struct mf_httpd_req *r, const char *const *known)
{
    struct query_check q = {known, NULL};
    char list[256] = "";
    size_t n = 0;

    (void)MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_key, &q);
    if (!q.unknown)
        return MF_OK;
    for (size_t i = 0; known[i] && n < sizeof(list); i++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", known[i]);
    return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "unknown query key '%.40s' (%s)",
                                 q.unknown, list);
}

const char *mf_handlers__query_arg(const struct mf_httpd_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

int mf_handlers__count_arg(int64_t *out, struct mf_httpd_req *r, const char *key, int64_t dflt,
                           int64_t max)
{
    const char *v = mf_handlers__query_arg(r, key);
    char *end = NULL;
    long long n = 0;

    *out = dflt;
    if (!v)
        return MF_OK;
    if (v[0] >= '0' && v[0] <= '9') {
        errno = 0;
        n = strtoll(v, &end, 10);
    }
    if (!end || *end || errno == ERANGE || n < 1 || n > max)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'%s' must be an integer in [1, %lld], not '%.40s'", key,
                                     (long long)max, v);
    *out = (int64_t)n;
    return MF_OK;
}

int mf_handlers__reply_body(struct mf_httpd_req *r, unsigned status, cJSON *body, int err)
{
    if (err == MF_E_NOTFOUND) {
        cJSON_Delete(body);
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", mf_ctx__errmsg(&r->ctx));
    }
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, status, body);
}
