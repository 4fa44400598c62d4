/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload handles' side of the check-in (docs/protocol-offload.md): the request carries
 * each handle's telemetry as `"offload": [...]`, the answer's `"offload": {"<model>": policy}`
 * is installed into the handle of that model, and every handle learns which model version is
 * active after the step. Offload is best effort next to model delivery: a bad policy or a full
 * telemetry buffer is logged and skipped, never a reason to fail the step.
 */
#include "mf_agent_int.h"

#include <cjson/cJSON.h>
#include <string.h>

/* mf_offload_telemetry_json() promises that 8 KiB always suffices. */
#define OFFLOAD_TELEMETRY_MAX (8u * 1024u)

int mf_agent__offload_request(struct mf_agent *a, struct mf_dynbuf *b)
{
    char *scratch = NULL;
    int err = MF_OK, first = 1;

    for (size_t i = 0; i < a->n_models && err >= 0; i++) {
        mf_offload *o = a->models[i].offload;
        size_t len = 0;

        if (!o)
            continue;
        if (!scratch) {
            scratch = mf_ctx__alloc(&a->ctx, OFFLOAD_TELEMETRY_MAX);
            if (!scratch)
                return MF_E_NOMEM;
        }
        if (mf_offload_telemetry_json(&len, scratch, OFFLOAD_TELEMETRY_MAX, o) < 0) {
            MF_LOG_WARN(&a->ctx, "model %s: offload telemetry left out of the check-in",
                        a->models[i].name);
            continue;
        }
        err = mf_dynbuf__append(b, first ? ",\"offload\":[" : ",", first ? 12 : 1);
        if (err >= 0)
            err = mf_dynbuf__append(b, scratch, len);
        first = 0;
    }
    if (err >= 0 && !first)
        err = mf_dynbuf__append(b, "]", 1);
    mf_ctx__free(&a->ctx, scratch);
    return err;
}

void mf_agent__offload_answer(struct mf_agent *a)
{
    const cJSON *policies = cJSON_GetObjectItemCaseSensitive(a->checkin_doc, "offload");

    for (size_t i = 0; i < a->n_models; i++) {
        mf_offload *o = a->models[i].offload;
        const cJSON *p;
        char *json;

        if (!o)
            continue;
        /* The check-in that carried the telemetry was answered: it is reported. */
        mf_offload_telemetry_reset(o);
        p = cJSON_IsObject(policies) ? cJSON_GetObjectItemCaseSensitive(policies, a->models[i].name)
                                     : NULL;
        if (!cJSON_IsObject(p))
            continue;
        json = cJSON_PrintUnformatted(p);
        if (!json) {
            MF_LOG_WARN(&a->ctx, "model %s: no memory for the offload policy", a->models[i].name);
            continue;
        }
        if (mf_offload_set_policy_json(o, json, strlen(json)) < 0)
            MF_LOG_WARN(&a->ctx, "model %s: offload policy refused: %s", a->models[i].name,
                        mf_offload_errmsg(o));
        cJSON_free(json);
    }
}

void mf_agent__offload_versions(struct mf_agent *a)
{
    for (size_t i = 0; i < a->n_models; i++) {
        const struct agent_model *m = &a->models[i];

        if (m->offload && m->state.active.slot &&
            mf_offload_set_model_version(m->offload, m->state.active.version) < 0)
            MF_LOG_WARN(&a->ctx, "model %s: offload handle refused version %s", m->name,
                        m->state.active.version);
    }
}
