/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared fixture of the manifest tests: a set of generated P-256 keys with fixed roles and
 * helpers that sign root/keys/release/assignment documents (or raw payloads) with any
 * subset of them, so each test states exactly who signed what.
 */
#ifndef MF_MANIFEST_FIXTURE_H
#define MF_MANIFEST_FIXTURE_H

#include "mf_test.h"
#include "mf/sign.h"

enum fx_key {
    K_ROOT0, /* root role: ROOT0..ROOT2, threshold 2 */
    K_ROOT1,
    K_ROOT2,
    K_KEYS, /* the root's `keys` role */
    K_REL0, /* release role: REL0, REL1, threshold 1 */
    K_REL1,
    K_DIR,  /* director role */
    K_EVIL, /* known to nobody */
    K_SPARE,
    FX_NKEYS
};

/* Key lists end with -1: BY(K_ROOT0, K_ROOT1). */
#define BY(...) ((const int[]){__VA_ARGS__, -1})

#define FX_NOW 1800000000u     /* "now" in tests with trustworthy time */
#define FX_EXPIRES 1900000000u /* expiry of default documents */
#define FX_DEVICE "cam-0001"
#define FX_NONCE "0123456789abcdef0123456789abcdef"
#define FX_MODEL "detector"

struct fx {
    char *priv[FX_NKEYS];
    size_t priv_len[FX_NKEYS];
    char *pub[FX_NKEYS];
    char id[FX_NKEYS][65];
};

/* Generates every key; asserts on failure. */
void fx_init(struct fx *f);
void fx_free(struct fx *f);

/* Each returns an envelope from the default allocator (free with mf_free(NULL, p)). */
uint8_t *fx_sign_raw(size_t *len, struct fx *f, const char *type, const char *payload,
                     const int *by);
uint8_t *fx_root(size_t *len, struct fx *f, uint64_t version, uint64_t expires,
                 const int *root_keys, unsigned int root_thr, const int *keys_keys,
                 unsigned int keys_thr, const int *by);
/* Root v1 of the default world, signed by ROOT0 and ROOT1. */
uint8_t *fx_root_v1(size_t *len, struct fx *f);
uint8_t *fx_keys(size_t *len, struct fx *f, uint64_t version, uint64_t expires, const int *rel_keys,
                 unsigned int rel_thr, const int *dir_keys, unsigned int dir_thr, const int *by);
/* Keys v1 of the default world (release REL0/REL1 thr 1, director DIR), signed by KEYS. */
uint8_t *fx_keys_v1(size_t *len, struct fx *f);

/* A 3-chunk release spec of FX_MODEL; chunk data is fixed, only the named fields vary. */
void fx_release_spec(mf_manifest_release_spec *spec, const char *version, uint64_t sequence,
                     uint64_t security_floor);
uint8_t *fx_release(size_t *len, struct fx *f, const mf_manifest_release_spec *spec, const int *by);
/* Release v1 of FX_MODEL (sequence 1, no floor) signed by REL0; its payload digest (what an
 * assignment names) into `digest`. */
uint8_t *fx_release_v1(size_t *len, uint8_t digest[MF_MANIFEST_DIGEST_LEN], struct fx *f);
/* A release of the bytes `data` (name, version, sequence, floor as given; chunk_size bytes
 * per chunk; created 1, expires FX_EXPIRES) signed by `by`. */
uint8_t *fx_release_of(size_t *len, struct fx *f, const char *name, const char *version,
                       uint64_t sequence, uint64_t floor, const void *data, size_t n,
                       uint32_t chunk_size, const int *by);
uint8_t *fx_assignment(size_t *len, struct fx *f, const char *device, const char *model,
                       const uint8_t *release_digest, const char *nonce, uint64_t sequence,
                       const int *by);
/* SHA-256 of an envelope's payload (what an assignment names). */
void fx_digest(uint8_t *out, const uint8_t *env, size_t len);

/* A trust holding root v1 and keys v1 of the default world. */
mf_trust *fx_trust(struct fx *f, const mf_allocator *alloc);

/* Reads a whole file (NULL if missing); free with mf_free(NULL, p). */
uint8_t *fx_read_file(size_t *len, const char *path);

#endif /* MF_MANIFEST_FIXTURE_H */
