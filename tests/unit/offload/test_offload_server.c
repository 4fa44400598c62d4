/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload routes of the real mf-server (in-process, 127.0.0.1, ephemeral port) with a
 * KServe teacher played by the fake Open Inference Protocol server: a sync ask answered by
 * the teacher and stored labelled; a slow teacher answered with 503 inside the device's
 * deadline; a down teacher failing fast; a batch stored once when sent twice, also after a
 * request cut off mid-body; limits and malformed samples; the labelling job picking up
 * what waited while the teacher was down; check-in telemetry in and the policy out; export
 * and deletion by device through the admin routes.
 */
#define _GNU_SOURCE
#include "mf_test.h"
#include "kit_fs.h"
#include "teacher_fixture.h"
#include "offload_e2e_fixture.h"
#include "offload_server_fixture.h"

#include "app/server.h"
#include "common/token.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct fixture {
    struct offload_server_fx s;
    struct teacher_fake teacher;
};

static struct fixture fx;
static const float probs3[3] = {0.1f, 0.7f, 0.2f};

struct reply {
    long status;
    char body[1 << 20];
    size_t len;
};

static struct reply rep;

/* One request; `auth` is the bearer token or NULL. Returns the status. */
static long http(const char *method, const char *path, const char *auth, const char *body)
{
    rep.status = e2e_http(rep.body, sizeof(rep.body), fx.s.url, method, path, auth, body);
    rep.len = strlen(rep.body);
    if (rep.status < 0)
        fail_msg("%s %s: no answer", method, path);
    assert_true(rep.len < sizeof(rep.body) - 1); /* the whole answer, not a cut one */
    return rep.status;
}

static int setup(void **state)
{
    char config[1024];

    (void)state;
    memset(&fx, 0, sizeof(fx));
    teacher_fake_start(&fx.teacher, probs3, 3);
    (void)snprintf(
        config, sizeof(config),
        "{\"retention_days\": 30, \"models\": {\"digits\": {"
        "\"teacher\": {\"connector\": \"kserve\", \"url\": \"http://127.0.0.1:%u\","
        " \"name\": \"teach\", \"version\": \"t-1\", \"timeout_ms\": 2000,"
        " \"breaker_failures\": 2, \"breaker_open_ms\": 200},"
        "\"policy\": {\"enabled\": true, \"method\": \"max_softmax\", \"mode\": \"sync\","
        " \"target_rate\": 0.1, \"deadline_ms\": 250}}}}",
        fx.teacher.http.port);
    offload_server_fx_start(&fx.s, "mf-offsrv", config, "cam-1");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    offload_server_fx_stop(&fx.s);
    teacher_fake_stop(&fx.teacher);
    return 0;
}

/* A sample object; `input` is base64. */
static void sample_json(char *out, size_t size, int i, const char *kind)
{
    (void)snprintf(out, size,
                   "{\"id\":\"%032x\",\"kind\":\"%s\",\"model\":\"digits\","
                   "\"model_version\":\"v3\",\"method\":\"max_softmax\",\"score\":0.41,"
                   "\"created_at\":1764500000,\"output_kind\":\"logits\","
                   "\"output\":[1.0,0.6,-1.0],\"input\":\"AAEC%04d\"}",
                   i, kind, i);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int json_int(const char *key)
{
    cJSON *j = cJSON_Parse(rep.body);
    int v = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, key));

    cJSON_Delete(j);
    return v;
}

/* Samples the export route returns for ?model=digits&<extra>. */
static int exported(const char *extra)
{
    char path[256];
    cJSON *j;
    int n;

    (void)snprintf(path, sizeof(path), "/v1/admin/samples?model=digits%s", extra);
    assert_int_equal(http("GET", path, fx.s.admin, NULL), 200);
    j = cJSON_Parse(rep.body);
    n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "samples"));
    cJSON_Delete(j);
    return n;
}

