/* SPDX-License-Identifier: Apache-2.0 */
/* Per-version fleet aggregates from the stored device reports (rollout_fleet.h). */
#include "rollout/rollout_fleet.h"
#include "mf_json.h"

#include "rollout/rollout_report.h"

#include <stdio.h>
#include <string.h>

struct collect {
    struct mf_rollout_fleet *out;
    struct mf_ctx *ctx;
    mf_rollout_keep_fn keep;
    void *payload;
    struct mf_rollout_row row; /* one parsed report; ~9 KiB, kept off the visit's stack */
};

static struct mf_rollout_agg *slot(struct mf_rollout_fleet *f, const char *version)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->v[i].version, version) == 0)
            return &f->v[i].agg;
    }
    if (f->n == MF_ROLLOUT_FLEET_VERSIONS)
        return NULL;
    (void)snprintf(f->v[f->n].version, sizeof(f->v[0].version), "%s", version);
    return &f->v[f->n++].agg;
}

static int add_report(void *payload, const struct mf_store_telemetry *t)
{
    struct collect *c = payload;
    struct mf_rollout_agg *agg;
    cJSON *entry;
    int err;

    if (c->keep && !c->keep(c->payload, t))
        return MF_OK;
    agg = slot(c->out, t->version);
    entry = NULL;
    if (agg && mf_json__parse(&entry, c->ctx, t->report, strlen(t->report), strlen(t->report),
                              MF_JSON_DEPTH_DEFAULT, "stored report") < 0)
        entry = NULL;
    /* The check-in validated every stored report; one that no longer parses (a newer
     * server's field, a damaged row) is counted rather than failing the whole view. */
    err = entry ? mf_rollout__report_parse_one(&c->row, c->ctx, t->model, entry) : MF_E_INVALID;
    cJSON_Delete(entry);
    if (err < 0 || strcmp(c->row.v.version, t->version) != 0) {
        c->out->skipped++;
        return MF_OK;
    }
    mf_rollout__agg_add(agg, &c->row);
    return MF_OK;
}

/* The reports of `model` (of `device` alone when not NULL) aggregated into `out`. */
static int collect(struct mf_rollout_fleet *out, struct mf_store *s, struct mf_ctx *ctx,
                   const char *model, const char *device, mf_rollout_keep_fn keep, void *payload)
{
    struct collect *c = mf_calloc(NULL, 1, sizeof(*c));
    int err;

    memset(out, 0, sizeof(*out));
    if (!c)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory aggregating reports of '%s'", model);
    c->out = out;
    c->ctx = ctx;
    c->keep = keep;
    c->payload = payload;
    err = device ? s->ops->rollout->telemetry_device(s, ctx, model, device, add_report, c)
                 : s->ops->rollout->telemetry_list(s, ctx, model, add_report, c);
    mf_free(NULL, c);
    return err;
}

int mf_rollout__fleet_collect(struct mf_rollout_fleet *out, struct mf_store *s, struct mf_ctx *ctx,
                              const char *model, mf_rollout_keep_fn keep, void *payload)
{
    return collect(out, s, ctx, model, NULL, keep, payload);
}

int mf_rollout__device_collect(struct mf_rollout_fleet *out, struct mf_store *s, struct mf_ctx *ctx,
                               const char *model, const char *device_id)
{
    return collect(out, s, ctx, model, device_id, NULL, NULL);
}

const struct mf_rollout_agg *mf_rollout__fleet_find(const struct mf_rollout_fleet *f,
                                                    const char *version)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->v[i].version, version) == 0)
            return &f->v[i].agg;
    }
    return NULL;
}
