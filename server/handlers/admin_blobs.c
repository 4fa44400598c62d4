/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/admin/blobs/sweep[?dry_run=1] (role ops): removes orphan blobs, files no row of
 * any table refers to that were committed more than the node's grace period ago
 * (blob/blob_gc.h; serve --blob-grace). A dry run only lists them. The answer counts every
 * blob and lists the first MF_SWEEP_LIST_MAX orphans.
 */
#include "handlers/handlers.h"

#include "blob/blob_gc.h"
#include "blob/blob_store.h"

#include <cjson/cJSON.h>
#include <string.h>

#define MF_SWEEP_LIST_MAX 1000

struct sweep_list {
    cJSON *list;
    size_t n;
};

static int list_orphan(void *payload, const char *sha_hex, int64_t mtime_ms)
{
    struct sweep_list *l = payload;
    cJSON *o;

    if (l->n >= MF_SWEEP_LIST_MAX)
        return MF_OK;
    o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "sha256", sha_hex) ||
        !cJSON_AddNumberToObject(o, "committed_at", (double)(mtime_ms / 1000)) ||
        !cJSON_AddItemToArray(l->list, o)) {
        cJSON_Delete(o);
        return MF_E_NOMEM;
    }
    l->n++;
    return MF_OK;
}

int mf_handlers__blobs_sweep(struct mf_httpd_req *r)
{
    const char *dry = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "dry_run");
    struct mf_blobgc_report rep;
    struct sweep_list l = {NULL, 0};
    cJSON *body = cJSON_CreateObject();
    int dry_run, err;

    if (dry && strcmp(dry, "0") != 0 && strcmp(dry, "1") != 0) {
        cJSON_Delete(body);
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "dry_run '%s' is not 0 or 1", dry);
    }
    dry_run = dry && strcmp(dry, "1") == 0;
    l.list = cJSON_AddArrayToObject(body, dry_run ? "would_remove" : "removed");
    if (!l.list) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a sweep");
    }
    err = mf_blobgc__sweep(&rep, &r->ctx, r->env->store, r->env->blob_root, mf_blob__clock_ms(),
                           r->env->blob_grace_s, dry_run, list_orphan, &l);
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, err, "out of memory listing orphan blobs");
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    MF_LOG_INFO(&r->ctx, "blob sweep%s: %lld orphan(s), %lld referenced, %lld younger than %llds",
                dry_run ? " (dry run)" : "", (long long)rep.removed, (long long)rep.referenced,
                (long long)rep.young, (long long)r->env->blob_grace_s);
    if (!cJSON_AddBoolToObject(body, "dry_run", dry_run) ||
        !cJSON_AddNumberToObject(body, "orphans", (double)rep.removed) ||
        !cJSON_AddNumberToObject(body, "referenced", (double)rep.referenced) ||
        !cJSON_AddNumberToObject(body, "young", (double)rep.young) ||
        !cJSON_AddNumberToObject(body, "grace_s", (double)r->env->blob_grace_s)) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a sweep");
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