static void test_offload_server__ask_answered_and_stored(void **state)
{
    char smp[512], body[1024];
    cJSON *j, *out;

    (void)state;
    sample_json(smp, sizeof(smp), 1, "hard");
    (void)snprintf(body, sizeof(body),
                   "{\"request_id\":\"%032x\",\"deadline_ms\":1000,\"sample\":%s}", 1, smp);
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, body), 200);
    j = cJSON_Parse(rep.body);
    assert_string_equal(cJSON_GetObjectItem(j, "request_id")->valuestring,
                        "00000000000000000000000000000001");
    assert_string_equal(cJSON_GetObjectItem(j, "teacher_version")->valuestring, "k-3");
    out = cJSON_GetObjectItem(j, "output");
    assert_int_equal(cJSON_GetArraySize(out), 3);
    assert_true(cJSON_GetArrayItem(out, 1)->valuedouble > 0.69);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "stored")));
    cJSON_Delete(j);
    assert_non_null(strstr(mf_kit_http_request(&fx.teacher.http, -1)->body,
                           "\"data\":[0,1,2,")); /* "AAEC" = 00 01 02 */
    /* Stored with the teacher's label; a labelled-and-sure filter finds it. */
    assert_int_equal(exported("&min_teacher_confidence=0.6"), 1);
    assert_non_null(strstr(rep.body, "\"teacher_version\":\"k-3\""));
    assert_non_null(strstr(rep.body, "\"device_id\":\"cam-1\""));
    /* A target rate and no scores of v3 yet: no threshold to export (devices derive one). */
    assert_non_null(strstr(rep.body, "\"threshold\":null"));
    /* A misspelt filter is refused, not ignored (it would export more than asked). */
    assert_int_equal(http("GET", "/v1/admin/samples?model=digits&kinds=hard", fx.s.admin, NULL),
                     400);
    assert_non_null(strstr(rep.body, "unknown query key 'kinds'"));
    /* Without a device credential: 401; request_id not the sample's: 400. */
    assert_int_equal(http("POST", "/v1/offload/ask", NULL, body), 401);
    (void)snprintf(body, sizeof(body),
                   "{\"request_id\":\"%032x\",\"deadline_ms\":1000,\"sample\":%s}", 9, smp);
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, body), 400);
}

static void test_offload_server__slow_and_down_teacher(void **state)
{
    char smp[512], body[1024];
    double t0;

    (void)state;
    teacher_fake_set(&fx.teacher, TEACHER_FAKE_SLOW, 1500);
    sample_json(smp, sizeof(smp), 2, "hard");
    (void)snprintf(body, sizeof(body),
                   "{\"request_id\":\"%032x\",\"deadline_ms\":250,\"sample\":%s}", 2, smp);
    t0 = now_ms();
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, body), 503);
    assert_true(now_ms() - t0 < 250); /* the server gives up inside the device's deadline */
    /* Down: two failures open the breaker, the next ask fails at once. */
    teacher_fake_set(&fx.teacher, TEACHER_FAKE_FAIL, 0);
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, body), 503);
    t0 = now_ms();
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, body), 503);
    assert_non_null(strstr(rep.body, "circuit open"));
    assert_true(now_ms() - t0 < 100);
    /* Every asked sample was stored (once), unlabelled: it waits for the label job. */
    assert_int_equal(exported(""), 1);
    assert_non_null(strstr(rep.body, "\"teacher_version\":null"));
    /* The teacher comes back: the labelling job labels it (bounded wait, 100 x 100 ms). */
    teacher_fake_set(&fx.teacher, TEACHER_FAKE_OK, 0);
    for (int i = 0; i < 100 && exported("&min_teacher_confidence=0.5") == 0; i++)
        usleep(100 * 1000);
    assert_int_equal(exported("&min_teacher_confidence=0.5"), 1);
}

