/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/offload/ask and POST /v1/offload/batch (docs/protocol-offload.md). Both store
 * what they get in the hard-sample store before anything else can fail, so a sample the
 * device sent is never lost to a teacher outage: ask answers 503 and the sample waits for
 * the labelling job like an uplinked one.
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"

#include "deltas/delta_worker.h"
#include "common/names.h"
#include "offload/offload_srv.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A teacher answer this close to the device's deadline would arrive too late to be used:
 * the server gives up at 80% of it (less the time the request already took). */
static unsigned teacher_budget_ms(const struct mf_httpd_req *r, unsigned deadline_ms)
{
    struct timespec now;
    double spent;
    double budget = deadline_ms * 0.8;

    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    spent = (double)(now.tv_sec - r->started.tv_sec) * 1e3 +
            (double)(now.tv_nsec - r->started.tv_nsec) / 1e6;
    return budget - spent >= 1.0 ? (unsigned)(budget - spent) : 0;
}

/* Stores the input blob and the sample row(s); replies 400/413 for a bad sample. */
static int reply_parse_error(struct mf_httpd_req *r, int err)
{
    if (err == MF_E_NOMEM)
        return err;
    return mf_httpd__reply_error(
        r, err == MF_E_LIMIT ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST, "%s",
        mf_ctx__errmsg(&r->ctx));
}

static cJSON *probs_array(const float *p, size_t n)
{
    cJSON *a = cJSON_CreateArray();

    for (size_t i = 0; a && i < n; i++) {
        char num[32];
        cJSON *v;

        /* 9 significant digits: float32 round-trips (docs/protocol-offload.md). */
        (void)snprintf(num, sizeof(num), "%.9g", (double)p[i]);
        v = cJSON_CreateRaw(num);
        if (!v) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, v);
    }
    return a;
}

static int ask_teacher(struct mf_httpd_req *r, struct mf_offload_sample_in *smp,
                       const char *request_id, unsigned deadline_ms)
{
    struct mf_teacher *t = mf_offsrv__teacher(r->env->offload, smp->row.model);
    char version[MF_STORE_NAME_SIZE], *text = NULL;
    struct mf_store *s = r->env->store;
    float *probs;
    float conf = 0.0f;
    unsigned budget = teacher_budget_ms(r, deadline_ms);
    cJSON *body;
    int err;

    if (!t)
        return mf_httpd__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no teacher for model '%s'",
                                     smp->row.model);
    if (!budget)
        return mf_httpd__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
                                     "deadline of %u ms already spent", deadline_ms);
    probs = mf_alloc(&r->ctx.alloc, smp->n_classes * sizeof(float));
    if (!probs)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory asking the teacher");
    err = mf_teacher__ask(probs, version, t, &r->ctx, smp->input, smp->input_len, smp->n_classes,
                          budget);
    if (err < 0 && err != MF_E_NOMEM) {
        MF_LOG_WARN(&r->ctx, "offload ask %s: %s", request_id, mf_ctx__errmsg(&r->ctx));
        mf_free(&r->ctx.alloc, probs);
        return mf_httpd__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "teacher unavailable: %s",
                                     mf_ctx__errmsg(&r->ctx));
    }
    body = err == MF_OK ? cJSON_CreateObject() : NULL;
    for (size_t i = 0; body && i < smp->n_classes; i++)
        conf = probs[i] > conf ? probs[i] : conf;
    if (body) {
        cJSON *out = probs_array(probs, smp->n_classes);

        text = out ? cJSON_PrintUnformatted(out) : NULL;
        if (!text || !cJSON_AddStringToObject(body, "request_id", request_id) ||
            !cJSON_AddStringToObject(body, "teacher_version", version) ||
            !cJSON_AddItemToObject(body, "output", out) ||
            !cJSON_AddBoolToObject(body, "stored", 1))
            err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering an ask");
    }
    mf_free(&r->ctx.alloc, probs);
    if (err == MF_OK)
        err = s->ops->offload->sample_label(s, &r->ctx, smp->row.id, version, text, conf,
                                            mf_handlers__now());
    cJSON_free(text);
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

static int store_samples(int *replayed, int *accepted, int *dups, struct mf_httpd_req *r,
                         struct mf_offload_sample_in *smp, size_t n, const char *batch_id)
{
    struct mf_store *s = r->env->store;
    struct mf_store_sample *rows = mf_calloc(&r->ctx.alloc, n, sizeof(*rows));
    int64_t now = mf_handlers__now();
    int err = rows ? MF_OK : mf_fail(&r->ctx, MF_E_NOMEM, "out of memory storing samples");

