/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device end of the trust chain (docs/formats/manifest.md) on top of mf_trust: the
 * state lives in trust.state, written through mf_agent__store_write() (temp, sync, durable
 * rename), so a power cut leaves the old or the new state, never a torn one. The first
 * root comes from provisioning only; a missing state file means "first boot", never "trust
 * whatever the server sends". Time is the platform's wall clock when it says it is
 * trustworthy, else unknown (expiry unchecked; freshness from the nonce).
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define TRUST_FILE "trust.state"

static uint64_t trust_now(struct mf_agent *a)
{
    int64_t t = a->plat.wall_clock_s ? a->plat.wall_clock_s(a->plat.payload) : -1;

    return t > 0 ? (uint64_t)t : MF_TRUST_TIME_UNKNOWN;
}

/* Copies mf_trust's message and reason into the agent's message, once. */
static int trust_fail(struct mf_agent *a, int err, const char *what)
{
    return mf_fail(&a->ctx, err, "%s refused: %s (%s)", what, mf_trust_errmsg(a->trust),
                   mf_trust_reason_name(mf_trust_last_reason(a->trust)));
}

static int trust_save(struct mf_agent *a)
{
    size_t size = mf_trust_state_size(a->trust), written = 0;
    void *buf = mf_ctx__alloc(&a->ctx, size);
    int err;

    if (!buf)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to save the trust state");
    err = mf_trust_save(buf, size, &written, a->trust);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot serialise the trust state: %s",
                      mf_trust_errmsg(a->trust));
    else
        err = mf_agent__store_write(a, TRUST_FILE, buf, written, 0);
    mf_ctx__free(&a->ctx, buf);
    return err;
}

int mf_agent__trust_open(struct mf_agent *a, const void *root, size_t root_len)
{
    mf_trust_options o;
    struct mf_dynbuf buf;
    int err;

    if (mf_trust_options_init(&o, MF_TRUST_OPTIONS_VERSION) < 0)
        return mf_fail(&a->ctx, MF_E_INVALID, "trust options version mismatch");
    o.log_fn = a->ctx.log_fn;
    o.log_payload = a->ctx.log_payload;
    err = mf_trust_new(&a->trust, &o, &a->ctx.alloc);
    if (err < 0)
        return mf_fail(&a->ctx, err, "no memory for the trust state");
    err = mf_agent__store_read(a, &buf, TRUST_FILE, MF_AGENT_TRUST_STATE_MAX);
    if (err == MF_OK) {
        err = mf_trust_load(a->trust, buf.data, buf.len);
        mf_dynbuf__free(&buf);
        return err < 0 ? trust_fail(a, err, TRUST_FILE) : MF_OK;
    }
    if (err != MF_E_NOTFOUND)
        return err;
    mf_ctx__clear(&a->ctx);
    /* First boot: the provisioned root, signed by a threshold of its own keys. */
    err = mf_trust_bootstrap(a->trust, root, root_len, trust_now(a));
    if (err < 0)
        return trust_fail(a, err, "provisioned trust root");
    return trust_save(a);
}

int mf_agent__trust_update(struct mf_agent *a, const struct mf_agent_trust_docs *docs)
{
    uint64_t root = mf_trust_root_version(a->trust), keys = mf_trust_keys_version(a->trust);
    uint64_t now = trust_now(a);
    mf_manifest_blob chain[MF_AGENT_MAX_ROOTS];
    int err = MF_OK;

    for (size_t i = 0; i < docs->n_roots; i++) {
        chain[i].data = docs->roots[i];
        chain[i].size = docs->root_len[i];
    }
    if (docs->n_roots) {
        err = mf_trust_update_root(a->trust, chain, docs->n_roots, now);
        if (err < 0)
            err = trust_fail(a, err, "root rotation");
    }
    if (err >= 0 && docs->keys) {
        err = mf_trust_update_keys(a->trust, docs->keys, docs->keys_len, now);
        if (err < 0)
            err = trust_fail(a, err, "keys document");
    }
    /* Steps that verified are kept even when a later one failed: save them too. */
    if (mf_trust_root_version(a->trust) != root || mf_trust_keys_version(a->trust) != keys) {
        int serr = trust_save(a);

        if (err >= 0)
            err = serr;
    }
    return err;
}

