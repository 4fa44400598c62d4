/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admin routes that name a device, model, group, version or id answer 404 with a message
 * naming it when it does not exist, instead of succeeding on nothing (issue 17: a pin for
 * cam-9999 said "pinned", an export of "fashoin" exported 0). The table holds every admin
 * route of the routing table whose path takes an id, and the test fails for a route that
 * is missing from it, so a new route has to say what an unknown id does.
 */
#include "mf_test.h"
#include "server_fixture.h"
#include "handlers/handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unknown_case {
    const char *method, *pattern; /* the route, as routes.c spells it */
    const char *path, *body;      /* a request naming something that does not exist */
    const char *names;            /* what the 404's message must name */
};

/* A route with an id that has no "unknown" case, and why (checked to be a real route). */
struct exempt_route {
    const char *method, *pattern, *why;
};

static const struct unknown_case cases[] = {
    {"GET", "/v1/admin/models/{}", "/v1/admin/models/nosuchmodel", NULL, "'nosuchmodel'"},
    {"PUT", "/v1/admin/models/{}/versions/{}/release", "/v1/admin/models/det/versions/v9/release",
     "{}", "'v9'"},
    {"PUT", "/v1/admin/models/{}/versions/{}/variants/{}",
     "/v1/admin/models/det/versions/v9/variants/int8?rank=1", "x", "'v9'"},
    {"PUT", "/v1/admin/models/{}/versions/{}/variants/{}/release",
     "/v1/admin/models/det/versions/v1/variants/nosuchvariant/release", "{}", "'nosuchvariant'"},
    {"GET", "/v1/admin/models/{}/stats", "/v1/admin/models/fashoin/stats", NULL, "'fashoin'"},
    {"GET", "/v1/admin/models/{}/deltas", "/v1/admin/models/nosuchmodel/deltas", NULL,
     "'nosuchmodel'"},
    {"GET", "/v1/admin/models/{}/versions/{}", "/v1/admin/models/det/versions/v9", NULL, "'v9'"},
    {"GET", "/v1/admin/models/{}/versions/{}", "/v1/admin/models/nosuchmodel/versions/v1", NULL,
     "'nosuchmodel'"},
    {"PUT", "/v1/admin/devices/{}/groups", "/v1/admin/devices/cam-9999/groups",
     "{\"groups\":[\"lab\"]}", "'cam-9999'"},
    {"PUT", "/v1/admin/devices/{}/channel", "/v1/admin/devices/cam-9999/channel",
     "{\"channel\":\"beta\"}", "'cam-9999'"},
    {"DELETE", "/v1/admin/devices/{}/credential", "/v1/admin/devices/cam-9999/credential", NULL,
     "'cam-9999'"},
    {"DELETE", "/v1/admin/devices/{}/samples", "/v1/admin/devices/cam-9999/samples", NULL,
     "'cam-9999'"},
    {"PUT", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/device/cam-9999/det", "{\"version\":\"v1\"}",
     "unknown device 'cam-9999'"},
    {"PUT", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/group/nosuchgroup/det",
     "{\"version\":\"v1\"}", "unknown group 'nosuchgroup'"},
    {"PUT", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/device/cam-a/nosuchmodel",
     "{\"version\":\"v1\"}", "unknown model 'nosuchmodel'"},
    {"PUT", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/channel/beta/nosuchmodel",
     "{\"version\":\"v1\"}", "unknown model 'nosuchmodel'"},
    {"PUT", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/device/cam-a/det", "{\"version\":\"v9\"}",
     "'v9'"},
    {"DELETE", "/v1/admin/pins/{}/{}/{}", "/v1/admin/pins/device/cam-9999/det", NULL, "'cam-9999'"},
    {"PUT", "/v1/admin/rollbacks/{}", "/v1/admin/rollbacks/nosuchmodel", "{\"version\":\"v1\"}",
     "unknown model 'nosuchmodel'"},
    {"DELETE", "/v1/admin/rollbacks/{}", "/v1/admin/rollbacks/nosuchmodel", NULL,
     "unknown model 'nosuchmodel'"},
    {"PUT", "/v1/admin/groups/{}/poll", "/v1/admin/groups/nosuchgroup/poll", "{\"interval_s\":60}",
     "unknown group 'nosuchgroup'"},
    {"DELETE", "/v1/admin/groups/{}/poll", "/v1/admin/groups/nosuchgroup/poll", NULL,
     "'nosuchgroup'"},
    {"PUT", "/v1/admin/groups/{}/install-window", "/v1/admin/groups/nosuchgroup/install-window",
     "{\"start\":\"02:00\",\"end\":\"05:00\"}", "unknown group 'nosuchgroup'"},
    {"DELETE", "/v1/admin/groups/{}/install-window", "/v1/admin/groups/nosuchgroup/install-window",
     NULL, "'nosuchgroup'"},
    {"POST", "/v1/admin/models/{}/versions/{}/promote",
     "/v1/admin/models/nosuchmodel/versions/v1/promote", "{\"force\":true}",
     "unknown model 'nosuchmodel'"},
    {"POST", "/v1/admin/models/{}/versions/{}/promote", "/v1/admin/models/det/versions/v9/promote",
     "{\"force\":true}", "'v9'"},
    {"DELETE", "/v1/admin/webhooks/{}", "/v1/admin/webhooks/999999", NULL, "no webhook 999999"},
    {"DELETE", "/v1/admin/tokens/{}", "/v1/admin/tokens/00000000deadbeef", NULL,
     "'00000000deadbeef'"},
    {"PUT", "/v1/admin/offload/calibration/{}/{}", "/v1/admin/offload/calibration/fashoin/v1",
     "{\"method\":\"max_softmax\",\"scores\":[0.5]}", "'fashoin'"},
    {"GET", "/v1/admin/samples", "/v1/admin/samples?model=fashoin", NULL, "'fashoin'"},
    {"GET", "/v1/admin/rollouts/{}", "/v1/admin/rollouts/999999", NULL, "999999"},
    {"GET", "/v1/admin/rollouts/{}/history", "/v1/admin/rollouts/999999/history", NULL, "999999"},
    {"GET", "/v1/admin/models/{}/installed", "/v1/admin/models/fashoin/installed", NULL,
     "'fashoin'"},
    {"GET", "/v1/admin/devices/{}", "/v1/admin/devices/cam-9999", NULL, "'cam-9999'"},
    {"POST", "/v1/admin/rollouts/{}/{}", "/v1/admin/rollouts/999999/pause", "{}", "999999"},
    {"POST", "/v1/admin/rollouts", "/v1/admin/rollouts",
     "{\"model\":\"nosuchmodel\",\"version\":\"v2\"}", "'nosuchmodel'"},
    {"POST", "/v1/admin/distill/{}/runs", "/v1/admin/distill/fashoin/runs", "{}", "fashoin"},
    {"GET", "/v1/admin/distill/runs", "/v1/admin/distill/runs?model=fashoin", NULL, "'fashoin'"},
    {"GET", "/v1/admin/distill/runs/{}", "/v1/admin/distill/runs/999999", NULL, "999999"},
};

static const struct exempt_route exempt[] = {
    {"PUT", "/v1/admin/models/{}/versions/{}", "publishing creates the model and the version"},
};

static int route_has_id(const struct mf_httpd_route *rt)
{
    return strncmp(rt->pattern, "/v1/admin/", 10) == 0 && strstr(rt->pattern, "{}") != NULL;
}

static void test_server_notfound__every_admin_route_with_an_id_is_covered(void **state)
{
    (void)state;
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        const struct mf_httpd_route *rt = &mf_handlers__routes[i];
        int covered = 0;

        if (!route_has_id(rt))
            continue;
        for (size_t j = 0; j < sizeof(cases) / sizeof(cases[0]); j++)
            covered |=
                !strcmp(cases[j].method, rt->method) && !strcmp(cases[j].pattern, rt->pattern);
        for (size_t j = 0; j < sizeof(exempt) / sizeof(exempt[0]); j++)
            covered |=
                !strcmp(exempt[j].method, rt->method) && !strcmp(exempt[j].pattern, rt->pattern);
        if (!covered)
            fail_msg("%s %s takes an id but has no unknown-id case here", rt->method, rt->pattern);
    }
    /* The table names real routes only (a renamed route must not leave a dead row). */
    for (size_t j = 0; j < sizeof(cases) / sizeof(cases[0]); j++) {
        int found = 0;

        for (size_t i = 0; i < mf_handlers__route_count; i++)
            found |= !strcmp(cases[j].method, mf_handlers__routes[i].method) &&
                     !strcmp(cases[j].pattern, mf_handlers__routes[i].pattern);
        if (!found)
            fail_msg("case %s %s is not a route", cases[j].method, cases[j].pattern);
    }
}

static void test_server_notfound__unknown_ids_are_404_naming_them(void **state)
{
    struct srvfx_resp r;

    (void)state;
    srvfx_publish_det();
    /* A group exists once a device is in it (the pin case below needs "lab" to exist). */
    assert_int_equal(srvfx_status_of("PUT", "/v1/admin/devices/cam-a/groups", srvfx.admin,
                                     "{\"groups\":[\"lab\"]}"),
                     204);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        srvfx_call(&r, cases[i].method, cases[i].path, srvfx.admin, cases[i].body);
        if (r.status != 404 || !r.body || !strstr(r.body, cases[i].names))
            fail_msg("%s %s: %ld %s (want 404 naming %s)", cases[i].method, cases[i].path, r.status,
                     r.body ? r.body : "", cases[i].names);
        free(r.body);
    }
    /* Nothing was written by the refused requests. */
    srvfx_call(&r, "GET", "/v1/admin/pins", srvfx.admin, NULL);
    assert_string_equal(r.body, "{\"pins\":[]}");
    free(r.body);
    srvfx_call(&r, "GET", "/v1/admin/groups", srvfx.admin, NULL);
    assert_null(strstr(r.body, "cam-9999"));
    free(r.body);
}

