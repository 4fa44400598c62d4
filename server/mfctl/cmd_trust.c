/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl trust set-root ROOT.json | set-keys KEYS.json | status: ops install the documents
 * signed offline with `mfctl keys` on the server, which verifies each as a device would
 * before it serves it (docs/operations.md, "Keys and trust").
 */
#include "mfctl.h"
#include "cmd_keys.h"

#include <cjson/cJSON.h>
#include <string.h>

#define TRUST_DOC_MAX (32u * 1024u) /* root/keys envelope cap of the device library */

static int set_doc(struct mfctl *c, const char *what, const char *path, const char *file)
{
    struct mf_http_response resp;
    char *doc = NULL;
    size_t len = 0;
    int err = mfctl__read_file(&doc, &len, c, file, TRUST_DOC_MAX);
    cJSON *answer;

    mf_http__response_init(&resp, &c->http);
    if (err >= 0)
        err = mfctl__request(c, &resp, "PUT", path, doc, len);
    answer = err >= 0 ? mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL) : NULL;
    if (err >= 0)
        (void)fprintf(c->out, "%s version %.0f %s\n", what,
                      cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(answer, "version")),
                      resp.status == 201 ? "installed" : "was installed already");
    cJSON_Delete(answer);
    mf_free(&c->ctx.alloc, doc);
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}

static int status(struct mfctl *c, int json)
{
    struct mf_http_response resp;
    int err;
    cJSON *doc;

    mf_http__response_init(&resp, &c->http);
    err = mfctl__request(c, &resp, "GET", "/v1/admin/trust", NULL, 0);
    doc = err >= 0 ? mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL) : NULL;
    if (err >= 0 && json)
        (void)fprintf(c->out, "%s\n", (const char *)resp.body.data);
    else if (err >= 0)
        (void)fprintf(
            c->out, "root version %.0f, keys version %.0f, director key %s\n",
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "root_version")),
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "keys_version")),
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "director_keyid")));
    cJSON_Delete(doc);
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__cmd_trust(struct mfctl *c, int argc, char **argv)
{
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 1 && strcmp(argv[1], "status") == 0)
        return mfctl__connect(c) != 0 ? 1 : status(c, json);
    if (nargs == 2 && strcmp(argv[1], "set-root") == 0)
        return mfctl__connect(c) != 0 ? 1 : set_doc(c, "root", "/v1/admin/trust/root", argv[2]);
    if (nargs == 2 && strcmp(argv[1], "set-keys") == 0)
        return mfctl__connect(c) != 0 ? 1 : set_doc(c, "keys", "/v1/admin/trust/keys", argv[2]);
    (void)fprintf(c->err, "mfctl trust: expected status, set-root FILE or set-keys FILE\n%s",
                  c->cmd->usage);
    return 2;
}
