/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trust routes (docs/protocol.md, "Trust"): ops install the offline-signed root and keys
 * documents; the server checks each exactly as a device would (manifests/verify) before
 * storing it, so it can never hand devices a chain they would refuse:
 *   PUT /v1/admin/trust/root  the first root, or root N+1 signed by N's and its own threshold
 *   PUT /v1/admin/trust/keys  a keys document signed by the current root's `keys` role
 *   GET /v1/admin/trust       versions and the director key id
 */
#include "handlers/handlers.h"

#include "director/director.h"
#include "mf/ct.h"

#include <string.h>

/* A trust state holding the store's newest root and, if `need_keys`, keys document. */
int mf_handlers__trust_load(mf_trust **out, struct mf_httpd_req *r, int need_keys)
{
    return mf_store__trust_load(out, r->env->store, &r->ctx, need_keys);
}

/* 400 naming the trust rule a document broke. */
static int reply_refused(struct mf_httpd_req *r, const char *what, const mf_trust *t)
{
    return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s refused: %s (%s)", what,
                                 mf_trust_errmsg(t), mf_trust_reason_name(mf_trust_last_reason(t)));
}

static int reply_stored(struct mf_httpd_req *r, unsigned status, const char *kind, uint64_t version)
{
    cJSON *body = cJSON_CreateObject();

    if (body && (!cJSON_AddStringToObject(body, "kind", kind) ||
                 !cJSON_AddNumberToObject(body, "version", (double)version))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, status, body);
}

/* 1 when the request body is byte for byte the stored document of `kind` at `version`. */
static int same_as_stored(int *same, struct mf_httpd_req *r, int kind, uint64_t version)
{
    struct mf_store *s = r->env->store;
    struct mf_dynbuf have;
    uint64_t hv = 0;
    int err = s->ops->registry->trust_latest(&hv, &have, s, &r->ctx, kind);

    *same = err == MF_OK && hv == version && have.len == r->body.len &&
            mf_ct_memeq(have.data, r->body.data, have.len);
    mf_dynbuf__free(&have);
    return err == MF_E_NOTFOUND ? MF_OK : err;
}

/* Stores a verified document; re-sending the stored one is idempotent (200). */
static int store_doc(struct mf_httpd_req *r, int kind, const char *name, uint64_t version)
{
    struct mf_store *s = r->env->store;
    int same = 0, err = same_as_stored(&same, r, kind, version);

    if (err < 0)
        return err;
    if (same)
        return reply_stored(r, MHD_HTTP_OK, name, version);
    err = s->ops->registry->trust_put(s, &r->ctx, kind, version, r->body.data, r->body.len);
    if (err == MF_E_STATE)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT, "%s version %llu exists already", name,
                                     (unsigned long long)version);
    if (err < 0)
        return err;
    MF_LOG_INFO(&r->ctx, "installed %s version %llu", name, (unsigned long long)version);
    return reply_stored(r, MHD_HTTP_CREATED, name, version);
}

int mf_handlers__trust_root_put(struct mf_httpd_req *r)
{
    uint64_t now = (uint64_t)mf_handlers__now();
    mf_manifest_blob step = {r->body.data, r->body.len};
    mf_trust *t = NULL;
    int err = mf_handlers__trust_load(&t, r, 0);

    if (err == MF_E_NOTFOUND) {
        /* The first root: ops vouch for it as the device image does; it must still be
         * signed by a threshold of its own root keys and unexpired. */
        if (mf_trust_new(&t, NULL, NULL) < 0)
            return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory checking a root");
        err = mf_trust_bootstrap(t, r->body.data, r->body.len, now);
    } else if (err == MF_OK) {
        uint64_t cur = mf_trust_root_version(t);
        int same = 0;

        err = same_as_stored(&same, r, MF_STORE_TRUST_ROOT, cur);
        if (err < 0 || same) {
            mf_trust_free(t);
            /* The stored root sent again is idempotent. */
            return err < 0 ? err : reply_stored(r, MHD_HTTP_OK, "root", cur);
        }
        err = mf_trust_update_root(t, &step, 1, now);
    } else {
        return err;
    }
    if (err < 0) {
        err = reply_refused(r, "root", t);
        mf_trust_free(t);
        return err;
    }
    err = store_doc(r, MF_STORE_TRUST_ROOT, "root", mf_trust_root_version(t));
    mf_trust_free(t);
    return err;
}

int mf_handlers__trust_keys_put(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    mf_trust *t = NULL;
    struct mf_dynbuf have;
    uint64_t hv = 0;
    int err = mf_handlers__trust_load(&t, r, 0);

    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                     "no root installed: PUT /v1/admin/trust/root first");
    if (err < 0)
        return err;
    /* The stored keys document first, so a lower version is refused as a rollback. A
     * stored one the (rotated) root no longer accepts is simply replaced. */
    err = s->ops->registry->trust_latest(&hv, &have, s, &r->ctx, MF_STORE_TRUST_KEYS);
    if (err == MF_OK && mf_trust_update_keys(t, have.data, have.len, MF_TRUST_TIME_UNKNOWN) < 0)
        MF_LOG_WARN(&r->ctx, "stored keys v%llu no longer verify; replacing them",
                    (unsigned long long)hv);
    mf_dynbuf__free(&have);
    if (err < 0 && err != MF_E_NOTFOUND) {
        mf_trust_free(t);
        return err;
    }
    err = mf_trust_update_keys(t, r->body.data, r->body.len, (uint64_t)mf_handlers__now());
    if (err < 0)
        err = reply_refused(r, "keys document", t);
    else
        err = store_doc(r, MF_STORE_TRUST_KEYS, "keys", mf_trust_keys_version(t));
    mf_trust_free(t);
    return err;
}

int mf_handlers__trust_get(struct mf_httpd_req *r)
{
    cJSON *body = cJSON_CreateObject();
    mf_trust *t = NULL;
    uint64_t root = 0, keys = 0;
    int err = mf_handlers__trust_load(&t, r, 1);

    if (err == MF_E_NOTFOUND)
        err = mf_handlers__trust_load(&t, r, 0); /* a root without keys yet */
    if (err < 0 && err != MF_E_NOTFOUND) {
        cJSON_Delete(body);
        return err;
    }
    if (t) {
        root = mf_trust_root_version(t);
        keys = mf_trust_keys_version(t);
    }
    mf_trust_free(t);
    if (body &&
        (!cJSON_AddNumberToObject(body, "root_version", (double)root) ||
         !cJSON_AddNumberToObject(body, "keys_version", (double)keys) ||
         !cJSON_AddStringToObject(body, "director_keyid", mf_director__keyid(r->env->director)))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, MHD_HTTP_OK, body);
}
