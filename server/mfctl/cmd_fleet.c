/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl device | groups | pins | rollback | tokens: the director's inputs (a device's
 * groups and channel, pins, fleet rollbacks), device revocation and admin tokens with a
 * role, over the admin routes of docs/openapi.yaml. Printers take JSON text so tests feed
 * them without a server.
 */
#include "mfctl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define FLEET_BODY_MAX 4096

static const char *str_of(const cJSON *o, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

    return v ? v : "-";
}

int mfctl__print_pins(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *pins, *p;
    cJSON *doc = mfctl__parse_array(c, &pins, json, len, "pins");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-8s %-24s %-24s %s\n", "SCOPE", "TARGET", "MODEL", "VERSION");
    cJSON_ArrayForEach(p, pins)
    {
        (void)fprintf(c->out, "%-8s %-24s %-24s %s\n", str_of(p, "scope"), str_of(p, "target"),
                      str_of(p, "model"), str_of(p, "version"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__print_tokens(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *tokens, *t;
    cJSON *doc = mfctl__parse_array(c, &tokens, json, len, "tokens");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-16s %-6s %-24s %s\n", "ID", "ROLE", "NAME", "STATE");
    cJSON_ArrayForEach(t, tokens)
    {
        (void)fprintf(
            c->out, "%-16s %-6s %-24s %s\n", str_of(t, "id"), str_of(t, "role"), str_of(t, "name"),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "revoked")) ? "revoked" : "active");
    }
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__print_groups(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *groups, *g, *d;
    cJSON *doc = mfctl__parse_array(c, &groups, json, len, "groups");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-24s %s\n", "GROUP", "DEVICES");
    cJSON_ArrayForEach(g, groups)
    {
        const char *sep = "";

        (void)fprintf(c->out, "%-24s ", str_of(g, "name"));
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(g, "devices"))
        {
            (void)fprintf(c->out, "%s%s", sep, cJSON_GetStringValue(d) ? d->valuestring : "?");
            sep = ",";
        }
        (void)fputc('\n', c->out);
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* 1 when every argument from argv[from] on is a valid name (else prints why). */
static int names_ok(struct mfctl *c, char **argv, int from, int to)
{
    for (int i = from; i <= to; i++) {
        if (!mfctl__name_ok(argv[i])) {
            (void)fprintf(c->err, "mfctl %s: \"%s\" does not match [A-Za-z0-9._-]{1,64}\n",
                          c->cmd->name, argv[i]);
            return 0;
        }
    }
    return 1;
}

/* {"groups":["a","b"]} from "a,b" (bounded; names checked). */
static int groups_body(struct mfctl *c, char *out, size_t cap, const char *list)
{
    char name[65];
    size_t n = (size_t)snprintf(out, cap, "{\"groups\":[");

    while (list && *list) {
        size_t k = strcspn(list, ",");

        (void)snprintf(name, sizeof(name), "%.*s", (int)(k < 64 ? k : 64), list);
        if (k == 0 || k > 64 || !mfctl__name_ok(name) || n + k + 4 >= cap)
            return mfctl__usage(c, "groups are names separated by commas");
        n += (size_t)snprintf(out + n, cap - n, "%s\"%s\"", out[n - 1] == '[' ? "" : ",", name);
        list += k + (list[k] == ',');
    }
    (void)snprintf(out + n, cap - n, "]}");
    return 0;
}

/* A listing after a subcommand word: re-enters the list command with just the flags. */
static int list_all(struct mfctl *c, char *cmd, int json, const char *path,
                    int (*print)(struct mfctl *, const char *, size_t))
{
    char flag[] = "--json";
    char *list_argv[] = {cmd, flag, NULL};

    return mfctl__list_command(c, json ? 2 : 1, list_argv, path, print);
}

int mfctl__cmd_device(struct mfctl *c, int argc, char **argv)
{
    char path[256], body[FLEET_BODY_MAX];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs < 2 || !names_ok(c, argv, 2, 2))
        return mfctl__usage(c, "expected groups, channel or revoke and a DEVICE");
    if (strcmp(argv[1], "groups") == 0 && nargs <= 3) {
        rc = groups_body(c, body, sizeof(body), nargs == 3 ? argv[3] : NULL);
        (void)snprintf(path, sizeof(path), "/v1/admin/devices/%s/groups", argv[2]);
        return rc ? rc : mfctl__send(c, "PUT", path, body, json, "groups set");
    }
    if (strcmp(argv[1], "channel") == 0 && nargs == 3 && names_ok(c, argv, 3, 3)) {
        (void)snprintf(body, sizeof(body), "{\"channel\":\"%s\"}", argv[3]);
        (void)snprintf(path, sizeof(path), "/v1/admin/devices/%s/channel", argv[2]);
        return mfctl__send(c, "PUT", path, body, json, "channel set");
    }
    if (strcmp(argv[1], "revoke") == 0 && nargs == 2) {
        (void)snprintf(path, sizeof(path), "/v1/admin/devices/%s/credential", argv[2]);
        return mfctl__send(c, "DELETE", path, NULL, json, "credential revoked");
    }
    return mfctl__usage(c, "expected groups, channel or revoke");
}

int mfctl__cmd_groups(struct mfctl *c, int argc, char **argv)
{
    return mfctl__list_command(c, argc, argv, "/v1/admin/groups", mfctl__print_groups);
}

int mfctl__cmd_pins(struct mfctl *c, int argc, char **argv)
{
    char path[320], body[128];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 0 || (nargs == 1 && strcmp(argv[1], "list") == 0)) {
        return list_all(c, argv[0], json, "/v1/admin/pins", mfctl__print_pins);
    }
    if (nargs < 4 || !names_ok(c, argv, 2, nargs))
        return mfctl__usage(c, "expected list, set SCOPE TARGET MODEL VERSION or clear ...");
    (void)snprintf(path, sizeof(path), "/v1/admin/pins/%s/%s/%s", argv[2], argv[3], argv[4]);
    if (strcmp(argv[1], "set") == 0 && nargs == 5) {
        (void)snprintf(body, sizeof(body), "{\"version\":\"%s\"}", argv[5]);
        return mfctl__send(c, "PUT", path, body, json, "pinned");
    }
    if (strcmp(argv[1], "clear") == 0 && nargs == 4)
        return mfctl__send(c, "DELETE", path, NULL, json, "pin cleared");
    return mfctl__usage(c, "expected list, set or clear");
}

int mfctl__cmd_rollback(struct mfctl *c, int argc, char **argv)
{
    char path[160], body[128];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs < 2 || !names_ok(c, argv, 2, nargs))
        return mfctl__usage(c, "expected start MODEL VERSION or stop MODEL");
    (void)snprintf(path, sizeof(path), "/v1/admin/rollbacks/%s", argv[2]);
    if (strcmp(argv[1], "start") == 0 && nargs == 3) {
        (void)snprintf(body, sizeof(body), "{\"version\":\"%s\"}", argv[3]);
        return mfctl__send(c, "PUT", path, body, json, "fleet rollback active");
    }
    if (strcmp(argv[1], "stop") == 0 && nargs == 2)
        return mfctl__send(c, "DELETE", path, NULL, json, "fleet rollback ended");
    return mfctl__usage(c, "expected start MODEL VERSION or stop MODEL");
}

int mfctl__cmd_tokens(struct mfctl *c, int argc, char **argv)
{
    char path[96], body[160];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 0 || (nargs == 1 && strcmp(argv[1], "list") == 0)) {
        return list_all(c, argv[0], json, "/v1/admin/tokens", mfctl__print_tokens);
    }
    if (nargs == 3 && strcmp(argv[1], "create") == 0 && names_ok(c, argv, 2, 3)) {
        struct mf_http_response resp;
        cJSON *doc;
        int err;

        (void)snprintf(body, sizeof(body), "{\"role\":\"%s\",\"name\":\"%s\"}", argv[2], argv[3]);
        if (mfctl__connect(c) != 0)
            return 1;
        mf_http__response_init(&resp, &c->http);
        err = mfctl__request(c, &resp, "POST", "/v1/admin/tokens", body, strlen(body));
        doc = err >= 0 ? mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL) : NULL;
        if (err >= 0 && json)
            (void)fprintf(c->out, "%s\n", (const char *)resp.body.data);
        else if (err >= 0)
            (void)fprintf(c->out, "%s\n# id %s, role %s: store it now, it is not shown again\n",
                          str_of(doc, "token"), str_of(doc, "id"), str_of(doc, "role"));
        cJSON_Delete(doc);
        mf_http__response_free(&resp);
        return err < 0 ? mfctl__report(c, err) : 0;
    }
    if (nargs == 2 && strcmp(argv[1], "revoke") == 0 && names_ok(c, argv, 2, 2)) {
        (void)snprintf(path, sizeof(path), "/v1/admin/tokens/%s", argv[2]);
        return mfctl__send(c, "DELETE", path, NULL, json, "token revoked");
    }
    return mfctl__usage(c, "expected list, create ROLE NAME or revoke ID");
}

