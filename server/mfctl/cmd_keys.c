/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mfctl keys`: offline tooling around manifests/sign. Nothing here talks to the server:
 * a data team signs a release on its own machine and uploads the envelope. Private keys are
 * written with mode 0600 and O_EXCL, read through bounded buffers, and wiped after use.
 */
#include "cmd_keys.h"
#include "mf/sign.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEYS_MAX_PEM (16u * 1024u)
#define KEYS_MAX_DOC (16u * 1024u * 1024u)
#define KEYS_MAX_LIST 16
#define KEYS_DAY 86400u
#define KEYS_MAX_CHUNKS (1u << 20)

enum { L_ROOT, L_KEYS, L_RELEASE, L_DIRECTOR, L_SIGN, L_COUNT };

struct keys_args {
    const char *out;
    const char *files[L_COUNT][KEYS_MAX_LIST];
    size_t n[L_COUNT];
    uint64_t thr[L_COUNT]; /* role thresholds; 0 means 1 */
    uint64_t version, expires, sequence, floor, chunk_size;
    const char *name, *rel_version, *file;
};

/* Reads a whole file of at most `max` bytes into memory from the ctx allocator. */
static int read_all(char **out, size_t *len, struct mfctl *c, const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    *out = NULL;
    if (!f)
        return mf_fail(&c->ctx, MF_E_IO, "cannot open %s: %s", path, strerror(errno));
    buf = mf_alloc(&c->ctx.alloc, max + 1);
    if (!buf) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_NOMEM, "no memory to read %s", path);
    }
    n = fread(buf, 1, max + 1, f);
    (void)fclose(f);
    if (n > max) {
        mf_manifest_secret_free(&c->ctx.alloc, buf, max + 1);
        return mf_fail(&c->ctx, MF_E_LIMIT, "%s is larger than %zu bytes", path, max);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return MF_OK;
}

/* Writes `len` bytes to a new file (never replaces one) with `mode`, then fsyncs it. */
static int write_new(struct mfctl *c, const char *path, const void *p, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    const char *b = p;

    if (fd < 0)
        return mf_fail(&c->ctx, MF_E_IO, "cannot create %s: %s", path, strerror(errno));
    while (len) {
        ssize_t w = write(fd, b, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            (void)close(fd);
            return mf_fail(&c->ctx, MF_E_IO, "cannot write %s: %s", path, strerror(errno));
        }
        b += w;
        len -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        return mf_fail(&c->ctx, MF_E_IO, "cannot sync %s: %s", path, strerror(errno));
    return MF_OK;
}

struct keys_opt {
    const char *name;
    int list;      /* L_*, or -1 */
    size_t offset; /* of a uint64_t or const char * in keys_args, when list < 0 */
    int is_num;
};

#define OPT_NUM(n, field)                                                                          \
    {                                                                                              \
        n, -1, offsetof(struct keys_args, field), 1                                                \
    }
#define OPT_STR(n, field)                                                                          \
    {                                                                                              \
        n, -1, offsetof(struct keys_args, field), 0                                                \
    }

static const struct keys_opt keys_opts[] = {
    {"--root", L_ROOT, 0, 0},
    {"--keys", L_KEYS, 0, 0},
    {"--release", L_RELEASE, 0, 0},
    {"--director", L_DIRECTOR, 0, 0},
    {"--sign", L_SIGN, 0, 0},
    OPT_NUM("--root-threshold", thr[L_ROOT]),
    OPT_NUM("--keys-threshold", thr[L_KEYS]),
    OPT_NUM("--release-threshold", thr[L_RELEASE]),
    OPT_NUM("--director-threshold", thr[L_DIRECTOR]),
    OPT_NUM("--version", version),
    OPT_NUM("--expires", expires),
    OPT_NUM("--sequence", sequence),
    OPT_NUM("--floor", floor),
    OPT_NUM("--chunk-size", chunk_size),
    OPT_STR("--name", name),
    OPT_STR("--release-version", rel_version),
    OPT_STR("--file", file),
};

/* argv[0] is the subcommand; argv[1] OUT; then options. 2 on a usage error. */
static int parse_args(struct keys_args *a, struct mfctl *c, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    if (argc < 2 || argv[1][0] == '-') {
        (void)fprintf(c->err, "mfctl keys %s: missing output file\n%s", argv[0], MFCTL_KEYS_USAGE);
        return 2;
    }
    a->out = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const struct keys_opt *o = NULL;

        for (size_t k = 0; k < sizeof(keys_opts) / sizeof(keys_opts[0]) && !o; k++) {
            if (strcmp(argv[i], keys_opts[k].name) == 0)
                o = &keys_opts[k];
        }
        if (!o || i + 1 >= argc) {
            (void)fprintf(c->err, "mfctl keys %s: unknown or incomplete option \"%s\"\n%s", argv[0],
                          argv[i], MFCTL_KEYS_USAGE);
            return 2;
        }
        if (o->list >= 0) {
            if (a->n[o->list] == KEYS_MAX_LIST) {
                (void)fprintf(c->err, "mfctl keys: more than %d %s keys\n", KEYS_MAX_LIST, o->name);
                return 2;
            }
            a->files[o->list][a->n[o->list]++] = argv[i + 1];
        } else if (o->is_num) {
            if (mfctl__parse_u64((uint64_t *)(void *)((char *)a + o->offset), argv[i + 1],
                                 UINT64_MAX) < 0) {
                (void)fprintf(c->err, "mfctl keys: %s wants a number, not \"%s\"\n", o->name,
                              argv[i + 1]);
                return 2;
            }
        } else {
            *(const char **)(void *)((char *)a + o->offset) = argv[i + 1];
        }
    }
    return -1;
}

/* Role spec from PEM files; pems[] (KEYS_MAX_LIST) are freed by free_pems(). */
static int load_role(mf_manifest_role_spec *r, char **pems, struct mfctl *c,
                     const struct keys_args *a, int list)
{
    for (size_t i = 0; i < a->n[list]; i++) {
        size_t len;
        int err = read_all(&pems[i], &len, c, a->files[list][i], KEYS_MAX_PEM);

        if (err < 0)
            return err;
    }
    r->public_pems = (const char *const *)pems;
    r->count = a->n[list];
    r->threshold = (unsigned int)(a->thr[list] ? a->thr[list] : 1);
    return MF_OK;
}

static void free_pems(struct mfctl *c, char **pems)
{
    for (size_t i = 0; i < KEYS_MAX_LIST; i++) {
        if (pems[i])
            mf_manifest_secret_free(&c->ctx.alloc, pems[i], strlen(pems[i]));
    }
}

static int add_signers(mf_manifest_signer *s, struct mfctl *c, const struct keys_args *a, int list)
{
    for (size_t i = 0; i < a->n[list]; i++) {
        char *pem;
        size_t len;
        int err = read_all(&pem, &len, c, a->files[list][i], KEYS_MAX_PEM);

        if (err < 0)
            return err;
        err = mf_manifest_signer_add_key(NULL, s, pem, len);
        mf_manifest_secret_free(&c->ctx.alloc, pem, len);
        if (err < 0)
            return mf_fail(&c->ctx, err, "%s: %s", a->files[list][i], mf_manifest_signer_errmsg(s));
    }
    return MF_OK;
}

static uint64_t default_expiry(uint64_t days)
{
    return (uint64_t)time(NULL) + days * KEYS_DAY;
}

/* Signs with `s` via `sign` and writes OUT (mode 0644, new file). */
static int finish_doc(struct mfctl *c, mf_manifest_signer *s, const struct keys_args *a, int err,
                      uint8_t *env, size_t len)
{
    if (err < 0 && !mf_ctx__errmsg(&c->ctx)[0])
        (void)mf_fail(&c->ctx, err, "%s", mf_manifest_signer_errmsg(s));
    if (err >= 0)
        err = write_new(c, a->out, env, len, 0644);
    if (err >= 0)
        (void)fprintf(c->out, "wrote %s (%zu bytes)\n", a->out, len);
    mf_free(&c->ctx.alloc, env);
    mf_manifest_signer_free(s);
    return err < 0 ? mfctl__report(c, err) : 0;
}

static int cmd_gen(struct mfctl *c, int argc, char **argv)
{
    mf_manifest_signer *s = NULL;
    char keyid[65], *pem = NULL;
    size_t len = 0;
    int err;

    if (argc != 2) {
        (void)fputs(MFCTL_KEYS_USAGE, c->err);
        return 2;
    }
    err = mf_manifest_signer_new(&s, &c->ctx.alloc);
    if (err >= 0) {
        err = mf_manifest_signer_generate_key(&pem, &len, keyid, s);
        if (err < 0)
            err = mf_fail(&c->ctx, err, "%s", mf_manifest_signer_errmsg(s));
    }
    if (err >= 0)
        err = write_new(c, argv[1], pem, len, 0600);
    mf_manifest_secret_free(&c->ctx.alloc, pem, len);
    mf_manifest_signer_free(s);
    if (err < 0)
        return mfctl__report(c, err);
    (void)fprintf(c->out, "%s %s\n", keyid, argv[1]);
    return 0;
}

static int cmd_root_init(struct mfctl *c, const struct keys_args *a)
{
    char *pems[2][KEYS_MAX_LIST] = {{0}};
    mf_manifest_root_spec spec = {.version = a->version ? a->version : 1,
                                  .expires = a->expires ? a->expires : default_expiry(365)};
    mf_manifest_signer *s = NULL;
    uint8_t *env = NULL;
    size_t len = 0;
    int err = mf_manifest_signer_new(&s, &c->ctx.alloc);

    if (err >= 0)
        err = load_role(&spec.root, pems[0], c, a, L_ROOT);
    if (err >= 0)
        err = load_role(&spec.keys, pems[1], c, a, L_KEYS);
    if (err >= 0)
        err = add_signers(s, c, a, a->n[L_SIGN] ? L_SIGN : L_ROOT);
    if (err >= 0)
        err = mf_manifest_sign_root(&env, &len, s, &spec);
    free_pems(c, pems[0]);
    free_pems(c, pems[1]);
    return finish_doc(c, s, a, err, env, len);
}

static int cmd_sign_keys(struct mfctl *c, const struct keys_args *a)
{
    char *pems[2][KEYS_MAX_LIST] = {{0}};
    mf_manifest_keys_spec spec = {.version = a->version ? a->version : 1,
                                  .expires = a->expires ? a->expires : default_expiry(180)};
    mf_manifest_signer *s = NULL;
    uint8_t *env = NULL;
    size_t len = 0;
    int err = mf_manifest_signer_new(&s, &c->ctx.alloc);

    if (err >= 0)
        err = load_role(&spec.release, pems[0], c, a, L_RELEASE);
    if (err >= 0)
        err = load_role(&spec.director, pems[1], c, a, L_DIRECTOR);
    if (err >= 0)
        err = add_signers(s, c, a, L_SIGN);
    if (err >= 0)
        err = mf_manifest_sign_keys(&env, &len, s, &spec);
    free_pems(c, pems[0]);
    free_pems(c, pems[1]);
    return finish_doc(c, s, a, err, env, len);
}

int mfctl__hash_model(mf_manifest_release_spec *spec, uint8_t (**chunks)[32], struct mfctl *c,
                      const char *path)
{
    mbedtls_sha256_context whole, part;
    unsigned char buf[8192];
    size_t n, in_chunk = 0, count = 0, cap;
    struct stat st;
    FILE *f = fopen(path, "rb");
    int err = MF_OK;

    if (!f)
        return mf_fail(&c->ctx, MF_E_IO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_INVALID, "%s is empty or unreadable", path);
    }
    cap = (size_t)(((uint64_t)st.st_size + spec->chunk_size - 1) / spec->chunk_size);
    if (cap > KEYS_MAX_CHUNKS) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_LIMIT, "%s needs %zu chunks, more than %u", path, cap,
                       KEYS_MAX_CHUNKS);
    }
    *chunks = mf_alloc(&c->ctx.alloc, cap * 32);
    if (!*chunks) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_NOMEM, "no memory for %zu chunk hashes", cap);
    }
    mbedtls_sha256_init(&whole);
    mbedtls_sha256_init(&part);
    (void)mbedtls_sha256_starts_ret(&whole, 0);
    (void)mbedtls_sha256_starts_ret(&part, 0);
    spec->size = 0;
    while (err >= 0 && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
        (void)mbedtls_sha256_update_ret(&whole, buf, n);
        spec->size += n;
        for (size_t off = 0; off < n;) {
            size_t take =
                n - off < spec->chunk_size - in_chunk ? n - off : spec->chunk_size - in_chunk;

            (void)mbedtls_sha256_update_ret(&part, buf + off, take);
            in_chunk += take;
            off += take;
            if (in_chunk < spec->chunk_size)
                continue;
            if (count == cap) {
                err = mf_fail(&c->ctx, MF_E_IO, "%s grew while being hashed", path);
                break;
            }
            (void)mbedtls_sha256_finish_ret(&part, (*chunks)[count++]);
            (void)mbedtls_sha256_starts_ret(&part, 0);
            in_chunk = 0;
        }
    }
    if (err >= 0 && ferror(f))
        err = mf_fail(&c->ctx, MF_E_IO, "cannot read %s", path);
    if (err >= 0 && in_chunk) {
        if (count == cap)
            err = mf_fail(&c->ctx, MF_E_IO, "%s grew while being hashed", path);
        else
            (void)mbedtls_sha256_finish_ret(&part, (*chunks)[count++]);
    }
    (void)fclose(f);
    (void)mbedtls_sha256_finish_ret(&whole, spec->sha256);
    mbedtls_sha256_free(&whole);
    mbedtls_sha256_free(&part);
    spec->chunk_count = count;
    spec->chunks = (const uint8_t(*)[32]) * chunks;
    return err;
}

int mfctl__release_sign(uint8_t **env_out, size_t *len_out, char *keyid_out,
                        mf_manifest_release_spec *spec, struct mfctl *c, mf_manifest_signer *s,
                        const char *file, const char *const *key_files, size_t n_keys)
{
    uint8_t(*chunks)[32] = NULL;
    int err = MF_OK;

    spec->created = (uint64_t)time(NULL);
    if (!spec->expires)
        spec->expires = default_expiry(365);
    if (!spec->chunk_size)
        spec->chunk_size = MFCTL_DEFAULT_CHUNK;
    err = mfctl__hash_model(spec, &chunks, c, file);
    for (size_t i = 0; err >= 0 && i < n_keys; i++) {
        char *pem;
        size_t len;

        err = read_all(&pem, &len, c, key_files[i], KEYS_MAX_PEM);
        if (err < 0)
            break;
        err = mf_manifest_signer_add_key(keyid_out, s, pem, len);
        mf_manifest_secret_free(&c->ctx.alloc, pem, len);
        if (err < 0)
            err = mf_fail(&c->ctx, err, "%s: %s", key_files[i], mf_manifest_signer_errmsg(s));
    }
    if (err >= 0) {
        err = mf_manifest_sign_release(env_out, len_out, s, spec);
        if (err < 0)
            err = mf_fail(&c->ctx, err, "%s", mf_manifest_signer_errmsg(s));
    }
    mf_free(&c->ctx.alloc, chunks);
    spec->chunks = NULL;
    return err;
}

static int cmd_sign_release(struct mfctl *c, const struct keys_args *a)
{
    mf_manifest_release_spec spec = {0};
    mf_manifest_signer *s = NULL;
    uint8_t *env = NULL;
    size_t len = 0;
    int err;

    if (!a->name || !a->rel_version || !a->file || !a->sequence) {
        (void)fprintf(c->err, "mfctl keys sign-release: --name, --release-version, "
                              "--sequence and --file are required\n");
        return 2;
    }
    if (a->chunk_size > UINT32_MAX) {
        (void)fprintf(c->err, "mfctl keys sign-release: --chunk-size above 2^32 - 1\n");
        return 2;
    }
    spec.name = a->name;
    spec.version = a->rel_version;
    spec.sequence = a->sequence;
    spec.security_floor = a->floor;
    spec.chunk_size = (uint32_t)a->chunk_size;
    spec.expires = a->expires;
    err = mf_manifest_signer_new(&s, &c->ctx.alloc);
    if (err >= 0)
        err = mfctl__release_sign(&env, &len, NULL, &spec, c, s, a->file, a->files[L_SIGN],
                                  a->n[L_SIGN]);
    return finish_doc(c, s, a, err, env, len);
}

static int cmd_verify(struct mfctl *c, int argc, char **argv)
{
    char *doc[3] = {0};
    size_t len[3] = {0};
    mf_manifest_release *r = NULL;
    mf_trust *t = NULL;
    uint64_t now = (uint64_t)time(NULL);
    int err = MF_OK;

    if (argc != 4) {
        (void)fputs(MFCTL_KEYS_USAGE, c->err);
        return 2;
    }
    for (int i = 0; i < 3 && err >= 0; i++)
        err = read_all(&doc[i], &len[i], c, argv[i + 1], KEYS_MAX_DOC);
    if (err >= 0)
        err = mf_trust_new(&t, NULL, &c->ctx.alloc);
    if (err >= 0) {
        err = mf_trust_bootstrap(t, doc[0], len[0], now);
        if (err >= 0)
            err = mf_trust_update_keys(t, doc[1], len[1], now);
        if (err >= 0)
            err = mf_trust_verify_release(&r, t, doc[2], len[2], now);
        if (err < 0)
            err = mf_fail(&c->ctx, err, "%s (%s)", mf_trust_errmsg(t),
                          mf_trust_reason_name(mf_trust_last_reason(t)));
    }
    if (err >= 0)
        (void)fprintf(c->out, "ok: %s %s sequence %llu floor %llu, %zu chunks, root v%llu\n",
                      r->name, r->version, (unsigned long long)r->sequence,
                      (unsigned long long)r->security_floor, r->chunk_count,
                      (unsigned long long)mf_trust_root_version(t));
    mf_manifest_release_free(r);
    mf_trust_free(t);
    for (int i = 0; i < 3; i++)
        mf_free(&c->ctx.alloc, doc[i]);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__read_file(char **out, size_t *len, struct mfctl *c, const char *path, size_t max)
{
    return read_all(out, len, c, path, max);
}

int mfctl__cmd_keys(struct mfctl *c, int argc, char **argv)
{
    struct keys_args a;
    int rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        (void)fputs(MFCTL_KEYS_USAGE, argc < 2 ? c->err : c->out);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "gen") == 0)
        return cmd_gen(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "verify") == 0)
        return cmd_verify(c, argc - 1, argv + 1);
    rc = parse_args(&a, c, argc - 1, argv + 1);
    if (rc >= 0)
        return rc;
    if (strcmp(argv[1], "root-init") == 0)
        return cmd_root_init(c, &a);
    if (strcmp(argv[1], "sign-keys") == 0)
        return cmd_sign_keys(c, &a);
    if (strcmp(argv[1], "sign-release") == 0)
        return cmd_sign_release(c, &a);
    (void)fprintf(c->err, "mfctl keys: unknown subcommand \"%s\"\n%s", argv[1], MFCTL_KEYS_USAGE);
    return 2;
}
