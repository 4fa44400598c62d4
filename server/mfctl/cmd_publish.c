/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Getting a model onto the server, in two steps that `publish` chains:
 *   mfctl upload NAME VERSION FILE      streams FILE as a staged version (not assignable)
 *   mfctl release NAME VERSION ENV      attaches a release envelope signed offline
 *   mfctl publish NAME VERSION FILE --release-key KEY.pem ...   signs locally, then both
 * FILE is read in two streaming passes, never held in memory: the first hashes it (whole
 * and per chunk), the second feeds the PUT body to libcurl. The server checks the upload
 * against X-MF-Sha256, so a file that changes between the passes is refused.
 */
#include "mfctl.h"
#include "mf_hex.h"
#include "cmd_keys.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RELEASE_MAX (1024u * 1024u) /* the server's cap on a release envelope */

struct upload {
    FILE *f;
    uint64_t sent;
    uint64_t size;
};

static long read_body(void *payload, void *buf, size_t len)
{
    struct upload *u = payload;
    size_t n = fread(buf, 1, len, u->f);

    if (n == 0 && ferror(u->f))
        return MF_E_IO;
    u->sent += n;
    return (long)n;
}

/* PUT with either an in-memory body or a streamed file; 200/201 are success. */
static int put(struct mfctl *c, struct mf_http_response *resp, const char *path,
               struct mf_http_request *req, const char *what)
{
    struct mf_dynbuf url;
    int err = mfctl__url(c, &url, path);

    if (err < 0)
        return err;
    req->method = "PUT";
    req->bearer = c->token;
    req->url = (const char *)url.data;
    err = mf_http__perform(&c->http, resp, req);
    if (err == MF_E_IO)
        err = mf_fail(&c->ctx, err, "read error in the middle of the upload");
    if (err >= 0 && resp->status != 200 && resp->status != 201)
        err = mf_http__fail_status(&c->http, resp, what);
    mf_dynbuf__free(&url);
    return err;
}

int mfctl__upload(struct mfctl *c, struct mf_http_response *resp, const char *name,
                  const char *version, FILE *f, uint64_t size, const char *sha_hex)
{
    char path[256], header[96];
    struct upload u = {.f = f, .size = size};
    struct mf_http_request req = {
        .content_type = "application/octet-stream",
        .extra_header = header,
        .source = read_body,
        .source_payload = &u,
        .upload_size = size,
        .no_timeout = 1, /* large models on slow links: only the stall limit applies */
    };
    int err;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s", name, version);
    (void)snprintf(header, sizeof(header), "X-MF-Sha256: %s", sha_hex);
    if (fseek(f, 0, SEEK_SET) != 0)
        return mf_fail(&c->ctx, MF_E_IO, "cannot rewind the model file");
    err = put(c, resp, path, &req, "upload");
    if (err >= 0 && u.sent != size)
        err = mf_fail(&c->ctx, MF_E_IO, "file changed during the upload (%llu of %llu bytes)",
                      (unsigned long long)u.sent, (unsigned long long)size);
    return err;
}

int mfctl__put_release(struct mfctl *c, struct mf_http_response *resp, const char *name,
                       const char *version, const void *env, size_t len)
{
    char path[256];
    struct mf_http_request req = {
        .content_type = "application/json",
        .body = env,
        .body_len = len,
    };

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s/release", name, version);
    return put(c, resp, path, &req, "release");
}

/* NAME and VERSION syntax, in the words of the protocol; 2 (usage) when wrong. */
int mfctl__check_names(struct mfctl *c, const char *name, const char *version)
{
    if (mfctl__name_ok(name) && mfctl__name_ok(version))
        return 0;
    (void)fprintf(c->err,
                  "mfctl %s: \"%s\" / \"%s\": NAME and VERSION must match [A-Za-z0-9._-]{1,64}\n",
                  c->cmd->name, name, version);
    return 2;
}

/* Opens FILE as a regular file; prints why not and returns NULL. */
FILE *mfctl__open_model(struct mfctl *c, const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    struct stat st;

    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        (void)fprintf(c->err, "mfctl %s: %s: not a readable regular file\n", c->cmd->name, path);
        if (f)
            (void)fclose(f);
        return NULL;
    }
    *size = (uint64_t)st.st_size;
    return f;
}

/* The arguments of upload and release: the common flags, then NAME VERSION and a file, named
 * `file` in the usage line. -1 when they are good (*json set), else the exit code. */
static int name_version_file(int *json, struct mfctl *c, int argc, char **argv, const char *file)
{
    int nargs, rc = mfctl__common_flags(c, argc, argv, json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs != 3) {
        (void)fprintf(c->err, "mfctl %s: expected NAME VERSION %s\n%s", c->cmd->name, file,
                      c->cmd->usage);
        return 2;
    }
    rc = mfctl__check_names(c, argv[1], argv[2]);
    return rc ? rc : -1;
}

int mfctl__cmd_upload(struct mfctl *c, int argc, char **argv)
{
    mf_manifest_release_spec spec = {.chunk_size = MFCTL_DEFAULT_CHUNK};
    struct mf_http_response resp;
    uint8_t(*chunks)[32] = NULL;
    char sha_hex[65];
    uint64_t size = 0;
    int json, rc, err;
    FILE *f;

    rc = name_version_file(&json, c, argc, argv, "FILE");
    if (rc >= 0)
        return rc;
    f = mfctl__open_model(c, argv[3], &size);
    if (!f)
        return 1;
    if (mfctl__connect(c) != 0) {
        (void)fclose(f);
        return 1;
    }
    mf_http__response_init(&resp, &c->http);
    err = mfctl__hash_model(&spec, &chunks, c, argv[3]);
    mf_free(&c->ctx.alloc, chunks);
    mf_hex__encode(sha_hex, spec.sha256, sizeof(spec.sha256));
    if (err >= 0)
        err = mfctl__upload(c, &resp, argv[1], argv[2], f, size, sha_hex);
    (void)fclose(f);
    if (err >= 0 && json)
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "{}");
    else if (err >= 0)
        (void)fprintf(c->out, "uploaded %s %s (%llu bytes, sha256 %s)%s; staged until released\n",
                      argv[1], argv[2], (unsigned long long)size, sha_hex,
                      resp.status == 200 ? ", already present" : "");
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__cmd_release(struct mfctl *c, int argc, char **argv)
{
    struct mf_http_response resp;
    char *env = NULL;
    size_t len = 0;
    int json, rc, err;

    rc = name_version_file(&json, c, argc, argv, "ENVELOPE");
    if (rc >= 0)
        return rc;
    if (mfctl__connect(c) != 0)
        return 1;
    mf_http__response_init(&resp, &c->http);
    err = mfctl__read_file(&env, &len, c, argv[3], RELEASE_MAX);
    if (err >= 0)
        err = mfctl__put_release(c, &resp, argv[1], argv[2], env, len);
    mf_free(&c->ctx.alloc, env);
    if (err >= 0)
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "{}");
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}
