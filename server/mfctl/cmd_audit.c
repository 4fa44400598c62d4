/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl audit: GET /v1/admin/audit with its filters, as a table; mfctl webhooks: register,
 * list, remove (cmd_audit.h). */
#include "cmd_audit.h"
#include "mf_dynbuf.h"

#include "mf/ct.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* The flags that become query keys, in the order the server lists them. */
static const struct {
    const char *flag, *key;
} audit_flags[] = {
    {"--since", "since"},   {"--until", "until"},   {"--token", "token"},
    {"--action", "action"}, {"--before", "before"}, {"--limit", "limit"},
};

#define N_FLAGS (sizeof(audit_flags) / sizeof(audit_flags[0]))

int mfctl__print_audit(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *rows, *a;
    cJSON *doc = mfctl__parse_array(c, &rows, json, len, "audit");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-20s  %-16s %-16s %6s  %-40s %s\n", "AT (UTC)", "TOKEN", "ACTOR",
                  "STATUS", "ACTION", "TARGET");
    cJSON_ArrayForEach(a, rows)
    {
        const char *id = mfctl__str(a, "token_id"), *target = mfctl__str(a, "target");
        const char *detail = mfctl__str(a, "detail");
        char status[16] = "-";

        if (mfctl__num(a, "status") > 0)
            (void)snprintf(status, sizeof(status), "%.0f", mfctl__num(a, "status"));
        (void)fprintf(c->out, "%-20s  %-16s %-16s %6s  %-40s %s\n", mfctl__str(a, "at"),
                      id[0] ? id : "-", mfctl__str(a, "actor")[0] ? mfctl__str(a, "actor") : "-",
                      status, mfctl__str(a, "action"), target[0] ? target : "-");
        if (detail[0])
            (void)fprintf(c->out, "%-20s  %s\n", "", detail);
    }
    if (mfctl__num(doc, "next") > 0)
        (void)fprintf(c->out, "more: mfctl audit ... --before %.0f\n", mfctl__num(doc, "next"));
    cJSON_Delete(doc);
    return MF_OK;
}

/* Appends `v` to the query, percent-encoding all but [A-Za-z0-9._~-]. */
static int append_escaped(struct mf_dynbuf *q, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    int err = MF_OK;

    for (const unsigned char *p = (const unsigned char *)v; *p && err == MF_OK; p++) {
        if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-", *p))
            err = mf_dynbuf__appendf(q, "%c", *p);
        else
            err = mf_dynbuf__appendf(q, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return err;
}

int mfctl__cmd_audit(struct mfctl *c, int argc, char **argv)
{
    struct mf_dynbuf path;
    int json = 0, keys = 0, rc, err = MF_OK;

    mf_dynbuf__init(&path, &c->ctx.alloc, 4096);
    err = mf_dynbuf__appendf(&path, "/v1/admin/audit");
    for (int i = 1; i < argc && err == MF_OK; i++) {
        size_t k = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            mf_dynbuf__free(&path);
            (void)fputs(c->cmd->usage, c->out);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        while (k < N_FLAGS && strcmp(argv[i], audit_flags[k].flag) != 0)
            k++;
        if (k == N_FLAGS || i + 1 >= argc || !argv[i + 1][0]) {
            mf_dynbuf__free(&path);
            (void)fprintf(c->err, "mfctl audit: %s \"%s\"\n%s",
                          k == N_FLAGS ? "unknown option or argument" : "no value for", argv[i],
                          c->cmd->usage);
            return 2;
        }
        /* The server checks each value and answers 400 naming the key. */
        err = mf_dynbuf__appendf(&path, "%c%s=", keys++ ? '&' : '?', audit_flags[k].key);
        if (err == MF_OK)
            err = append_escaped(&path, argv[++i]);
    }
    if (err < 0) {
        mf_dynbuf__free(&path);
        (void)mf_fail(&c->ctx, err, "audit query too long");
        return mfctl__report(c, err);
    }
    rc = mfctl__call(c, "GET", (const char *)path.data, NULL, json, mfctl__print_audit);
    mf_dynbuf__free(&path);
    return rc;
}

int mfctl__print_webhooks(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *rows, *w;
    cJSON *doc = mfctl__parse_array(c, &rows, json, len, "webhooks");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-6s %-20s  %8s %8s %9s  %s\n", "ID", "CREATED (UTC)", "PENDING",
                  "FAILED", "DELIVERED", "URL");
    cJSON_ArrayForEach(w, rows)
    {
        (void)fprintf(c->out, "%-6.0f %-20s  %8.0f %8.0f %9.0f  %s\n", mfctl__num(w, "id"),
                      mfctl__str(w, "created_at"), mfctl__num(w, "pending"),
                      mfctl__num(w, "failed"), mfctl__num(w, "delivered"), mfctl__str(w, "url"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* The first line of `path` (the webhook's secret) into `out`; 0, or 1 after saying why. */
static int read_secret(struct mfctl *c, char *out, size_t cap, const char *path)
{
    FILE *f = fopen(path, "r");
    int ok = f && fgets(out, (int)cap, f) != NULL;

    if (f)
        (void)fclose(f);
    out[ok ? strcspn(out, "\r\n") : 0] = '\0';
    if (!ok || !out[0]) {
        (void)fprintf(c->err, "mfctl webhooks: cannot read a secret from %s\n", path);
        return 1;
    }
    return 0;
}

static int webhook_add(struct mfctl *c, const char *url, const char *secret_file, int json)
{
    char secret[300];
    cJSON *body = cJSON_CreateObject();
    char *text = NULL;
    int rc = 1;

    if (read_secret(c, secret, sizeof(secret), secret_file) == 0 && body &&
        cJSON_AddStringToObject(body, "url", url) &&
        cJSON_AddStringToObject(body, "secret", secret))
        text = cJSON_PrintUnformatted(body);
    mf_secure_zero(secret, sizeof(secret));
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(body, "secret"))) {
        char *copy = cJSON_GetObjectItemCaseSensitive(body, "secret")->valuestring;

        mf_secure_zero(copy, strlen(copy)); /* the tree's own copy: cJSON frees unwiped */
    }
    cJSON_Delete(body);
    if (text) {
        rc = mfctl__send(c, "POST", "/v1/admin/webhooks", text, json, "webhook registered");
        mf_secure_zero(text, strlen(text));
        cJSON_free(text);
    }
    return rc;
}

int mfctl__cmd_webhooks(struct mfctl *c, int argc, char **argv)
{
    const char *secret_file = NULL;
    char path[64];
    int json, nargs, rc, n = 1;

    /* --secret-file takes a value, which the common flags do not know: taken out first. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--secret-file") == 0 && i + 1 < argc)
            secret_file = argv[++i];
        else
            argv[n++] = argv[i];
    }
    rc = mfctl__common_flags(c, n, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (!secret_file && (nargs == 0 || (nargs == 1 && strcmp(argv[1], "list") == 0)))
        return mfctl__call(c, "GET", "/v1/admin/webhooks", NULL, json, mfctl__print_webhooks);
    if (nargs == 2 && strcmp(argv[1], "add") == 0 && secret_file)
        return webhook_add(c, argv[2], secret_file, json);
    if (!secret_file && nargs == 2 && strcmp(argv[1], "remove") == 0 && mfctl__id_ok(argv[2])) {
        (void)snprintf(path, sizeof(path), "/v1/admin/webhooks/%s", argv[2]);
        return mfctl__send(c, "DELETE", path, NULL, json, "webhook removed");
    }
    return mfctl__usage(c, "expected list, add URL --secret-file FILE or remove ID");
}
