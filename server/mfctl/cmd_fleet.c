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
#include <stdlib.h>
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

int mfctl__print_group_settings(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *list, *g, *w;
    cJSON *doc = mfctl__parse_array(c, &list, json, len, "group_settings");

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-24s %-14s %s\n", "GROUP", "POLL", "INSTALL WINDOW");
    cJSON_ArrayForEach(g, list)
    {
        char poll[32] = "-";
        long off;

        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(g, "poll_interval_s")))
            (void)snprintf(poll, sizeof(poll), "%.0f s +-%.0f%%", mfctl__num(g, "poll_interval_s"),
                           mfctl__num(g, "poll_jitter_pct"));
        (void)fprintf(c->out, "%-24s %-14s ", str_of(g, "group"), poll);
        w = cJSON_GetObjectItemCaseSensitive(g, "install_window");
        off = (long)mfctl__num(w, "utc_offset_min");
        if (cJSON_IsObject(w))
            (void)fprintf(c->out, "%s-%s UTC%c%02ld:%02ld\n", str_of(w, "start"), str_of(w, "end"),
                          off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
        else
            (void)fputs("-\n", c->out);
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* "02:00-05:00" into its two times (validated by the server) and "UTC+01:00" / "UTC-05:30"
 * (absent: UTC) into minutes; 0, or -1 for a malformed argument. */
static int parse_window(char start[6], char end[6], long *offset_out, const char *range,
                        const char *utc)
{
    unsigned h = 0, m = 0;
    char sign = 0, tail = 0;

    if (strlen(range) != 11 || range[5] != '-')
        return -1;
    (void)snprintf(start, 6, "%.5s", range);
    (void)snprintf(end, 6, "%.5s", range + 6);
    *offset_out = 0;
    if (!utc)
        return 0;
    if (sscanf(utc, "UTC%c%2u:%2u%c", &sign, &h, &m, &tail) != 3 || (sign != '+' && sign != '-') ||
        strlen(utc) != 9 || m > 59)
        return -1;
    *offset_out = (sign == '-' ? -1 : 1) * (long)(h * 60 + m);
    return 0;
}

/* groups [list] | settings | set-poll | clear-poll | set-window | clear-window. */
int mfctl__cmd_groups(struct mfctl *c, int argc, char **argv)
{
    char path[160], body[128], start[6], end[6];
    uint64_t secs = 0, jitter = 10;
    long offset = 0;
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 0 || (nargs == 1 && strcmp(argv[1], "list") == 0))
        return list_all(c, argv[0], json, "/v1/admin/groups", mfctl__print_groups);
    if (nargs == 1 && strcmp(argv[1], "settings") == 0)
        return list_all(c, argv[0], json, "/v1/admin/group-settings", mfctl__print_group_settings);
    if (nargs < 2 || !names_ok(c, argv, 2, 2))
        return mfctl__usage(c, "expected list, settings, set-poll, clear-poll, set-window or "
                               "clear-window GROUP ...");
    if (strcmp(argv[1], "set-poll") == 0 && (nargs == 3 || nargs == 4)) {
        if (mfctl__parse_u64(&secs, argv[3], 86400) < 0 || secs == 0 ||
            (nargs == 4 && mfctl__parse_u64(&jitter, argv[4], 50) < 0))
            return mfctl__usage(c, "SECONDS must be 1..86400 and JITTER_PCT 0..50");
        (void)snprintf(path, sizeof(path), "/v1/admin/groups/%s/poll", argv[2]);
        (void)snprintf(body, sizeof(body), "{\"interval_s\":%llu,\"jitter_pct\":%llu}",
                       (unsigned long long)secs, (unsigned long long)jitter);
        return mfctl__send(c, "PUT", path, body, json, "poll interval set");
    }
    if (strcmp(argv[1], "set-window") == 0 && (nargs == 3 || nargs == 4)) {
        if (parse_window(start, end, &offset, argv[3], nargs == 4 ? argv[4] : NULL) < 0)
            return mfctl__usage(c, "expected a window HH:MM-HH:MM and an offset UTC+HH:MM");
        (void)snprintf(path, sizeof(path), "/v1/admin/groups/%s/install-window", argv[2]);
        (void)snprintf(body, sizeof(body),
                       "{\"start\":\"%s\",\"end\":\"%s\",\"utc_offset_min\":%ld}", start, end,
                       offset);
        return mfctl__send(c, "PUT", path, body, json, "install window set");
    }
    if (strcmp(argv[1], "clear-poll") == 0 && nargs == 2) {
        (void)snprintf(path, sizeof(path), "/v1/admin/groups/%s/poll", argv[2]);
        return mfctl__send(c, "DELETE", path, NULL, json, "poll interval cleared");
    }
    if (strcmp(argv[1], "clear-window") == 0 && nargs == 2) {
        (void)snprintf(path, sizeof(path), "/v1/admin/groups/%s/install-window", argv[2]);
        return mfctl__send(c, "DELETE", path, NULL, json, "install window cleared");
    }
    return mfctl__usage(c, "expected list, settings, set-poll, clear-poll, set-window or "
                           "clear-window");
}

/* The two verbs of a directive at one path: `put` VERSION (the last argument) sets it with a
 * PUT, `del` alone (`n_del` arguments with the verb) clears it with a DELETE. */
struct directive_verbs {
    const char *put, *put_done, *del, *del_done, *usage;
    int n_del;
};

static const struct directive_verbs pin_verbs = {
    .put = "set",
    .put_done = "pinned",
    .del = "clear",
    .del_done = "pin cleared",
    .usage = "expected list, set or clear",
    .n_del = 4,
};
static const struct directive_verbs rollback_verbs = {
    .put = "start",
    .put_done = "fleet rollback active",
    .del = "stop",
    .del_done = "fleet rollback ended",
    .usage = "expected start MODEL VERSION or stop MODEL",
    .n_del = 2,
};

static int version_directive(struct mfctl *c, char **argv, int nargs, int json, const char *path,
                             const struct directive_verbs *v)
{
    char body[128];

    if (strcmp(argv[1], v->put) == 0 && nargs == v->n_del + 1) {
        (void)snprintf(body, sizeof(body), "{\"version\":\"%s\"}", argv[nargs]);
        return mfctl__send(c, "PUT", path, body, json, v->put_done);
    }
    if (strcmp(argv[1], v->del) == 0 && nargs == v->n_del)
        return mfctl__send(c, "DELETE", path, NULL, json, v->del_done);
    return mfctl__usage(c, v->usage);
}

int mfctl__cmd_pins(struct mfctl *c, int argc, char **argv)
{
    char path[320];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 0 || (nargs == 1 && strcmp(argv[1], "list") == 0)) {
        return list_all(c, argv[0], json, "/v1/admin/pins", mfctl__print_pins);
    }
    if (nargs < 4 || !names_ok(c, argv, 2, nargs))
        return mfctl__usage(c, "expected list, set SCOPE TARGET MODEL VERSION or clear ...");
    (void)snprintf(path, sizeof(path), "/v1/admin/pins/%s/%s/%s", argv[2], argv[3], argv[4]);
    return version_directive(c, argv, nargs, json, path, &pin_verbs);
}

int mfctl__cmd_rollback(struct mfctl *c, int argc, char **argv)
{
    char path[160];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs < 2 || !names_ok(c, argv, 2, nargs))
        return mfctl__usage(c, "expected start MODEL VERSION or stop MODEL");
    (void)snprintf(path, sizeof(path), "/v1/admin/rollbacks/%s", argv[2]);
    return version_directive(c, argv, nargs, json, path, &rollback_verbs);
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
