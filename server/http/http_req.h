/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One HTTP request as the router and the handlers see it. Everything a request allocates
 * hangs off this struct and is released in one place when MHD reports the request complete
 * (http_router.c), so no handler path can leak (STYLE rule 25).
 */
#ifndef MF_SERVER_HTTPD_REQ_H
#define MF_SERVER_HTTPD_REQ_H

#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdint.h>
#include <time.h>

#define MF_HTTPD_JSON_MAX (64 * 1024) /* request body cap: 413 above (docs/protocol.md) */
#define MF_HTTPD_MAX_PARAMS 3

struct mf_blob_upload;
struct mf_httpd_conns;
struct mf_httpd_conn;
struct mf_director;
struct mf_metrics;
struct mf_ratelimit;
struct mf_delta_worker;
struct mf_offload_srv;
struct mf_ccache;
struct mf_credcache;
struct mf_checkin_stage;

/* What the handlers share for the server's lifetime; read-only once serving. */
struct mf_httpd_env {
    struct mf_store *store;
    struct mf_director *director; /* signs assignments (director/director.h) */
    char blob_root[4096];
    char ui_root[4096]; /* the console's files (handlers/ui.c); "": none installed */
    uint64_t max_upload;
    unsigned poll_interval_s; /* the fleet default a check-in answers (a group's wins) ... */
    unsigned poll_jitter_pct; /* ... and its jitter, +-% (docs/protocol.md, "Poll interval") */
    mf_log_fn log_fn;
    void *log_payload;
    /* Shared mutable state; each synchronises itself. */
    struct mf_metrics *metrics;
    struct mf_ratelimit *ratelimit;    /* per-device token buckets */
    struct mf_delta_worker *deltas;    /* woken when a release lands; may be NULL */
    struct mf_offload_srv *offload;    /* teachers and policies; NULL: none configured */
    struct mf_ccache *ccache;          /* check-ins' reads of rare changes (checkin_cache.h) */
    struct mf_checkin_batch *checkins; /* check-ins' store work, grouped (checkin_batch.h) */
    struct mf_credcache *creds;        /* device credentials seen (http_credcache.h); may be NULL */
    struct mf_credcache *released;     /* blob digests a release named, recently (blobs.c) */
    int64_t blob_grace_s;              /* an unreferenced blob is an orphan after it (blob_gc.h) */
    struct mf_distill_jobs *distill;   /* the loop's runs; NULL: no distill config */
    struct mf_httpd_conns *conns;      /* open connections vs the limit; NULL: no limit */
    struct mf_checkin_stage *stage;    /* check-ins run off the MHD workers; NULL: inline */
    /* The routing table the router matches (handlers/routes.c), given by the server so the
     * router needs nothing from the handlers it calls. */
    const struct mf_httpd_route *routes;
    size_t n_routes;
};

enum mf_httpd_auth {
    MF_HTTPD_AUTH_NONE,
    MF_HTTPD_AUTH_DEVICE,
    MF_HTTPD_AUTH_ADMIN,
    MF_HTTPD_AUTH_DEVICE_OR_ADMIN
};

enum mf_httpd_body {
    MF_HTTPD_BODY_NONE,  /* no body expected; handled as soon as the headers are in */
    MF_HTTPD_BODY_JSON,  /* collected (capped) and parsed into req->json before handle() */
    MF_HTTPD_BODY_STREAM /* fed chunk by chunk to on_data(), then handle() */
};

struct mf_httpd_req;

/* A handler either builds a reply with mf_httpd__reply_*() and returns MF_OK, or returns a
 * negative mf_err with the message in req->ctx: the router answers 500 and logs it. */
typedef int (*mf_httpd_handler_fn)(struct mf_httpd_req *req);
typedef int (*mf_httpd_data_fn)(struct mf_httpd_req *req, const char *data, size_t len);

struct mf_httpd_route {
    const char *method;  /* "GET" also serves HEAD */
    const char *pattern; /* literal segments, "{}" one segment, "{*}" the rest of the path */
    enum mf_httpd_auth auth;
    enum mf_httpd_body body;
    mf_httpd_handler_fn on_begin; /* STREAM only: after auth, before any body byte; may reply */
    mf_httpd_data_fn on_data;     /* STREAM only: may reply, which discards the rest */
    mf_httpd_handler_fn handle;   /* once the request is complete */
    /* Admin routes: the token roles (enum mf_store_role bits) allowed. The router denies
     * any other role with 403 before the handler runs. */
    unsigned roles;
    size_t max_body; /* JSON routes: body cap in bytes; 0 means MF_HTTPD_JSON_MAX */
    /* Device routes whose handler verifies the credential again in its first store
     * statement (req->cred_hash) and answers 401 when it no longer holds: the router may
     * then take the device id from the node's credential cache (http_credcache.h). */
    int verifies_credential;
    /* Read-only device routes that reach no store (blob downloads): a credential the store
     * verified at most MF_CREDCACHE_RECENT_S ago comes from the cache (http_credcache.h). */
    int trusts_recent_auth;
};

