/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admin routes of offload (docs/protocol-offload.md, "Admin routes"): target vs realised
 * offload rate per model version, calibration sets uploaded with a release, the export of
 * hard samples for data teams (paged; mfctl samples export writes JSONL + .npy from it) and
 * the deletion of one device's samples (privacy).
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"
#include "common/names.h"
#include "manifest_common.h"
#include "offload/offload_srv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT_PAGE_DEFAULT 100
#define EXPORT_PAGE_MAX 500
#define EXPORT_INPUT_BYTES_MAX (8u * 1024u * 1024u) /* a page stops growing past this */

static const char *source_name(int source)
{
    return source == MF_STORE_HIST_CALIBRATION ? "calibration" : "fleet";
}

static int add_rate(void *payload, const struct mf_store_hist *h)
{
    struct mf_httpd_req *r = ((void **)payload)[0];
    cJSON *list = ((void **)payload)[1];
    const struct mf_offload_model_cfg *m = mf_offsrv__model(r->env->offload, h->model);
    double target = m ? m->target_rate : 0.0;
    double q = target > 0.0 ? mf_offsrv__hist_quantile(h->bins, target) : -1.0;
    cJSON *row = cJSON_CreateObject(), *bins = cJSON_CreateArray();
    uint64_t scores = 0;

    for (int i = 0; i < MF_STORE_HIST_BINS; i++) {
        scores += h->bins[i];
        if (bins && !cJSON_AddItemToArray(bins, cJSON_CreateNumber((double)h->bins[i]))) {
            cJSON_Delete(bins);
            bins = NULL;
        }
    }
    /* "bins": the score histogram itself (bin i holds scores in [i/n, (i+1)/n)), the
     * console's confidence plot. */
    if (row && bins && !cJSON_AddItemToObject(row, "bins", bins)) {
        cJSON_Delete(bins);
        bins = NULL;
    }
    if (!bins) {
        cJSON_Delete(row);
        return MF_E_NOMEM;
    }
    if (!row || !cJSON_AddStringToObject(row, "model", h->model) ||
        !cJSON_AddStringToObject(row, "version", h->version) ||
        !cJSON_AddStringToObject(row, "method", h->method) ||
        !cJSON_AddStringToObject(row, "source", source_name(h->source)) ||
        !cJSON_AddNumberToObject(row, "scores", (double)scores) ||
        !cJSON_AddNumberToObject(row, "target_rate", target) ||
        !(q >= 0.0 ? cJSON_AddNumberToObject(row, "threshold", q)
                   : cJSON_AddNullToObject(row, "threshold")) ||
        !cJSON_AddNumberToObject(row, "asked", (double)h->asked) ||
        !cJSON_AddNumberToObject(row, "uncertain", (double)h->uncertain) ||
        !(h->asked ? cJSON_AddNumberToObject(row, "realised_rate",
                                             (double)h->uncertain / (double)h->asked)
                   : cJSON_AddNullToObject(row, "realised_rate"))) {
        cJSON_Delete(row);
        return MF_E_NOMEM;
    }
    cJSON_AddItemToArray(list, row);
    return MF_OK;
}

static int walk_rates(struct mf_httpd_req *r, cJSON *list)
{
    void *pair[2] = {r, list};
    const char *model = mf_handlers__query_arg(r, "model");

    return r->env->store->ops->offload->hists_list(r->env->store, &r->ctx, model ? model : "",
                                                   add_rate, pair);
}

static const char *const rates_keys[] = {"model", NULL};

/* ?model=NAME: that model's rows only (Model health); none: every model. */
int mf_handlers__offload_rates(struct mf_httpd_req *r)
{
    const char *model;
    int err = mf_handlers__query_check(r, rates_keys);

    if (err < 0 || r->resp)
        return err;
    model = mf_handlers__query_arg(r, "model");
    if (model && !mf_names__valid_id(model))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'model' must match [A-Za-z0-9._-]{1,64}");
    return mf_handlers__reply_list(r, "rates", walk_rates);
}

