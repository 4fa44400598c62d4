/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server as a library: `init` prepares a data directory, `start` serves it on a listening
 * address until `stop`. main.c is a thin CLI over this; the integration tests drive the
 * same functions in-process.
 *
 * Data directory layout:
 *   DIR/store.db (+ -wal, -shm)   SQLite store
 *   DIR/blobs/<2 hex>/<sha256>     blobs
 *   DIR/blobs/tmp/                 uploads in flight
 *   DIR/admin.token, DIR/enroll.token   first tokens, mode 0600
 *   DIR/director.key (0600), DIR/director.pub.pem   the online director key (director.h)
 */
#ifndef MF_SERVER_APP_SERVER_H
#define MF_SERVER_APP_SERVER_H

#include "mf_ctx.h"

#include <limits.h>
#include <stdint.h>

#define MF_SERVER_DEFAULT_MAX_UPLOAD (8ULL << 30) /* 8 GiB (docs/protocol.md) */
/* conn_per_addr: a thirty-second of the connections served, at least 16 (docs/operations.md). */
#define MF_SERVER_CONN_PER_ADDR_AUTO UINT_MAX

struct mf_server_options {
    const char *data_dir;    /* required */
    const char *listen;      /* "127.0.0.1:PORT" or "[::1]:PORT"; PORT 0 = ephemeral */
    const char *store_url;   /* NULL: sqlite:<data_dir>/store.db */
    uint64_t max_upload;     /* bytes per model upload */
    unsigned conn_timeout_s; /* idle connection timeout */
    unsigned conn_limit;     /* served at once; beyond: 503 (http/http_conns.h) */
    unsigned threads;        /* MHD worker threads; 0: one per core (2..64) with the check-in
                              * stage, else the store's default_threads */
    unsigned checkin_batch;  /* check-ins grouped per store call, 1-64; 0: 64 (checkin_batch.h) */
    mf_log_fn log_fn;        /* may be NULL */
    void *log_payload;
    /* TLS served natively (GnuTLS inside libmicrohttpd): both PEM paths, or both NULL. */
    const char *tls_cert;
    const char *tls_key;
    double device_rate;  /* per-device requests per second; <= 0 disables the limit */
    double device_burst; /* per-device bucket size */
    int delta_worker;    /* 1: run the delta precompute thread on this node (default) */
    unsigned delta_k;    /* previous releases each new release is diffed from */
    /* Appended: offload (docs/operations.md, "Offload"); NULL: no teachers, no policies
     * (the device routes still store samples). Labelling runs on the delta worker. */
    const char *offload_config;
    /* Appended: the distillation loop (docs/distill.md); NULL: no runs. The runs execute
     * on a second background thread of nodes with delta_worker on. */
    const char *distill_config;
    /* Appended: assignments one director signature may cover (director/director.h), 1..64;
     * 1 signs each alone, as agents older than batch signatures need. Default 32. */
    unsigned sign_batch;
    /* Appended: 1 runs check-ins on the check-in stage (director/checkin_stage.h: MHD
     * workers hand them over and serve on), 0 in the MHD workers themselves. Default 1. */
    int checkin_stage;
    /* Appended: device credentials the node keeps verified (http/http_credcache.h); 0: the
     * default, MF_CREDCACHE_SLOTS. */
    size_t credential_cache;
    /* Appended: the connection rules (http/http_conns.h; docs/operations.md "Connections"),
     * which close connections that bytes trickling in would otherwise keep open. 0 turns
     * each off. Defaults: headers within 30 s, bodies at 64 bytes/s or more over each 20 s,
     * MF_SERVER_CONN_PER_ADDR_AUTO connections per client address. */
    unsigned header_timeout_s;   /* whole request header within, from accept or last reply */
    unsigned body_min_rate;      /* bytes/s a request body must average over each window */
    unsigned body_rate_window_s; /* that window, >= 1 when there is a rate */
    unsigned conn_per_addr;      /* connections served per client address */
    /* Appended: seconds after its commit an unreferenced blob counts as an orphan, for the
     * sweep at start and on demand (blob/blob_gc.h); 0: MF_BLOBGC_GRACE_S. */
    int64_t blob_grace_s;
    /* Appended: the audit log's bound (docs/operations.md, "Audit log"): rows older than
     * audit_keep_s seconds and beyond the newest audit_keep_rows go, at most every
     * MF_SERVER_AUDIT_PRUNE_S on nodes with the delta worker. 0: MF_SERVER_AUDIT_KEEP_S,
     * MF_SERVER_AUDIT_KEEP_ROWS. */
    int64_t audit_keep_s;
    int64_t audit_keep_rows;
    /* Appended: webhook delivery (docs/operations.md, "Webhooks"; webhooks/webhook_sender.h).
     * webhook_sender 1 (default) runs the delivery thread on this node; webhook_retry_s is
     * the wait after a first failed attempt, doubled per attempt (0: 5 s). */
    int webhook_sender;
    unsigned webhook_retry_s;
    /* Appended: the web console's files (docs/console.md), served at /ui/. NULL: the
     * install's share/modelferry/ui beside the program (../share/modelferry/ui from its
     * directory), when it exists; else /ui/ answers 404. */
    const char *ui_dir;
};

