/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON requests to the server. Request bodies are built by hand into bounded buffers from
 * the agent's allocator (so allocator fault injection covers them); every string goes
 * through mf_agent__json_str(), which escapes what JSON requires.
 */
#include "mf_agent_int.h"
#include "mf_name_chars.h"

#include <string.h>

int mf_agent__name_ok(const char *s)
{
    /* The character class is the server's (sdk/core/name_chars.c); "." and ".." would be path
     * steps in the state directory. */
    return mf_name__chars_ok(s, MF_AGENT_NAME_MAX) && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int mf_agent__json_str(struct mf_dynbuf *b, const char *s)
{
    int err = mf_dynbuf__append(b, "\"", 1);

    for (; *s && err >= 0; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            err = mf_dynbuf__appendf(b, "\\%c", c);
        else if (c < 0x20)
            err = mf_dynbuf__appendf(b, "\\u%04x", c);
        else
            err = mf_dynbuf__append(b, s, 1);
    }
    if (err >= 0)
        err = mf_dynbuf__append(b, "\"", 1);
    return err;
}

int mf_agent__url(struct mf_agent *a, struct mf_dynbuf *url, const char *path)
{
    int err;

    mf_dynbuf__init(url, &a->ctx.alloc, 2048);
    err = mf_dynbuf__appendf(url, "%s%s", a->server_url, path);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot build the URL for %s", path);
    return MF_OK;
}

int mf_agent__post_json(struct mf_agent *a, struct mf_http_response *resp, const char *path,
                        const struct mf_dynbuf *body, int auth, const char *what)
{
    struct mf_http_request req = {
        .method = "POST",
        .bearer = auth ? a->credential : NULL,
        .content_type = "application/json",
        .body = body->data,
        .body_len = body->len,
    };
    struct mf_dynbuf url;
    int err;

    err = mf_agent__url(a, &url, path);
    if (err < 0)
        return err;
    req.url = (const char *)url.data;
    err = mf_http__perform(&a->http, resp, &req);
    if (err >= 0 && (resp->status < 200 || resp->status > 299))
        err = mf_http__fail_status(&a->http, resp, what);
    mf_dynbuf__free(&url);
    return err;
}