/* The same routes with ids that exist succeed: the checks refuse only what is unknown. */
static void test_server_notfound__known_ids_still_work(void **state)
{
    char sha[65], header[96];
    static const struct srvfx_expect known[] = {
        {"GET", "/v1/admin/models/det", NULL, 200},
        {"GET", "/v1/admin/models/det/stats", NULL, 200},
        {"GET", "/v1/admin/samples?model=det", NULL, 200},
        {"GET", "/v1/admin/distill/runs?model=det", NULL, 200},
        {"PUT", "/v1/admin/pins/device/cam-a/det", "{\"version\":\"v1\"}", 200},
        {"DELETE", "/v1/admin/pins/device/cam-a/det", NULL, 204},
        {"PUT", "/v1/admin/pins/group/lab/det", "{\"version\":\"v1\"}", 200},
        {"DELETE", "/v1/admin/pins/group/lab/det", NULL, 204},
        {"PUT", "/v1/admin/pins/channel/new-channel/det", "{\"version\":\"v1\"}", 200},
        {"DELETE", "/v1/admin/pins/channel/new-channel/det", NULL, 204},
        {"PUT", "/v1/admin/offload/calibration/det/v1",
         "{\"method\":\"max_softmax\","
         "\"scores\":[0.5]}",
         204},
        {"DELETE", "/v1/admin/devices/cam-a/samples", NULL, 200},
    };
    struct srvfx_resp r;

    (void)state;
    srvfx_publish_det();
    srvfx_expect_statuses(known, sizeof(known) / sizeof(known[0]), srvfx.admin);
    /* A second (staged) model, so that GET /v1/admin/models/det is seen to leave it out. */
    srvfx_sha256_hex(sha, "other", 5);
    (void)snprintf(header, sizeof(header), "X-MF-Sha256: %s", sha);
    srvfx_call_port(&r, srvfx.port, "PUT", "/v1/admin/models/other/versions/o1", srvfx.admin,
                    "other", 5, header);
    assert_int_equal(r.status, 201);
    free(r.body);
    srvfx_call(&r, "GET", "/v1/admin/models", srvfx.admin, NULL);
    assert_non_null(strstr(r.body, "\"name\":\"other\""));
    free(r.body);
    assert_int_equal(srvfx_call(&r, "GET", "/v1/admin/models/det", srvfx.admin, NULL), 200);
    /* That model only, with its versions. */
    assert_non_null(strstr(r.body, "\"name\":\"det\""));
    assert_non_null(strstr(r.body, "\"version\":\"v2\""));
    assert_null(strstr(r.body, "other"));
    free(r.body);
}

int main(void)
{
    return MF_TEST_RUN(
        "tests", srvfx_group_setup, srvfx_group_teardown,
        cmocka_unit_test(test_server_notfound__every_admin_route_with_an_id_is_covered),
        cmocka_unit_test(test_server_notfound__unknown_ids_are_404_naming_them),
        cmocka_unit_test(test_server_notfound__known_ids_still_work));
}
