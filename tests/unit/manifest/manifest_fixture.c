/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest test fixture (see manifest_fixture.h). */
#include "manifest_world.h"

#include <mbedtls/sha256.h>

#include <stdio.h>
#include <string.h>

static const uint8_t fx_chunks[3][32] = {{1}, {2}, {3}};

void fx_init(struct fx *f)
{
    mf_manifest_signer *s = NULL;

    memset(f, 0, sizeof(*f));
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    for (int i = 0; i < FX_NKEYS; i++) {
        size_t n;

        assert_int_equal(mf_manifest_signer_generate_key(&f->priv[i], &f->priv_len[i], f->id[i], s),
                         MF_OK);
        assert_int_equal(
            mf_manifest_signer_public_key(&f->pub[i], &n, f->id[i], s, f->priv[i], f->priv_len[i]),
            MF_OK);
    }
    mf_manifest_signer_free(s);
}

void fx_free(struct fx *f)
{
    for (int i = 0; i < FX_NKEYS; i++) {
        mf_manifest_secret_free(NULL, f->priv[i], f->priv_len[i]);
        mf_free(NULL, f->pub[i]);
    }
}

static mf_manifest_signer *signer_of(struct fx *f, const int *by)
{
    mf_manifest_signer *s = NULL;

    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    for (; *by >= 0; by++)
        assert_int_equal(mf_manifest_signer_add_key(NULL, s, f->priv[*by], f->priv_len[*by]),
                         MF_OK);
    return s;
}

uint8_t *fx_sign_raw(size_t *len, struct fx *f, const char *type, const char *payload,
                     const int *by)
{
    mf_manifest_signer *s = signer_of(f, by);
    uint8_t *env = NULL;

    assert_int_equal(mf_manifest_sign_payload(&env, len, s, type, payload, strlen(payload)), MF_OK);
    mf_manifest_signer_free(s);
    return env;
}

/* The envelope a signing call (`what`) of signer `s` returned `err` for, the signer freed; a
 * failure fails the test with the signer's message. */
static uint8_t *signed_by(uint8_t *const *env, int err, mf_manifest_signer *s, const char *what)
{
    if (err < 0)
        fail_msg("%s: %s", what, mf_manifest_signer_errmsg(s));
    mf_manifest_signer_free(s);
    return *env;
}

/* Fills a role spec from a -1-terminated key list; pems has room for FX_NKEYS. */
static void role_of(mf_manifest_role_spec *r, const char **pems, struct fx *f, const int *keys,
                    unsigned int thr)
{
    size_t n = 0;

    for (; *keys >= 0; keys++)
        pems[n++] = f->pub[*keys];
    r->public_pems = pems;
    r->count = n;
    r->threshold = thr;
}

/* The root and the keys document both name two roles, each a key list and a threshold. */
struct two_roles {
    const int *keys[2];
    unsigned int thr[2];
};

static uint8_t *two_role_doc(size_t *len, struct fx *f, int is_root, uint64_t version,
                             uint64_t expires, struct two_roles r, const int *by)
{
    const char *pems[2][FX_NKEYS];
    mf_manifest_root_spec root = {.version = version, .expires = expires};
    mf_manifest_keys_spec keys = {.version = version, .expires = expires};
    mf_manifest_role_spec *roles[2] = {is_root ? &root.root : &keys.release,
                                       is_root ? &root.keys : &keys.director};
    mf_manifest_signer *s = signer_of(f, by);
    uint8_t *env = NULL;

    for (int i = 0; i < 2; i++)
        role_of(roles[i], pems[i], f, r.keys[i], r.thr[i]);
    if (is_root)
        return signed_by(&env, mf_manifest_sign_root(&env, len, s, &root), s, "sign_root");
    return signed_by(&env, mf_manifest_sign_keys(&env, len, s, &keys), s, "sign_keys");
}

uint8_t *fx_root(size_t *len, struct fx *f, uint64_t version, uint64_t expires,
                 const int *root_keys, unsigned int root_thr, const int *keys_keys,
                 unsigned int keys_thr, const int *by)
{
    struct two_roles r = {{root_keys, keys_keys}, {root_thr, keys_thr}};

    return two_role_doc(len, f, 1, version, expires, r, by);
}

uint8_t *fx_root_v1(size_t *len, struct fx *f)
{
    return fx_root(len, f, 1, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                   BY(K_ROOT0, K_ROOT1));
}

uint8_t *fx_keys(size_t *len, struct fx *f, uint64_t version, uint64_t expires, const int *rel_keys,
                 unsigned int rel_thr, const int *dir_keys, unsigned int dir_thr, const int *by)
{
    struct two_roles r = {{rel_keys, dir_keys}, {rel_thr, dir_thr}};

    return two_role_doc(len, f, 0, version, expires, r, by);
}

