/* SPDX-License-Identifier: Apache-2.0 */
/* The shape every admin listing shares: {"<key>": [ ...rows the store walk adds... ]}. */
#include "handlers/handlers.h"

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
