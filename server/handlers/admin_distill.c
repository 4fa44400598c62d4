/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Distillation routes (docs/distill.md): start a run, list runs, one run with its record,
 * and a version with its provenance (the run that made it).
 */
#include "handlers/handlers.h"

#include "common/names.h"
#include "mf_json.h"

#include "deltas/delta_worker.h"
#include "distill/job/distill_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run as JSON; its record is parsed back, without the sample ids when `brief`. A record
 * the strict reader refuses (a damaged row) is left out rather than failing the listing. */
static cJSON *run_json(const struct mf_store_distill_run *run, int brief)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *rec = NULL;
    int ok = o != NULL;

    if (run->record && run->record[0]) {
        struct mf_ctx scratch;
        size_t n = strlen(run->record);

        mf_ctx__init(&scratch, NULL, NULL, NULL, "distill");
        if (mf_json__parse(&rec, &scratch, run->record, n, n, MF_JSON_DEPTH_DEFAULT,
                           "distill record") < 0)
            rec = NULL;
    }

    if (brief && rec)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec, "samples"),
                                                "ids");
    ok = ok && cJSON_AddNumberToObject(o, "id", (double)run->id) &&
         cJSON_AddStringToObject(o, "model", run->model) &&
         cJSON_AddStringToObject(o, "state", run->state) &&
         cJSON_AddStringToObject(o, "trigger", run->trigger) &&
         cJSON_AddStringToObject(o, "parent", run->parent_version) &&
         cJSON_AddStringToObject(o, "version", run->version) &&
         cJSON_AddNumberToObject(o, "rollout_id", (double)run->rollout_id) &&
         cJSON_AddStringToObject(o, "error", run->error) &&
         cJSON_AddNumberToObject(o, "created_at", (double)run->created_at) &&
         cJSON_AddNumberToObject(o, "updated_at", (double)run->updated_at);
    if (ok && rec)
        ok = cJSON_AddItemToObject(o, "record", rec);
    else
        cJSON_Delete(rec);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int no_distill(struct mf_httpd_req *r)
{
    return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                 "no distillation configured on this server (--distill-config)");
}

/* POST /v1/admin/distill/{model}/runs */
int mf_handlers__distill_run_create(struct mf_httpd_req *r)
{
    struct mf_store_distill_run run;
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    if (!r->env->distill) {
        /* An unknown model is 404 whether or not this node runs distillation (with it, the
         * distill config names the models: the loop may make a model's first version). */
        err = mf_handlers__need_model(r, r->params[0]);
        return err < 0 || r->resp ? err : no_distill(r);
    }
    err = mf_distill__run_create(&run, r->env->distill, &r->ctx, r->params[0], "manual",
                                 mf_handlers__now());
    if (err < 0)
        return mf_handlers__reply_failure(r, err);
    mf_delta__worker_wake(r->env->distill->worker); /* else it polls within 2 s */
    MF_LOG_INFO(&r->ctx, "distillation run %lld of %s queued", (long long)run.id, run.model);
    return mf_httpd__reply_json(r, MHD_HTTP_CREATED, run_json(&run, 1));
}

static int add_run(void *payload, const struct mf_store_distill_run *run)
{
    cJSON *x = run_json(run, 1);

    if (!x || !cJSON_AddItemToArray(payload, x)) {
        cJSON_Delete(x);
        return MF_E_NOMEM;
    }
    return MF_OK;
}

/* GET /v1/admin/distill/runs[?model=NAME] */
int mf_handlers__distill_runs_list(struct mf_httpd_req *r)
{
    const char *model = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "model");
    struct mf_store *s = r->env->store;
    cJSON *body = cJSON_CreateObject();
    cJSON *list = body ? cJSON_AddArrayToObject(body, "runs") : NULL;
    int err = list ? MF_OK : mf_fail(&r->ctx, MF_E_NOMEM, "out of memory");

    /* ?model= of a model that does not exist: 404, not an empty list that looks like "no
     * runs yet". */
    if (err == MF_OK && model && !mf_names__valid_id(model))
        err = mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                    "'model' must match [A-Za-z0-9._-]{1,64}");
    else if (err == MF_OK && model &&
             !(r->env->distill && mf_distill__config_model(r->env->distill->cfg, model)))
        err = mf_handlers__need_model(r, model);
    if (err == MF_OK && !r->resp)
        err = s->ops->distill->distill_runs_list(s, &r->ctx, model ? model : "", 0, add_run, list);
    if (err == MF_E_NOMEM)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory listing runs");
    if (err < 0 || r->resp) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

static int keep_full(void *payload, const struct mf_store_distill_run *run)
{
    cJSON **out = payload;

    *out = run_json(run, 0);
    return *out ? MF_OK : MF_E_NOMEM;
}

/* GET /v1/admin/distill/runs/{id} */
int mf_handlers__distill_run_get(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    char *end;
    long long id = strtoll(r->params[0], &end, 10);
    cJSON *body = NULL;
    int err;

    if (end == r->params[0] || *end || id <= 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "run id must be a positive integer");
    err = s->ops->distill->distill_run_get(s, &r->ctx, (int64_t)id, keep_full, &body);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no distillation run %lld", id);
    if (err < 0) {
        cJSON_Delete(body);
        return err == MF_E_NOMEM ? mf_fail(&r->ctx, err, "out of memory") : err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

struct find_version {
    const char *version;
    cJSON *run;
};

static int match_version(void *payload, const struct mf_store_distill_run *run)
{
    struct find_version *f = payload;

    if (f->run || strcmp(run->version, f->version) != 0)
        return MF_OK;
    f->run = run_json(run, 0);
    return f->run ? MF_OK : MF_E_NOMEM;
}

/* GET /v1/admin/models/{model}/versions/{version}: the version and its provenance. */
int mf_handlers__version_get(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct find_version f = {r->params[1], NULL};
    struct mf_store_version v;
    cJSON *body;
    int ok, err = mf_handlers__check_names(r, 2);

    if (err < 0 || r->resp)
        return err;
    err = s->ops->registry->version_get(&v, s, &r->ctx, r->params[0], r->params[1]);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no version '%s' of model '%s'",
                                     r->params[1], r->params[0]);
    if (err == MF_OK)
        err = s->ops->distill->distill_runs_list(s, &r->ctx, v.model, 0, match_version, &f);
    if (err < 0) {
        cJSON_Delete(f.run);
        return err == MF_E_NOMEM ? mf_fail(&r->ctx, err, "out of memory") : err;
    }
    body = cJSON_CreateObject();
    ok = body && cJSON_AddStringToObject(body, "model", v.model) &&
         cJSON_AddStringToObject(body, "version", v.version) &&
         cJSON_AddStringToObject(body, "sha256", v.sha256) &&
         cJSON_AddNumberToObject(body, "size", (double)v.size) &&
         cJSON_AddNumberToObject(body, "created_at", (double)v.created_at) &&
         cJSON_AddNumberToObject(body, "sequence", (double)v.sequence) &&
         cJSON_AddNumberToObject(body, "security_floor", (double)v.security_floor) &&
         cJSON_AddStringToObject(body, "release_sha256", v.release_digest);
    /* provenance: the distillation run that published it, or null (published by hand) */
    ok = ok && (f.run ? cJSON_AddItemToObject(body, "provenance", f.run)
                      : cJSON_AddNullToObject(body, "provenance") != NULL);
    if (!ok) { /* f.run is attached only when its add succeeded, the last step */
        cJSON_Delete(f.run);
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory");
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