struct mf_httpd_req {
    struct mf_ctx ctx; /* per-request allocator and error message */
    const struct mf_httpd_env *env;
    struct MHD_Connection *conn;
    const struct mf_httpd_route *route;
    const char *method;
    char *url;                               /* copy of the URL path, for the log line */
    char *path;                              /* copy of the URL path, params point into it */
    const char *params[MF_HTTPD_MAX_PARAMS]; /* captures of the route pattern */
    char device_id[MF_STORE_NAME_SIZE];      /* authenticated device; "" otherwise */
    uint8_t cred_hash[MF_SHA256_LEN];        /* its credential's hash (wiped at the end) */
    int is_admin;                            /* authenticated with an admin token */
    int role;                                /* that token's role (enum mf_store_role) */
    /* That token's id (hex of its hash's first 8 bytes) and name, for the audit row. */
    char token_id[MF_STORE_TOKEN_ID_LEN + 1];
    char token_name[MF_STORE_NAME_SIZE];
    int is_head;
    struct mf_dynbuf body; /* JSON body, capped at MF_HTTPD_JSON_MAX */
    int body_too_large;
    cJSON *json;                   /* parsed body (JSON routes) */
    struct mf_blob_upload *upload; /* STREAM routes: the temp blob */
    const char *expect_sha256;     /* STREAM routes: X-MF-Sha256, if any */
    struct MHD_Response *resp;     /* built reply, queued by the router */
    unsigned status;
    uint64_t resp_bytes;
    int queued;
    struct timespec started;
    struct mf_httpd_conn *conn_mark; /* the connection rules' entry (http_conns.h); may be NULL */
    /* A handler that hands the request to a stage thread (director/checkin_stage.h) sets
     * `suspended` and suspends the connection; from then until MHD calls the access handler
     * again after the resume, only that thread touches the request. It leaves either a
     * reply (resp), a JSON text to answer 200 with (stage_text, stage_len; from
     * mf_alloc(NULL)), or an error (stage_err, message in ctx). */
    int suspended;
    int stage_err;
    char *stage_text;
    size_t stage_len;
    void *stage_data;                /* the stage's own state for this request */
    struct mf_httpd_req *stage_next; /* the stage's queue */
};

/* Request header value or NULL. Borrowed from MHD for the request's lifetime. */
const char *mf_httpd__header(const struct mf_httpd_req *r, const char *name);

/* Builds the reply (replacing none: the first reply wins). `body` is consumed. */
int mf_httpd__reply_json(struct mf_httpd_req *r, unsigned status, cJSON *body);
/* The same for a body already written as JSON text (len bytes from mf_alloc(NULL)), which
 * the reply takes over: MHD sends it from there and frees it. */
int mf_httpd__reply_json_text(struct mf_httpd_req *r, unsigned status, char *text, size_t len);
/* The error body of docs/protocol.md; the short code follows from `status`. */
int mf_httpd__reply_error(struct mf_httpd_req *r, unsigned status, const char *fmt, ...)
    MF_PRINTF(3, 4);
int mf_httpd__reply_empty(struct mf_httpd_req *r, unsigned status);
/* A reply of `len` bytes copied from `p` with Content-Type `ctype`. */
int mf_httpd__reply_bytes(struct mf_httpd_req *r, unsigned status, const void *p, size_t len,
                          const char *ctype);
/* Adds a header to the built reply (no-op without one). */
void mf_httpd__reply_header(struct mf_httpd_req *r, const char *name, const char *value);

/* Checks the route's auth kind and role; replies 401 (no or bad credential), 403 (a role
 * the route does not allow) or 429 (device over its rate) and returns MF_E_AUTH then. */
int mf_httpd__authenticate(struct mf_httpd_req *r);
/* For a route that verifies_credential: the store found the credential no longer valid;
 * forgets it in the credential cache and answers 401 as authentication would. Returns
 * MF_E_AUTH once the reply is built. */
int mf_httpd__deny_credential(struct mf_httpd_req *r);

/* Writes the audit row of an admin request as it is answered (http_audit.c): for every
 * POST, PUT and DELETE of a route with admin auth, whatever the answer (a 401 or 403 too),
 * with the token's id and name, the route, its ids and the status. Reads change nothing and
 * are not recorded (a /metrics scrape or a watched status would drown the log). A failed
 * write is logged with the row's fields: the action happened either way. */
int mf_httpd__audited(const struct mf_httpd_route *rt, const char *method);
void mf_httpd__audit(struct mf_httpd_req *r);

/* MHD callbacks (http_router.c); `cls` is the struct mf_httpd_env. */
/*
 * MHD_OPTION_UNESCAPE_CALLBACK: decodes %HH in the path and query arguments like MHD's own,
 * except that an escape decoding to NUL (%00) is left as the three characters "%00". MHD
 * hands the handler a C string, so a decoded NUL would cut the path short
 * ("/v1/blobs/<sha>%00x" would reach the blob route as a valid name); kept literal, the '%'
 * fails every name check instead. Returns the new length.
 */
size_t mf_httpd__unescape(void *cls, struct MHD_Connection *conn, char *s);
enum MHD_Result mf_httpd__on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls);
void mf_httpd__on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe);

#endif /* MF_SERVER_HTTPD_REQ_H */
