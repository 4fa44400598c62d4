/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Check-in ingest of device runtime reports (rollout_fleet.h): validate everything, then
 * store each version's entry as its own row, so a malformed field stores nothing and a
 * repeated check-in replaces what it stored before.
 */
#include "rollout/rollout_fleet.h"

#include "rollout/rollout_report.h"

#include <stdio.h>
#include <string.h>

/* Pass 1: every model's telemetry parses, and all of them hold at most the versions one
 * device keeps. `scratch` holds MF_TELEMETRY_MAX_VERSIONS parsed versions. */
static int validate(struct mf_ctx *ctx, const cJSON *models, struct mf_rollout_row *scratch)
{
    const cJSON *m;
    size_t total = 0;

    cJSON_ArrayForEach(m, models)
    {
        const cJSON *tele = cJSON_GetObjectItemCaseSensitive(m, "telemetry");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        size_t n = 0;
        int err;

        if (!tele)
            continue;
        err = mf_rollout__report_parse(scratch, &n, ctx, name->valuestring, tele);
        if (err < 0)
            return err;
        total += n;
        if (total > MF_TELEMETRY_MAX_VERSIONS)
            return mf_fail(ctx, MF_E_INVALID, "telemetry of more than %d versions in one check-in",
                           MF_TELEMETRY_MAX_VERSIONS);
    }
    return MF_OK;
}

static int store_entry(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_telemetry *t,
                       const cJSON *entry)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(entry, "version");
    char *text = cJSON_PrintUnformatted(entry);
    int err;

    if (!text)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory storing telemetry");
    (void)snprintf(t->version, sizeof(t->version), "%s", ver->valuestring);
    t->report = text;
    err = s->ops->rollout->telemetry_put(s, ctx, t);
    cJSON_free(text);
    return err;
}

int mf_rollout__ingest_check(struct mf_ctx *ctx, const cJSON *root)
{
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models"), *m;
    struct mf_rollout_row *scratch;
    int any = 0, err;

    cJSON_ArrayForEach(m, models)
    {
        any |= cJSON_GetObjectItemCaseSensitive(m, "telemetry") != NULL;
    }
    if (!any)
        return MF_OK; /* most check-ins: nothing to parse, no scratch to allocate */
    scratch = mf_calloc(NULL, MF_TELEMETRY_MAX_VERSIONS, sizeof(*scratch));
    if (!scratch)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading telemetry");
    err = validate(ctx, models, scratch); /* the check-in parser checked models and names */
    mf_free(NULL, scratch);
    return err;
}

int mf_rollout__ingest(int *stored_out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *device_id, const cJSON *root, int64_t now)
{
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models"), *m;
    struct mf_store_telemetry t = {.reported_at = now};
    int err;

    const char *tag = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "device_class"), "tag"));

    *stored_out = 0;
    err = mf_rollout__ingest_check(ctx, root);
    (void)snprintf(t.device_id, sizeof(t.device_id), "%s", device_id);
    /* The class the check-in declared (its parser checked the tag): red lines per class. */
    (void)snprintf(t.device_class, sizeof(t.device_class), "%s",
                   tag && strlen(tag) < sizeof(t.device_class) ? tag : "");
    cJSON_ArrayForEach(m, models)
    {
        const cJSON *tele = cJSON_GetObjectItemCaseSensitive(m, "telemetry"), *entry;

        if (err < 0 || !tele)
            continue;
        (void)snprintf(t.model, sizeof(t.model), "%s",
                       cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring);
        cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(tele, "versions"))
        {
            if (err == MF_OK)
                err = store_entry(s, ctx, &t, entry);
            if (err == MF_OK)
                (*stored_out)++;
        }
    }
    return err;
}