/* Scores (or a ready histogram) into `h`; replies 400 when the body is malformed. */
static int read_calibration(struct mf_store_hist *h, struct mf_httpd_req *r)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(r->json, "method");
    const cJSON *scores = cJSON_GetObjectItemCaseSensitive(r->json, "scores"), *it;

    if (!cJSON_IsString(method) ||
        (strcmp(method->valuestring, "max_softmax") != 0 &&
         strcmp(method->valuestring, "margin") != 0 && strcmp(method->valuestring, "entropy") != 0))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'method' must be max_softmax, margin or entropy");
    (void)snprintf(h->method, sizeof(h->method), "%s", method->valuestring);
    if (!cJSON_IsArray(scores) || cJSON_GetArraySize(scores) < 1)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'scores' must be a non-empty array of numbers in [0, 1]");
    cJSON_ArrayForEach(it, scores)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1.0;
        int bin;

        if (!(v >= 0.0 && v <= 1.0))
            return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                         "'scores' must be numbers in [0, 1]");
        /* The device's binning: [i/n, (i+1)/n), the last bin also holds 1.0. */
        bin = (int)(v * MF_STORE_HIST_BINS);
        h->bins[bin < MF_STORE_HIST_BINS ? bin : MF_STORE_HIST_BINS - 1]++;
    }
    return MF_OK;
}

int mf_handlers__offload_calibration_put(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_hist h;
    int err = mf_handlers__check_names(r, 2);

    if (err < 0 || r->resp)
        return err;
    /* Scores for a version that does not exist would calibrate nothing; a model of the
     * offload configuration may be calibrated before its version is published here. */
    if (!mf_offsrv__model(r->env->offload, r->params[0])) {
        struct mf_store_version v;

        err = s->ops->registry->version_get(&v, s, &r->ctx, r->params[0], r->params[1]);
        if (err == MF_E_NOTFOUND)
            return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no version '%s' of model '%s'",
                                         r->params[1], r->params[0]);
        if (err < 0)
            return err;
    }
    memset(&h, 0, sizeof(h));
    (void)snprintf(h.model, sizeof(h.model), "%s", r->params[0]);
    (void)snprintf(h.version, sizeof(h.version), "%s", r->params[1]);
    h.source = MF_STORE_HIST_CALIBRATION;
    h.updated_at = mf_handlers__now();
    err = read_calibration(&h, r);
    if (err < 0 || r->resp)
        return err;
    err = s->ops->offload->hist_add(s, &r->ctx, &h, 1);
    if (err < 0)
        return err;
    return mf_httpd__reply_empty(r, MHD_HTTP_NO_CONTENT);
}

int mf_handlers__offload_samples_delete(struct mf_httpd_req *r)
{
    int64_t deleted = 0;
    cJSON *body;
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_device(r, r->params[0]);
    if (err < 0 || r->resp)
        return err;
    err = mf_offsrv__delete(&deleted, r->env->store, &r->ctx, r->env->blob_root, r->params[0], 0);
    if (err < 0)
        return err;
    MF_LOG_INFO(&r->ctx, "deleted %lld hard samples of device %s", (long long)deleted,
                r->params[0]);
    body = cJSON_CreateObject();
    if (!body || !cJSON_AddNumberToObject(body, "deleted", (double)deleted)) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a deletion");
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}

/* ---- export ---- */

struct export_page {
    struct mf_httpd_req *r;
    const struct mf_offload_model_cfg *cfg; /* NULL: the model is not configured for offload */
    /* The threshold of the last (version, method) seen: a page holds few of them. */
    char t_version[MF_STORE_NAME_SIZE], t_method[16];
    double threshold;
    int t_have, t_known;
    cJSON *list;
    int64_t last_seq;
    size_t n, input_bytes;
    int full;
};

static const char *arg(const struct mf_httpd_req *r, const char *key)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);

    return v && v[0] ? v : NULL;
}

/* A non-negative integer argument (absent: `dflt`); -1 when malformed. */
static int64_t int_arg(const struct mf_httpd_req *r, const char *key, int64_t dflt)
{
    const char *v = arg(r, key);
    char *end;
    long long n;

    if (!v)
        return dflt;
    n = strtoll(v, &end, 10);
    return (*end || n < 0 || v[0] == '-') ? -1 : (int64_t)n;
}

