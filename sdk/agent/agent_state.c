/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-model state file models/<name>/state.json: which slot is active, what it holds,
 * and the previous slot (kept for rollback). Written only through mf_agent__store_write(),
 * so it switches atomically; read back and validated field by field at start-up.
 *
 *   {"format":1,
 *    "active":{"slot":"a","version":"v2","sha256":"<hex>","size":123,"sequence":2,
 *              "release":"<release digest, hex>"},
 *    "previous":{"slot":"b",...} or null,
 *    "pending":false, "starts":0, "pin":"v1" or null,
 *    "rolled_back":[{"version":"v3","sha256":"<hex>","sequence":3,"reason":"...",
 *                    "reported":true}]}
 *
 * The members after "previous" (and "sequence", "release") are optional, so a state file written by
 * an older agent still loads; an older agent ignores them.
 */
#include "mf_agent_int.h"
#include "mf_json.h"

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
    if (err >= 0 && cJSON_GetObjectItemCaseSensitive(obj, "sequence"))
        err = mf_agent__json_u64(ctx, &out->sequence, obj, "sequence", UINT64_MAX, what);
    if (err >= 0 && cJSON_GetObjectItemCaseSensitive(obj, "release"))
        err = mf_agent__json_sha256(ctx, out->release, obj, "release", what);
    if (err < 0)
        return err;
    out->slot = slot->valuestring[0];
    return MF_OK;
}

static int parse_rolled_back(struct mf_ctx *ctx, struct mf_agent_model_state *out,
                             const cJSON *list)
{
    const cJSON *item;

    if (!list || cJSON_IsNull(list))
        return MF_OK;
    if (!cJSON_IsArray(list))
        return mf_fail(ctx, MF_E_INVALID, "state.rolled_back is not an array");
    cJSON_ArrayForEach(item, list)
    {
        struct mf_agent_rolled_back *rb = &out->rolled_back[out->n_rolled_back];
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(item, "reason");
        int err;

        if (out->n_rolled_back == MF_AGENT_MAX_ROLLED_BACK)
            return mf_fail(ctx, MF_E_INVALID, "state.rolled_back has more than %d entries",
                           MF_AGENT_MAX_ROLLED_BACK);
        err = mf_agent__json_name(ctx, rb->version, item, "version", "state.rolled_back");
        if (err >= 0)
            err = mf_agent__json_sha256(ctx, rb->sha256, item, "sha256", "state.rolled_back");
        if (err >= 0)
            err = mf_agent__json_u64(ctx, &rb->sequence, item, "sequence", UINT64_MAX,
                                     "state.rolled_back");
        if (err < 0)
            return err;
        if (!cJSON_IsString(why) || strlen(why->valuestring) >= sizeof(rb->reason))
            return mf_fail(ctx, MF_E_INVALID, "state.rolled_back.reason is not a short string");
        memcpy(rb->reason, why->valuestring, strlen(why->valuestring) + 1);
        rb->reported = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(item, "reported"));
        out->n_rolled_back++;
    }
    return MF_OK;
}

/* pending, starts, pin, rolled_back: all optional. */
static int parse_health(struct mf_ctx *ctx, struct mf_agent_model_state *out, const cJSON *doc)
{
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(doc, "pending");
    const cJSON *pin = cJSON_GetObjectItemCaseSensitive(doc, "pin");
    uint64_t starts = 0;
    int err = MF_OK;

    if (pending && !cJSON_IsBool(pending))
        return mf_fail(ctx, MF_E_INVALID, "state.pending is not a boolean");
    out->pending = cJSON_IsTrue(pending);
    if (cJSON_GetObjectItemCaseSensitive(doc, "starts"))
        err = mf_agent__json_u64(ctx, &starts, doc, "starts", 1000000, "state");
    out->starts = (uint32_t)starts;
    if (err >= 0 && pin && !cJSON_IsNull(pin))
        err = mf_agent__json_name(ctx, out->pin, doc, "pin", "state");
    if (err >= 0)
        err = parse_rolled_back(ctx, out, cJSON_GetObjectItemCaseSensitive(doc, "rolled_back"));
    return err;
}

int mf_agent__state_parse(struct mf_ctx *ctx, struct mf_agent_model_state *out, const char *json,
                          size_t len)
{
    const cJSON *fmt;
    cJSON *doc;
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_json__parse_object(&doc, ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, "state file");
    if (err < 0)
        return err;
    fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
    if (!cJSON_IsNumber(fmt) || fmt->valuedouble != STATE_FORMAT) {
        cJSON_Delete(doc);
        return mf_fail(ctx, MF_E_INVALID, "state.format is not %d", STATE_FORMAT);
    }
    err = parse_slot(ctx, &out->active, cJSON_GetObjectItemCaseSensitive(doc, "active"), "active");
    if (err >= 0)
        err = parse_slot(ctx, &out->previous, cJSON_GetObjectItemCaseSensitive(doc, "previous"),
                         "previous");
    if (err >= 0)
        err = parse_health(ctx, out, doc);
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
                              "\"size\":%llu,\"sequence\":%llu%s%s%s}",
                              key, s->slot, s->version, s->sha256, (unsigned long long)s->size,
                              (unsigned long long)s->sequence,
                              s->release[0] ? ",\"release\":\"" : "", s->release,
                              s->release[0] ? "\"" : "");
}

static int format_health(struct mf_dynbuf *b, const struct mf_agent_model_state *st)
{
    int err = mf_dynbuf__appendf(b, ",\"pending\":%s,\"starts\":%u,\"pin\":",
                                 st->pending ? "true" : "false", (unsigned)st->starts);

    if (err >= 0)
        err =
            st->pin[0] ? mf_dynbuf__appendf(b, "\"%s\"", st->pin) : mf_dynbuf__append(b, "null", 4);
    if (err >= 0)
        err = mf_dynbuf__append(b, ",\"rolled_back\":[", 16);
    for (size_t i = 0; i < st->n_rolled_back && err >= 0; i++) {
        const struct mf_agent_rolled_back *rb = &st->rolled_back[i];

        err = mf_dynbuf__appendf(b,
                                 "%s{\"version\":\"%s\",\"sha256\":\"%s\",\"sequence\":%llu,"
                                 "\"reason\":",
                                 i ? "," : "", rb->version, rb->sha256,
                                 (unsigned long long)rb->sequence);
        if (err >= 0)
            err = mf_agent__json_str(b, rb->reason);
        if (err >= 0)
            err = mf_dynbuf__appendf(b, ",\"reported\":%s}", rb->reported ? "true" : "false");
    }
    if (err >= 0)
        err = mf_dynbuf__append(b, "]", 1);
    return err;
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
        err = format_health(out, st);
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
    /* A rollback made by another process (mf-agent rollback) is reported by this one. */
    m->report_rollback = err >= 0 && m->state.n_rolled_back && !m->state.rolled_back[0].reported;
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

struct mf_agent_model_state *mf_agent__state_copy(struct mf_agent *a, const struct agent_model *m)
{
    struct mf_agent_model_state *st = mf_ctx__alloc(&a->ctx, sizeof(*st));

    if (!st) {
        (void)mf_fail(&a->ctx, MF_E_NOMEM, "no memory for the state of model %s", m->name);
        return NULL;
    }
    *st = m->state;
    return st;
}