static int print_sweep(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, NULL);
    int dry_run = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "dry_run"));
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, dry_run ? "would_remove" : "removed");
    const cJSON *o;

    if (!doc)
        return 1;
    cJSON_ArrayForEach(o, list)
    {
        (void)fprintf(c->out, "%s %s\n", dry_run ? "would remove" : "removed",
                      mfctl__str(o, "sha256"));
    }
    (void)fprintf(
        c->out, "%s%.0f orphan blob(s); kept %.0f referenced and %.0f younger than %.0f s\n",
        dry_run ? "dry run: " : "", mfctl__num(doc, "orphans"), mfctl__num(doc, "referenced"),
        mfctl__num(doc, "young"), mfctl__num(doc, "grace_s"));
    cJSON_Delete(doc);
    return 0;
}

int mfctl__cmd_blobs(struct mfctl *c, int argc, char **argv)
{
    int json, nargs, dry_run = 0, n = 0, rc;

    /* --dry-run is this command's own flag: taken out before the common ones. */
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--dry-run") == 0)
            dry_run = 1;
        else
            argv[n++] = argv[i];
    }
    rc = mfctl__common_flags(c, n, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (nargs != 1 || strcmp(argv[1], "sweep") != 0)
        return mfctl__usage(c, "expected sweep");
    /* "{}": without a body the HTTP client would send a GET; the route ignores bodies. */
    return mfctl__call(c, "POST",
                       dry_run ? "/v1/admin/blobs/sweep?dry_run=1" : "/v1/admin/blobs/sweep", "{}",
                       json, print_sweep);
}
