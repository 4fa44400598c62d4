/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device trust state: lifecycle, root bootstrap and rotation, keys document updates.
 * Order of every check: size bound, envelope, signatures, and only then the payload. The one
 * payload parsed before its own signatures are counted is a rotated root, and only after the
 * current root's threshold has authenticated it; a first root is trusted by provenance.
 */
#include "trust_internal.h"
#include "mf_sha256.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

void mf_trust__begin(struct mf_trust *t)
{
    mf_ctx__clear(&t->ctx);
    t->reason = MF_TRUST_R_NONE;
}

int mf_trust__end(struct mf_trust *t, int err)
{
    if (err >= 0 || t->reason != MF_TRUST_R_NONE)
        return err;
    /* Failures of the format layer carry no rule; classify them by code. */
    if (err == MF_E_LIMIT)
        t->reason = MF_TRUST_R_TOO_LARGE;
    else if (err == MF_E_INVALID)
        t->reason = MF_TRUST_R_MALFORMED;
    else
        t->reason = MF_TRUST_R_RESOURCE;
    return err;
}

int mf_trust__expired(uint64_t expires, uint64_t now)
{
    return now != MF_TRUST_TIME_UNKNOWN && now >= expires;
}

int mf_trust_options_init(mf_trust_options *opts, unsigned int version)
{
    if (version != MF_TRUST_OPTIONS_VERSION)
        return MF_E_INVALID;
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    opts->max_root_bytes = 32 * 1024;
    opts->max_keys_bytes = 32 * 1024;
    opts->max_release_bytes = 1024 * 1024;
    opts->max_assignment_bytes = 8 * 1024;
    opts->max_chunks = 8192;
    opts->max_root_walk = 16;
    return MF_OK;
}

int mf_trust_new(mf_trust **out, const mf_trust_options *opts, const mf_allocator *alloc)
{
    mf_trust_options defaults;
    struct mf_trust *t;

    *out = NULL;
    if (!opts) {
        int err = mf_trust_options_init(&defaults, MF_TRUST_OPTIONS_VERSION);

        assert(err == MF_OK);
        (void)err;
        opts = &defaults;
    }
    if (opts->version != MF_TRUST_OPTIONS_VERSION || opts->max_root_walk == 0 ||
        opts->max_chunks == 0)
        return MF_E_INVALID;
    t = mf_alloc(alloc, sizeof(*t));
    if (!t)
        return MF_E_NOMEM;
    memset(t, 0, sizeof(*t));
    mf_ctx__init(&t->ctx, alloc, opts->log_fn, opts->log_payload, "trust");
    t->opts = *opts;
    *out = t;
    return MF_OK;
}

static void drop_keys(struct mf_trust *t)
{
    mf_ctx__free(&t->ctx, t->keys_env);
    t->keys_env = NULL;
    t->keys_env_len = 0;
    t->has_keys = 0;
    memset(&t->keys, 0, sizeof(t->keys));
}

void mf_trust_free(mf_trust *t)
{
    mf_allocator a;

    if (!t)
        return;
    drop_keys(t);
    mf_ctx__free(&t->ctx, t->root_env);
    a = t->ctx.alloc;
    mf_secure_zero(t, sizeof(*t));
    mf_free(&a, t);
}

const char *mf_trust_errmsg(const mf_trust *t)
{
    return mf_ctx__errmsg(&t->ctx);
}

mf_trust_reason mf_trust_last_reason(const mf_trust *t)
{
    return t->reason;
}

uint64_t mf_trust_root_version(const mf_trust *t)
{
    return t->has_root ? t->root.version : 0;
}

uint64_t mf_trust_keys_version(const mf_trust *t)
{
    return t->has_keys ? t->keys.version : 0;
}

uint64_t mf_trust_assignment_sequence(const mf_trust *t)
{
    return t->assignment_seq;
}

/* Copies the verified envelope so the state can be saved; replaces *dst on success. */
static int keep_copy(uint8_t **dst, size_t *dst_len, struct mf_trust *t, const void *src,
                     size_t len)
{
    uint8_t *p = mf_ctx__alloc(&t->ctx, len);

    if (!p)
        return mf_fail(&t->ctx, MF_E_NOMEM, "no memory to keep a %zu-byte envelope", len);
    memcpy(p, src, len);
    mf_ctx__free(&t->ctx, *dst);
    *dst = p;
    *dst_len = len;
    return MF_OK;
}

typedef int (*keyset_parse_fn)(struct mf_mkeyset *out, struct mf_ctx *ctx, const uint8_t *payload,
                               size_t len);

/* A root or keys document's payload into `ks` by `parse`, then its key ids checked: after
 * this each key id names exactly one P-256 key. */
static int read_keyset(struct mf_mkeyset *ks, struct mf_trust *t, const struct mf_menvelope *env,
                       keyset_parse_fn parse, const char *what)
{
    int err = parse(ks, &t->ctx, env->payload, env->payload_len);

    return err < 0 ? err : mf_trust__check_keyids(t, ks, what);
}

