/* SPDX-License-Identifier: Apache-2.0 */
/* GET /healthz: 200 when the store answers, so a load balancer drops a node that lost it. */
#include "handlers/handlers.h"

#include <time.h>

int64_t mf_handlers__now(void)
{
    return (int64_t)time(NULL);
}

int mf_handlers__healthz(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    cJSON *body;
    int version = 0;
    int err = s->ops->schema_version(&version, s, &r->ctx);

    if (err < 0)
        return err;
    body = cJSON_CreateObject();
    if (body && (!cJSON_AddStringToObject(body, "status", "ok") ||
                 !cJSON_AddNumberToObject(body, "schema_version", version))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