#define MF_SERVER_AUDIT_KEEP_S (400 * 86400) /* a year and a month, for yearly reviews */
#define MF_SERVER_AUDIT_KEEP_ROWS 1000000    /* rows; some 300 MB at most */
#define MF_SERVER_AUDIT_PRUNE_S 600          /* between two prunes of one node */

/* Fills defaults (listen 127.0.0.1:8080, 8 GiB uploads, 30 s, 4096 connections, threads one
 * per core (by store without the check-in stage: SQLite 4, PostgreSQL 16), 5 requests/s per device
 * with bursts of 30, the delta worker on with K = 3, director batches of up to 32, the check-in
 * stage, the connection rules above). */
void mf_server__options_init(struct mf_server_options *o);

/*
 * Creates or completes the data directory: directories, store with migrations, the first
 * admin and enrollment tokens when none exist, a director key when there is none. *changed_out is 0
 * when nothing had to be done (a second init). `store_url` NULL or "": the embedded SQLite store
 * DIR/store.db; else that store (postgresql://...) is migrated and seeded. MF_E_IO or the
 * store's errors.
 */
int mf_server__init_data_dir(int *changed_out, struct mf_ctx *ctx, const char *data_dir,
                             const char *store_url);

struct mf_server;

/* Opens the store (which must exist: run init first), sweeps stale uploads and starts
 * serving. MF_E_INVALID for a malformed listen address, a TLS option without its pair or a
 * body rate without a window,
 * MF_E_STATE when TLS is asked of a libmicrohttpd built without it, MF_E_IO when binding or
 * reading a TLS file fails.
 * Ownership: release with mf_server__stop(). */
int mf_server__start(struct mf_server **out, struct mf_ctx *ctx, const struct mf_server_options *o);

/* The port actually bound (the ephemeral one for PORT 0). */
uint16_t mf_server__port(const struct mf_server *s);

/* The connections served at once: conn_limit, or fewer when the open file limit could not
 * be raised enough for it (logged at start). */
unsigned mf_server__conn_limit(const struct mf_server *s);

/* Stops accepting, waits for the workers, closes the store. NULL is a no-op. */
void mf_server__stop(struct mf_server *s);

/* Parses "HOST:PORT" / "[V6]:PORT" into a socket address. MF_OK or MF_E_INVALID. */
struct sockaddr_storage;
int mf_server__parse_listen(struct sockaddr_storage *out, struct mf_ctx *ctx, const char *spec);

#endif /* MF_SERVER_APP_SERVER_H */