int mf_trust__accept_first_root(struct mf_trust *t, const void *buf, size_t len)
{
    struct mf_menvelope *env = NULL;
    struct mf_mkeyset *ks;
    int err;

    ks = mf_ctx__alloc(&t->ctx, sizeof(*ks));
    if (!ks)
        return mf_fail(&t->ctx, MF_E_NOMEM, "no memory for a root document");
    err = mf_trust__open(&env, t, buf, len, t->opts.max_root_bytes, MF_MANIFEST_TYPE_ROOT);
    if (err < 0)
        goto out;
    err = read_keyset(ks, t, env, mf_manifest__parse_root, "root");
    if (err < 0)
        goto out;
    err = mf_trust__verify_role(NULL, t, env, ks, MF_ROLE_ROOT, "root");
    if (err < 0)
        goto out;
    err = keep_copy(&t->root_env, &t->root_env_len, t, buf, len);
    if (err < 0)
        goto out;
    t->root = *ks;
    t->has_root = 1;
    drop_keys(t);
out:
    mf_manifest__envelope_free(&t->ctx, env);
    mf_ctx__free(&t->ctx, ks);
    return err;
}

int mf_trust_bootstrap(mf_trust *t, const void *root_env, size_t len, uint64_t now)
{
    int err;

    mf_trust__begin(t);
    /* An image may ship a root that expired on the shelf; rotation fixes that, so expiry
     * is only enforced on roots reached by mf_trust_update_root(). */
    (void)now;
    err = mf_trust__accept_first_root(t, root_env, len);
    if (err >= 0) {
        t->assignment_seq = 0;
        t->seq_keys.n = 0;
        t->nfloors = 0;
    }
    if (err >= 0)
        MF_LOG_INFO(&t->ctx, "root v%llu installed", (unsigned long long)t->root.version);
    return mf_trust__end(t, err);
}

/* One rotation step N -> N+1: authenticated by N, then by N+1 itself. */
static int root_step(struct mf_trust *t, struct mf_mkeyset *next, const mf_manifest_blob *b,
                     size_t idx)
{
    struct mf_menvelope *env = NULL;
    char what[32];
    int err;

    (void)snprintf(what, sizeof(what), "root chain[%zu]", idx);
    err = mf_trust__open_signed(&env, NULL, t, b->data, b->size, t->opts.max_root_bytes,
                                MF_MANIFEST_TYPE_ROOT, &t->root, MF_ROLE_ROOT, what);
    if (err < 0)
        return err;
    err = mf_manifest__parse_root(next, &t->ctx, env->payload, env->payload_len);
    if (err < 0)
        goto out;
    if (next->version != t->root.version + 1) {
        err = mf_trust__fail(
            t, next->version <= t->root.version ? MF_TRUST_R_ROLLBACK : MF_TRUST_R_MALFORMED,
            MF_E_SIGNATURE, "%s: version %llu where %llu is expected", what,
            (unsigned long long)next->version, (unsigned long long)t->root.version + 1);
        goto out;
    }
    err = mf_trust__check_keyids(t, next, what);
    if (err < 0)
        goto out;
    err = mf_trust__verify_role(NULL, t, env, next, MF_ROLE_ROOT, what);
    if (err < 0)
        goto out;
    err = keep_copy(&t->root_env, &t->root_env_len, t, b->data, b->size);
    if (err < 0)
        goto out;
    t->root = *next;
    MF_LOG_INFO(&t->ctx, "root rotated to v%llu", (unsigned long long)t->root.version);
out:
    mf_manifest__envelope_free(&t->ctx, env);
    return err;
}

/* After a rotation the keys document must still carry the new root's `keys` role. */
static void recheck_keys(struct mf_trust *t)
{
    struct mf_menvelope *env = NULL;
    char msg[MF_ERRMSG_MAX];
    mf_trust_reason reason = t->reason;
    int err;

    if (!t->has_keys)
        return;
    memcpy(msg, t->ctx.errmsg, sizeof(msg));
    err = mf_manifest__envelope_parse(&env, &t->ctx, t->keys_env, t->keys_env_len, t->keys_env_len);
    if (err >= 0)
        err = mf_trust__verify_role(NULL, t, env, &t->root, MF_ROLE_KEYS, "keys");
    mf_manifest__envelope_free(&t->ctx, env);
    if (err < 0) {
        MF_LOG_WARN(&t->ctx, "keys v%llu dropped: not signed by root v%llu's keys role",
                    (unsigned long long)t->keys.version, (unsigned long long)t->root.version);
        drop_keys(t);
    }
    /* The re-check is housekeeping: it must not replace the walk's own verdict. */
    memcpy(t->ctx.errmsg, msg, sizeof(msg));
    t->reason = reason;
}