static int read_blob_b64(char **out, struct mf_ctx *ctx, const char *root, const char *sha,
                         uint64_t size)
{
    uint8_t *raw = size <= MF_OFFLOAD_INPUT_MAX ? mf_alloc(&ctx->alloc, (size_t)size + 1) : NULL;
    uint64_t got = 0, have = 0;
    int fd = -1, err;

    *out = NULL;
    if (!raw)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory exporting input %s", sha);
    err = mf_blob__open(&fd, &have, ctx, root, sha);
    while (err == MF_OK && got < size) {
        ssize_t n = read(fd, raw + got, (size_t)(size - got));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            err = mf_fail(ctx, MF_E_IO, "input blob %s is shorter than %llu bytes", sha,
                          (unsigned long long)size);
        else
            got += (uint64_t)n;
    }
    if (fd >= 0)
        (void)close(fd);
    if (err == MF_OK) {
        *out = mf_alloc(&ctx->alloc, mf_base64__encoded_len((size_t)size) + 1);
        if (*out)
            mf_base64__encode(*out, raw, (size_t)size);
        else
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory exporting input %s", sha);
    }
    mf_free(&ctx->alloc, raw);
    return err;
}

/* "threshold": what the check-in gives devices of the sample's version and method now
 * (the policy's own or the one fitted for its target rate), null when there is none. Run
 * after the walk: a store walk's callback must not call the store again. */
static int add_threshold(cJSON *row, struct export_page *p)
{
    const char *version =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "model_version"));
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "method"));
    int err = MF_OK;

    if (!version || !method)
        return mf_fail(&p->r->ctx, MF_E_STATE, "an exported sample lost its version or method");
    if (!p->t_have || strcmp(p->t_version, version) != 0 || strcmp(p->t_method, method) != 0) {
        (void)snprintf(p->t_version, sizeof(p->t_version), "%s", version);
        (void)snprintf(p->t_method, sizeof(p->t_method), "%s", method);
        p->t_have = 1;
        p->t_known = 0;
        if (p->cfg) {
            err = mf_offsrv__version_threshold(&p->threshold, p->cfg, p->r->env->store, &p->r->ctx,
                                               version, method);
            p->t_known = err == MF_OK;
            if (err == MF_E_NOTFOUND)
                err = MF_OK;
        }
    }
    if (err < 0)
        return err;
    if (!(p->t_known ? cJSON_AddNumberToObject(row, "threshold", p->threshold)
                     : cJSON_AddNullToObject(row, "threshold")))
        return mf_fail(&p->r->ctx, MF_E_NOMEM, "out of memory exporting samples");
    return MF_OK;
}

static int sample_json(cJSON *row, const struct mf_store_sample *m, const char *input_b64)
{
    int ok = cJSON_AddNumberToObject(row, "seq", (double)m->seq) &&
             cJSON_AddStringToObject(row, "id", m->id) &&
             cJSON_AddStringToObject(row, "device_id", m->device_id) &&
             cJSON_AddStringToObject(row, "model", m->model) &&
             cJSON_AddStringToObject(row, "model_version", m->model_version) &&
             cJSON_AddStringToObject(row, "kind", m->kind) &&
             cJSON_AddStringToObject(row, "method", m->method) &&
             cJSON_AddNumberToObject(row, "score", m->score) &&
             cJSON_AddNumberToObject(row, "created_at", (double)m->created_at) &&
             cJSON_AddNumberToObject(row, "received_at", (double)m->received_at) &&
             cJSON_AddStringToObject(row, "output_kind", m->output_kind) &&
             cJSON_AddRawToObject(row, "output", m->output) &&
             cJSON_AddStringToObject(row, "input_sha256", m->input_sha256) &&
             cJSON_AddStringToObject(row, "input", input_b64);

    if (ok && m->teacher_version[0])
        ok = cJSON_AddStringToObject(row, "teacher_version", m->teacher_version) &&
             cJSON_AddRawToObject(row, "teacher_output", m->teacher_output) &&
             cJSON_AddNumberToObject(row, "teacher_confidence", m->teacher_confidence) &&
             cJSON_AddNumberToObject(row, "labelled_at", (double)m->labelled_at);
    else if (ok)
        ok = cJSON_AddNullToObject(row, "teacher_version") &&
             cJSON_AddNullToObject(row, "teacher_output") &&
             cJSON_AddNullToObject(row, "teacher_confidence");
    return ok ? MF_OK : MF_E_NOMEM;
}

