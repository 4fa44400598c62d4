/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-server in-process on loopback (ephemeral port) for the server suites: the group set-up
 * makes a data dir with a director key, starts the server with the delta worker, reads the
 * admin and enrolment tokens, makes an ops ("alice"), a data ("bob") and a to-be-revoked
 * admin ("gone") token, enrolls cam-a, and builds the models v1 and v2 of "det" (v2 is v1
 * with 1% of its bytes changed, so a delta pays off). Calls go through libcurl.
 */
#ifndef MF_SERVER_FIXTURE_H
#define MF_SERVER_FIXTURE_H

#include "manifest_fixture.h"
#include "app/server.h"
#include "common/token.h"

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#define MODEL_SIZE (256 * 1024)
#define NONCE "0123456789abcdef0123456789abcdef"

struct srvfx {
    char dir[64], data[96];
    char admin[MF_TOKEN_LEN + 1], enroll[MF_TOKEN_LEN + 1];
    char ops[MF_TOKEN_LEN + 1], datat[MF_TOKEN_LEN + 1], revoked[MF_TOKEN_LEN + 1];
    char device[MF_TOKEN_LEN + 1];
    struct mf_server *srv;
    uint16_t port;
    uint8_t v1[MODEL_SIZE], v2[MODEL_SIZE];
    char sha1[65], sha2[65];
    int released;
};

/* The server of the group and its credentials; the signing keys of its trust documents. */
extern struct srvfx srvfx;
extern struct fx srvfx_world;

struct srvfx_resp {
    long status;
    char *body; /* free() */
    size_t len;
    char retry_after[16];
};

/* A scratch dir /tmp/`tag`.XXXXXX in `dir` whose data/ (`data`) is as `mf-server init
 * --director-key` leaves it, the key being `world`'s K_DIR (a second init is refused);
 * SIGPIPE ignored and libcurl initialised for the calls. */
void srvfx_make_data_dir(char dir[64], char data[96], struct fx *world, const char *tag);
int srvfx_group_setup(void **state);
/* srvfx_group_setup(), then srvfx_publish_det(): the variant suites' start. */
int srvfx_det_setup(void **state);
int srvfx_group_teardown(void **state);

/* A libcurl handle for one loopback call to `url`: a 20 s timeout, no signals, the body to
 * `body_fn` and each header line to `header_fn`, both given `payload`. Fails the test when
 * libcurl cannot make one. */
CURL *srvfx_curl_new(const char *url, curl_write_callback body_fn, curl_write_callback header_fn,
                     void *payload);
/* One request to 127.0.0.1:`port`; `extra` is one more header or NULL. */
void srvfx_call_port(struct srvfx_resp *out, uint16_t port, const char *method, const char *path,
                     const char *token, const char *body, size_t len, const char *extra);
/* One request to the group's server with a JSON body or none; returns the status. */
long srvfx_call(struct srvfx_resp *out, const char *method, const char *path, const char *token,
                const char *json);
/* Status of a request whose body is not needed. */
long srvfx_status_of(const char *method, const char *path, const char *token, const char *json);

/* One request of a table and the status it must get. */
struct srvfx_expect {
    const char *method, *path, *body;
    long want;
};
/* Sends each of the `n` requests with `token`; fails naming the first whose status differs. */
void srvfx_expect_statuses(const struct srvfx_expect *t, size_t n, const char *token);

void srvfx_sha256_hex(char out[65], const void *p, size_t n);
/* The string `key` of the JSON object `body`, or "" (not JSON, no such key). */
void srvfx_json_str(char *dst, size_t cap, const char *body, const char *key);
/* Enrolls `device_id` with the enrolment token; its credential in `cred_out`. */
void srvfx_enroll(char *cred_out, const char *device_id);
/* A new admin token of `role` named `name`. */
void srvfx_make_token(char *out, const char *role, const char *name);
/* mf-server options for a test node on `data_dir`: an ephemeral loopback port, warnings and
 * errors to stderr (a passing run stays quiet); the caller sets the rest. */
void srvfx_options_init(struct mf_server_options *o, const char *data_dir);
/* Another server on the group's data dir: TLS when `cert`, per-device `rate` (0: none), the
 * delta worker when `worker`, idle connections cut after `timeout_s`. */
void srvfx_start_server_timeout(struct mf_server **out, const char *cert, const char *key,
                                double rate, int worker, unsigned timeout_s);
void srvfx_start_server(struct mf_server **out, const char *cert, const char *key, double rate,
                        int worker);

/* PUTs the signed envelope `env` (freed) to `path`; fails unless the status is `want`. */
void srvfx_put_env(const char *path, uint8_t *env, size_t len, const char *token, long want);
/* Uploads `data` (n bytes) as variant `variant` of det `version` with the query `query` (the
 * data team); unless `want_release` is 0, then attaches its release (sequence `seq`, 16 KiB
 * chunks). Fails unless the statuses are `want_upload` and `want_release`. */
void srvfx_put_variant(const char *version, const char *variant, const char *query,
                       const uint8_t *data, size_t n, uint64_t seq, long want_upload,
                       long want_release);
/* Uploads `data` (n bytes) as `model`/`ver` and releases it with sequence `seq` (data team). */
void srvfx_release(const char *model, const char *ver, uint64_t seq, const uint8_t *data, size_t n);
/* Trust, then v1 and v2 of "det" published and released by the data team (once). */
void srvfx_publish_det(void);
/* Checks in as cam-a running `installed` with `extra` model fields; the assigned version in
 * `version_out`, the reply in `reply` when not NULL (then free its body). */
void srvfx_checkin(char *version_out, const char *installed, const char *extra,
                   struct srvfx_resp *reply);
/* Waits (bounded) for the delta the worker makes from v1 to v2 after srvfx_publish_det: the
 * blob path, source and format a device on v1 is offered, and its size. */
void srvfx_wait_delta(char blob[160], char from[65], char fmt[16], double *size);

#endif
