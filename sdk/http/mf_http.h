/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one libcurl adapter shared by libmf (device) and mfctl (ops CLI), static
 * library mf_http. One easy handle per owner (connections are reused between requests),
 * http/https only, no redirects, bounded bodies, connect/request timeouts and a low-speed
 * stall limit. Failures are recorded on the owner's mf_ctx with mf_fail().
 */
#ifndef MF_HTTP_H
#define MF_HTTP_H

#include "mf_ctx.h"
#include "mf_dynbuf.h"

#include <stdint.h>

struct mf_http_config {
    long connect_timeout_ms; /* 0: libcurl default */
    long request_timeout_ms; /* whole-request cap for JSON calls; 0: none */
    long low_speed_bytes;    /* abort below this rate ... */
    long low_speed_time_s;   /* ... sustained this long (0: no stall limit) */
    size_t max_body;         /* cap on collected (non-streamed) response bodies */
    const char *ca_file;     /* NULL: system store */
};

/* Streams a 2xx body; returns MF_OK or a negative mf_err after mf_fail() (aborts). */
typedef int (*mf_http_sink_fn)(void *payload, const void *data, size_t len);
/* Fills up to `len` bytes of a streamed request body; 0 at the end, < 0 to abort. */
typedef long (*mf_http_source_fn)(void *payload, void *buf, size_t len);

struct mf_http_request {
    const char *method; /* "GET", "POST", "PUT" */
    const char *url;
    const char *bearer;       /* NULL: no Authorization header */
    const char *content_type; /* NULL: none */
    const char *extra_header; /* one "Name: value" line or NULL */
    const void *body;         /* in-memory body (body_len bytes) ... */
    size_t body_len;
    mf_http_source_fn source; /* ... or a streamed one of upload_size bytes */
    void *source_payload;
    uint64_t upload_size;
    mf_http_sink_fn sink; /* NULL: every body is collected into the response */
    void *sink_payload;
    long sink_status;      /* only a body with this status goes to the sink (0: 200) ... */
    long sink_status_alt;  /* ... or with this one (0: none), e.g. 200 and 206 */
    uint64_t max_download; /* with sink: bytes beyond this abort with MF_E_LIMIT; 0: none */
    int no_timeout;        /* 1 for bulk transfers: only the stall limit applies */
    /* Ranged GET: with range_from > 0, "Range: bytes=<range_from>-" is sent, plus
     * "If-Range: <if_range>" when if_range is set (an ETag, quotes included). */
    uint64_t range_from;
    const char *if_range;
    long long max_recv_bytes_per_s; /* bandwidth cap of this transfer; 0: none */
    /* libcurl's receive buffer (CURLOPT_BUFFERSIZE) for this transfer, so a bulk download
     * reaches the sink in pieces this large (one recv and one sink call each); 0: libcurl's
     * 16 KiB. A fixed allocation of libcurl's, made once per transfer. */
    long recv_buffer;
};

/* Response headers the caller may need, captured while the response arrives. */
#define MF_HTTP_ETAG_MAX 80
struct mf_http_headers {
    long status;                                   /* from the status line */
    char etag[MF_HTTP_ETAG_MAX + 1];               /* "" when absent or too long */
    int has_content_range;                         /* 1 when a Content-Range header arrived */
    uint64_t range_first, range_last, range_total; /* "bytes a-b/n" (total 0 when "*") */
    int range_ok; /* 1 when Content-Range parsed as "bytes a-b/n" */
};

struct mf_http_response {
    long status;           /* HTTP status, 0 before a response */
    struct mf_dynbuf body; /* collected body (not the sink's), bounded by max_body */
};

struct mf_http {
    struct mf_ctx *ctx;
    struct mf_http_config cfg;
    void *curl; /* CURL * (kept opaque so includers need no curl headers) */
    char curl_err[256];
    /* Headers of the running or last response (valid once its body starts); kept on the
     * handle, not the response, so callers' frames stay small. */
    struct mf_http_headers headers;
};

/* MF_OK or MF_E_NOMEM. `ctx` and `cfg->ca_file` are borrowed for the handle's life. */
int mf_http__init(struct mf_http *h, struct mf_ctx *ctx, const struct mf_http_config *cfg);
/* Closes the libcurl handle with its connection (and libcurl's internal descriptors). The
 * handle stays usable: the next mf_http__perform() opens a new one. */
void mf_http__cleanup(struct mf_http *h);

void mf_http__response_init(struct mf_http_response *r, struct mf_http *h);
void mf_http__response_free(struct mf_http_response *r);

/*
 * Runs one request. MF_OK when a response arrived (whatever its status: check
 * resp->status); MF_E_NET for transport failures and truncated bodies, MF_E_LIMIT for an
 * over-long body, or the code a sink returned.
 */
int mf_http__perform(struct mf_http *h, struct mf_http_response *resp,
                     const struct mf_http_request *req);

/*
 * Turns a non-2xx response into an error: 401/403 -> MF_E_AUTH, 404 -> MF_E_NOTFOUND,
 * 413 -> MF_E_LIMIT, other -> MF_E_NET. The message names `what`, the status and the
 * server's {"message"} when the body has one.
 */
int mf_http__fail_status(struct mf_http *h, const struct mf_http_response *resp, const char *what);

/*
 * Parses one raw header line (as libcurl delivers it, CRLF included) into `hd`: ETag and
 * Content-Range; other lines are ignored. Exposed for the unit tests and the fuzz target.
 */
void mf_http__parse_header(struct mf_http_headers *hd, const char *line, size_t len);

#endif /* MF_HTTP_H */
