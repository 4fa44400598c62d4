/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Publishing a candidate the gate passed, in the order that keeps a fault harmless: the
 * blob is stored and the version staged (invisible to devices), its deltas from the fleet's
 * versions are made (so the canary's devices download deltas), the release is signed with
 * the loop's release key and verified against the server's trust documents exactly as a
 * device will verify it, and only then attached. Published is not deployed (docs/rollouts.md,
 * "Release lifecycle"): the attached release is not promoted, so the fleet stays on the
 * promoted parent; with a canary plan the loop creates the rollout that proves it and
 * promotes it after its last wave, like any ops rollout; without one it waits for ops. Only a
 * model's first release is promoted on publish (nothing to protect). The calibration
 * histogram lets the offload policy fit the new version's threshold at once.
 */
#include "distill/job/distill_job.h"
#include "mf_json.h"

#include "blob/blob_store.h"
#include "deltas/delta_worker.h"
#include "mf/sign.h"
#include "mf_hex.h"
#include "mf_sha256.h"
#include "rollout/rollout_ctl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define KEY_MAX (16u * 1024u)

/* Deltas from the fleet's versions to the staged candidate, made before the release so the
 * canary's first devices already download a delta. A failure costs bandwidth only: the
 * queued delta job (after the release) tries again. */
static void make_deltas(struct mf_ctx *ctx, struct mf_store *s, const char *blob_root,
                        const char *model, const char *version)
{
    struct mf_delta_options o;
    char arg[2 * MF_STORE_NAME_SIZE];
    int made = 0;

    mf_delta__options_init(&o);
    (void)snprintf(arg, sizeof(arg), "%s/%s", model, version);
    if (mf_delta__run(&made, s, ctx, blob_root, &o, arg) < 0)
        MF_LOG_WARN(ctx, "deltas of %s before its release: %s", arg, mf_ctx__errmsg(ctx));
}

/* The size of the patch parent -> candidate (what the canary's devices download). */
static uint64_t parent_delta(struct mf_ctx *ctx, struct mf_store *s, const char *model,
                             const char *parent, const char *sha256)
{
    struct mf_store_version pv;
    struct mf_store_delta d;

    if (!parent[0] || s->ops->registry->version_get(&pv, s, ctx, model, parent) < 0 ||
        s->ops->registry->delta_find(&d, s, ctx, pv.sha256, sha256) < 0)
        return 0;
    return d.size;
}

/* The release envelope of `bytes`, signed with the key in `key_path`. */
static int sign_release(uint8_t **env_out, size_t *env_len, struct mf_ctx *ctx,
                        const struct mf_distill_model_cfg *c, const char *version,
                        uint64_t sequence, const uint8_t *bytes, size_t len)
{
    const size_t chunks = (len + c->chunk_size - 1) / c->chunk_size;
    uint8_t(*hashes)[MF_MANIFEST_DIGEST_LEN] =
        mf_calloc(&ctx->alloc, chunks ? chunks : 1, sizeof(*hashes));
    mf_manifest_release_spec spec = {.name = c->model,
                                     .version = version,
                                     .sequence = sequence,
                                     .size = len,
                                     .chunk_size = c->chunk_size,
                                     .chunk_count = chunks,
                                     .security_floor = c->security_floor,
                                     .created = (uint64_t)time(NULL)};
    mf_manifest_signer *signer = NULL;
    uint8_t *pem = NULL;
    size_t pem_len = 0;
    int err = hashes ? MF_OK : mf_fail(ctx, MF_E_NOMEM, "out of memory hashing chunks");

    spec.expires = spec.created + c->expires_s;
    for (size_t i = 0; err == MF_OK && i < chunks; i++) {
        size_t off = i * c->chunk_size, n = len - off < c->chunk_size ? len - off : c->chunk_size;

        mf_sha256__digest(hashes[i], bytes + off, n);
    }
    spec.chunks = (const uint8_t(*)[MF_MANIFEST_DIGEST_LEN])hashes;
    mf_sha256__digest(spec.sha256, bytes, len);
    if (err == MF_OK)
        err = mf_file_read_all(&pem, &pem_len, ctx, &ctx->alloc, c->release_key, KEY_MAX);
    if (err == MF_OK && mf_manifest_signer_new(&signer, &ctx->alloc) < 0)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory for the release signer");
    if (err == MF_OK && mf_manifest_signer_add_key(NULL, signer, (const char *)pem, pem_len) < 0)
        err = mf_fail(ctx, MF_E_INVALID, "release key %s: %s", c->release_key,
                      mf_manifest_signer_errmsg(signer));
    if (err == MF_OK && mf_manifest_sign_release(env_out, env_len, signer, &spec) < 0)
        err = mf_fail(ctx, MF_E_GENERIC, "signing the release: %s",
                      mf_manifest_signer_errmsg(signer));
    if (pem) {
        memset(pem, 0, pem_len); /* a private key: do not leave it in freed memory */
        mf_free(&ctx->alloc, pem);
    }
    mf_manifest_signer_free(signer);
    mf_free(&ctx->alloc, hashes);
    return err;
}

/* Verifies the envelope as a device would and fills the version's release fields. */
static int verify_release(struct mf_store_version *v, struct mf_ctx *ctx, struct mf_store *s,
                          const uint8_t *env, size_t len)
{
    mf_manifest_release *rel = NULL;
    mf_trust *t = NULL;
    int err = mf_store__trust_load(&t, s, ctx, 1);

    if (err == MF_OK && mf_trust_verify_release(&rel, t, env, len, (uint64_t)time(NULL)) < 0)
        err = mf_fail(ctx, MF_E_STATE,
                      "the loop's release would be refused by devices: %s (%s); is the release "
                      "key in the keys document?",
                      mf_trust_errmsg(t), mf_trust_reason_name(mf_trust_last_reason(t)));
    if (err == MF_OK) {
        v->sequence = rel->sequence;
        v->security_floor = rel->security_floor;
        mf_hex__encode(v->release_digest, rel->digest, sizeof(rel->digest));
    }
    mf_manifest_release_free(rel);
    mf_trust_free(t);
    return err;
}

/* Attaches the release (not promoted) and, with a parent and a plan, creates its canary. */
static int release_and_canary(struct mf_distill_published *out, struct mf_ctx *ctx,
                              struct mf_store *s, const struct mf_distill_model_cfg *c,
                              const char *parent, struct mf_store_version *v, const uint8_t *env,
                              size_t env_len)
{
    const int canary = parent[0] && c->rollout_plan;
    size_t plan_len = canary ? strlen(c->rollout_plan) : 0;
    cJSON *plan = NULL;
    struct mf_store_rollout r;
    /* The plan was checked when the config was read; only memory can fail here. */
    int err = canary ? mf_json__parse(&plan, ctx, c->rollout_plan, plan_len, plan_len,
                                      MF_JSON_DEPTH_DEFAULT, "rollout plan")
                     : MF_OK;

    if (err == MF_OK)
        err = s->ops->registry->release_set(s, ctx, v, env, env_len);
    /* On a failed create the release stays published and unpromoted: the fleet remains on
     * the parent, which is the safe state, and the run's error says why. */
    if (err == MF_OK && canary)
        err =
            mf_rollout__create(&r, s, ctx, c->model, v->version, parent, plan, (int64_t)time(NULL));
    if (err == MF_OK && canary)
        out->rollout_id = r.id;
    if (err == MF_OK && parent[0] && !canary)
        MF_LOG_INFO(ctx,
                    "%s %s published, not promoted: no rollout plan in the distill config; "
                    "the fleet stays on %s until ops roll it out",
                    c->model, v->version, parent);
    cJSON_Delete(plan);
    return err;
}

int mf_distill__publish(struct mf_distill_published *out, struct mf_ctx *ctx, struct mf_store *s,
                        const char *blob_root, const struct mf_distill_model_cfg *c,
                        const char *parent, const uint8_t *bytes, size_t len,
                        const uint64_t *calib_bins)
{
    struct mf_store_version v, latest;
    struct mf_store_hist h;
    uint8_t *env = NULL;
    size_t env_len = 0;
    int err;

    memset(out, 0, sizeof(*out));
    memset(&v, 0, sizeof(v));
    err = s->ops->registry->release_latest(&latest, s, ctx, c->model);
    out->sequence = err == MF_OK ? latest.sequence + 1 : 1;
    err = err == MF_E_NOTFOUND ? MF_OK : err;
    (void)snprintf(out->version, sizeof(out->version), "%s%llu", c->version_prefix,
                   (unsigned long long)out->sequence);
    if (err == MF_OK)
        err = mf_blob__put(out->sha256, ctx, blob_root, bytes, len);
    out->size = len;
    (void)snprintf(v.model, sizeof(v.model), "%s", c->model);
    (void)snprintf(v.version, sizeof(v.version), "%s", out->version);
    memcpy(v.sha256, out->sha256, sizeof(v.sha256));
    v.size = out->size;
    v.created_at = (int64_t)time(NULL);
    if (err == MF_OK)
        err = s->ops->registry->version_insert(s, ctx, &v);
    if (err == MF_OK) {
        make_deltas(ctx, s, blob_root, c->model, out->version);
        out->delta_bytes = parent_delta(ctx, s, c->model, parent, out->sha256);
    }
    if (err == MF_OK)
        err = sign_release(&env, &env_len, ctx, c, out->version, out->sequence, bytes, len);
    if (err == MF_OK)
        err = verify_release(&v, ctx, s, env, env_len);
    if (err == MF_OK) {
        memset(&h, 0, sizeof(h));
        (void)snprintf(h.model, sizeof(h.model), "%s", c->model);
        (void)snprintf(h.version, sizeof(h.version), "%s", out->version);
        (void)snprintf(h.method, sizeof(h.method), "max_softmax");
        h.source = MF_STORE_HIST_CALIBRATION;
        memcpy(h.bins, calib_bins, sizeof(h.bins));
        h.updated_at = v.created_at;
        /* before the release: a device offered it must find its threshold */
        err = s->ops->offload->hist_add(s, ctx, &h, 1);
    }
    if (err == MF_OK)
        err = release_and_canary(out, ctx, s, c, parent, &v, env, env_len);
    if (err == MF_OK && mf_delta__enqueue(s, ctx, c->model, out->version) < 0)
        MF_LOG_WARN(ctx, "queueing deltas of %s/%s: %s", c->model, out->version,
                    mf_ctx__errmsg(ctx)); /* costs bandwidth only: full downloads */
    mf_free(&ctx->alloc, env);
    return err;
}
