/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-model state file models/<name>/state.json: which slot is active, what it holds,
 * and the previous slot (kept for rollback). Written only through mf_agent__store_write(),
 * so it switches atomically; read back and validated field by field at start-up.
 *
 *   {"format":1,
 *    "active":{"slot":"a","version":"v2","sha256":"<hex>","size":123},
 *    "previous":{"slot":"b",...} or null}
 */
#include "mf_agent_int.h"

#include <cjson/cJSON.h>
#include <string.h>

#define STATE_FORMAT 1

static int parse_slot(struct mf_ctx *ctx, struct mf_agent_slot *out, const cJSON *obj,
                      const char *what)
{
    const cJSON *slot = cJSON_GetObjectItemCaseSensitive(obj, "slot");
    int err;

    memset(out, 0, sizeof(*out));
    if (cJSON_IsNull(obj) || !obj)
        return MF_OK;
    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "state.%s is not an object", what);
    if (!cJSON_IsString(slot) ||
        (strcmp(slot->valuestring, "a") != 0 && strcmp(slot->valuestring, "b") != 0))
        return mf_fail(ctx, MF_E_INVALID, "state.%s.slot is not \"a\" or \"b\"", what);
    err = mf_agent__json_name(ctx, out->version, obj, "version", what);
    if (err >= 0)
        err = mf_agent__json_sha256(ctx, out->sha256, obj, "sha256", what);
    if (err >= 0)
        err = mf_agent__json_u64(ctx, &out->size, obj, "size", UINT64_MAX, what);
    if (err < 0)
        return err;
    out->slot = slot->valuestring[0];
    return MF_OK;
}

int mf_agent__state_parse(struct mf_ctx *ctx, struct mf_agent_model_state *out, const char *json,
                          size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(json, len);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
    int err;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return mf_fail(ctx, MF_E_INVALID, "state file is not a JSON object");
    }
    if (!cJSON_IsNumber(fmt) || fmt->valuedouble != STATE_FORMAT) {
        cJSON_Delete(doc);
        return mf_fail(ctx, MF_E_INVALID, "state.format is not %d", STATE_FORMAT);
    }
    err = parse_slot(ctx, &out->active, cJSON_GetObjectItemCaseSensitive(doc, "active"), "active");
    if (err >= 0)
        err = parse_slot(ctx, &out->previous, cJSON_GetObjectItemCaseSensitive(doc, "previous"),
                         "previous");
    cJSON_Delete(doc);
    if (err >= 0 && out->active.slot && out->active.slot == out->previous.slot)
        err = mf_fail(ctx, MF_E_INVALID, "state.active and state.previous share slot %c",
                      out->active.slot);
    if (err < 0)
        memset(out, 0, sizeof(*out));
    return err;
}

static int format_slot(struct mf_dynbuf *b, const char *key, const struct mf_agent_slot *s)
{
    if (!s->slot)
        return mf_dynbuf__appendf(b, "\"%s\":null", key);
    /* version and sha256 were validated ([A-Za-z0-9._-], hex): nothing to escape. */
    return mf_dynbuf__appendf(b,
                              "\"%s\":{\"slot\":\"%c\",\"version\":\"%s\",\"sha256\":\"%s\","
                              "\"size\":%llu}",
                              key, s->slot, s->version, s->sha256, (unsigned long long)s->size);
}

int mf_agent__state_format(struct mf_dynbuf *out, const struct mf_agent_model_state *st)
{
    int err = mf_dynbuf__appendf(out, "{\"format\":%d,", STATE_FORMAT);

    if (err >= 0)
        err = format_slot(out, "active", &st->active);
    if (err >= 0)
        err = mf_dynbuf__append(out, ",", 1);
    if (err >= 0)
        err = format_slot(out, "previous", &st->previous);
    if (err >= 0)
        err = mf_dynbuf__append(out, "}\n", 2);
    return err;
}

int mf_agent__state_load(struct mf_agent *a, struct agent_model *m)
{
    char name[MF_AGENT_STORE_NAME_MAX];
    struct mf_dynbuf buf;
    int err;

    memset(&m->state, 0, sizeof(m->state));
    err = mf_agent__store_name(a, name, m->name, "state.json");
    if (err < 0)
        return err;
    err = mf_agent__store_read(a, &buf, name, MF_AGENT_SMALL_FILE_MAX);
    if (err == MF_E_NOTFOUND) {
        mf_ctx__clear(&a->ctx);
        return MF_OK; /* nothing installed yet */
    }
    if (err < 0)
        return err;
    err = mf_agent__state_parse(&a->ctx, &m->state, (const char *)buf.data, buf.len);
    mf_dynbuf__free(&buf);
    if (err < 0) {
        /* Keep the parser's reason, prefixed with the file it came from. */
        char why[MF_ERRMSG_MAX];

        memcpy(why, a->ctx.errmsg, sizeof(why));
        return mf_fail(&a->ctx, err, "%s: %s", name, why);
    }
    return MF_OK;
}

int mf_agent__state_save(struct mf_agent *a, struct agent_model *m,
                         const struct mf_agent_model_state *st)
{
    char name[MF_AGENT_STORE_NAME_MAX];
    struct mf_dynbuf buf;
    int err;

    err = mf_agent__store_name(a, name, m->name, "state.json");
    if (err < 0)
        return err;
    mf_dynbuf__init(&buf, &a->ctx.alloc, MF_AGENT_SMALL_FILE_MAX);
    err = mf_agent__state_format(&buf, st);
    if (err < 0) {
        mf_dynbuf__free(&buf);
        return mf_fail(&a->ctx, err, "cannot format %s", name);
    }
    err = mf_agent__store_write(a, name, buf.data, buf.len, 0);
    mf_dynbuf__free(&buf);
    if (err < 0)
        return err;
    m->state = *st;
    return MF_OK;
}
