/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in side of offload: device telemetry in (score histograms summed per model
 * version and method), policy objects out, each with a threshold derived for the model's
 * target rate as the quantile of the fleet's scores for the version the device runs (or
 * of the release's calibration set while the fleet has reported too few).
 */
#include "offload/offload_srv.h"
#include "mf_json.h"

#include "common/names.h"
#include "mf/offload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double mf_offsrv__hist_quantile(const uint64_t *bins, double rate)
{
    uint32_t h[MF_OFFLOAD_HIST_BINS];
    uint64_t max = 0;
    unsigned shift = 0;

    _Static_assert(MF_OFFLOAD_HIST_BINS == MF_STORE_HIST_BINS, "one histogram layout");
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        max = bins[i] > max ? bins[i] : max;
    /* The device's quantile takes 32-bit bins: a fleet's sums are scaled down together,
     * which keeps their proportions (all the quantile depends on). */
    while ((max >> shift) > UINT32_MAX)
        shift++;
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        h[i] = (uint32_t)(bins[i] >> shift);
    return (double)mf_offload_hist_quantile(h, (float)rate);
}

struct hist_pick {
    const char *version, *method;
    struct mf_store_hist fleet, calib;
    int have_fleet, have_calib;
};

static uint64_t bins_total(const uint64_t *bins)
{
    uint64_t t = 0;

    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        t += bins[i];
    return t;
}

static int pick_hist(void *payload, const struct mf_store_hist *h)
{
    struct hist_pick *p = payload;

    if (strcmp(h->version, p->version) != 0 || strcmp(h->method, p->method) != 0)
        return MF_OK;
    if (h->source == MF_STORE_HIST_FLEET) {
        p->fleet = *h;
        p->have_fleet = 1;
    } else if (h->source == MF_STORE_HIST_CALIBRATION) {
        p->calib = *h;
        p->have_calib = 1;
    }
    return MF_OK;
}

int mf_offsrv__threshold(double *threshold_out, int *source_out, struct mf_store *s,
                         struct mf_ctx *ctx, const char *model, const char *version,
                         const char *method, double target_rate)
{
    struct hist_pick p;
    int err;

    memset(&p, 0, sizeof(p));
    p.version = version;
    p.method = method;
    err = s->ops->offload->hists_list(s, ctx, model, pick_hist, &p);
    if (err < 0)
        return err;
    if (p.have_fleet && bins_total(p.fleet.bins) >= MF_OFFLOAD_MIN_FLEET_SAMPLES) {
        *threshold_out = mf_offsrv__hist_quantile(p.fleet.bins, target_rate);
        *source_out = MF_STORE_HIST_FLEET;
        return MF_OK;
    }
    if (p.have_calib && bins_total(p.calib.bins) > 0) {
        *threshold_out = mf_offsrv__hist_quantile(p.calib.bins, target_rate);
        *source_out = MF_STORE_HIST_CALIBRATION;
        return MF_OK;
    }
    return mf_fail(ctx, MF_E_NOTFOUND, "no scores for %s %s (%s)", model, version, method);
}

int mf_offsrv__version_threshold(double *out, const struct mf_offload_model_cfg *m,
                                 struct mf_store *s, struct mf_ctx *ctx, const char *version,
                                 const char *method)
{
    int source = 0, err;

    if (m->fixed_threshold) {
        *out = m->threshold;
        return MF_OK;
    }
    if (m->target_rate <= 0.0)
        return mf_fail(ctx, MF_E_NOTFOUND, "%s states neither threshold nor target rate", m->name);
    err = mf_offsrv__threshold(out, &source, s, ctx, m->name, version, method, m->target_rate);
    if (err == MF_OK && *out < 0.0)
        return mf_fail(ctx, MF_E_NOTFOUND, "no scores for %s %s (%s)", m->name, version, method);
    if (err == MF_OK)
        *out = floor(*out * 1e4 + 0.5) / 1e4;
    return err;
}

static int read_count(uint64_t *out, const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e15)
        return 0;
    *out = (uint64_t)it->valuedouble;
    return 1;
}

/* One `versions` entry of a telemetry object into `h`; 0 when it is malformed. */
static int read_version(struct mf_store_hist *h, const cJSON *v)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "model_version");
    const cJSON *bins = cJSON_GetObjectItemCaseSensitive(v, "hist"), *it;
    uint64_t nbins = 0;
    int i = 0;

    if (!cJSON_IsString(ver) || !mf_names__valid_id(ver->valuestring) ||
        !read_count(&h->asked, v, "asked") || !read_count(&h->uncertain, v, "uncertain") ||
        !read_count(&nbins, v, "hist_bins") || nbins != MF_STORE_HIST_BINS ||
        !cJSON_IsArray(bins) || cJSON_GetArraySize(bins) != MF_STORE_HIST_BINS)
        return 0;
    (void)snprintf(h->version, sizeof(h->version), "%s", ver->valuestring);
    cJSON_ArrayForEach(it, bins)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e15)
            return 0;
        h->bins[i++] = (uint64_t)it->valuedouble;
    }
    return h->uncertain <= h->asked;
}

