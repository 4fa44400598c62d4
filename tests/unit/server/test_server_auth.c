/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may call what on mf-server end to end: every role x route pair of the routing table
 * denied without the right credential, admin tokens (bad input, listing, revocation), and
 * device credential revocation.
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
                       cmocka_unit_test(test_server_auth__tokens_bad_input),
                       cmocka_unit_test(test_server_auth__device_revocation));
}
