/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET|HEAD /ui/<path>: the web console's static files (docs/console.md), served from the
 * directory the server was given (env->ui_root: `serve --ui-dir`, by default the install's
 * share/modelferry/ui beside the program). Same origin as the admin API, so the page's
 * fetches carry its admin token and nothing else needs running.
 *
 * The path is checked before the file system sees it: segments of [A-Za-z0-9._-] only, none
 * empty or starting with '.', so "..", hidden files, "//", backslashes and escapes never
 * reach open(); the file is opened with O_NOFOLLOW and must be a regular file. Anything
 * else, an unknown extension included, is 404. Files are sent from their fd (no copy into
 * memory). Vite names what it builds under assets/ by content hash, so those are cached for
 * a year as immutable; everything else (index.html) must be revalidated, so a new install is
 * seen at the next load.
 */
#include "handlers/handlers.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UI_PATH_MAX 200

static const struct {
    const char *ext;
    const char *type;
} ui_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

/* The Content-Type of `path` by its extension; NULL when the console has no such file. */
static const char *ui_type(const char *path)
{
    const char *dot = strrchr(path, '.');

    for (size_t i = 0; dot && i < sizeof(ui_types) / sizeof(ui_types[0]); i++)
        if (strcmp(dot, ui_types[i].ext) == 0)
            return ui_types[i].type;
    return NULL;
}

int mf_handlers__ui_path_ok(const char *path)
{
    size_t seg = 0, n = 0;

    for (const char *p = path; *p; p++, n++) {
        char c = *p;

        if (n >= UI_PATH_MAX)
            return 0;
        if (c == '/') {
            if (seg == 0)
                return 0; /* empty segment: a leading, doubled or trailing '/' */
            seg = 0;
            continue;
        }
        if (seg == 0 && c == '.')
            return 0; /* ".", "..", hidden files */
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
        seg++;
    }
    return seg > 0;
}

static void ui_headers(struct mf_httpd_req *r, const char *path, const char *type)
{
    int immutable = strncmp(path, "assets/", 7) == 0;

    mf_httpd__reply_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mf_httpd__reply_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
                           immutable ? "public, max-age=31536000, immutable" : "no-cache");
    mf_httpd__reply_header(r, "X-Content-Type-Options", "nosniff");
    mf_httpd__reply_header(r, "X-Frame-Options", "DENY");
    mf_httpd__reply_header(r, "Referrer-Policy", "no-referrer");
    /* Only this origin: no outside host can serve a script, style, font or image to it. */
    mf_httpd__reply_header(r, "Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data: blob:; "
                           "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
}

int mf_handlers__ui_get(struct mf_httpd_req *r)
{
    const char *path = r->params[0][0] ? r->params[0] : "index.html";
    const char *type = ui_type(path);
    char file[4096 + UI_PATH_MAX + 2];
    struct stat st;
    int fd, n;

    if (!r->env->ui_root[0])
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND,
                                     "this server has no console installed (serve --ui-dir)");
    if (!mf_handlers__ui_path_ok(path) || !type)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no console file '/ui/%.200s'", path);
    n = snprintf(file, sizeof(file), "%s/%s", r->env->ui_root, path);
    if (n < 0 || (size_t)n >= sizeof(file))
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no console file '/ui/%s'", path);
    fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        (void)close(fd);
        fd = -1;
    }
    if (fd < 0)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no console file '/ui/%s'", path);
    /* The fd becomes MHD's: closed when the response is destroyed. */
    r->resp = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r->resp) {
        (void)close(fd);
        return mf_fail(&r->ctx, MF_E_NOMEM, "cannot create a file response");
    }
    r->status = MHD_HTTP_OK;
    r->resp_bytes = (uint64_t)st.st_size;
    ui_headers(r, path, type);
    return MF_OK;
}

int mf_handlers__ui_redirect(struct mf_httpd_req *r)
{
    int err = mf_httpd__reply_empty(r, MHD_HTTP_MOVED_PERMANENTLY);

    mf_httpd__reply_header(r, MHD_HTTP_HEADER_LOCATION, "/ui/");
    return err;
}
