/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may call what on mf-server end to end: every role x route pair of the routing table
 * denied without the right credential, every admin action in the audit log with the token
 * that asked, admin tokens (bad input, listing, revocation), and device credential
 * revocation.
 */
#include "mf_test.h"
#include "server_fixture.h"
#include "handlers/handlers.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Revokes the token "gone" by its listed id. */
static void revoke_gone(void)
{
    struct srvfx_resp r;
    cJSON *root, *t;
    char path[96] = "";

    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/tokens", srvfx.admin, NULL), 200);
    assert_null(strstr(r.body, "mfa_")); /* never a secret in a listing */
    root = cJSON_Parse(r.body);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(root, "tokens"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")), "gone") == 0)
            (void)snprintf(path, sizeof(path), "/v1/admin/tokens/%s",
                           cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")));
    }
    cJSON_Delete(root);
    free(r.body);
    assert_true(path[0] != '\0');
    assert_int_equal(srvfx_status_of("DELETE", path, srvfx.admin, NULL), 204);
    assert_int_equal(srvfx_status_of("DELETE", path, srvfx.admin, NULL), 404);
}

/* A concrete path for a route pattern; names that exist nowhere, so nothing changes. */
static void concrete(char *out, size_t cap, const char *pattern)
{
    size_t n = 0;

    for (const char *p = pattern; *p && n + 70 < cap;) {
        if (strncmp(p, "{*}", 3) == 0) {
            memset(out + n, 'e', 64);
            n += 64;
            p += 3;
        } else if (strncmp(p, "{}", 2) == 0) {
            memcpy(out + n, "zz", 2);
            n += 2;
            p += 2;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
}

static void test_server_auth__every_role_route_pair_is_checked(void **state)
{
    /* The credentials a request may carry, and the role bit each holds (0: none). */
    const struct {
        const char *name, *token;
        int is_device, role;
    } creds[] = {
        {"none", NULL, 0, 0},
        {"garbage", "mfa_nonsense", 0, 0},
        {"enrollment token", srvfx.enroll, 0, 0},
        {"revoked admin token", srvfx.revoked, 0, 0},
        {"device credential", srvfx.device, 1, 0},
        {"ops token", srvfx.ops, 0, MF_ROLE_OPS},
        {"data token", srvfx.datat, 0, MF_ROLE_DATA},
        {"admin token", srvfx.admin, 0, MF_ROLE_ADMIN},
    };
    const char *no_store = "X-MF-Sha256: "
                           "0000000000000000000000000000000000000000000000000000000000000000";
    int checked = 0;

    (void)state;
    revoke_gone();
    /* The walk is over the table the server routes with: a new route is in it. */
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        const struct mf_httpd_route *rt = &mf_handlers__routes[i];
        char path[256];

        concrete(path, sizeof(path), rt->pattern);
        for (size_t k = 0; k < sizeof(creds) / sizeof(creds[0]); k++) {
            int allowed;
            struct srvfx_resp r;

            switch (rt->auth) {
            case MF_HTTPD_AUTH_NONE:
                allowed = 1;
                break;
            case MF_HTTPD_AUTH_DEVICE:
                allowed = creds[k].is_device;
                break;
            case MF_HTTPD_AUTH_ADMIN:
                allowed = (rt->roles & (unsigned)creds[k].role) != 0;
                break;
            case MF_HTTPD_AUTH_DEVICE_OR_ADMIN:
            default:
                allowed = creds[k].is_device || (rt->roles & (unsigned)creds[k].role) != 0;
                break;
            }
            /* A mismatching X-MF-Sha256 keeps an allowed upload from storing anything. */
            srvfx_call_port(&r, srvfx.port, rt->method, path, creds[k].token, NULL, 0, no_store);
            if (!allowed && r.status != 401 && r.status != 403)
                fail_msg("%s %s with %s: %ld, want 401/403", rt->method, path, creds[k].name,
                         r.status);
            if (!allowed && creds[k].role && rt->auth != MF_HTTPD_AUTH_DEVICE && r.status != 403)
                fail_msg("%s %s with %s: %ld, want 403", rt->method, path, creds[k].name, r.status);
            if (allowed && (r.status == 401 || r.status == 403))
                fail_msg("%s %s with %s: %ld, want it allowed", rt->method, path, creds[k].name,
                         r.status);
            free(r.body);
            checked++;
        }
    }
    assert_true(checked >= 8 * 20);
    /* Nothing above changed the registry. */
    {
        struct srvfx_resp r;

        assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/models", srvfx.admin, NULL), 200);
        assert_string_equal(r.body, "{\"models\":[]}");
        free(r.body);
    }
}

/* The newest audit row's fields (the admin token reads them). */
struct audit_row {
    char action[128], actor[65], token_id[17], target[256];
    long status, seq;
};

static void newest_audit(struct audit_row *out)
{
    struct srvfx_resp r;
    cJSON *root, *row;

    memset(out, 0, sizeof(*out));
    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/audit?limit=1", srvfx.admin, NULL), 200);
    root = cJSON_Parse(r.body);
    row = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "audit"), 0);
    if (row) {
        (void)snprintf(out->action, sizeof(out->action), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(row, "action")));
        (void)snprintf(out->actor, sizeof(out->actor), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(row, "actor")));
        (void)snprintf(out->token_id, sizeof(out->token_id), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(row, "token_id")));
        (void)snprintf(out->target, sizeof(out->target), "%s",
                       cJSON_GetStringValue(cJSON_GetObjectItem(row, "target")));
        out->status = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(row, "status"));
        out->seq = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(row, "seq"));
    }
    cJSON_Delete(root);
    free(r.body);
}