int mf_trust_update_root(mf_trust *t, const mf_manifest_blob *chain, size_t n, uint64_t now)
{
    struct mf_mkeyset *next;
    int err = MF_OK;

    mf_trust__begin(t);
    if (!t->has_root)
        return mf_trust__end(
            t, mf_trust__fail(t, MF_TRUST_R_NO_KEYS, MF_E_STATE, "no trusted root to rotate from"));
    if (n > t->opts.max_root_walk)
        return mf_trust__end(t, mf_trust__fail(t, MF_TRUST_R_WALK_LIMIT, MF_E_LIMIT,
                                               "root chain of %zu versions exceeds %u", n,
                                               t->opts.max_root_walk));
    next = mf_ctx__alloc(&t->ctx, sizeof(*next));
    if (!next)
        return mf_trust__end(t, mf_fail(&t->ctx, MF_E_NOMEM, "no memory for a root"));
    for (size_t i = 0; i < n && err >= 0; i++)
        err = root_step(t, next, &chain[i], i);
    mf_ctx__free(&t->ctx, next);
    if (n)
        recheck_keys(t);
    /* A frozen chain would otherwise leave the device on an expired root for good. */
    if (err >= 0 && mf_trust__expired(t->root.expires, now))
        err = mf_trust__fail(t, MF_TRUST_R_EXPIRED, MF_E_SIGNATURE, "root v%llu expired at %llu",
                             (unsigned long long)t->root.version,
                             (unsigned long long)t->root.expires);
    return mf_trust__end(t, err);
}

int mf_trust__accept_keys(struct mf_trust *t, const void *buf, size_t len, uint64_t now)
{
    struct mf_menvelope *env = NULL;
    uint8_t digest[MF_MANIFEST_DIGEST_LEN];
    struct mf_mkeyset *ks;
    int err;

    if (!t->has_root)
        return mf_trust__fail(t, MF_TRUST_R_NO_KEYS, MF_E_STATE, "no trusted root yet");
    ks = mf_ctx__alloc(&t->ctx, sizeof(*ks));
    if (!ks)
        return mf_fail(&t->ctx, MF_E_NOMEM, "no memory for a keys document");
    err = mf_trust__open_signed(&env, NULL, t, buf, len, t->opts.max_keys_bytes,
                                MF_MANIFEST_TYPE_KEYS, &t->root, MF_ROLE_KEYS, "keys");
    if (err < 0)
        goto out;
    mf_sha256__digest(digest, env->payload, env->payload_len);
    err = read_keyset(ks, t, env, mf_manifest__parse_keys, "keys");
    if (err < 0)
        goto out;
    if (t->has_keys &&
        (ks->version < t->keys.version || (ks->version == t->keys.version &&
                                           !mf_ct_memeq(digest, t->keys_digest, sizeof(digest))))) {
        err = mf_trust__fail(t, MF_TRUST_R_ROLLBACK, MF_E_SIGNATURE,
                             "keys v%llu does not supersede trusted v%llu",
                             (unsigned long long)ks->version, (unsigned long long)t->keys.version);
        goto out;
    }
    if (mf_trust__expired(ks->expires, now)) {
        err = mf_trust__fail(t, MF_TRUST_R_EXPIRED, MF_E_SIGNATURE, "keys v%llu expired at %llu",
                             (unsigned long long)ks->version, (unsigned long long)ks->expires);
        goto out;
    }
    err = keep_copy(&t->keys_env, &t->keys_env_len, t, buf, len);
    if (err < 0)
        goto out;
    t->keys = *ks;
    memcpy(t->keys_digest, digest, sizeof(digest));
    t->has_keys = 1;
out:
    mf_manifest__envelope_free(&t->ctx, env);
    mf_ctx__free(&t->ctx, ks);
    return err;
}

/*
 * The last accepted sequence belongs to the director keys that signed it. Once a keys
 * document takes any of them out of the director role, their sequences mean nothing: the
 * new keys start from 0. Otherwise one assignment at MF_TRUST_SEQUENCE_MAX signed with a
 * stolen director key would refuse every later one for good, rotation or not. Replays of
 * older assignments after the reset are still refused by the nonce echo. A sequence whose
 * signers are unknown (a state file of format 1 without keys) is treated alike.
 */
static void rescope_sequence(struct mf_trust *t)
{
    size_t i = 0;

    if (t->assignment_seq == 0)
        return;
    while (i < t->seq_keys.n && mf_trust__role_has(&t->keys, MF_ROLE_DIRECTOR, t->seq_keys.id[i]))
        i++;
    if (t->seq_keys.n > 0 && i == t->seq_keys.n)
        return;
    MF_LOG_INFO(&t->ctx,
                "keys v%llu drops a director key of assignment sequence %llu; "
                "sequences start again from 0",
                (unsigned long long)t->keys.version, (unsigned long long)t->assignment_seq);
    t->assignment_seq = 0;
    t->seq_keys.n = 0;
}

int mf_trust_update_keys(mf_trust *t, const void *keys_env, size_t len, uint64_t now)
{
    int err;

    mf_trust__begin(t);
    err = mf_trust__accept_keys(t, keys_env, len, now);
    if (err >= 0)
        rescope_sequence(t);
    return mf_trust__end(t, err);
}