static void test_offload_server__batch_stored_once(void **state)
{
    char smp[3][512], body[4096];
    const char *bid = "abcdefabcdefabcdefabcdefabcdef01";
    char reply1[256];
    int fd;
    struct sockaddr_in a;
    char req[512];

    (void)state;
    for (int i = 0; i < 3; i++)
        sample_json(smp[i], sizeof(smp[i]), 10 + i, i == 2 ? "audit" : "hard");
    (void)snprintf(body, sizeof(body),
                   "{\"batch_id\":\"%s\",\"model\":\"digits\",\"samples\":[%s,%s,%s]}", bid, smp[0],
                   smp[1], smp[2]);
    /* A request cut off mid-body stores nothing. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(fx.s.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    (void)snprintf(req, sizeof(req),
                   "POST /v1/offload/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                   fx.s.cred, strlen(body));
    assert_true(write(fd, req, strlen(req)) > 0);
    assert_true(write(fd, body, strlen(body) / 2) > 0);
    close(fd);
    usleep(200 * 1000);
    assert_int_equal(exported(""), 0);
    /* Sent twice: stored once, the same answer both times. */
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred, body), 200);
    assert_int_equal(json_int("accepted"), 3);
    assert_int_equal(json_int("duplicates"), 0);
    assert_true(rep.len < sizeof(reply1));
    memcpy(reply1, rep.body, rep.len + 1);
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred, body), 200);
    assert_string_equal(rep.body, reply1);
    assert_int_equal(exported(""), 3);
    assert_int_equal(exported("&kind=audit"), 1);
    /* A new batch id repeating a stored sample: that one is a duplicate. */
    (void)snprintf(body, sizeof(body),
                   "{\"batch_id\":\"%032x\",\"model\":\"digits\",\"samples\":[%s]}", 77, smp[0]);
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred, body), 200);
    assert_int_equal(json_int("accepted"), 0);
    assert_int_equal(json_int("duplicates"), 1);
    /* Malformed: another model than the batch's, a bad id, no samples. */
    (void)snprintf(body, sizeof(body),
                   "{\"batch_id\":\"%032x\",\"model\":\"faces\",\"samples\":[%s]}", 78, smp[0]);
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred, body), 400);
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred,
                          "{\"batch_id\":\"XYZ\",\"model\":\"digits\",\"samples\":[]}"),
                     400);
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred,
                          "{\"batch_id\":\"00000000000000000000000000000079\",\"model\":"
                          "\"digits\",\"samples\":[]}"),
                     400);
    assert_int_equal(exported(""), 3);
    /* Deletion by device (privacy): every sample of cam-1 goes. */
    assert_int_equal(http("DELETE", "/v1/admin/devices/cam-1/samples", fx.s.admin, NULL), 200);
    assert_int_equal(json_int("deleted"), 3);
    assert_int_equal(exported(""), 0);
}

static void test_offload_server__body_limit(void **state)
{
    size_t n = 1100 * 1024;
    char *body = malloc(n + 1);

    (void)state;
    assert_non_null(body);
    memset(body, ' ', n);
    body[0] = '{';
    body[n - 1] = '}';
    body[n] = '\0';
    assert_int_equal(http("POST", "/v1/offload/batch", fx.s.cred, body), 413);
    free(body);
}

