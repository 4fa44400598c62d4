/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl models / mfctl devices: GET the admin list and print it as a table (or the raw
 * JSON with --json). The printers take JSON text, not a connection, so they are tested
 * without a server.
 */
#include "mfctl.h"
#include "cmd_distill.h"
#include "cmd_rollout.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *str_or(const cJSON *obj, const char *key, const char *fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : fallback;
}

static double num_or(const cJSON *obj, const char *key, double fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

int mfctl__print_models(struct mfctl *c, const char *json, size_t len)
{
    return mfctl__print_versions(c, json, len, NULL);
}

int mfctl__print_versions(struct mfctl *c, const char *json, size_t len, const char *model)
{
    const cJSON *models, *m;
    cJSON *doc = mfctl__parse_array(c, &models, json, len, "models");
    char when[32];

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-24s %-16s %12s  %-12s  %-20s  %s\n", "MODEL", "VERSION", "SIZE",
                  "SHA256", "CREATED", "RELEASE");
    cJSON_ArrayForEach(m, models)
    {
        const cJSON *versions = cJSON_GetObjectItemCaseSensitive(m, "versions");
        const cJSON *v;

        if (model && strcmp(str_or(m, "name", ""), model) != 0)
            continue;
        if (cJSON_GetArraySize(versions) == 0)
            (void)fprintf(c->out, "%-24s %-16s\n", str_or(m, "name", "?"), "-");
        cJSON_ArrayForEach(v, versions)
        {
            char rel[64] = "staged (unreleased)";

            /* Only a released version (a verified signed release) is ever assigned. */
            /* Released is not deployed: only a promoted release is the channel default. */
            if (num_or(v, "sequence", 0) > 0)
                (void)snprintf(rel, sizeof(rel), "seq %.0f floor %.0f %s", num_or(v, "sequence", 0),
                               num_or(v, "security_floor", 0),
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "promoted"))
                                   ? "promoted"
                                   : "not promoted");
            (void)fprintf(c->out, "%-24s %-16s %12.0f  %-12.12s  %-20s  %s\n",
                          str_or(m, "name", "?"), str_or(v, "version", "?"), num_or(v, "size", 0),
                          str_or(v, "sha256", "?"),
                          mfctl__fmt_time(when, sizeof(when), num_or(v, "created_at", 0)), rel);
        }
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* One model of a device: what it runs and, apart, what it rolled back from (a failed
 * report whose detail says "rolled back: why") or failed to install. */
static void print_device_model(struct mfctl *c, const char *id, const char *seen, const cJSON *m)
{
    static const char rb[] = "rolled back: ";
    const char *status = str_or(m, "status", "-"), *detail = str_or(m, "detail", "");
    const char *running = str_or(m, "running_version", "");
    const char *back = "-";
    char why[320];

    if (strcmp(status, "installed") == 0) {
        running = str_or(m, "version", "-");
        (void)snprintf(why, sizeof(why), "%s", detail);
    } else if (strncmp(detail, rb, sizeof(rb) - 1) == 0) {
        status = "rolled back";
        back = str_or(m, "version", "-");
        (void)snprintf(why, sizeof(why), "%s", detail + sizeof(rb) - 1);
    } else {
        (void)snprintf(why, sizeof(why), "%s: %s", str_or(m, "version", "?"), detail);
    }
    (void)fprintf(c->out, "%-20s %-20s  %-16s %-12s %-12s %-12s %s\n", id, seen,
                  str_or(m, "name", "?"), running[0] ? running : "-", status, back, why);
}

