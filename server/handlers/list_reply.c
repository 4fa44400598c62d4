/* SPDX-License-Identifier: Apache-2.0 */
/* The shapes admin answers share: {"<key>": [ ...rows the store walk adds... ]}, one such row
 * on its own, and the 4xx of an error the client caused. */
#include "handlers/handlers.h"

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
    const cJSON *m;

    cJSON_ArrayForEach(m, body)
    {
        size_t i = 0;

        while (known[i] && strcmp(known[i], m->string) != 0)
            i++;
        if (!known[i])
            return m->string;
    }
    return NULL;
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
