/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Check-in (POST /v1/checkin): the device lists what it runs, its trusted root and keys
 * versions and a fresh random nonce, and gets the trust documents it lacks plus one
 * assignment per tracked model. Each assignment carries the release envelope and the
 * director's assignment envelope as JSON strings holding their exact bytes; the signed
 * assignment echoes the nonce, which is what makes a replayed answer useless. The plain
 * fields beside them are hints for messages only (agent_trust.c replaces them). The device
 * names the release it runs (its digest, "release_sha256") when it keeps that release's
 * envelope, and a server that assigns that same release leaves the envelope out: the
 * assignment is then verified against the kept one (docs/protocol.md, "Check-ins that send
 * only what changed").
 */
#include "mf_agent_int.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <string.h>

#define NONCE_BYTES (MF_AGENT_NONCE_LEN / 2)
#define MAX_POLL_INTERVAL_S (7L * 24 * 3600)
/* Envelope caps before mf_trust's own (root/keys 32 KiB, release 1 MiB, assignment 8 KiB). */
#define MAX_TRUST_DOC (32u * 1024u)
#define MAX_ASSIGNMENT_DOC (8u * 1024u)

/* The optional pin / pending / rolled_back members (docs/protocol.md), closing the object. */
static int append_health(struct mf_dynbuf *b, const struct mf_agent_model_state *st)
{
    int err = MF_OK;

    if (st->pin[0])
        err = mf_dynbuf__appendf(b, ",\"pin\":\"%s\"", st->pin);
    if (err >= 0 && st->pending)
        err = mf_dynbuf__append(b, ",\"pending\":true", 15);
    if (err >= 0 && st->n_rolled_back)
        err = mf_dynbuf__append(b, ",\"rolled_back\":[", 16);
    for (size_t i = 0; i < st->n_rolled_back && err >= 0; i++) {
        err = mf_dynbuf__appendf(b, "%s{\"sha256\":\"%s\",\"reason\":", i ? "," : "",
                                 st->rolled_back[i].sha256);
        if (err >= 0)
            err = mf_agent__json_str(b, st->rolled_back[i].reason);
        if (err >= 0)
            err = mf_dynbuf__append(b, "}", 1);
    }
    if (err >= 0 && st->n_rolled_back)
        err = mf_dynbuf__append(b, "]", 1);
    if (err >= 0)
        err = mf_dynbuf__append(b, "}", 1);
    return err;
}

/* "device_class" (docs/protocol.md), when the app declared one; names checked at creation. */
static int append_class(struct mf_agent *a, struct mf_dynbuf *b)
{
    int err;

    if (!a->has_class)
        return MF_OK;
    err = mf_dynbuf__appendf(b,
                             "\"device_class\":{\"ram_mb\":%llu,\"storage_mb\":%llu,"
                             "\"int8\":%s,\"fp16\":%s",
                             (unsigned long long)a->class_ram_mb,
                             (unsigned long long)a->class_storage_mb,
                             a->class_int8 ? "true" : "false", a->class_fp16 ? "true" : "false");
    if (err >= 0 && a->class_tag[0])
        err = mf_dynbuf__appendf(b, ",\"tag\":\"%s\"", a->class_tag);
    if (err >= 0 && a->class_accel[0])
        err = mf_dynbuf__appendf(b, ",\"accelerator\":\"%s\"", a->class_accel);
    return err >= 0 ? mf_dynbuf__append(b, "},", 2) : err;
}

static int build_request(struct mf_agent *a, struct mf_dynbuf *b, const char *nonce)
{
    int err =
        mf_dynbuf__appendf(b, "{\"nonce\":\"%s\",\"root_version\":%llu,\"keys_version\":%llu,",
                           nonce, (unsigned long long)mf_trust_root_version(a->trust),
                           (unsigned long long)mf_trust_keys_version(a->trust));

    if (err >= 0)
        err = append_class(a, b);
    if (err >= 0)
        err = mf_agent__degrade_request(a, b);
    if (err >= 0)
        err = mf_dynbuf__append(b, "\"models\":[", 10);

    for (size_t i = 0; i < a->n_models && err >= 0; i++) {
        const struct mf_agent_slot *s = &a->models[i].state.active;

        err = mf_dynbuf__appendf(b, "%s{\"name\":", i ? "," : "");
        if (err >= 0)
            err = mf_agent__json_str(b, a->models[i].name);
        if (err >= 0 && s->slot)
            err = mf_dynbuf__appendf(b, ",\"version\":\"%s\",\"sha256\":\"%s\"", s->version,
                                     s->sha256);
        else if (err >= 0)
            err = mf_dynbuf__appendf(b, "%s", ",\"version\":null,\"sha256\":null");
        if (err >= 0 && s->slot && s->release[0])
            err = mf_dynbuf__appendf(b, ",\"release_sha256\":\"%s\"", s->release);
        if (err >= 0 && mf_agent__fallback_usable(a, &a->models[i]))
            err = mf_dynbuf__appendf(b, ",\"fallback_sha256\":\"%s\"",
                                     mf_agent__fallback_of(a, &a->models[i])->sha256);
        if (err >= 0)
            err = mf_agent__telemetry_member(a, b, a->models[i].name);
        if (err >= 0)
            err = append_health(b, &a->models[i].state);
    }
    /* This agent decodes compressed full blobs (deltas from the empty image). */
    if (err >= 0)
        err = mf_dynbuf__append(b, "],\"compressed_full\":true", 24);
    if (err >= 0)
        err = mf_agent__offload_request(a, b);
    if (err >= 0)
        err = mf_dynbuf__append(b, "}", 1);
    return err;
}

static int tracked_index(const char *model, const char *const *models, size_t n_models)
{
    for (size_t i = 0; i < n_models; i++) {
        if (strcmp(models[i], model) == 0)
            return (int)i;
    }
    return -1;
}

/* A string member holding an envelope of at most `max` bytes. */
static int get_envelope(struct mf_ctx *ctx, const char **out, size_t *len, const cJSON *obj,
                        const char *key, size_t max, const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    *len = 0;
    if (!cJSON_IsString(v))
        return mf_fail(ctx, MF_E_INVALID, "%s carries no signed \"%s\" envelope", what, key);
    *len = strlen(v->valuestring);
    if (*len > max)
        return mf_fail(ctx, MF_E_LIMIT, "%s: \"%s\" envelope of %zu bytes exceeds %zu", what, key,
                       *len, max);
    *out = v->valuestring;
    return MF_OK;
}

static int parse_trust(struct mf_ctx *ctx, struct mf_agent_trust_docs *t, const cJSON *doc)
{
    const cJSON *trust = cJSON_GetObjectItemCaseSensitive(doc, "trust");
    const cJSON *roots = cJSON_GetObjectItemCaseSensitive(trust, "roots");
    const cJSON *item;

    memset(t, 0, sizeof(*t));
    if (!trust || cJSON_IsNull(trust))
        return MF_OK;
    if (!cJSON_IsObject(trust) || (roots && !cJSON_IsArray(roots)))
        return mf_fail(ctx, MF_E_INVALID, "check-in \"trust\" is not {\"roots\":[...]}");
    cJSON_ArrayForEach(item, roots)
    {
        if (t->n_roots == MF_AGENT_MAX_ROOTS)
            return mf_fail(ctx, MF_E_LIMIT, "check-in carries more than %d root rotations",
                           MF_AGENT_MAX_ROOTS);
        if (!cJSON_IsString(item) || strlen(item->valuestring) > MAX_TRUST_DOC)
            return mf_fail(ctx, MF_E_INVALID, "check-in trust.roots[%zu] is not an envelope",
                           t->n_roots);
        t->roots[t->n_roots] = item->valuestring;
        t->root_len[t->n_roots++] = strlen(item->valuestring);
    }
    if (cJSON_GetObjectItemCaseSensitive(trust, "keys"))
        return get_envelope(ctx, &t->keys, &t->keys_len, trust, "keys", MAX_TRUST_DOC,
                            "check-in trust");
    return MF_OK;
}

/* A server-relative path only: the agent never follows a check-in to another host. */
static int blob_path_ok(const cJSON *blob)
{
    return cJSON_IsString(blob) && blob->valuestring[0] == '/' &&
           strlen(blob->valuestring) <= MF_AGENT_BLOB_PATH_MAX &&
           !strstr(blob->valuestring, "..") && !strpbrk(blob->valuestring, " \t\r\n\"\\?#%");
}

/*
 * The optional "deltas" list: unsigned offers, kept only in the streaming "mfdelta" format
 * (bsdiff40 needs the whole new image in memory). At most MF_AGENT_MAX_DELTAS are kept.
 */
static int parse_deltas(struct mf_ctx *ctx, struct mf_agent_assignment *as, const cJSON *obj)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "deltas");
    const cJSON *item;

    if (!list || cJSON_IsNull(list))
        return MF_OK;
    if (!cJSON_IsArray(list))
        return mf_fail(ctx, MF_E_INVALID, "assignment.deltas of model %s is not an array",
                       as->model);
    cJSON_ArrayForEach(item, list)
    {
        struct mf_agent_delta_ref *d = &as->deltas[as->n_deltas];
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(item, "format");
        const cJSON *blob = cJSON_GetObjectItemCaseSensitive(item, "blob");
        int err;

        if (!cJSON_IsObject(item))
            return mf_fail(ctx, MF_E_INVALID, "assignment.deltas entry is not an object");
        if (as->n_deltas == MF_AGENT_MAX_DELTAS ||
            (cJSON_IsString(fmt) && strcmp(fmt->valuestring, "mfdelta") != 0))
            continue;
        err = mf_agent__json_sha256(ctx, d->from_sha256, item, "from_sha256", "delta");
        if (err >= 0)
            err = mf_agent__json_sha256(ctx, d->sha256, item, "sha256", "delta");
        if (err >= 0)
            err = mf_agent__json_u64(ctx, &d->size, item, "size", UINT64_MAX, "delta");
        if (err < 0)
            return err;
        if (d->size == 0 || !blob_path_ok(blob))
            return mf_fail(ctx, MF_E_INVALID, "delta of model %s: bad size or blob path",
                           as->model);
        memcpy(d->blob, blob->valuestring, strlen(blob->valuestring) + 1);
        as->n_deltas++;
    }
    return MF_OK;
}