int mfctl__print_devices(struct mfctl *c, const char *json, size_t len)
{
    const cJSON *devices, *d;
    cJSON *doc = mfctl__parse_array(c, &devices, json, len, "devices");
    char when[32];

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-20s %-20s  %-16s %-12s %-12s %-12s %s\n", "DEVICE", "LAST SEEN",
                  "MODEL", "RUNNING", "STATUS", "ROLLED BACK", "DETAIL");
    cJSON_ArrayForEach(d, devices)
    {
        const cJSON *models = cJSON_GetObjectItemCaseSensitive(d, "models");
        const char *id = str_or(d, "device_id", "?");
        const char *seen = mfctl__fmt_time(when, sizeof(when), num_or(d, "last_seen", 0));
        const cJSON *m;

        if (cJSON_GetArraySize(models) == 0)
            (void)fprintf(c->out, "%-20s %-20s  %-16s\n", id, seen, "-");
        cJSON_ArrayForEach(m, models)
        {
            print_device_model(c, id, seen, m);
        }
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* GET `path` and print it with `print` (or raw with --json); exported for cmd_fleet.c. */
int mfctl__list_command(struct mfctl *c, int argc, char **argv, const char *path,
                        int (*print)(struct mfctl *, const char *, size_t))
{
    struct mf_http_request req = {.method = "GET"};
    struct mf_http_response resp;
    struct mf_dynbuf url;
    int json, nargs, rc, err;

    rc = mfctl__common_flags(c, argc, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (nargs != 0) {
        (void)fprintf(c->err, "mfctl %s: unexpected argument \"%s\"\n%s", c->cmd->name, argv[1],
                      c->cmd->usage);
        return 2;
    }
    if (mfctl__connect(c) != 0)
        return 1;
    err = mfctl__url(c, &url, path);
    if (err < 0)
        return mfctl__report(c, err);
    mf_http__response_init(&resp, &c->http);
    req.url = (const char *)url.data;
    req.bearer = c->token;
    err = mf_http__perform(&c->http, &resp, &req);
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&c->http, &resp, c->cmd->name);
    if (err >= 0 && json)
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "");
    else if (err >= 0)
        err = print(c, (const char *)resp.body.data, resp.body.len);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&url);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__cmd_models(struct mfctl *c, int argc, char **argv)
{
    return mfctl__list_command(c, argc, argv, "/v1/admin/models", mfctl__print_models);
}

/* GET `prefix` + `name` (a checked name) and print it with `print`, or raw with `json`. */
static int get_one(struct mfctl *c, char *argv0, int json, const char *prefix, const char *name,
                   int (*print)(struct mfctl *, const char *, size_t))
{
    char flag[] = "--json", path[160];
    char *args[] = {argv0, flag, NULL};

    (void)snprintf(path, sizeof(path), "%s%s", prefix, name);
    return mfctl__list_command(c, json ? 2 : 1, args, path, print);
}

/* `devices show DEVICE`: the device's degrade state and its recent switches. */
static int print_device_show(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, NULL);
    const cJSON *sw;
    char when[32], got[32];

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "DEVICE    %s\nLAST SEEN %s\nDEGRADED  %s\n",
                  str_or(doc, "device_id", "?"),
                  mfctl__fmt_time(when, sizeof(when), num_or(doc, "last_seen", 0)),
                  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "degraded")) ? "yes" : "no");
    (void)fprintf(c->out, "%-6s %-20s %-20s %-9s %s\n", "SEQ", "AT", "RECEIVED", "SWITCH",
                  "REASON");
    cJSON_ArrayForEach(sw, cJSON_GetObjectItemCaseSensitive(doc, "switches"))
    {
        double at = num_or(sw, "at", 0);

        (void)fprintf(c->out, "%-6.0f %-20s %-20s %-9s %s\n", num_or(sw, "seq", 0),
                      at > 0 ? mfctl__fmt_time(when, sizeof(when), at) : "-",
                      mfctl__fmt_time(got, sizeof(got), num_or(sw, "received_at", 0)),
                      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sw, "degraded")) ? "degrade"
                                                                                     : "restore",
                      str_or(sw, "reason", "?"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__cmd_devices(struct mfctl *c, int argc, char **argv)
{
    int json, nargs, rc;

    if (argc < 2 || strcmp(argv[1], "show") != 0)
        return mfctl__list_command(c, argc, argv, "/v1/admin/devices", mfctl__print_devices);
    rc = mfctl__common_flags(c, argc, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (nargs != 2 || !mfctl__name_ok(argv[2])) {
        (void)fprintf(c->err, "mfctl devices show: expected one DEVICE id\n%s", c->cmd->usage);
        return 2;
    }
    return get_one(c, argv[0], json, "/v1/admin/devices/", argv[2], print_device_show);
}

int mfctl__cmd_versions(struct mfctl *c, int argc, char **argv)
{
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 2 && strcmp(argv[1], "stats") == 0 && mfctl__name_ok(argv[2]))
        return mfctl__versions_stats(c, argv[2], json); /* cmd_rollout.c */
    if (nargs == 3 && strcmp(argv[1], "show") == 0 && mfctl__name_ok(argv[2]) &&
        mfctl__name_ok(argv[3]))
        return mfctl__versions_show(c, argv[2], argv[3], json); /* cmd_distill.c */
    if (nargs != 1 || !mfctl__name_ok(argv[1]) || strcmp(argv[1], "stats") == 0) {
        (void)fprintf(c->err, "mfctl versions: expected one MODEL name\n%s", c->cmd->usage);
        return 2;
    }
    /* The model's own route: an unknown MODEL is the server's 404, not an empty table. */
    return get_one(c, argv[0], json, "/v1/admin/models/", argv[1], mfctl__print_models);
}
