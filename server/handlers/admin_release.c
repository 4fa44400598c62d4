/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PUT /v1/admin/models/<name>/versions/<version>/release: attaches the data team's signed
 * release envelope to an uploaded (staged) version. The server verifies it as a device
 * would, against its current root and keys documents, and checks it describes exactly the
 * stored blob; only then does the version become assignable. A release envelope can be far
 * larger than a JSON request (one hash per chunk), so the body is streamed into its own
 * buffer capped at MF_STORE_ENVELOPE_MAX.
 *
 * A released version is published, not deployed (docs/rollouts.md, "Release lifecycle"):
 * the channel default stays on the promoted release until a rollout of the new one finishes
 * its last wave, or ops promote it by hand with POST .../promote {"force": true}.
 */
#include "handlers/handlers.h"

#include "deltas/delta_worker.h"
#include "rollout/rollout_ctl.h"

#include "common/names.h"
#include "mf/ct.h"
#include "mf_hex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mf_handlers__release_begin(struct mf_httpd_req *r)
{
    const char *cl = mf_httpd__header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n;
    char *end;

    if (!mf_names__valid_id(r->params[0]) || !mf_names__valid_id(r->params[1]))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "model name and version must match [A-Za-z0-9._-]{1,64}");
    if (cl) {
        n = strtoull(cl, &end, 10);
        if (end != cl && *end == '\0' && n > MF_STORE_ENVELOPE_MAX)
            return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
                                         "release envelope of %llu bytes exceeds %u", n,
                                         MF_STORE_ENVELOPE_MAX);
    }
    mf_dynbuf__free(&r->body);
    mf_dynbuf__init(&r->body, &r->ctx.alloc, MF_STORE_ENVELOPE_MAX + 1);
    return MF_OK;
}

int mf_handlers__release_data(struct mf_httpd_req *r, const char *data, size_t len)
{
    int err = mf_dynbuf__append(&r->body, data, len);

    if (err == MF_E_LIMIT) {
        mf_dynbuf__free(&r->body);
        return mf_httpd__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
                                     "release envelope exceeds %u bytes", MF_STORE_ENVELOPE_MAX);
    }
    if (err < 0)
        return mf_fail(&r->ctx, err, "out of memory reading a release envelope");
    return MF_OK;
}

/* The verified release must describe the stored version byte for byte. */
static int check_matches(struct mf_httpd_req *r, const mf_manifest_release *rel,
                         const struct mf_store_version *v)
{
    char sha[MF_SHA256_HEX_LEN + 1];

    mf_hex__encode(sha, rel->sha256, sizeof(rel->sha256));
    if (strcmp(rel->name, v->model) != 0 || strcmp(rel->version, v->version) != 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "release names %s %s, not %s %s",
                                     rel->name, rel->version, v->model, v->version);
    if (!mf_ct_memeq(sha, v->sha256, MF_SHA256_HEX_LEN) || rel->size != v->size)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "release describes sha256 %.16s... (%llu bytes), the "
                                     "uploaded blob is %.16s... (%llu bytes)",
                                     sha, (unsigned long long)rel->size, v->sha256,
                                     (unsigned long long)v->size);
    return MF_OK;
}

int mf_handlers__release_verify(mf_manifest_release **out, char digest[MF_SHA256_HEX_LEN + 1],
                                struct mf_httpd_req *r, mf_trust *t,
                                const struct mf_store_version *v)
{
    int err =
        mf_trust_verify_release(out, t, r->body.data, r->body.len, (uint64_t)mf_handlers__now());

    if (err < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "release refused: %s (%s)",
                                     mf_trust_errmsg(t),
                                     mf_trust_reason_name(mf_trust_last_reason(t)));
    mf_hex__encode(digest, (*out)->digest, sizeof((*out)->digest));
    return check_matches(r, *out, v);
}

/* A verified release of staged version `v`: its chunk list stored (release_chunks.c), then
 * the release attached, and its deltas queued. */
static int publish(struct mf_httpd_req *r, const mf_manifest_release *rel, const char *digest,
                   struct mf_store_version *v)
{
    struct mf_store *s = r->env->store;
    int err = mf_handlers__release_chunks(v->chunks_sha256, r, rel, v);

