/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admin tokens (role admin): create one with a role, list them (never the secret: the
 * store keeps only its SHA-256; the id is the hex of that hash's first 8 bytes), revoke by
 * id. The plaintext token appears once, in the 201 answer to its creation.
 */
#include "handlers/handlers.h"

#include "common/token.h"
#include "common/names.h"
#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

static int add_token(void *payload, const struct mf_store_token *t)
{
    cJSON *o = mf_handlers__add_row(payload);

    if (!o)
        return MF_E_NOMEM;
    if (!cJSON_AddStringToObject(o, "id", t->id) || !cJSON_AddStringToObject(o, "name", t->name) ||
        !cJSON_AddStringToObject(o, "role", mf_store__role_name(t->role)) ||
        !cJSON_AddNumberToObject(o, "created_at", (double)t->created_at) ||
        !cJSON_AddBoolToObject(o, "revoked", t->revoked))
        return MF_E_NOMEM;
    return MF_OK;
}

MF_HANDLERS_LISTING(mf_handlers__tokens_list, "tokens", auth, admin_tokens_list, add_token)

int mf_handlers__token_create(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "role"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, "name"));
    char token[MF_TOKEN_LEN + 1];
    struct mf_store_token t = {.created_at = mf_handlers__now()};
    uint8_t hash[MF_SHA256_LEN];
    cJSON *body;
    int err;

    t.role = mf_store__role_of(role);
    if (!t.role)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'role' must be \"ops\", \"data\" or \"admin\"");
    if (!name || !mf_names__valid_id(name))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field 'name' must match [A-Za-z0-9._-]{1,64}");
    err = mf_token__generate(token, &r->ctx, MF_TOKEN_ADMIN);
    if (err < 0)
        return err;
    mf_token__hash(hash, token, MF_TOKEN_LEN);
    err = s->ops->auth->admin_token_insert(s, &r->ctx, hash, t.role, name, t.created_at);
    mf_hex__encode(t.id, hash, MF_STORE_TOKEN_ID_LEN / 2);
    mf_secure_zero(hash, sizeof(hash));
    (void)snprintf(t.name, sizeof(t.name), "%s", name);
    body = err == MF_OK ? cJSON_CreateArray() : NULL;
    if (err == MF_OK && (!body || add_token(body, &t) < 0 ||
                         !cJSON_AddStringToObject(cJSON_GetArrayItem(body, 0), "token", token)))
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a new token");
    mf_secure_zero(token, sizeof(token));
    if (err < 0) {
        cJSON_Delete(body);
        return err;
    }
    MF_LOG_INFO(&r->ctx, "created %s token %s (%s)", mf_store__role_name(t.role), t.id, t.name);
    /* cJSON keeps its own copy of the token text; it is freed with the reply. */
    return mf_handlers__reply_row(r, MHD_HTTP_CREATED, body, MF_OK, "a new token");
}

int mf_handlers__token_revoke(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    const char *id = r->params[0];
    char done[64];
    int err;

    if (strlen(id) != MF_STORE_TOKEN_ID_LEN || strspn(id, "0123456789abcdef") != strlen(id))
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "token id '%.20s' is not 16 lower-case hex digits", id);
    err = s->ops->auth->admin_token_revoke(s, &r->ctx, id);
    (void)snprintf(done, sizeof(done), "revoked admin token %s", id);
    return mf_handlers__reply_changed(r, err, done);
}
