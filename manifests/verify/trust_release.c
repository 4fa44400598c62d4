/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Release and assignment verification, and security floors. A release is authenticated by
 * the keys document's `release` role; an assignment by its `director` role. The director
 * only chooses among releases: an assignment is accepted only together with a release that
 * verifies on its own, so a stolen director key cannot introduce a model, and the floor
 * (not the version) decides how far back a fleet rollback may go.
 */
#include "trust_internal.h"
#include "mf/ct.h"
#include "mf_merkle.h"
#include "mf_sha256.h"

#include <assert.h>
#include <string.h>

uint64_t mf_trust__floor_of(const struct mf_trust *t, const char *model)
{
    for (size_t i = 0; i < t->nfloors; i++) {
        if (strcmp(t->floors[i].name, model) == 0)
            return t->floors[i].floor;
    }
    return 0;
}

uint64_t mf_trust_floor(const mf_trust *t, const char *model)
{
    return mf_trust__floor_of(t, model);
}

static int keys_usable(struct mf_trust *t, uint64_t now)
{
    if (!t->has_keys)
        return mf_trust__fail(t, MF_TRUST_R_NO_KEYS, MF_E_STATE, "no trusted keys document");
    if (mf_trust__expired(t->keys.expires, now))
        return mf_trust__fail(t, MF_TRUST_R_EXPIRED, MF_E_SIGNATURE, "keys v%llu expired at %llu",
                              (unsigned long long)t->keys.version,
                              (unsigned long long)t->keys.expires);
    return MF_OK;
}

static int release_verify(mf_manifest_release **out, struct mf_trust *t, const void *buf,
                          size_t len, uint64_t now)
{
    struct mf_menvelope *env = NULL;
    mf_manifest_release *r = NULL;
    uint64_t floor;
    int err;

    *out = NULL;
    err = mf_trust__open_signed(&env, NULL, t, buf, len, t->opts.max_release_bytes,
                                MF_MANIFEST_TYPE_RELEASE, &t->keys, MF_ROLE_RELEASE, "release");
    if (err < 0)
        return err;
    err =
        mf_manifest__parse_release(&r, &t->ctx, env->payload, env->payload_len, t->opts.max_chunks);
    if (err < 0)
        goto fail;
    mf_sha256__digest(r->digest, env->payload, env->payload_len);
    if (mf_trust__expired(r->expires, now)) {
        err = mf_trust__fail(t, MF_TRUST_R_EXPIRED, MF_E_SIGNATURE, "release %s %s expired at %llu",
                             r->name, r->version, (unsigned long long)r->expires);
        goto fail;
    }
    floor = mf_trust__floor_of(t, r->name);
    if (r->security_floor < floor) {
        err = mf_trust__fail(t, MF_TRUST_R_BELOW_FLOOR, MF_E_SIGNATURE,
                             "release %s %s: security_floor %llu below the device's %llu", r->name,
                             r->version, (unsigned long long)r->security_floor,
                             (unsigned long long)floor);
        goto fail;
    }
    mf_manifest__envelope_free(&t->ctx, env);
    *out = r;
    return MF_OK;
fail:
    mf_manifest_release_free(r);
    mf_manifest__envelope_free(&t->ctx, env);
    return err;
}

int mf_trust_verify_release(mf_manifest_release **out, mf_trust *t, const void *release_env,
                            size_t len, uint64_t now)
{
    int err;

    mf_trust__begin(t);
    *out = NULL;
    err = keys_usable(t, now);
    if (err >= 0)
        err = release_verify(out, t, release_env, len, now);
    return mf_trust__end(t, err);
}

/* The checks that bind an authenticated assignment to this device and this check-in. */
static int assignment_binds(struct mf_trust *t, const mf_manifest_assignment *a,
                            const char *device_id, const char *nonce)
{
    size_t n = strlen(nonce);

    if (strcmp(a->device_id, device_id) != 0)
        return mf_trust__fail(t, MF_TRUST_R_WRONG_DEVICE, MF_E_SIGNATURE,
                              "assignment for device '%s', this is '%.64s'", a->device_id,
                              device_id);
    if (strlen(a->nonce) != n || !mf_ct_memeq(a->nonce, nonce, n))
        return mf_trust__fail(t, MF_TRUST_R_WRONG_NONCE, MF_E_SIGNATURE,
                              "assignment answers nonce '%s', not the one just sent", a->nonce);
    /* The parser bounds every integer; a sequence space is [1, MF_TRUST_SEQUENCE_MAX]. */
    assert(a->sequence <= MF_TRUST_SEQUENCE_MAX);
    if (a->sequence <= t->assignment_seq)
        return mf_trust__fail(t, MF_TRUST_R_REPLAY, MF_E_SIGNATURE,
                              "assignment sequence %llu not above last accepted %llu",
                              (unsigned long long)a->sequence,
                              (unsigned long long)t->assignment_seq);
    return MF_OK;
}