/* The listed id of the admin token named `name`. */
static void token_id_of(char id[17], const char *name)
{
    struct srvfx_resp r;
    cJSON *root, *t;

    id[0] = '\0';
    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/tokens", srvfx.admin, NULL), 200);
    root = cJSON_Parse(r.body);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(root, "tokens"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")), name) == 0)
            (void)snprintf(id, 17, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")));
    }
    cJSON_Delete(root);
    free(r.body);
    assert_int_equal(strlen(id), 16);
}

static void expect_audit(const char *what, const char *action, const char *actor,
                         const char *token_id, long status)
{
    struct audit_row a;

    newest_audit(&a);
    if (strcmp(a.action, action) != 0 || strcmp(a.actor, actor) != 0 ||
        strcmp(a.token_id, token_id) != 0 || a.status != status)
        fail_msg("%s: newest audit row is \"%s\" by '%s' (%s) status %ld, want \"%s\" by '%s'"
                 " (%s) status %ld",
                 what, a.action, a.actor, a.token_id, a.status, action, actor, token_id, status);
}

static void test_server_auth__every_admin_action_audited(void **state)
{
    const char *no_store = "X-MF-Sha256: "
                           "0000000000000000000000000000000000000000000000000000000000000000";
    char alice[17], bob[17], root[17], action[160];
    struct audit_row before, after;
    int audited = 0;

    (void)state;
    token_id_of(alice, "alice");
    token_id_of(bob, "bob");
    token_id_of(root, ""); /* the one init made has no name */
    /* The walk is over the table the server routes with: a new admin route is in it, and
     * every one that changes something must leave a row naming the token that asked. */
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        const struct mf_httpd_route *rt = &mf_handlers__routes[i];
        /* A token the route allows, so the handler runs and its answer is recorded. */
        int who = (rt->roles & MF_ROLE_OPS) ? 0 : (rt->roles & MF_ROLE_DATA) ? 1 : 2;
        const char *tokens[] = {srvfx.ops, srvfx.datat, srvfx.admin};
        const char *names[] = {"alice", "bob", ""};
        const char *ids[] = {alice, bob, root};
        char path[256];
        struct srvfx_resp r;

        if (!mf_httpd__audited(rt, rt->method))
            continue;
        assert_int_equal(rt->auth, MF_HTTPD_AUTH_ADMIN);
        concrete(path, sizeof(path), rt->pattern);
        srvfx_call_port(&r, srvfx.port, rt->method, path, tokens[who], NULL, 0, no_store);
        free(r.body);
        if (r.status == 401 || r.status == 403)
            fail_msg("%s %s: %ld with an allowed token", rt->method, path, r.status);
        (void)snprintf(action, sizeof(action), "%s %s", rt->method, rt->pattern);
        expect_audit(path, action, names[who], ids[who], r.status);
        audited++;
    }
    assert_true(audited >= 19);
    /* A refused request with a valid token is an action too: the 403 names the token. */
    assert_int_equal(srvfx_status_of("DELETE", "/v1/admin/rollbacks/zz", srvfx.datat, NULL), 403);
    expect_audit("403", "DELETE /v1/admin/rollbacks/{}", "bob", bob, 403);
    newest_audit(&before);
    assert_string_equal(before.target, "zz");
    /* One without a token leaves no row (anyone could flood the bounded log with them). */
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/pins/device/zz/zz", NULL, "{}"), 401);
    newest_audit(&after);
    assert_int_equal(after.seq, before.seq);
    /* Reads change nothing and leave no row. */
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/pins", srvfx.ops, NULL), 200);
    newest_audit(&after);
    assert_int_equal(after.seq, before.seq);
}

