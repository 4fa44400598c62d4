/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the libmf tests (test_agent*.c): a fake mf-server on the kit's loopback server
 * (kit_http.h: 127.0.0.1, an ephemeral port, one request per connection). It
 * follows docs/protocol.md, serves a signed trust chain (manifests/sign through the
 * manifest test fixture: root v1, keys v1, releases by the release key, assignments by the
 * director key for the nonce it was sent), blobs with Range/If-Range/ETag, an optional
 * delta offer, and misbehaves on demand (wrong or extra bytes, cut connections at an
 * offset, corrupted bytes, stalls, 200 instead of 206, wrong Content-Range, a new ETag,
 * 404, malformed or replayed check-in answers, forged or below-floor releases).
 * Plus the test fixture: that server, a fresh state dir, the POSIX port and options.
 */
#ifndef MF_AGENT_FIXTURE_H
#define MF_AGENT_FIXTURE_H

#include "mf_test.h"
#include "kit_alloc.h"
#include "kit_http.h"
#include "manifest_world.h"
#include "mf/sys/platform_posix.h"
#include "mf_agent_int.h"

#include <pthread.h>

#define ENROLL_TOKEN "mfe_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CREDENTIAL "mfd_fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

enum blob_mode {
    BLOB_OK,          /* serve the bytes */
    BLOB_404,         /* unknown blob */
    BLOB_TRUNCATE,    /* announce every byte, send half, close */
    BLOB_CHUNKED,     /* no Content-Length: chunked encoding, one chunk */
    BLOB_NO_RANGE,    /* ignores Range: always 200 with every byte */
    BLOB_WRONG_RANGE, /* 206 labelled "bytes 0-..." whatever was asked */
    BLOB_NEW_ETAG,    /* 206 with another ETag than the one resumed on */
    BLOB_STALL,       /* half the bytes, then silence for stall_ms */
};

/* How the chunk list of a chunk-tree release is served (docs/protocol.md, "chunk_list"). */
enum list_mode {
    LIST_OK,      /* the hashes, exactly */
    LIST_FLIPPED, /* one bit of one hash flipped: does not lead to the signed root */
    LIST_SHORT,   /* truncated: the last 10 bytes missing */
    LIST_LONG,    /* one hash too many (the first again): the wrong length */
    LIST_404,     /* the server has no such blob */
    LIST_206,     /* a 206 with every byte, to a request that asked no range */
};

enum checkin_mode {
    CHECKIN_OK,
    CHECKIN_MALFORMED,  /* not JSON */
    CHECKIN_BAD_NONCE,  /* echoes another nonce */
    CHECKIN_REPLAY,     /* echoes the nonce, but the signed assignment holds an old one */
    CHECKIN_NO_RELEASE, /* an assignment without its release envelope */
    CHECKIN_HELD_OTHER, /* leaves the release out as if the device held it, whatever it holds */
};

struct fake_server {
    struct mf_kit_http http;
    pthread_mutex_t lock;
    /* what to serve */
    const uint8_t *blob;
    size_t blob_len;
    char version[32];
    char sha256[65];
    uint64_t size; /* assigned size */
    enum blob_mode blob_mode;
    enum checkin_mode checkin_mode;
    const char *offload_policy; /* policy object answered for "detector", or NULL */
    long poll_interval_s;       /* answered; 0: 5 */
    int poll_jitter_pct;        /* answered when not 0 */
    const char *poll_group;     /* answered as poll_group when not NULL */
    const char *install_window; /* answered (a JSON object) when not NULL */
    const char *device_id;      /* the device enrolled and assigned to; NULL: "cam-1" */
    /* the signed documents */
    uint8_t *keys_env;
    size_t keys_len;
    uint64_t keys_version; /* of keys_env: sent to a device that reports another (1) */
    int director;          /* the key assignments are signed with (K_DIR) */
    uint8_t *release_env;
    size_t release_len;
    uint8_t release_digest[32];
    uint64_t release_seq; /* last release sequence signed */
    uint64_t assign_seq;  /* the director's sequence for the device */
    uint64_t floor;       /* security_floor of the next release */
    uint32_t chunk_size;  /* chunk size of the next release; 0: chunk_size_for() */
    int chunk_tree_only;  /* 1: the next release carries the chunk root, no flat list */
    /* 1: a chunk-tree release's chunk list is offered as "chunk_list" (a current server);
     * 0: none is (a server from before the list was a blob: whole-digest downloads) */
    int offer_chunk_list;
    uint8_t *root_env; /* a newer root (NULL: none), sent to devices behind it ... */
    size_t root_len;
    uint64_t root_version;   /* ... with this version */
    int release_by_director; /* 1: sign releases with the director key (a forgery) */
    /* 1: an older server, which sends the release envelope to a device that holds it too
     * (by default the envelope is left out when the device names it, docs/protocol.md) */
    int always_release;
    /* a delta offered in the check-in (from delta_from to the assigned version) */
    const uint8_t *delta;
    size_t delta_len;
    char delta_sha[65];
    char delta_from[65];
    /* a fallback variant offered beside the assignment (fake_offer_fallback) */
    const uint8_t *fb;
    size_t fb_len;
    char fb_sha[65];
    char fb_variant[16];
    uint8_t *fb_env; /* its release, of fb_version */
    size_t fb_env_len;
    int n_fb_blob, n_fb_sent; /* fallback blob GETs; offers with the release */
    /* transport faults, by absolute offset in the served object */
    uint64_t cut_at;        /* close the connection after this offset (0: never) ... */
    int cuts_left;          /* ... this many times, */
    uint64_t cut_step;      /* ... each one this much further on */
    uint64_t corrupt_at;    /* flip the byte at this offset ... */
    int corrupt_left;       /* ... this many times */
    int stall_ms;           /* BLOB_STALL: silence after half the bytes ... */
    int stall_left;         /* ... this many times */
    int stalling, stall_fd; /* the stalled response's thread */
    pthread_t stall_thread;
    const uint8_t *stall_data;
    uint64_t stall_len;
    /* the chunk list of the last chunk-tree release (offer_chunk_list), served as list_mode */
    enum list_mode list_mode;
    uint8_t *chunk_list;
    size_t chunk_list_len;
    char chunk_list_sha[65];
    int n_list; /* requests for it */
    /* what was seen */
    int n_enroll, n_checkin, n_blob, n_report, n_delta_blob, n_ranged;
    int n_release_sent, n_release_held; /* assignments with / without their envelope */
    uint64_t last_range_from;
    uint64_t bytes_served; /* blob body bytes sent (model and delta) */
    char report_status[32];
    char report_detail[256];
    char checkin_body[4096];
};

