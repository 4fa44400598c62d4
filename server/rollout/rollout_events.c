/* SPDX-License-Identifier: Apache-2.0 */
/* Rollout events: rows, audit row and log line in one place (rollout_events.h). */
#include "rollout/rollout_events.h"

#include "common/iso_time.h"
#include "mf_hex.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

/* What the engine does by itself: an ops request never causes these. */
static const char *const automatic_kinds[] = {
    "soaking",  "advanced",         "halted",         "done",
    "promoted", "rollback_started", "rollback_ended", "class_halted",
};

int mf_rollout__event_automatic(const char *kind)
{
    for (size_t i = 0; i < sizeof(automatic_kinds) / sizeof(automatic_kinds[0]); i++) {
        if (strcmp(kind, automatic_kinds[i]) == 0)
            return 1;
    }
    return 0;
}

/* `in` into out[*n..] with '"' and '\' escaped and control bytes as '?': the line stays one
 * line whatever a plan or a breach text holds. */
static void put_escaped(char *out, size_t size, size_t *n, const char *in)
{
    for (const char *p = in; *p && *n + 3 < size; p++) {
        if (*p == '"' || *p == '\\')
            out[(*n)++] = '\\';
        out[(*n)++] = (unsigned char)*p < 0x20 ? '?' : *p;
    }
    out[*n] = '\0';
}

void mf_rollout__event_line(char *out, size_t size, const struct mf_store_rollout *r,
                            const char *kind, const char *detail, int64_t now)
{
    char at[MF_ISO_TIME_SIZE];
    int w = snprintf(out, size,
                     "event=rollout.%s rollout=%lld model=%s version=%s previous=%s state=%s"
                     " wave=%d at=%s detail=\"",
                     kind, (long long)r->id, r->model, r->version, r->prev_version, r->state,
                     r->wave, mf_iso_time__format(at, now));
    size_t n = w < 0 ? 0 : (size_t)w;

    if (n + 2 >= size) /* no room for the detail: the line as cut, terminated */
        return;
    put_escaped(out, size - 1, &n, detail);
    out[n++] = '"';
    out[n] = '\0';
}

int mf_rollout__event_body(char **out, struct mf_ctx *ctx, const char *event_id,
                           const struct mf_store_rollout *r, const char *kind, const char *detail,
                           int64_t now)
{
    char at[MF_ISO_TIME_SIZE], type[32];
    cJSON *o = cJSON_CreateObject();
    cJSON *ro = o ? cJSON_AddObjectToObject(o, "rollout") : NULL;
    int ok;

    *out = NULL;
    (void)snprintf(type, sizeof(type), "rollout.%s", kind);
    ok = ro && cJSON_AddStringToObject(o, "id", event_id) &&
         cJSON_AddStringToObject(o, "type", type) &&
         cJSON_AddStringToObject(o, "at", mf_iso_time__format(at, now)) &&
         cJSON_AddNumberToObject(o, "at_unix", (double)now) &&
         cJSON_AddNumberToObject(ro, "id", (double)r->id) &&
         cJSON_AddStringToObject(ro, "model", r->model) &&
         cJSON_AddStringToObject(ro, "version", r->version) &&
         cJSON_AddStringToObject(ro, "previous", r->prev_version) &&
         cJSON_AddStringToObject(ro, "state", r->state) &&
         cJSON_AddNumberToObject(ro, "wave", r->wave) &&
         cJSON_AddStringToObject(o, "detail", detail);
    *out = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!*out)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory writing a rollout event");
    /* The detail is bounded (MF_STORE_BREACH_MAX) and so is every other field. */
    assert(strlen(*out) <= MF_STORE_WEBHOOK_BODY_MAX);
    return MF_OK;
}

int mf_rollout__emit(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_rollout *r,
                     const char *kind, const char *detail, int64_t now)
{
    struct mf_store_rollout_event e = {.rollout_id = r->id, .at = now};
    struct mf_store_audit a = {.at = now};
    char line[MF_STORE_BREACH_MAX + 512], id[MF_STORE_EVENT_ID_LEN + 1];
    uint8_t raw[MF_STORE_EVENT_ID_LEN / 2];
    char *body = NULL;
    int automatic = mf_rollout__event_automatic(kind);
    int err;

    (void)snprintf(e.kind, sizeof(e.kind), "%s", kind);
    (void)snprintf(e.detail, sizeof(e.detail), "%s", detail);
    /* The id a receiver dedups by: random, so it stays unique across nodes and restores. */
    if (RAND_bytes(raw, (int)sizeof(raw)) != 1)
        return mf_fail(ctx, MF_E_GENERIC, "RAND_bytes failed making a rollout event id");
    mf_hex__encode(id, raw, sizeof(raw));
    err = mf_rollout__event_body(&body, ctx, id, r, kind, e.detail, now);
    if (err < 0)
        return err;
    if (automatic) {
        (void)snprintf(a.actor, sizeof(a.actor), "%s", MF_STORE_AUDIT_ENGINE);
        (void)snprintf(a.action, sizeof(a.action), "rollout.%s", kind);
        (void)snprintf(a.target, sizeof(a.target), "rollout/%lld/%s/%s", (long long)r->id, r->model,
                       r->version);
        (void)snprintf(a.detail, sizeof(a.detail), "%s", detail);
    }
    err = s->ops->audit->event_record(s, ctx, &e, automatic ? &a : NULL, id, body, now);
    cJSON_free(body);
    if (err < 0)
        return err;
    mf_rollout__event_line(line, sizeof(line), r, kind, detail, now);
    MF_LOG_INFO(ctx, "%s event_id=%s", line, id);
    return MF_OK;
}