uint8_t *fx_keys_v1(size_t *len, struct fx *f)
{
    return fx_keys(len, f, 1, FX_EXPIRES, BY(K_REL0, K_REL1), 1, BY(K_DIR), 1, BY(K_KEYS));
}

void fx_release_spec(mf_manifest_release_spec *spec, const char *version, uint64_t sequence,
                     uint64_t security_floor)
{
    memset(spec, 0, sizeof(*spec));
    spec->name = FX_MODEL;
    spec->version = version;
    spec->sequence = sequence;
    memset(spec->sha256, 0xab, sizeof(spec->sha256));
    spec->sha256[0] = (uint8_t)sequence; /* each release names other bytes */
    spec->size = 2 * 4096 + 100;
    spec->chunk_size = 4096;
    spec->chunk_count = 3;
    spec->chunks = (const uint8_t(*)[32])fx_chunks;
    spec->security_floor = security_floor;
    spec->created = FX_NOW - 1000;
    spec->expires = FX_EXPIRES;
}

uint8_t *fx_release(size_t *len, struct fx *f, const mf_manifest_release_spec *spec, const int *by)
{
    mf_manifest_signer *s = signer_of(f, by);
    uint8_t *env = NULL;

    return signed_by(&env, mf_manifest_sign_release(&env, len, s, spec), s, "sign_release");
}

uint8_t *fx_release_v1(size_t *len, uint8_t digest[MF_MANIFEST_DIGEST_LEN], struct fx *f)
{
    mf_manifest_release_spec spec;
    uint8_t *env;

    fx_release_spec(&spec, "v1", 1, 0);
    env = fx_release(len, f, &spec, BY(K_REL0));
    fx_digest(digest, env, *len);
    return env;
}

uint8_t *fx_release_of(size_t *len, struct fx *f, const char *name, const char *version,
                       uint64_t sequence, uint64_t floor, const void *data, size_t n,
                       uint32_t chunk_size, const int *by)
{
    const uint8_t *p = data;
    size_t count = (n + chunk_size - 1) / chunk_size;
    uint8_t(*chunks)[32] = test_malloc(count * 32);
    mf_manifest_release_spec spec;
    uint8_t *env;

    for (size_t i = 0; i < count; i++)
        mbedtls_sha256_ret(p + i * chunk_size, i + 1 < count ? chunk_size : n - i * chunk_size,
                           chunks[i], 0);
    memset(&spec, 0, sizeof(spec));
    spec.name = name;
    spec.version = version;
    spec.sequence = sequence;
    mbedtls_sha256_ret(p, n, spec.sha256, 0);
    spec.size = n;
    spec.chunk_size = chunk_size;
    spec.chunk_count = count;
    spec.chunks = (const uint8_t(*)[32])chunks;
    spec.security_floor = floor;
    spec.created = 1;
    spec.expires = FX_EXPIRES;
    env = fx_release(len, f, &spec, by);
    test_free(chunks);
    return env;
}

uint8_t *fx_assignment(size_t *len, struct fx *f, const char *device, const char *model,
                       const uint8_t *release_digest, const char *nonce, uint64_t sequence,
                       const int *by)
{
    mf_manifest_assignment_spec spec = {
        .device_id = device, .model = model, .nonce = nonce, .sequence = sequence};
    mf_manifest_signer *s = signer_of(f, by);
    uint8_t *env = NULL;

    memcpy(spec.release_sha256, release_digest, 32);
    return signed_by(&env, mf_manifest_sign_assignment(&env, len, s, &spec), s, "sign_assignment");
}

void fx_digest(uint8_t *out, const uint8_t *env, size_t len)
{
    mf_manifest_signer *s = NULL;

    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_payload_digest(out, s, env, len), MF_OK);
    mf_manifest_signer_free(s);
}

mf_trust *fx_trust(struct fx *f, const mf_allocator *alloc)
{
    mf_trust *t = NULL;
    uint8_t *root, *keys;
    size_t rl, kl;

    root = fx_root_v1(&rl, f);
    keys = fx_keys_v1(&kl, f);
    assert_int_equal(mf_trust_new(&t, NULL, alloc), MF_OK);
    if (mf_trust_bootstrap(t, root, rl, FX_NOW) < 0 ||
        mf_trust_update_keys(t, keys, kl, FX_NOW) < 0)
        fail_msg("fixture trust: %s", mf_trust_errmsg(t));
    mf_free(NULL, root);
    mf_free(NULL, keys);
    return t;
}

uint8_t *fx_read_file(size_t *len, const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (!fp)
        return NULL;
    if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        (void)fclose(fp);
        return NULL;
    }
    buf = mf_alloc(NULL, (size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        mf_free(NULL, buf);
        buf = NULL;
    }
    (void)fclose(fp);
    if (buf)
        buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

struct fx world;

int world_setup(void **state)
{
    (void)state;
    fx_init(&world);
    return 0;
}

int world_teardown(void **state)
{
    (void)state;
    fx_free(&world);
    return 0;
}