/* The optional "chunk_list" {"blob"}: where the chunk hashes of a chunk-tree release are
 * (docs/protocol.md); unsigned, held to the signed chunks_root before use (agent_chunks.c). */
static int parse_chunk_list(struct mf_ctx *ctx, struct mf_agent_assignment *as, const cJSON *obj)
{
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(obj, "chunk_list");

    if (!cl || cJSON_IsNull(cl))
        return MF_OK;
    if (!cJSON_IsObject(cl) || !blob_path_ok(cJSON_GetObjectItemCaseSensitive(cl, "blob")))
        return mf_fail(ctx, MF_E_INVALID, "assignment.chunk_list of model %s: bad blob path",
                       as->model);
    as->chunk_list = cJSON_GetObjectItemCaseSensitive(cl, "blob")->valuestring;
    return MF_OK;
}

/*
 * The optional "fallback": the variant the release names as its fallback, its sha256 and
 * size (unsigned hints), and its release envelope and blob unless the device said it holds
 * those bytes ("fallback_sha256"); agent_fallback.c verifies the release before any download.
 */
static int parse_fallback(struct mf_ctx *ctx, struct mf_agent_assignment *as, const cJSON *obj)
{
    struct mf_agent_fallback_ref *f = &as->fallback;
    const cJSON *fb = cJSON_GetObjectItemCaseSensitive(obj, "fallback");
    const cJSON *blob = cJSON_GetObjectItemCaseSensitive(fb, "blob");
    char name[MF_AGENT_NAME_MAX + 1], sha[MF_SHA256_HEX_LEN + 1];
    int err;

    if (!fb || cJSON_IsNull(fb))
        return MF_OK;
    if (!cJSON_IsObject(fb))
        return mf_fail(ctx, MF_E_INVALID, "assignment.fallback of model %s is not an object",
                       as->model);
    /* Checked here, then borrowed from the tree (the assignment stays small). */
    err = mf_agent__json_name(ctx, name, fb, "variant", "fallback");
    if (err >= 0)
        err = mf_agent__json_sha256(ctx, sha, fb, "sha256", "fallback");
    if (err >= 0)
        err = mf_agent__json_u64(ctx, &f->size, fb, "size", UINT64_MAX, "fallback");
    if (err >= 0 && cJSON_GetObjectItemCaseSensitive(fb, "release")) {
        if (!blob_path_ok(blob))
            return mf_fail(ctx, MF_E_INVALID, "fallback of model %s: blob is not a server path",
                           as->model);
        f->blob = blob->valuestring;
        err = get_envelope(ctx, &f->release_env, &f->release_len, fb, "release",
                           MF_AGENT_RELEASE_MAX, "fallback");
    }
    if (err < 0)
        return err;
    f->variant = cJSON_GetObjectItemCaseSensitive(fb, "variant")->valuestring;
    f->sha256 = cJSON_GetObjectItemCaseSensitive(fb, "sha256")->valuestring;
    return MF_OK;
}

