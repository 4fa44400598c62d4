/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl publish NAME VERSION FILE: two streaming passes over FILE, never holding it in
 * memory. The first computes the SHA-256 (mbedTLS), the second feeds the PUT body to
 * libcurl chunk by chunk. The server checks the upload against X-MF-Sha256, so a file
 * that changes between the passes is refused rather than published.
 */
#include "mfctl.h"

#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <string.h>
#include <sys/stat.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#define sha256_starts mbedtls_sha256_starts
#define sha256_update mbedtls_sha256_update
#define sha256_finish mbedtls_sha256_finish
#else
#define sha256_starts mbedtls_sha256_starts_ret
#define sha256_update mbedtls_sha256_update_ret
#define sha256_finish mbedtls_sha256_finish_ret
#endif

#define CHUNK (64u * 1024u)

struct upload {
    FILE *f;
    uint64_t sent;
    uint64_t size;
};

static int hash_file(struct mfctl *c, char *hex_out, FILE *f, const char *path)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t *buf = mf_alloc(&c->ctx.alloc, CHUNK);
    mbedtls_sha256_context sha;
    uint8_t d[32];
    size_t n;
    int err = MF_OK;

    if (!buf)
        return mf_fail(&c->ctx, MF_E_NOMEM, "no memory to hash %s", path);
    mbedtls_sha256_init(&sha);
    if (sha256_starts(&sha, 0) != 0)
        err = mf_fail(&c->ctx, MF_E_GENERIC, "SHA-256 init failed");
    while (err >= 0 && (n = fread(buf, 1, CHUNK, f)) > 0) {
        if (sha256_update(&sha, buf, n) != 0)
            err = mf_fail(&c->ctx, MF_E_GENERIC, "SHA-256 update failed");
    }
    if (err >= 0 && ferror(f))
        err = mf_fail(&c->ctx, MF_E_IO, "cannot read %s", path);
    if (err >= 0 && sha256_finish(&sha, d) != 0)
        err = mf_fail(&c->ctx, MF_E_GENERIC, "SHA-256 finish failed");
    mbedtls_sha256_free(&sha);
    mf_free(&c->ctx.alloc, buf);
    for (int i = 0; err >= 0 && i < 32; i++) {
        hex_out[2 * i] = digits[d[i] >> 4];
        hex_out[2 * i + 1] = digits[d[i] & 15];
    }
    hex_out[64] = '\0';
    return err;
}

static long read_body(void *payload, void *buf, size_t len)
{
    struct upload *u = payload;
    size_t n = fread(buf, 1, len, u->f);

    if (n == 0 && ferror(u->f))
        return MF_E_IO;
    u->sent += n;
    return (long)n;
}

static int put_file(struct mfctl *c, struct mf_http_response *resp, const char *name,
                    const char *version, FILE *f, uint64_t size, const char *sha_hex)
{
    char path[256], header[96];
    struct upload u = {.f = f, .size = size};
    struct mf_http_request req = {
        .method = "PUT",
        .bearer = c->token,
        .content_type = "application/octet-stream",
        .extra_header = header,
        .source = read_body,
        .source_payload = &u,
        .upload_size = size,
        .no_timeout = 1, /* large models on slow links: only the stall limit applies */
    };
    struct mf_dynbuf url;
    int err;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s", name, version);
    (void)snprintf(header, sizeof(header), "X-MF-Sha256: %s", sha_hex);
    err = mfctl__url(c, &url, path);
    if (err < 0)
        return err;
    req.url = (const char *)url.data;
    err = mf_http__perform(&c->http, resp, &req);
    if (err == MF_E_IO)
        err = mf_fail(&c->ctx, err, "read error in the middle of the upload");
    if (err >= 0 && resp->status != 200 && resp->status != 201)
        err = mf_http__fail_status(&c->http, resp, "publish");
    if (err >= 0 && u.sent != size)
        err = mf_fail(&c->ctx, MF_E_IO, "file changed during the upload (%llu of %llu bytes)",
                      (unsigned long long)u.sent, (unsigned long long)size);
    mf_dynbuf__free(&url);
    return err;
}

int mfctl__cmd_publish(struct mfctl *c, int argc, char **argv)
{
    struct mf_http_response resp;
    char sha_hex[65];
    struct stat st;
    int json, nargs, rc, err;
    FILE *f;

    rc = mfctl__common_flags(c, argc, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (nargs != 3) {
        (void)fprintf(c->err, "mfctl publish: expected NAME VERSION FILE\n%s", c->cmd->usage);
        return 2;
    }
    if (!mfctl__name_ok(argv[1]) || !mfctl__name_ok(argv[2])) {
        (void)fprintf(c->err,
                      "mfctl publish: \"%s\" / \"%s\": NAME and VERSION must match "
                      "[A-Za-z0-9._-]{1,64}\n",
                      argv[1], argv[2]);
        return 2;
    }
    f = fopen(argv[3], "rb");
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        (void)fprintf(c->err, "mfctl publish: %s: not a readable regular file\n", argv[3]);
        if (f)
            (void)fclose(f);
        return 1;
    }
    if (mfctl__connect(c) != 0) {
        (void)fclose(f);
        return 1;
    }
    mf_http__response_init(&resp, &c->http);
    err = hash_file(c, sha_hex, f, argv[3]);
    if (err >= 0 && fseek(f, 0, SEEK_SET) != 0)
        err = mf_fail(&c->ctx, MF_E_IO, "cannot rewind %s", argv[3]);
    if (err >= 0)
        err = put_file(c, &resp, argv[1], argv[2], f, (uint64_t)st.st_size, sha_hex);
    (void)fclose(f);
    if (err >= 0 && json)
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "{}");
    else if (err >= 0)
        (void)fprintf(c->out, "published %s %s (%llu bytes, sha256 %s)%s\n", argv[1], argv[2],
                      (unsigned long long)st.st_size, sha_hex,
                      resp.status == 200 ? ", already present" : "");
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}