    if (err < 0 || r->resp)
        return err;
    v->sequence = rel->sequence;
    v->security_floor = rel->security_floor;
    memcpy(v->release_digest, digest, MF_SHA256_HEX_LEN + 1);
    err = s->ops->registry->release_set(s, &r->ctx, v, r->body.data, r->body.len);
    if (err == MF_OK) /* release_set promotes a model's first release: read which */
        err = s->ops->registry->version_get(v, s, &r->ctx, v->model, v->version);
    if (err == MF_E_STATE)
        err = mf_httpd__reply_error(r, MHD_HTTP_CONFLICT, "%s", mf_ctx__errmsg(&r->ctx));
    else if (err == MF_OK)
        err = mf_handlers__reply_version(r, MHD_HTTP_CREATED, v, 1);
    if (err == MF_OK && r->status == MHD_HTTP_CREATED) {
        MF_LOG_INFO(&r->ctx, "released %s/%s sequence %llu floor %llu (%s)", v->model, v->version,
                    (unsigned long long)v->sequence, (unsigned long long)v->security_floor,
                    v->promoted ? "the model's first release: promoted"
                                : "not promoted: a rollout or promote deploys it");
        /* The release is visible now; its deltas follow as the worker makes them. A
         * failed enqueue costs only bandwidth (full downloads), so it does not fail
         * the release. */
        if (mf_delta__enqueue(s, &r->ctx, v->model, v->version) < 0)
            MF_LOG_WARN(&r->ctx, "queueing deltas of %s/%s: %s", v->model, v->version,
                        mf_ctx__errmsg(&r->ctx));
        mf_delta__worker_wake(r->env->deltas);
    }
    return err;
}

static int attach(struct mf_httpd_req *r, mf_trust *t, struct mf_store_version *v)
{
    mf_manifest_release *rel = NULL;
    char digest[MF_SHA256_HEX_LEN + 1];
    int err = mf_handlers__release_verify(&rel, digest, r, t, v);

    if (!rel)
        return err;
    if (err == MF_OK && !r->resp && v->sequence) {
        /* Released already: the same envelope again is idempotent, another one is not. */
        if (mf_ct_memeq(digest, v->release_digest, MF_SHA256_HEX_LEN))
            err = mf_handlers__reply_version(r, MHD_HTTP_OK, v, 1);
        else
            err = mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                        "version '%s' of model '%s' has another release already",
                                        v->version, v->model);
    } else if (err == MF_OK && !r->resp) {
        err = publish(r, rel, digest, v);
    }
    mf_manifest_release_free(rel);
    return err;
}

int mf_handlers__release_trust(mf_trust **out, struct mf_httpd_req *r)
{
    int err = mf_handlers__trust_load(out, r, 1);

    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                     "no trust configured: install root and keys documents first");
    return err;
}

int mf_handlers__release_put(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_version v;
    mf_trust *t = NULL;
    int err;

    err = s->ops->registry->version_get(&v, s, &r->ctx, r->params[0], r->params[1]);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND,
                                     "no uploaded version '%s' of model '%s': upload it first",
                                     r->params[1], r->params[0]);
    if (err < 0)
        return err;
    err = mf_handlers__release_trust(&t, r);
    if (err < 0 || r->resp)
        return err;
    err = attach(r, t, &v);
    mf_trust_free(t);
    return err;
}

/*
 * POST /v1/admin/models/<name>/versions/<version>/promote {"force": true}: ops make a
 * released version the channel default at once, outside any rollout: every device without
 * a rollout, pin or channel version gets it at its next check-in. "force" must be true, so
 * an unproven version is never deployed to the whole fleet by a request that did not say so.
 * An admin action of its own (routes.c marks it) for the audit log.
 */
int mf_handlers__release_promote(struct mf_httpd_req *r)
{
    static const char *const keys[] = {"force", NULL};
    struct mf_store *s = r->env->store;
    const cJSON *force = cJSON_GetObjectItemCaseSensitive(r->json, "force");
    const char *unknown;
    struct mf_store_version v;
    int err = mf_handlers__check_names(r, 2);

    if (err == MF_OK && !r->resp)
        err = mf_handlers__need_model(r, r->params[0]); /* 404 before the body is judged */
    if (err < 0 || r->resp)
        return err;
    if (!cJSON_IsObject(r->json))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "body must be {\"force\": true}");
    unknown = mf_handlers__unknown_member(r->json, keys);
    if (unknown)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "unknown key '%s'", unknown);
    if (!cJSON_IsTrue(force))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'force' must be true: promoting outside a rollout "
                                     "deploys '%s' to every device of '%s' with no canary",
                                     r->params[1], r->params[0]);
    err = mf_rollout__promote(s, &r->ctx, r->params[0], r->params[1]);
    if (err == MF_OK)
        err = s->ops->registry->version_get(&v, s, &r->ctx, r->params[0], r->params[1]);
    if (err < 0)
        return mf_handlers__reply_failure(r, err);
    MF_LOG_WARN(&r->ctx, "promoted %s/%s by hand (--force): the channel default, no canary",
                v.model, v.version);
    return mf_handlers__reply_version(r, MHD_HTTP_OK, &v, 1);
}