/*
 * An assignment without "release" names the release the device said it holds: only model,
 * version and the assignment envelope come (mf_agent__release_load supplies the rest).
 */
static int parse_assignment(struct mf_ctx *ctx, struct mf_agent_assignment *as, const cJSON *obj)
{
    const cJSON *blob = cJSON_GetObjectItemCaseSensitive(obj, "blob");
    int err;

    memset(as, 0, sizeof(*as));
    if (!cJSON_IsObject(obj))
        return mf_fail(ctx, MF_E_INVALID, "check-in assignment is not an object");
    err = mf_agent__json_name(ctx, as->model, obj, "model", "assignment");
    if (err >= 0)
        err = mf_agent__json_name(ctx, as->version, obj, "version", "assignment");
    /* Without the download hints too; with them it is a download whose release is missing
     * (refused below). */
    as->release_held = err >= 0 && !cJSON_GetObjectItemCaseSensitive(obj, "release") && !blob &&
                       !cJSON_GetObjectItemCaseSensitive(obj, "sha256");
    if (as->release_held) {
        err = get_envelope(ctx, &as->assignment_env, &as->assignment_len, obj, "assignment",
                           MAX_ASSIGNMENT_DOC, "assignment");
        return err >= 0 ? parse_fallback(ctx, as, obj) : err;
    }
    if (err >= 0)
        err = mf_agent__json_sha256(ctx, as->sha256, obj, "sha256", "assignment");
    if (err >= 0)
        err = mf_agent__json_u64(ctx, &as->size, obj, "size", UINT64_MAX, "assignment");
    if (err < 0)
        return err;
    if (!blob_path_ok(blob))
        return mf_fail(ctx, MF_E_INVALID, "assignment.blob of model %s is not a server path",
                       as->model);
    memcpy(as->blob, blob->valuestring, strlen(blob->valuestring) + 1);
    err = get_envelope(ctx, &as->release_env, &as->release_len, obj, "release",
                       MF_AGENT_RELEASE_MAX, "assignment");
    if (err >= 0)
        err = get_envelope(ctx, &as->assignment_env, &as->assignment_len, obj, "assignment",
                           MAX_ASSIGNMENT_DOC, "assignment");
    if (err >= 0)
        err = parse_deltas(ctx, as, obj);
    if (err >= 0)
        err = parse_fallback(ctx, as, obj);
    if (err == MF_OK)
        err = parse_chunk_list(ctx, as, obj);
    return err;
}