static int add_sample(void *payload, const struct mf_store_sample *m)
{
    struct export_page *p = payload;
    cJSON *row;
    char *b64 = NULL;
    int err;

    if (p->full)
        return MF_OK;
    err = read_blob_b64(&b64, &p->r->ctx, p->r->env->blob_root, m->input_sha256, m->input_size);
    if (err < 0)
        return err;
    row = cJSON_CreateObject();
    err = row ? sample_json(row, m, b64) : MF_E_NOMEM;
    mf_free(&p->r->ctx.alloc, b64);
    if (err < 0) {
        cJSON_Delete(row);
        return mf_fail(&p->r->ctx, MF_E_NOMEM, "out of memory exporting samples");
    }
    cJSON_AddItemToArray(p->list, row);
    p->last_seq = m->seq;
    p->n++;
    p->input_bytes += (size_t)m->input_size;
    p->full = p->input_bytes >= EXPORT_INPUT_BYTES_MAX;
    return MF_OK;
}

/* The query of GET /v1/admin/samples; replies 400 for a malformed argument. */
static int export_query(struct mf_store_sample_query *q, struct mf_httpd_req *r)
{
    static const char *const known[] = {"model", "version", "kind",  "since",
                                        "until", "after",   "limit", "min_teacher_confidence",
                                        NULL};
    const char *conf = arg(r, "min_teacher_confidence");
    char *end = NULL;
    int err = mf_handlers__query_check(r, known); /* a misspelt filter would widen the export */

    memset(q, 0, sizeof(*q));
    if (err < 0 || r->resp)
        return err;
    q->model = arg(r, "model");
    q->version = arg(r, "version");
    q->kind = arg(r, "kind");
    q->since = int_arg(r, "since", 0);
    q->until = int_arg(r, "until", 0);
    q->after_seq = int_arg(r, "after", 0);
    q->limit = int_arg(r, "limit", EXPORT_PAGE_DEFAULT);
    if (conf)
        q->min_confidence = strtod(conf, &end);
    if (!q->model || !mf_names__valid_id(q->model))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "'model' is required");
    if ((q->version && !mf_names__valid_id(q->version)) ||
        (q->kind && strcmp(q->kind, "hard") != 0 && strcmp(q->kind, "audit") != 0))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "'version' must be a name and 'kind' hard or audit");
    if (q->since < 0 || q->until < 0 || q->after_seq < 0 || q->limit < 1 ||
        q->limit > EXPORT_PAGE_MAX ||
        (conf && (*end || !(q->min_confidence >= 0.0 && q->min_confidence <= 1.0))))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "since/until/after must be integers >= 0, limit in [1, %d],"
                                     " min_teacher_confidence in [0, 1]",
                                     EXPORT_PAGE_MAX);
    return MF_OK;
}

int mf_handlers__offload_samples_export(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_sample_query q;
    struct export_page p;
    cJSON *body;
    int err = export_query(&q, r);

    /* An empty export of a misspelt model looks like "no hard samples yet". A model of the
     * offload configuration is known even without a version here (its devices offload). */
    if (err == MF_OK && !r->resp && !mf_offsrv__model(r->env->offload, q.model))
        err = mf_handlers__need_model(r, q.model);
    if (err < 0 || r->resp)
        return err;
    memset(&p, 0, sizeof(p));
    p.r = r;
    p.cfg = mf_offsrv__model(r->env->offload, q.model);
    body = cJSON_CreateObject();
    p.list = body ? cJSON_AddArrayToObject(body, "samples") : NULL;
    if (!p.list) {
        cJSON_Delete(body);
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory exporting samples");
    }
    err = s->ops->offload->samples_walk(s, &r->ctx, &q, add_sample, &p);
    for (cJSON *row = p.list->child; err == MF_OK && row; row = row->next)
        err = add_threshold(row, &p);
    /* "next": the cursor of the following page, 0 when this one was the last. */
    if (err == MF_OK &&
        !cJSON_AddNumberToObject(body, "next",
                                 (p.full || p.n == (size_t)q.limit) ? (double)p.last_seq : 0.0))
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory exporting samples");
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