static void test_server_auth__tokens_bad_input(void **state)
{
    /* An unknown role, a name with a path in it, cut JSON, an id not hex, an id of nothing. */
    static const struct srvfx_expect bad[] = {
        {"POST", "/v1/admin/tokens", "{\"role\":\"root\",\"name\":\"x\"}", 400},
        {"POST", "/v1/admin/tokens", "{\"role\":\"ops\",\"name\":\"../x\"}", 400},
        {"POST", "/v1/admin/tokens", "{\"role\":", 400},
        {"DELETE", "/v1/admin/tokens/nothex", NULL, 400},
        {"DELETE", "/v1/admin/tokens/0123456789abcdef", NULL, 404},
    };

    (void)state;
    srvfx_expect_statuses(bad, sizeof(bad) / sizeof(bad[0]), srvfx.admin);
    /* The ops token still works: none of that revoked anything. */
    assert_int_equal(srvfx_status_of("GET", "/v1/admin/pins", srvfx.ops, NULL), 200);
}

static void test_server_auth__device_revocation(void **state)
{
    char cred[MF_TOKEN_LEN + 1];
    const char *body = "{\"nonce\":\"" NONCE "\",\"models\":[]}";

    (void)state;
    srvfx_enroll(cred, "cam-r");
    assert_int_equal(srvfx_status_of("POST", "/v1/checkin", cred, body), 200);
    assert_int_equal(
        srvfx_status_of("DELETE", "/v1/admin/devices/cam-r/credential", srvfx.ops, NULL), 204);
    assert_int_equal(srvfx_status_of("POST", "/v1/checkin", cred, body), 401);
    assert_int_equal(
        srvfx_status_of("DELETE", "/v1/admin/devices/nosuch/credential", srvfx.ops, NULL), 404);
    /* The device comes back only through enrolment, with a new credential. */
    srvfx_enroll(cred, "cam-r");
    assert_int_equal(srvfx_status_of("POST", "/v1/checkin", cred, body), 200);
}

int main(void)
{
    return MF_TEST_RUN("tests", srvfx_group_setup, srvfx_group_teardown,
                       cmocka_unit_test(test_server_auth__every_role_route_pair_is_checked),
                       cmocka_unit_test(test_server_auth__every_admin_action_audited),
                       cmocka_unit_test(test_server_auth__tokens_bad_input),
                       cmocka_unit_test(test_server_auth__device_revocation));
}