/* install_window {"start_min", "end_min"}: minutes of the UTC day, 0..1439, different. */
static int parse_window(struct mf_ctx *ctx, struct mf_agent_settings *out, const cJSON *doc)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(doc, "install_window");
    const cJSON *v[2] = {cJSON_GetObjectItemCaseSensitive(w, "start_min"),
                         cJSON_GetObjectItemCaseSensitive(w, "end_min")};
    int m[2];

    out->window_start_min = out->window_end_min = -1;
    if (!w || cJSON_IsNull(w))
        return MF_OK;
    for (int i = 0; i < 2; i++) {
        if (!cJSON_IsObject(w) || !cJSON_IsNumber(v[i]) || !(v[i]->valuedouble >= 0) ||
            v[i]->valuedouble > 1439 || v[i]->valuedouble != (double)(int)v[i]->valuedouble)
            return mf_fail(ctx, MF_E_INVALID,
                           "check-in install_window needs start_min and end_min in 0..1439");
        m[i] = (int)v[i]->valuedouble;
    }
    if (m[0] == m[1])
        return mf_fail(ctx, MF_E_INVALID, "check-in install_window is empty (start = end)");
    out->window_start_min = m[0];
    out->window_end_min = m[1];
    return MF_OK;
}

/* poll_interval_s (0..7 days), poll_jitter_pct (0..50) and poll_group (a group name), each
 * optional: an older server sends only the first; then the install window. */