static void test_offload_server__checkin_policy_from_fleet_scores(void **state)
{
    char body[4096], smp[512], ask[1024];
    size_t n = 0;
    cJSON *j, *p;

    (void)state;
    /* 1000 scores spread evenly over [0, 1): the 10% target rate's threshold is 0.1. */
    n += (size_t)snprintf(body + n, sizeof(body) - n,
                          "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":"
                          "[{\"name\":\"digits\",\"version\":\"v3\",\"sha256\":\"%064d\"}],"
                          "\"offload\":[{\"policy_version\":1,\"model\":\"digits\","
                          "\"method\":\"max_softmax\",\"versions\":[{\"model_version\":\"v3\","
                          "\"asked\":1000,\"uncertain\":120,\"hist_bins\":100,\"hist\":[",
                          0);
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%s10", i ? "," : "");
    (void)snprintf(body + n, sizeof(body) - n, "]}]}]}");
    assert_int_equal(http("POST", "/v1/checkin", fx.s.cred, body), 200);
    j = cJSON_Parse(rep.body);
    p = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "offload"), "digits");
    assert_non_null(p);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p, "enabled")));
    assert_true(fabs(cJSON_GetObjectItem(p, "threshold")->valuedouble - 0.1) < 1e-3);
    assert_string_equal(cJSON_GetObjectItem(p, "model_version")->valuestring, "v3");
    assert_true(cJSON_GetObjectItem(p, "target_rate")->valuedouble == 0.1);
    cJSON_Delete(j);
    /* A sample of v3 exports with the threshold devices of v3 get. */
    sample_json(smp, sizeof(smp), 2, "hard");
    (void)snprintf(ask, sizeof(ask),
                   "{\"request_id\":\"%032x\",\"deadline_ms\":1000,\"sample\":%s}", 2, smp);
    assert_int_equal(http("POST", "/v1/offload/ask", fx.s.cred, ask), 200);
    assert_int_equal(exported(""), 1);
    assert_non_null(strstr(rep.body, "\"threshold\":0.1}"));
    /* Ops see target vs realised (120 of 1000 asked). */
    assert_int_equal(http("GET", "/v1/admin/offload/rates", fx.s.admin, NULL), 200);
    assert_non_null(strstr(rep.body, "\"realised_rate\":0.12"));
    assert_non_null(strstr(rep.body, "\"target_rate\":0.1"));
    /* The histogram itself (Model health's confidence plot), and one model's rows alone. */
    assert_non_null(strstr(rep.body, "\"bins\":[10,10,10,"));
    assert_int_equal(http("GET", "/v1/admin/offload/rates?model=digits", fx.s.admin, NULL), 200);
    assert_non_null(strstr(rep.body, "\"model\":\"digits\""));
    assert_int_equal(http("GET", "/v1/admin/offload/rates?model=other", fx.s.admin, NULL), 200);
    assert_string_equal(rep.body, "{\"rates\":[]}");
    assert_int_equal(http("GET", "/v1/admin/offload/rates?modle=digits", fx.s.admin, NULL), 400);
    assert_int_equal(http("GET", "/v1/admin/offload/rates?model=b@d", fx.s.admin, NULL), 400);
    /* Malformed telemetry never fails the check-in; it is skipped. */
    assert_int_equal(http("POST", "/v1/checkin", fx.s.cred,
                          "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":[],"
                          "\"offload\":[{\"model\":\"digits\",\"versions\":[7]}]}"),
                     200);
    /* A calibration set for a version the fleet has not reported sets its threshold. */
    assert_int_equal(http("PUT", "/v1/admin/offload/calibration/digits/v4", fx.s.admin,
                          "{\"method\":\"max_softmax\",\"scores\":[0.05,0.05,0.05,0.5,0.5,0.5,"
                          "0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]}"),
                     204);
    assert_int_equal(http("PUT", "/v1/admin/offload/calibration/digits/v4", fx.s.admin,
                          "{\"method\":\"max_softmax\",\"scores\":[2]}"),
                     400);
    assert_int_equal(http("POST", "/v1/checkin", fx.s.cred,
                          "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":"
                          "[{\"name\":\"digits\",\"version\":\"v4\",\"sha256\":"
                          "\"0000000000000000000000000000000000000000000000000000000000000000\"}"
                          "]}"),
                     200);
    j = cJSON_Parse(rep.body);
    p = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "offload"), "digits");
    /* 10% of 15 scores is 1.5 of the 3 in bin [0.05, 0.06): linear within it, 0.055. */
    assert_true(fabs(cJSON_GetObjectItem(p, "threshold")->valuedouble - 0.055) < 1e-3);
    assert_string_equal(cJSON_GetObjectItem(p, "model_version")->valuestring, "v4");
    cJSON_Delete(j);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_offload_server__ask_answered_and_stored),
        T(test_offload_server__slow_and_down_teacher),
        T(test_offload_server__batch_stored_once),
        T(test_offload_server__body_limit),
        T(test_offload_server__checkin_policy_from_fleet_scores),
    };
#undef T
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests_name("offload_server", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
