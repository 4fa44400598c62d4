/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end offload test helpers (see offload_e2e_fixture.h). */
#include "offload_e2e_fixture.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

void e2e_input(uint8_t out[E2E_INPUT_LEN], uint32_t variant)
{
    for (size_t i = 0; i < E2E_INPUT_LEN; i++)
        out[i] = (uint8_t)(i * 31u + variant * 7u);
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(variant >> (8 * i));
}

void e2e_logits(float out[E2E_CLASSES], uint32_t variant)
{
    out[0] = 1.0f + (float)(variant % 5) * 0.1f;
    out[1] = 0.6f;
    out[2] = -1.0f;
}

struct sink {
    char *p;
    size_t cap, len;
};

static size_t on_body(char *p, size_t size, size_t n, void *payload)
{
    struct sink *s = payload;
    size_t len = size * n, room = s->cap - 1 - s->len;

    memcpy(s->p + s->len, p, len < room ? len : room);
    s->len += len < room ? len : room;
    s->p[s->len] = '\0';
    return len;
}

long e2e_http(char *out, size_t cap, const char *base_url, const char *method, const char *path,
              const char *bearer, const char *body)
{
    struct sink s = {out, cap, 0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char url[1024], auth[512];
    CURL *c = curl_easy_init();
    long status = -1;

    out[0] = '\0';
    (void)snprintf(url, sizeof(url), "%s%s", base_url, path);
    if (bearer) {
        (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer);
        h = curl_slist_append(h, auth);
    }
    if (c && h) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        if (body)
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

int e2e_enroll(char *cred, size_t cap, const char *base_url, const char *enroll_token,
               const char *device_id)
{
    char body[512], reply[1024];
    const char *v;
    cJSON *j;
    int rc = -1;

    (void)snprintf(body, sizeof(body), "{\"enrollment_token\":\"%s\",\"device_id\":\"%s\"}",
                   enroll_token, device_id);
    if (e2e_http(reply, sizeof(reply), base_url, "POST", "/v1/enroll", NULL, body) != 201)
        return -1;
    j = cJSON_Parse(reply);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "credential"));
    if (v && (size_t)snprintf(cred, cap, "%s", v) < cap)
        rc = 0;
    cJSON_Delete(j);
    return rc;
}

int e2e_checkin_policy(char *out, size_t cap, const char *base_url, const char *cred,
                       const char *model, const char *version)
{
    static char reply[64 * 1024];
    char body[512], *text = NULL;
    cJSON *j;
    int rc = -1;

    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"0123456789abcdef0123456789abcdef\",\"models\":[{\"name\":\"%s\","
                   "\"version\":\"%s\",\"sha256\":\"%064d\"}]}",
                   model, version, 0);
    if (e2e_http(reply, sizeof(reply), base_url, "POST", "/v1/checkin", cred, body) != 200)
        return -1;
    j = cJSON_Parse(reply);
    text = cJSON_PrintUnformatted(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "offload"), model));
    if (text && (size_t)snprintf(out, cap, "%s", text) < cap)
        rc = 0;
    cJSON_free(text);
    cJSON_Delete(j);
    return rc;
}