static int parse_poll(struct mf_ctx *ctx, struct mf_agent_settings *out, const cJSON *doc)
{
    const cJSON *poll = cJSON_GetObjectItemCaseSensitive(doc, "poll_interval_s");
    const cJSON *jitter = cJSON_GetObjectItemCaseSensitive(doc, "poll_jitter_pct");
    const cJSON *group = cJSON_GetObjectItemCaseSensitive(doc, "poll_group");

    if (poll && !cJSON_IsNull(poll)) {
        if (!cJSON_IsNumber(poll) || !(poll->valuedouble >= 0) ||
            poll->valuedouble > (double)MAX_POLL_INTERVAL_S)
            return mf_fail(ctx, MF_E_INVALID, "check-in poll_interval_s is not in 0..%ld",
                           MAX_POLL_INTERVAL_S);
        out->interval_s = (long)poll->valuedouble;
    }
    if (jitter && !cJSON_IsNull(jitter)) {
        if (!cJSON_IsNumber(jitter) || !(jitter->valuedouble >= 0) ||
            jitter->valuedouble > MF_AGENT_POLL_JITTER_MAX ||
            jitter->valuedouble != (double)(long)jitter->valuedouble)
            return mf_fail(ctx, MF_E_INVALID, "check-in poll_jitter_pct is not an integer in 0..%d",
                           MF_AGENT_POLL_JITTER_MAX);
        out->jitter_pct = (long)jitter->valuedouble;
    }
    out->by_group = 0;
    if (group && !cJSON_IsNull(group)) {
        if (!cJSON_IsString(group) || !mf_agent__name_ok(group->valuestring))
            return mf_fail(ctx, MF_E_INVALID, "check-in poll_group is not a group name");
        out->by_group = 1;
    }
    return parse_window(ctx, out, doc);
}

static int parse_doc(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                     struct mf_agent_settings *poll_out, struct mf_agent_trust_docs *trust,
                     const cJSON *doc, const char *nonce, const char *const *models,
                     size_t n_models)
{
    const cJSON *echo = cJSON_GetObjectItemCaseSensitive(doc, "nonce");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "assignments");
    const cJSON *item;
    uint32_t seen = 0;
    size_t n = 0;
    int err;

    if (!cJSON_IsObject(doc))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer is not a JSON object");
    if (!cJSON_IsString(echo) || strlen(echo->valuestring) != strlen(nonce) ||
        !mf_ct_memeq(echo->valuestring, nonce, strlen(nonce)))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer does not echo nonce %s", nonce);
    err = parse_poll(ctx, poll_out, doc);
    if (err < 0)
        return err;
    if (!cJSON_IsArray(list))
        return mf_fail(ctx, MF_E_INVALID, "check-in answer has no \"assignments\" array");
    err = parse_trust(ctx, trust, doc);
    if (err < 0)
        return err;
    cJSON_ArrayForEach(item, list)
    {
        char model[MF_AGENT_NAME_MAX + 1];
        int idx;

        /* The name first: an untracked model's assignment is skipped unparsed, so every
         * parsed one has a slot in `out` (one per tracked model, each at most once). */
        if (!cJSON_IsObject(item))
            return mf_fail(ctx, MF_E_INVALID, "check-in assignment is not an object");
        err = mf_agent__json_name(ctx, model, item, "model", "assignment");
        if (err < 0)
            return err;
        idx = tracked_index(model, models, n_models);
        if (idx < 0)
            continue;
        if (seen & (1u << idx))
            return mf_fail(ctx, MF_E_INVALID, "check-in assigns model %s twice", model);
        seen |= 1u << idx;
        err = parse_assignment(ctx, &out[n], item);
        if (err < 0)
            return err;
        n++;
    }
    *n_out = n;
    return MF_OK;
}