struct fixture {
    struct fake_server srv;
    char dir[64];
    char url[64];
    mf_platform_posix posix;
    mf_platform_ops ops;
    mf_agent_options opts;
    const char *models[2];
    int ready_calls;
    char ready_path[256];
    char ready_version[32];
    uint8_t *root_env; /* what the device is provisioned with */
    size_t root_len;
};

/* The signing side of the trust chain, shared by every test (key generation is slow), is
 * manifest_world.h's `world`. */
extern const uint8_t model_v1[31];
extern const uint8_t model_v2[57];

void sha256_hex(char *out, const uint8_t *p, size_t n);
/* A test_malloc'd model of `n` bytes that differs per `seed` every 64 KiB only (deltas stay
 * small). */
uint8_t *make_model(size_t n, unsigned int seed);
/* Small models in 16-byte chunks (several per model), big ones in 1 MiB chunks. */
uint32_t chunk_size_for(size_t len);
/* A release of `data` signed with the release key (or the director key when forging). */
void sign_release(struct fake_server *s, const char *version, const uint8_t *data, size_t len);
/* Assign `version` with the digest and size of `data` (a new release, next sequence), and
 * serve `served` bytes for it. */
void fake_assign(struct fake_server *s, const char *version, const uint8_t *data, size_t len,
                 const uint8_t *served, size_t served_len);
/* Offer `delta` (from the model whose bytes are `from`) in the next check-ins. */
void fake_offer_delta(struct fake_server *s, const uint8_t *delta, size_t delta_len,
                      const uint8_t *from, size_t from_len);
/* Offer `data` as fallback `variant` of `version` (NULL data: none) in the next check-ins. */
void fake_offer_fallback(struct fake_server *s, const char *variant, const char *version,
                         const uint8_t *data, size_t len);
void fake_start(struct fake_server *s);
void fake_stop(struct fake_server *s);
/* Back to the state fake_start() left (no assignment, keys v1, no faults, no counts),
 * on the same port: a fresh server for the next run without a new thread. */
void fake_reset(struct fake_server *s);
/* Waits for a stalled response's thread to finish with the served bytes. */
void fake_settle(struct fake_server *s);

void on_ready(void *payload, const char *model, const char *version, const char *path);
void fresh_state_dir(struct fixture *fx);
int setup(void **state);
int teardown(void **state);
/* Every agent suite's group set-up and teardown are world_setup and world_teardown
 * (manifest_world.h). */
/* Reads a file of the state dir into a test_malloc'd buffer (NULL if missing). */
uint8_t *slurp(const struct fixture *fx, const char *name, size_t *len);
int exists(const struct fixture *fx, const char *name);
void assert_file_equals(const struct fixture *fx, const char *name, const uint8_t *data,
                        size_t len);
/* Runs one step and checks its result, showing the agent's message when it differs. */
void step_expect(mf_agent *agent, int expect);
void assert_active(mf_agent *agent, const char *version, char slot);
/* Installs v1 through one step; used as the starting point of failure tests. */
mf_agent *agent_with_v1(struct fixture *fx);
/* v2 assigned with the check-in answered in `mode`: the step fails with `code` and a message
 * holding `why`, v2 is never downloaded and v1 keeps running in slot a. */
void assert_v2_refused_in_mode(struct fixture *fx, mf_agent *agent, enum checkin_mode mode,
                               int code, const char *why);

#endif /* MF_AGENT_FIXTURE_H */
