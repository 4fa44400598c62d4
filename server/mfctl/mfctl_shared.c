/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The helpers every mfctl command shares (mfctl.h): argument checks, usage and error
 * reports, the connection with its token, URLs and requests. Apart from the entry point and
 * its command table (mfctl.c), which calls the commands.
 */
#include "mfctl.h"
#include "mf/ct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mfctl__id_ok(const char *s)
{
    return s[0] && strspn(s, "0123456789") == strlen(s) && strlen(s) < 19;
}

int mfctl__parse_u64(uint64_t *out, const char *s, uint64_t max)
{
    char *end = NULL;
    unsigned long long v;

    /* strtoull would take a sign or leading blanks; a flag's number is digits only. */
    if (!s || s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

const char *mfctl__fmt_time(char *buf, size_t cap, double t)
{
    time_t secs = (time_t)t;
    struct tm tm;

    if (!(t > 0) || !gmtime_r(&secs, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return "-";
    return buf;
}

const char *mfctl__fmt_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = bytes;
    int u = -1;

    while (v >= 1024.0 && u < 3) {
        v /= 1024.0;
        u++;
    }
    if (u < 0)
        (void)snprintf(buf, cap, "%.0f B", bytes);
    else
        (void)snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

int mfctl__usage(struct mfctl *c, const char *why)
{
    (void)fprintf(c->err, "mfctl %s: %s\n%s", c->cmd->name, why, c->cmd->usage);
    return 2;
}

int mfctl__name_ok(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

    return n > 0 && n <= 64 && s[n] == '\0';
}

int mfctl__common_flags(struct mfctl *c, int argc, char **argv, int *json, int *nargs)
{
    int n = 1;

    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(c->cmd->usage, c->out);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            *json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            (void)fprintf(c->err, "mfctl %s: unknown option \"%s\"\n%s", c->cmd->name, argv[i],
                          c->cmd->usage);
            return 2;
        } else {
            argv[n++] = argv[i]; /* positional arguments move to the front, in order */
        }
    }
    *nargs = n - 1;
    return -1;
}

int mfctl__report(struct mfctl *c, int err)
{
    (void)fprintf(c->err, "mfctl %s: %s\n", c->cmd ? c->cmd->name : "",
                  mf_ctx__errmsg(&c->ctx)[0] ? mf_ctx__errmsg(&c->ctx) : mf_strerror(err));
    return 1;
}

static int read_token(struct mfctl *c)
{
    FILE *f = fopen(c->token_file, "r");
    size_t len;

    if (!f)
        return mf_fail(&c->ctx, MF_E_IO, "cannot open token file %s", c->token_file);
    if (!fgets(c->token, sizeof(c->token), f)) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_INVALID, "token file %s is empty", c->token_file);
    }
    (void)fclose(f);
    len = strcspn(c->token, "\r\n");
    c->token[len] = '\0';
    if (len == 0)
        return mf_fail(&c->ctx, MF_E_INVALID, "token file %s is empty", c->token_file);
    return MF_OK;
}

int mfctl__connect(struct mfctl *c)
{
    struct mf_http_config hc = {
        .connect_timeout_ms = 10000,
        .request_timeout_ms = 60000,
        .low_speed_bytes = 1,
        .low_speed_time_s = 60,
        .max_body = MFCTL_MAX_LIST_BODY,
    };
    int err;

    if (!c->server || !c->server[0])
        err = mf_fail(&c->ctx, MF_E_INVALID, "no server: use --server URL or set MF_SERVER");
    else if (!c->token_file || !c->token_file[0])
        err = mf_fail(&c->ctx, MF_E_INVALID,
                      "no admin token: use --token-file FILE or set MF_TOKEN_FILE");
    else
        err = read_token(c);
    if (err >= 0)
        err = mf_http__init(&c->http, &c->ctx, &hc);
    if (err < 0)
        return mfctl__report(c, err);
    c->http_ready = 1;
    return 0;
}

int mfctl__url(struct mfctl *c, struct mf_dynbuf *url, const char *path)
{
    size_t n = strlen(c->server);
    int err;

    while (n > 0 && c->server[n - 1] == '/')
        n--;
    mf_dynbuf__init(url, &c->ctx.alloc, 4096);
    err = mf_dynbuf__appendf(url, "%.*s%s", (int)n, c->server, path);
    if (err < 0)
        return mf_fail(&c->ctx, err, "URL for %s too long", path);
    return MF_OK;
}

int mfctl__request(struct mfctl *c, struct mf_http_response *resp, const char *method,
                   const char *path, const void *body, size_t len)
{
    struct mf_http_request req = {.method = method, .bearer = c->token};
    struct mf_dynbuf url;
    int err = mfctl__url(c, &url, path);

    if (err < 0)
        return err;
    req.url = (const char *)url.data;
    if (body) {
        req.content_type = "application/json";
        req.body = body;
        req.body_len = len;
    }
    err = mf_http__perform(&c->http, resp, &req);
    if (err >= 0 && (resp->status < 200 || resp->status > 204))
        err = mf_http__fail_status(&c->http, resp, path);
    mf_dynbuf__free(&url);
    return err;
}
