/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The app's runtime reports (mf/telemetry.h) in the agent: install results and rollbacks are
 * counted where the agent knows them, and each model's cumulative totals ride its check-in
 * entry as `"telemetry"` (docs/protocol.md). Like offload, reports are best effort next to
 * model delivery: a full handle is logged, never a reason to fail a step.
 */
#include "mf_agent_int.h"

int mf_agent__telemetry_member(struct mf_agent *a, struct mf_dynbuf *b, const char *model)
{
    char *json;
    size_t len = 0;
    int err;

    if (!a->telemetry)
        return MF_OK;
    /* The check-in's plan (mf_agent__checkin) keeps every model's member within the budget. */
    json = mf_ctx__alloc(&a->ctx, MF_TELEMETRY_CHECKIN_BUDGET);
    if (!json)
        return MF_E_NOMEM;
    err = mf_telemetry_checkin_json(&len, json, MF_TELEMETRY_CHECKIN_BUDGET, a->telemetry, model);
    if (err == MF_OK) {
        err = mf_dynbuf__append(b, ",\"telemetry\":", 13);
        if (err >= 0)
            err = mf_dynbuf__append(b, json, len);
    } else {
        err = MF_OK; /* nothing recorded for this model: the member is left out */
    }
    mf_ctx__free(&a->ctx, json);
    return err;
}

void mf_agent__telemetry_install(struct mf_agent *a, const char *model, const char *version, int ok)
{
    if (a->telemetry && mf_telemetry_record_install(a->telemetry, model, version, ok) < 0)
        MF_LOG_WARN(&a->ctx, "model %s: install of %s not counted in the runtime reports", model,
                    version);
}

void mf_agent__telemetry_rollback(struct mf_agent *a, const char *model, const char *version,
                                  const char *reason)
{
    if (a->telemetry && mf_telemetry_record_rollback(a->telemetry, model, version, reason) < 0)
        MF_LOG_WARN(&a->ctx, "model %s: rollback of %s not counted in the runtime reports", model,
                    version);
}