int mf_agent__trust_verify(struct mf_agent *a, struct mf_agent_assignment *as)
{
    const mf_manifest_release *r;
    int err;

    mf_manifest_assignment_free(as->verified);
    as->verified = NULL;
    err = mf_trust_verify_assignment(&as->verified, a->trust, a->device_id, a->nonce,
                                     as->assignment_env, as->assignment_len, as->release_env,
                                     as->release_len, trust_now(a));
    if (err < 0)
        return trust_fail(a, err, "assignment");
    r = as->verified->release;
    if (strcmp(r->name, as->model) != 0) {
        mf_manifest_assignment_free(as->verified);
        as->verified = NULL;
        return mf_fail(&a->ctx, MF_E_SIGNATURE,
                       "assignment refused: it lists model %s, the "
                       "signed release is of model %s",
                       as->model, r->name);
    }
    /* From here on only signed values describe what gets installed. */
    (void)snprintf(as->version, sizeof(as->version), "%s", r->version);
    mf_hex__encode(as->sha256, r->sha256, sizeof(r->sha256));
    as->size = r->size;
    return trust_save(a); /* the sequence advanced: a replay of this answer must fail */
}

int mf_agent__trust_release(struct mf_agent *a, mf_manifest_release **out, const char *env,
                            size_t len)
{
    int err = mf_trust_verify_release(out, a->trust, env, len, trust_now(a));

    return err < 0 ? trust_fail(a, err, "fallback release") : MF_OK;
}

int mf_agent__trust_commit(struct mf_agent *a, const mf_manifest_release *r)
{
    int err;

    if (mf_trust_floor(a->trust, r->name) >= r->security_floor)
        return MF_OK;
    err = mf_trust_commit_release(a->trust, r);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot record the security floor of model %s: %s", r->name,
                       mf_trust_errmsg(a->trust));
    return trust_save(a);
}

/* models/<m>/slot-<x>.release: the envelope of the release slot x holds. */
static int release_name(struct mf_agent *a, char *out, const struct agent_model *m, char slot)
{
    char leaf[24];

    (void)snprintf(leaf, sizeof(leaf), "slot-%c.release", slot);
    return mf_agent__store_name(a, out, m->name, leaf);
}

int mf_agent__release_load(struct mf_agent *a, struct agent_model *m,
                           struct mf_agent_assignment *as)
{
    const struct mf_agent_slot *s = &m->state.active;
    char name[MF_AGENT_STORE_NAME_MAX];
    int err;

    /* The hints name what runs until the kept envelope verifies (a failure report). */
    if (s->slot) {
        memcpy(as->sha256, s->sha256, sizeof(as->sha256));
        as->size = s->size;
        (void)snprintf(as->blob, sizeof(as->blob), "/v1/blobs/%s", s->sha256);
    }
    if (!s->slot || !s->release[0])
        return mf_fail(&a->ctx, MF_E_INVALID,
                       "assignment of model %s carries no signed \"release\" envelope and "
                       "none is kept",
                       m->name);
    err = release_name(a, name, m, s->slot);
    if (err >= 0)
        err = mf_agent__store_read(a, &as->release_kept, name, MF_AGENT_RELEASE_MAX);
    if (err < 0)
        return err; /* the caller forgets the digest: the next check-in asks for it */
    as->release_env = (const char *)as->release_kept.data;
    as->release_len = as->release_kept.len;
    return MF_OK;
}

int mf_agent__release_keep(char *out, struct mf_agent *a, const struct agent_model *m, char slot,
                           const struct mf_agent_assignment *as)
{
    char name[MF_AGENT_STORE_NAME_MAX];
    int err = release_name(a, name, m, slot);

    if (err >= 0)
        err = mf_agent__store_write(a, name, as->release_env, as->release_len, 0);
    if (err >= 0)
        mf_hex__encode(out, as->verified->release_sha256, MF_SHA256_LEN);
    return err;
}