static int ingest(int *skipped_out, struct mf_store *s, struct mf_ctx *ctx, const cJSON *tel)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tel, "model");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(tel, "method");
    const cJSON *versions = cJSON_GetObjectItemCaseSensitive(tel, "versions"), *v;
    int err = MF_OK;

    if (!cJSON_IsString(model) || !mf_names__valid_id(model->valuestring) ||
        !cJSON_IsString(method) || strlen(method->valuestring) >= 16 || !cJSON_IsArray(versions)) {
        (*skipped_out)++;
        return MF_OK;
    }
    cJSON_ArrayForEach(v, versions)
    {
        struct mf_store_hist h;

        memset(&h, 0, sizeof(h));
        if (err < 0)
            break;
        if (!read_version(&h, v)) {
            (*skipped_out)++;
            continue;
        }
        (void)snprintf(h.model, sizeof(h.model), "%s", model->valuestring);
        (void)snprintf(h.method, sizeof(h.method), "%s", method->valuestring);
        h.source = MF_STORE_HIST_FLEET;
        h.updated_at = (int64_t)time(NULL);
        err = s->ops->offload->hist_add(s, ctx, &h, 0);
    }
    return err;
}

/* The version of `model` the device runs: from its check-in `models`, else the first
 * version of its offload telemetry for the model; NULL when neither says. */
static const char *device_version(const cJSON *req, const char *model)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "models"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "version");

        if (cJSON_IsString(n) && strcmp(n->valuestring, model) == 0 && cJSON_IsString(v))
            return v->valuestring;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "offload"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "model");
        const cJSON *vs = cJSON_GetObjectItemCaseSensitive(it, "versions");
        const cJSON *v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(vs, 0), "model_version");

        if (cJSON_IsString(n) && strcmp(n->valuestring, model) == 0 && cJSON_IsString(v))
            return v->valuestring;
    }
    return NULL;
}

static int add_policy(cJSON *policies, const struct mf_offload_model_cfg *m, struct mf_store *s,
                      struct mf_ctx *ctx, const char *version)
{
    size_t len = strlen(m->policy);
    double t = 0.0;
    cJSON *p;
    /* The policy was checked when the config was read; only memory can fail here. */
    int err = mf_json__parse(&p, ctx, m->policy, len, len, MF_JSON_DEPTH_DEFAULT, "offload policy");

    if (err < 0)
        return err;
    if (version && mf_names__valid_id(version)) {
        if (!m->fixed_threshold && m->target_rate > 0.0) {
            err = mf_offsrv__version_threshold(&t, m, s, ctx, version, m->method);
            /* No scores yet: the device derives its own threshold from the target rate. */
            if (err == MF_OK)
                (void)cJSON_AddNumberToObject(p, "threshold", t);
            if (err == MF_E_NOTFOUND)
                err = MF_OK;
        }
        if (err == MF_OK && !cJSON_AddStringToObject(p, "model_version", version))
            err = mf_fail(ctx, MF_E_NOMEM, "out of memory building an offload policy");
    }
    if (err < 0) {
        cJSON_Delete(p);
        return err;
    }
    cJSON_AddItemToObject(policies, m->name, p);
    return MF_OK;
}

int mf_offsrv__checkin(int *skipped_out, cJSON *reply, struct mf_offload_srv *srv,
                       struct mf_store *s, struct mf_ctx *ctx, const cJSON *req)
{
    const cJSON *tel = cJSON_GetObjectItemCaseSensitive(req, "offload"), *it;
    const struct mf_offload_config *cfg;
    cJSON *policies = NULL;
    int err = MF_OK;

    *skipped_out = 0;
    if (tel && !cJSON_IsArray(tel)) {
        (*skipped_out)++;
        tel = NULL;
    }
    cJSON_ArrayForEach(it, tel)
    {
        err = ingest(skipped_out, s, ctx, it);
        if (err < 0)
            return err;
    }
    if (!srv)
        return MF_OK;
    cfg = mf_offsrv__srv_config(srv);
    for (size_t i = 0; err == MF_OK && i < cfg->n; i++) {
        const struct mf_offload_model_cfg *m = &cfg->models[i];
        const char *version = device_version(req, m->name);

        if (!m->policy[0] || !version)
            continue;
        if (!policies) {
            policies = cJSON_AddObjectToObject(reply, "offload");
            if (!policies)
                return mf_fail(ctx, MF_E_NOMEM, "out of memory building an offload policy");
        }
        err = add_policy(policies, m, s, ctx, version);
    }
    return err;
}
