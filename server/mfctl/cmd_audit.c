/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl audit: GET /v1/admin/audit with its filters, as a table (cmd_audit.h). */
#include "cmd_audit.h"
#include "mf_dynbuf.h"

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