    for (size_t i = 0; err == MF_OK && i < n; i++) {
        err = mf_blob__put(smp[i].row.input_sha256, &r->ctx, r->env->blob_root, smp[i].input,
                           smp[i].input_len);
        smp[i].row.received_at = now;
        rows[i] = smp[i].row;
    }
    if (err == MF_OK)
        err = s->ops->offload->sample_batch_put(replayed, accepted, dups, s, &r->ctx, r->device_id,
                                                batch_id, rows, n);
    mf_free(&r->ctx.alloc, rows);
    return err;
}

int mf_handlers__offload_ask(struct mf_httpd_req *r)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r->json, "request_id");
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(r->json, "deadline_ms");
    struct mf_offload_sample_in smp;
    int replayed = 0, accepted = 0, dups = 0, err;

    if (!cJSON_IsString(id) || !mf_offsrv__is_id(id->valuestring))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'request_id' must be 32 lower-case hex digits");
    if (!cJSON_IsNumber(dl) || dl->valuedouble < 1 || dl->valuedouble > 60000)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'deadline_ms' must be an integer in [1, 60000]");
    err = mf_offsrv__sample_parse(
        &smp, &r->ctx, cJSON_GetObjectItemCaseSensitive(r->json, "sample"), MF_OFFLOAD_INPUT_MAX);
    if (err == MF_OK && strcmp(smp.row.id, id->valuestring) != 0)
        err = mf_fail(&r->ctx, MF_E_INVALID, "'request_id' differs from the sample's id");
    if (err < 0) {
        mf_offsrv__sample_free(&smp, &r->ctx);
        return reply_parse_error(r, err);
    }
    err = store_samples(&replayed, &accepted, &dups, r, &smp, 1, NULL);
    if (err == MF_OK)
        err = ask_teacher(r, &smp, id->valuestring, (unsigned)dl->valuedouble);
    mf_offsrv__sample_free(&smp, &r->ctx);
    return err;
}

static int parse_batch(struct mf_offload_sample_in *smp, size_t *n_out, struct mf_httpd_req *r,
                       const char *model)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(r->json, "samples"), *it;
    int err = MF_OK;

    *n_out = 0;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
        cJSON_GetArraySize(list) > MF_OFFLOAD_BATCH_MAX)
        return mf_fail(&r->ctx, MF_E_INVALID, "'samples' must hold 1..%d samples",
                       MF_OFFLOAD_BATCH_MAX);
    cJSON_ArrayForEach(it, list)
    {
        err = mf_offsrv__sample_parse(&smp[*n_out], &r->ctx, it, MF_OFFLOAD_INPUT_MAX);
        (*n_out)++;
        if (err == MF_OK && strcmp(smp[*n_out - 1].row.model, model) != 0)
            err = mf_fail(&r->ctx, MF_E_INVALID, "sample %s is of model '%s', not '%s'",
                          smp[*n_out - 1].row.id, smp[*n_out - 1].row.model, model);
        if (err < 0)
            break;
    }
    return err;
}

static int reply_batch(struct mf_httpd_req *r, const char *batch_id, int accepted, int dups)
{
    cJSON *body = cJSON_CreateObject();

    if (!body || !cJSON_AddStringToObject(body, "batch_id", batch_id) ||
        !cJSON_AddNumberToObject(body, "accepted", accepted) ||
        !cJSON_AddNumberToObject(body, "duplicates", dups)) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a batch");
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

int mf_handlers__offload_batch(struct mf_httpd_req *r)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r->json, "batch_id");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(r->json, "model");
    struct mf_offload_sample_in *smp;
    struct mf_store *s = r->env->store;
    int replayed = 0, accepted = 0, dups = 0, err;
    size_t n = 0;

    if (!cJSON_IsString(id) || !mf_offsrv__is_id(id->valuestring))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'batch_id' must be 32 lower-case hex digits");
    if (!cJSON_IsString(model) || !mf_names__valid_id(model->valuestring))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "'model' must be a name");
    smp = mf_calloc(&r->ctx.alloc, MF_OFFLOAD_BATCH_MAX, sizeof(*smp));
    if (!smp)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory reading a batch");
    err = parse_batch(smp, &n, r, model->valuestring);
    if (err < 0)
        err = reply_parse_error(r, err);
    else
        err = store_samples(&replayed, &accepted, &dups, r, smp, n, id->valuestring);
    for (size_t i = 0; i < n; i++)
        mf_offsrv__sample_free(&smp[i], &r->ctx);
    mf_free(&r->ctx.alloc, smp);
    if (err < 0 || r->resp)
        return err;
    if (accepted && mf_offsrv__teacher(r->env->offload, model->valuestring) &&
        s->ops->jobs->job_enqueue(s, &r->ctx, MF_OFFLOAD_LABEL_JOB, model->valuestring,
                                  mf_handlers__now()) == MF_OK)
        mf_delta__worker_wake(r->env->deltas);
    return reply_batch(r, id->valuestring, accepted, dups);
}
