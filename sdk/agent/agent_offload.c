/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload handles' side of the check-in (docs/protocol-offload.md): the request carries
 * each handle's telemetry as `"offload": [...]`, the answer's `"offload": {"<model>": policy}`
 * is installed into the handle of that model, and every handle learns which model version is
 * active after the step. Offload is best effort next to model delivery: a bad policy or a full
 * telemetry buffer is logged and skipped, never a reason to fail the step.
 */
#include "mf_agent_int.h"
#include "mf_offload_agent.h"

#include <cjson/cJSON.h>
#include <stddef.h>
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

/* The agent's own fields of a handle it creates; the app's options give the rest. */
static int offload_open_one(struct mf_agent *a, struct agent_model *m,
                            const mf_offload_options *app, const mf_agent_options *o)
{
    mf_offload_options oo;
    int err;

    /* An app of options version 1 owns the struct up to its error buffer only; the copy is
     * made at this header's version, whose errbuf the agent sets below. */
    memset(&oo, 0, sizeof(oo));
    memcpy(&oo, app, app->version >= 2 ? sizeof(oo) : offsetof(mf_offload_options, errbuf));
    oo.version = MF_OFFLOAD_OPTIONS_VERSION;

    if (oo.model || oo.model_version || oo.server_url || oo.credential || oo.platform)
        return mf_fail(&a->ctx, MF_E_INVALID,
                       "offload_options of model %s set model, model_version, server_url, "
                       "credential or platform: the agent fills those",
                       m->name);
    oo.model = m->name;
    oo.model_version = m->state.active.slot ? m->state.active.version : "none";
    oo.server_url = a->server_url;
    oo.credential = a->credential[0] ? a->credential : NULL;
    oo.platform = &a->plat;
    if (!oo.allocator)
        oo.allocator = o->allocator;
    if (!oo.log_fn) {
        oo.log_fn = o->log_fn;
        oo.log_payload = o->log_payload;
    }
    /* The handle's own message becomes the agent's (it is set where the failure was found). */
    oo.errbuf = a->ctx.errmsg;
    oo.errbuf_size = sizeof(a->ctx.errmsg);
    err = mf_offload_new(&m->offload, &oo);
    if (err < 0)
        return err;
    m->owns_offload = 1;
    return MF_OK;
}

int mf_agent__offload_open(struct mf_agent *a, const mf_agent_options *o)
{
    if (o->version < 4 || !o->offload_options)
        return MF_OK;
    for (size_t i = 0; i < a->n_models; i++) {
        struct agent_model *m = &a->models[i];
        int err;

        if (!o->offload_options[i])
            continue;
        if (m->offload)
            return mf_fail(&a->ctx, MF_E_INVALID,
                           "model %s has both an offload handle and offload_options", m->name);
        err = offload_open_one(a, m, o->offload_options[i], o);
        if (err < 0)
            return err;
    }
    return MF_OK;
}

void mf_agent__offload_credential(struct mf_agent *a)
{
    for (size_t i = 0; i < a->n_models; i++) {
        mf_offload *h = a->models[i].offload;

        if (h && mf_offload__set_credential(h, a->credential) < 0)
            MF_LOG_WARN(&a->ctx, "model %s: %s", a->models[i].name, mf_offload_errmsg(h));
    }
}

void mf_agent__offload_close(struct mf_agent *a)
{
    for (size_t i = 0; i < a->n_models; i++) {
        if (a->models[i].owns_offload)
            mf_offload_free(a->models[i].offload);
        a->models[i].offload = NULL;
        a->models[i].owns_offload = 0;
    }
}