int mf_agent__checkin_parse(struct mf_ctx *ctx, struct mf_agent_assignment *out, size_t *n_out,
                            struct mf_agent_settings *poll_out, struct mf_agent_trust_docs *trust,
                            struct cJSON **doc_out, const char *json, size_t len, const char *nonce,
                            const char *const *models, size_t n_models)
{
    cJSON *doc;
    int err;

    *n_out = 0;
    *doc_out = NULL;
    memset(trust, 0, sizeof(*trust));
    if (n_models > MF_AGENT_MAX_MODELS)
        return mf_fail(ctx, MF_E_LIMIT, "%zu models tracked, at most %d", n_models,
                       MF_AGENT_MAX_MODELS);
    /* len is bounded by the HTTP client's response cap. */
    err =
        mf_json__parse_object(&doc, ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, "check-in answer");
    if (err < 0)
        return err;
    err = parse_doc(ctx, out, n_out, poll_out, trust, doc, nonce, models, n_models);
    if (err < 0) {
        cJSON_Delete(doc);
        *n_out = 0;
        memset(trust, 0, sizeof(*trust));
        return err;
    }
    *doc_out = doc;
    return MF_OK;
}

void mf_agent__checkin_drop(struct mf_agent *a)
{
    for (size_t i = 0; i < a->n_assignments; i++) {
        mf_manifest_assignment_free(a->assignments[i].verified);
        a->assignments[i].verified = NULL;
        mf_dynbuf__free(&a->assignments[i].release_kept);
    }
    a->n_assignments = 0;
    cJSON_Delete(a->checkin_doc);
    a->checkin_doc = NULL;
}

int mf_agent__checkin(struct mf_agent *a, size_t *n_out)
{
    uint8_t raw[NONCE_BYTES];
    char *nonce = a->nonce;
    struct mf_agent_trust_docs *trust;
    struct mf_agent_settings poll = {0}; /* a field the answer leaves out: none */
    struct mf_http_response resp;
    struct mf_dynbuf body;
    int err;

    *n_out = 0;
    mf_agent__checkin_drop(a);
    err = a->plat.random(a->plat.payload, raw, sizeof(raw));
    if (err < 0)
        return mf_fail(&a->ctx, err, "platform random source failed");
    mf_hex__encode(nonce, raw, sizeof(raw));
    /* On the heap: 16 root pointers and lengths would crowd the 512-byte stack ceiling. */
    trust = mf_ctx__alloc(&a->ctx, sizeof(*trust));
    if (!trust)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory for the check-in");
    /* 64 KiB of model entries plus, per model, the offload telemetry (8 KiB at most), and the
     * runtime reports of every model within MF_TELEMETRY_CHECKIN_BUDGET: versions that do not
     * fit ride the next check-ins, changed ones first, the least recently sent first. */
    mf_dynbuf__init(&body, &a->ctx.alloc,
                    64 * 1024 + MF_AGENT_MAX_MODELS * 8 * 1024 + MF_TELEMETRY_CHECKIN_BUDGET);
    if (a->telemetry)
        (void)mf_telemetry_checkin_plan(a->telemetry, MF_TELEMETRY_CHECKIN_BUDGET);
    mf_http__response_init(&resp, &a->http);
    err = build_request(a, &body, nonce);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot build the check-in request");
    else
        err = mf_agent__post_json(a, &resp, "/v1/checkin", &body, 1, "check-in");
    if (err >= 0)
        err = mf_agent__checkin_parse(&a->ctx, a->assignments, n_out, &poll, trust, &a->checkin_doc,
                                      (const char *)resp.body.data, resp.body.len, nonce,
                                      a->model_names, a->n_models);
    if (err >= 0) {
        a->n_assignments = *n_out;
        a->poll_interval_s = mf_agent__poll_pick(a, &poll);
        a->window_start_min = poll.window_start_min;
        a->window_end_min = poll.window_end_min;
    }
    mf_dynbuf__free(&body);
    mf_http__response_free(&resp);
    /* Trust documents first: assignments verify against the keys they bring. */
    if (err >= 0)
        err = mf_agent__trust_update(a, trust);
    mf_ctx__free(&a->ctx, trust);
    if (err < 0)
        *n_out = 0;
    return err;
}