static int release_matches(struct mf_trust *t, const mf_manifest_assignment *a,
                           const mf_manifest_release *r)
{
    if (!mf_ct_memeq(a->release_sha256, r->digest, MF_MANIFEST_DIGEST_LEN))
        return mf_trust__fail(t, MF_TRUST_R_MISMATCH, MF_E_SIGNATURE,
                              "assignment names another release than %s %s", r->name, r->version);
    if (strcmp(a->model, r->name) != 0)
        return mf_trust__fail(t, MF_TRUST_R_MISMATCH, MF_E_SIGNATURE,
                              "assignment for model '%s' names a release of '%s'", a->model,
                              r->name);
    return MF_OK;
}

static int assignment_verify(mf_manifest_assignment **out, struct mf_trust_keyids *signers,
                             struct mf_trust *t, const char *device_id, const char *nonce,
                             const void *abuf, size_t alen)
{
    struct mf_menvelope *env = NULL;
    int err;

    err = mf_trust__open_signed(&env, signers, t, abuf, alen, t->opts.max_assignment_bytes,
                                MF_MANIFEST_TYPE_ASSIGNMENT, &t->keys, MF_ROLE_DIRECTOR,
                                "assignment");
    if (err < 0)
        return err;
    err = mf_manifest__parse_assignment(out, &t->ctx, env->payload, env->payload_len);
    if (err >= 0) {
        err = assignment_binds(t, *out, device_id, nonce);
        if (err < 0) {
            mf_manifest_assignment_free(*out);
            *out = NULL;
        }
    }
    mf_manifest__envelope_free(&t->ctx, env);
    return err;
}

int mf_trust_verify_assignment(mf_manifest_assignment **out, mf_trust *t, const char *device_id,
                               const char *nonce, const void *assignment_env, size_t assignment_len,
                               const void *release_env, size_t release_len, uint64_t now)
{
    mf_manifest_assignment *a = NULL;
    mf_manifest_release *r = NULL;
    int err;

    mf_trust__begin(t);
    *out = NULL;
    err = keys_usable(t, now);
    if (err < 0)
        return mf_trust__end(t, err);
    err = assignment_verify(&a, &t->signed_by, t, device_id, nonce, assignment_env, assignment_len);
    if (err >= 0)
        err = release_verify(&r, t, release_env, release_len, now);
    if (err >= 0)
        err = release_matches(t, a, r);
    if (err < 0) {
        mf_manifest_release_free(r);
        mf_manifest_assignment_free(a);
        return mf_trust__end(t, err);
    }
    mf_manifest__assignment_attach(a, r);
    t->assignment_seq = a->sequence;
    t->seq_keys = t->signed_by;
    MF_LOG_INFO(&t->ctx, "assignment %llu: %s %s%s", (unsigned long long)a->sequence, r->name,
                r->version, a->pin ? " (pinned)" : "");
    *out = a;
    return MF_OK;
}

int mf_trust_commit_release(mf_trust *t, const mf_manifest_release *r)
{
    struct mf_trust_floor *f = NULL;

    mf_trust__begin(t);
    for (size_t i = 0; i < t->nfloors && !f; i++) {
        if (strcmp(t->floors[i].name, r->name) == 0)
            f = &t->floors[i];
    }
    if (!f) {
        if (t->nfloors == MF_TRUST_MAX_MODELS)
            return mf_trust__end(t, mf_fail(&t->ctx, MF_E_LIMIT,
                                            "floors of %d models already tracked, not '%s'",
                                            MF_TRUST_MAX_MODELS, r->name));
        f = &t->floors[t->nfloors++];
        memcpy(f->name, r->name, strlen(r->name) + 1);
        f->floor = 0;
    }
    if (r->security_floor > f->floor)
        f->floor = r->security_floor;
    return MF_OK;
}

int mf_trust_check_chunk_list(mf_trust *t, const mf_manifest_release *r, const void *list,
                              size_t len)
{
    uint8_t root[MF_MANIFEST_DIGEST_LEN];

    mf_trust__begin(t);
    if (!r->has_chunks_root)
        return mf_trust__fail(t, MF_TRUST_R_MALFORMED, MF_E_INVALID,
                              "release %s %s names no chunks_root", r->name, r->version);
    if (len / MF_MANIFEST_DIGEST_LEN != r->chunk_count || len % MF_MANIFEST_DIGEST_LEN != 0)
        return mf_trust__fail(t, MF_TRUST_R_MALFORMED, MF_E_INVALID,
                              "chunk list of %s %s: %zu bytes, not %zu hashes of 32", r->name,
                              r->version, len, r->chunk_count);
    if (mf_merkle__root_of(root, (const uint8_t(*)[MF_MANIFEST_DIGEST_LEN])list, r->chunk_count) !=
            0 ||
        !mf_ct_memeq(root, r->chunks_root, sizeof(root)))
        return mf_trust__fail(t, MF_TRUST_R_MISMATCH, MF_E_SIGNATURE,
                              "chunk list of %s %s does not hash to the signed chunks_root",
                              r->name, r->version);
    return MF_OK;
}
