/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/openapi.yaml against the routes the server registers (mf_handlers__routes).
 */
#include "mf_test.h"
#include "kit_fs.h"
#include "manifest_fixture.h"
#include "handlers/handlers.h"
#include "http/http_metrics.h"
#include "http/http_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* docs/openapi.yaml of the source tree. */
static char *read_openapi(void)
{
    char path[1024];
    size_t len = 0;
    uint8_t *text;

    mf_kit_fs_source_path(path, sizeof(path), "docs/openapi.yaml");
    text = fx_read_file(&len, path);
    if (!text)
        fail_msg("cannot read %s", path);
    return (char *)text;
}

/* The pattern of an OpenAPI path: every "{name}" becomes "{}". */
static void normalise(char *out, size_t cap, const char *p, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 3 < cap; i++) {
        if (p[i] == '{') {
            while (i < n && p[i] != '}')
                i++;
            out[o++] = '{';
            out[o++] = '}';
        } else {
            out[o++] = p[i];
        }
    }
    out[o] = '\0';
}

static void test_server_openapi__openapi_matches_the_route_table(void **state)
{
    char *doc = read_openapi();
    char cur[256] = "", line_buf[512];
    int documented = 0;
    char *seen = calloc(mf_handlers__route_count, 1); /* as many as the table holds */

    (void)state;
    assert_non_null(seen);
    /* Every "  /path:" + "    method:" pair must be a route, with the same auth. */
    for (char *line = doc; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);

        (void)snprintf(line_buf, sizeof(line_buf), "%.*s", (int)n, line);
        if (strncmp(line_buf, "  /", 3) == 0 && line_buf[n - 1] == ':') {
            normalise(cur, sizeof(cur), line_buf + 2, n - 3);
        } else if (cur[0] && strncmp(line_buf, "    ", 4) == 0 && line_buf[4] != ' ' &&
                   line_buf[n - 1] == ':') {
            char method[16];
            int found = 0;

            (void)snprintf(method, sizeof(method), "%.*s", (int)(n - 5), line_buf + 4);
            for (char *m = method; *m; m++)
                *m = (char)(*m - ('a' <= *m && *m <= 'z' ? 32 : 0));
            for (size_t i = 0; i < mf_handlers__route_count; i++) {
                char pat[256];

                normalise(pat, sizeof(pat), mf_handlers__routes[i].pattern,
                          strlen(mf_handlers__routes[i].pattern));
                if (strcmp(pat, cur) == 0 && strcmp(mf_handlers__routes[i].method, method) == 0) {
                    found = 1;
                    seen[i] = 1;
                }
            }
            if (!found && strcmp(method, "PARAMETERS") != 0)
                fail_msg("docs/openapi.yaml documents %s %s, which the server does not route",
                         method, cur);
            documented += found;
        } else if (strncmp(line_buf, "  ", 2) != 0) {
            cur[0] = '\0'; /* left the paths section */
        }
        line = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < mf_handlers__route_count; i++) {
        if (!seen[i])
            fail_msg("route %s %s is missing from docs/openapi.yaml", mf_handlers__routes[i].method,
                     mf_handlers__routes[i].pattern);
    }
    assert_int_equal(documented, (int)mf_handlers__route_count);
    free(seen);
    mf_free(NULL, doc);
}

/* The request counters have a row per route of the table however many it holds (the table
 * grows with every feature; a fixed bound once refused to build past 64), and one for the
 * requests no route matched. */
static void test_server_openapi__metrics_count_every_route(void **state)
{
    enum { N = 130 };
    static struct mf_httpd_route table[N];
    struct mf_metrics m;
    struct mf_metrics_labels l = {.routes = table, .n_routes = N};
    struct mf_dynbuf out;

    (void)state;
    for (size_t i = 0; i < N; i++)
        table[i] = (struct mf_httpd_route){.method = "GET", .pattern = i ? "/other" : "/first"};
    table[N - 1].pattern = "/last";
    assert_int_equal(mf_metrics__init(&m, NULL, N), MF_OK);
    mf_metrics__request(&m, N - 1, 200, 10);
    mf_metrics__request(&m, N - 1, 200, 10);
    mf_metrics__request(&m, 0, 404, 1);
    mf_metrics__request(&m, N, 200, 1); /* beyond the table: no route */
    mf_metrics__request(&m, -1, 404, 1);
    mf_dynbuf__init(&out, NULL, 1 << 20);
    assert_int_equal(mf_metrics__render(&out, &m, &(struct mf_metrics_gauges){0}, &l), MF_OK);
    assert_int_equal(mf_dynbuf__append(&out, "", 1), MF_OK);
    assert_non_null(
        strstr((char *)out.data, "{method=\"GET\",route=\"/last\",status=\"200\"} 2\n"));
    assert_non_null(
        strstr((char *)out.data, "{method=\"GET\",route=\"/first\",status=\"404\"} 1\n"));
    assert_non_null(strstr((char *)out.data, "route=\"unmatched\",status=\"200\"} 1\n"));
    assert_non_null(strstr((char *)out.data, "route=\"unmatched\",status=\"404\"} 1\n"));
    assert_null(strstr((char *)out.data, "route=\"/other\""));
    mf_dynbuf__free(&out);
    mf_metrics__free(&m, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_openapi__openapi_matches_the_route_table),
        cmocka_unit_test(test_server_openapi__metrics_count_every_route),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
