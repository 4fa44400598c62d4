/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's check-in flow (checkin_flow.h), after the handler (handlers/checkin.c) has
 * parsed the request. Every tracked model with a released version gets the release the
 * director decides for it (checkin_decide.h), as the data team's release envelope plus
 * an assignment envelope the director key signs for this device and this check-in (its
 * nonce, the next numbers of the device's sequence), plus the precomputed delta from the
 * device's installed bytes when the delta worker made one. Root rotations newer than the
 * device's root and the current keys document ride along so the device can verify
 * everything with no other request. A server without root and keys documents assigns
 * nothing: nothing it could send would verify on a device (docs/protocol.md, "Trust").
 */
#include "director/checkin_flow.h"

#include "director/director.h"
#include "director/checkin_batch.h"
#include "director/checkin_answer.h"
#include "director/checkin_cache.h"
#include "director/checkin_decide.h"
#include "director/checkin_degrade.h"
#include "director/checkin_settings.h"
#include "http/http_metrics.h"
#include "mf_hex.h"
#include "mf/patch.h"
#include "offload/offload_srv.h"
#include "rollout/rollout_fleet.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Root versions sent in one answer: a device further behind catches up over several
 * check-ins (mf_trust walks at most 16 per call as well). */
#define CHECKIN_MAX_ROOTS 16

_Static_assert(MF_CHECKIN_MAX_MODELS <= MF_STORE_CHECKIN_MAX_MODELS,
               "checkin_begin reads the directives of every model of a check-in");
_Static_assert(MF_CHECKIN_MAX_MODELS <= MF_ANSWER_HOLES_MAX, "an answer has a hole per model");

/* One check-in from parse to answer; on the request's allocator. A check-in run by the
 * stage leaves its assignments unsigned (a hole each in the answer) until the group's
 * signature is made. */
struct mf_checkin_job {
    struct mf_checkin_req req;
    const char *models[MF_CHECKIN_MAX_MODELS];
    struct mf_store_pin_hint hint;
    struct mf_ccache_view v;
    struct mf_store_checkin c;
    struct mf_checkin_work *w;
    struct mf_answer answer;
    char *text; /* the answer, finished (mf_alloc(NULL)) */
    size_t text_len;
    int defer_sign;
    size_t n_unsigned; /* the answer's holes, one per spec */
    mf_manifest_assignment_spec specs[MF_CHECKIN_MAX_MODELS];
};

/* Envelopes travel as JSON strings holding their exact bytes (docs/protocol.md). */
static int add_root(void *payload, uint64_t version, const void *env, size_t len)
{
    (void)version;
    return mf_answer__str_n(payload, NULL, env, len);
}

/* "trust": root rotations after the device's root, and the keys document; left out when
 * the device holds both already (docs/protocol.md, "Check-ins that send only what
 * changed"). */
static int add_trust(struct mf_answer *ans, const struct mf_ccache_view *v,
                     const struct mf_checkin_req *req, const struct mf_dynbuf *keys,
                     uint64_t keys_version)
{
    size_t trust_at = ans->text.len, roots_at;
    int err = mf_answer__open(ans, "trust", '{');
    int rotated;

    if (err == MF_OK)
        err = mf_answer__open(ans, "roots", '[');
    roots_at = ans->text.len;
    if (err == MF_OK)
        err = mf_ccache__trust_roots_after(v, req->root_version, CHECKIN_MAX_ROOTS, add_root, ans);
    if (err != MF_OK)
        return err;
    /* After a rotation the device may drop its keys document, so send it along then too. */
    rotated = ans->text.len > roots_at;
    if (!rotated && req->keys_version == keys_version) {
        ans->text.len = trust_at; /* nothing the device lacks */
        return MF_OK;
    }
    err = mf_answer__close(ans, ']');
    if (err == MF_OK && (req->keys_version != keys_version || rotated))
        err = mf_answer__str_n(ans, "keys", (const char *)keys->data, keys->len);
    return err == MF_OK ? mf_answer__close(ans, '}') : err;
}

/* "deltas": the precomputed patch from the device's installed bytes, when there is one, else
 * the compressed full blob (the delta from the empty image) to a device that asked for it. */
static int add_deltas(struct mf_answer *ans, const struct mf_ccache_view *cv,
                      const char *from_sha256, int compressed_full,
                      const struct mf_store_version *v)
{
    char blob[sizeof("/v1/blobs/") + MF_SHA256_HEX_LEN];
    struct mf_store_delta d;
    int err = MF_E_NOTFOUND;

    if (from_sha256 && strcmp(from_sha256, v->sha256) == 0)
        return MF_OK; /* runs it already */
    if (from_sha256)
        err = mf_ccache__delta_find(&d, cv, from_sha256, v->sha256);
    if (err == MF_E_NOTFOUND && compressed_full)
        err = mf_ccache__delta_find(&d, cv, MF_PATCH_EMPTY_SHA256_HEX, v->sha256);
    if (err == MF_E_NOTFOUND)
        return MF_OK;
    if (err < 0)
        return err;
    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", d.delta_sha256);
    err = mf_answer__open(ans, "deltas", '[');
    if (err == MF_OK)
        err = mf_answer__open(ans, NULL, '{');
    if (err == MF_OK)
        err = mf_answer__str(ans, "from_sha256", d.from_sha256);
    if (err == MF_OK)
        err = mf_answer__str(ans, "blob", blob);
    if (err == MF_OK)
        err = mf_answer__str(ans, "sha256", d.delta_sha256);
    if (err == MF_OK)
        err = mf_answer__count(ans, "size", d.size);
    if (err == MF_OK)
        err = mf_answer__str(ans, "format", d.format);
    if (err == MF_OK)
        err = mf_answer__close(ans, '}');
    return err == MF_OK ? mf_answer__close(ans, ']') : err;
}

/* The release envelope, quoted once per release by the cache, appended as it is. */
struct release_quote {
    const struct mf_ccache_view *cv;
    const struct mf_store_version *v;
    const char *variant; /* "": the version's own release */
};

static int quote_release(struct mf_dynbuf *text, void *payload)
{
    const struct release_quote *q = payload;

    return q->variant[0] ? mf_ccache__variant_release_json(text, q->cv, q->v->model, q->v->version,
                                                           q->variant)
                         : mf_ccache__release_json(text, q->cv, q->v->model, q->v->version);
}

/* One assignment object: the release (left out when the device holds it), the assignment
 * envelope signed now (inline) or a hole the group's signature fills (defer), and the delta
 * if any. */
static int add_assignment(struct mf_answer *ans, struct mf_httpd_req *r,
                          const struct mf_ccache_view *cv, const struct mf_checkin_req *req,
                          const struct mf_store_version *v, const char *variant, uint64_t sequence,
                          const struct mf_checkin_model *m, struct mf_checkin_job *defer)
{
    struct release_quote q = {cv, v, variant};
    struct mf_answer_release rel = {.model = v->model,
                                    .version = v->version,
                                    .sha256 = v->sha256,
                                    .size = v->size,
                                    .variant = variant,
                                    .digest = v->release_digest,
                                    .held = m->release_sha256,
                                    .quoted_fn = quote_release,
                                    .quoted_payload = &q};
    mf_manifest_assignment_spec spec = {
        .device_id = r->device_id, .model = v->model, .nonce = req->nonce, .sequence = sequence};
    uint8_t *env = NULL;
    size_t env_len = 0;
    int held = 0, err = MF_OK;

    if (mf_hex__decode(spec.release_sha256, sizeof(spec.release_sha256), v->release_digest,
                       MF_SHA256_HEX_LEN) < 0)
        return mf_fail(&r->ctx, MF_E_STATE, "stored release digest of %s/%s is not hex", v->model,
                       v->version);
    if (!defer)
        err = mf_director__sign(&env, &env_len, r->env->director, &r->ctx, &spec);
    if (err == MF_OK)
        err = mf_answer__release(&held, ans, &rel);
    if (err == MF_OK)
        err = defer ? mf_answer__hole(ans, "assignment")
                    : mf_answer__str_n(ans, "assignment", (const char *)env, env_len);
    if (err == MF_OK && defer) /* signed with the group's others (mf_checkin_flow__group) */
        defer->specs[defer->n_unsigned++] = spec;
    if (err == MF_OK && !held)
        err = add_deltas(ans, cv, m->sha256, req->compressed_full, v);
    if (err == MF_OK && !held && v->chunks_sha256[0])
        err = mf_answer__chunk_list(ans, v->chunks_sha256);
    if (err == MF_OK)
        err = mf_checkin_degrade__fallback(ans, cv, req, m, v, variant);
    if (err == MF_OK)
        err = mf_answer__close(ans, '}');
    mf_free(NULL, env);
    return err;
}

static int add_assignments(struct mf_answer *ans, struct mf_checkin_work *w, struct mf_httpd_req *r,
                           const struct mf_ccache_view *v, const struct mf_checkin_req *req,
                           struct mf_checkin_job *defer)
{
    int err = mf_answer__open(ans, "assignments", '[');

    if (err == MF_OK)
        err = mf_checkin_decide__collect(w, r, v, req);
    /* The block of the device's sequence checkin_begin reserved (one number per model of
     * the request), numbered in list order, which is the order the device verifies them
     * in; numbers of models that get no assignment stay unused. */
    for (size_t i = 0; err == MF_OK && i < w->n; i++)
        err = add_assignment(ans, r, v, req, &w->v[i], w->variant[i], w->first + i, w->from[i],
                             defer);
    return err == MF_OK ? mf_answer__close(ans, ']') : err;
}

/* Offload telemetry in, policies out (docs/protocol-offload.md). Telemetry is advisory:
 * a malformed entry is skipped and logged, never a reason to refuse the check-in that also
 * carries the device's updates. The policies come as cJSON members, printed into the
 * answer. */
static int add_offload(struct mf_answer *ans, struct mf_httpd_req *r)
{
    cJSON *extra = cJSON_CreateObject(), *m;
    int skipped = 0, err;

    if (!extra)
        return MF_E_NOMEM;
    err = mf_offsrv__checkin(&skipped, extra, r->env->offload, r->env->store, &r->ctx, r->json);
    if (skipped)
        MF_LOG_WARN(&r->ctx, "device %s: %d malformed offload telemetry entries skipped",
                    r->device_id, skipped);
    cJSON_ArrayForEach(m, extra)
    {
        char *text = err == MF_OK ? cJSON_PrintUnformatted(m) : NULL;

        if (err == MF_OK)
            err = text ? mf_answer__raw_begin(ans, m->string) : MF_E_NOMEM;
        if (err == MF_OK)
            err = mf_dynbuf__append(&ans->text, text, strlen(text));
        if (err == MF_OK)
            err = mf_answer__end(ans);
        cJSON_free(text);
    }
    cJSON_Delete(extra);
    return err;
}

/* The answer's text (in j->answer, open: mf_answer__finish closes nothing) after
 * checkin_begin: nonce, poll interval and install window, trust, assignments, offload
 * policies. */
static int build_reply(struct mf_checkin_job *j, struct mf_httpd_req *r)
{
    struct mf_answer *ans = &j->answer;
    const struct mf_checkin_req *req = &j->req;
    struct mf_store_group_settings settings;
    struct mf_dynbuf root, keys;
    uint64_t rv = 0, kv = 0;
    int err = mf_checkin_settings__read(&settings, &j->v, r);

    if (err < 0)
        return err;
    err = mf_answer__open(ans, NULL, '{');
    if (err == MF_OK)
        err = mf_answer__str(ans, "nonce", req->nonce);
    if (err == MF_OK)
        err = mf_checkin_settings__add(ans, &settings, r->env);
    if (err < 0)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
    mf_dynbuf__init(&keys, &r->ctx.alloc, 1);
    err = mf_ccache__trust_latest(&rv, &root, &j->v, MF_STORE_TRUST_ROOT);
    mf_dynbuf__free(&root);
    if (err == MF_OK)
        err = mf_ccache__trust_latest(&kv, &keys, &j->v, MF_STORE_TRUST_KEYS);
    if (err == MF_E_NOTFOUND) {
        /* No trust configured: nothing to assign. */
        err = mf_answer__open(ans, "assignments", '[');
        if (err == MF_OK)
            err = mf_answer__close(ans, ']');
    } else if (err == MF_OK) {
        err = add_trust(ans, &j->v, req, &keys, kv);
        if (err == MF_OK)
            err = add_assignments(ans, j->w, r, &j->v, req, j->defer_sign ? j : NULL);
    }
    mf_dynbuf__free(&keys);
    if (err == MF_OK)
        err = add_offload(ans, r);
    if (err == MF_OK)
        err = mf_answer__close(ans, '}');
    if (err == MF_E_NOMEM || err == MF_E_LIMIT)
        err = mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
    return err;
}

/* The stored timestamps' clock (mf_handlers__now's): wall-clock Unix seconds. */
static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

int mf_checkin_flow__job_new(struct mf_checkin_job **out, struct mf_checkin_req **req_out,
                             struct mf_httpd_req *r)
{
    struct mf_checkin_job *j = mf_calloc(&r->ctx.alloc, 1, sizeof(*j));

    *out = j;
    if (!j)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a check-in");
    mf_answer__init(&j->answer);
    *req_out = &j->req;
    return MF_OK;
}

int mf_checkin_flow__job_prepare(struct mf_checkin_job *j, struct mf_httpd_req *r)
{
    j->w = mf_checkin_decide__work_new(r, j->req.n_models);
    if (!j->w)
        return mf_fail(&r->ctx, MF_E_NOMEM, "out of memory answering a check-in");
    for (size_t i = 0; i < j->req.n_models; i++)
        j->models[i] = j->req.models[i].name;
    j->v = (struct mf_ccache_view){r->env->ccache, r->env->store, &r->ctx, 0};
    /* last_seen, the sequence block, the directives and the generation the node's cache
     * is valid for (checkin_cache.h), in one round trip that also verifies the credential
     * the router may have taken from its cache (the route verifies_credential), without the
     * pin reads of models the cache knows unpinned. Telemetry is stored only after that. */
    mf_ccache__pin_hint(&j->hint, j->v.c, j->models, j->req.n_models);
    j->c = (struct mf_store_checkin){
        .ctx = &r->ctx,
        .device_id = r->device_id,
        .cred_hash = r->cred_hash,
        .n_seq = (unsigned)j->req.n_models,
        .models = j->models,
        .n_models = j->req.n_models,
        .now = now_s(),
        .hint = &j->hint,
        .dirs = j->w->dirs,
    };
    return MF_OK;
}

void mf_checkin_flow__job_free(struct mf_httpd_req *r, struct mf_checkin_job *j)
{
    mf_answer__free(&j->answer);
    mf_free(NULL, j->text);
    mf_free(&r->ctx.alloc, j->w);
    mf_free(&r->ctx.alloc, j);
}

/* Everything after checkin_begin (its result in j->c): the answer's text in j->answer
 * (with holes when signing is deferred), or a reply built (401), or an error. */
static int after_begin(struct mf_httpd_req *r, struct mf_checkin_job *j)
{
    int err = j->c.err;

    j->v.generation = j->c.generation;
    j->w->first = j->c.first;
    if (err == MF_E_AUTH) {
        err = mf_httpd__deny_credential(r);
        return err == MF_E_AUTH ? MF_OK : err;
    }
    if (err == MF_OK)
        mf_metrics__count(&r->env->metrics->checkins, 1);
    /* Learns, once per generation, which models have no pins, for the next check-ins. */
    for (size_t i = 0; err == MF_OK && j->v.c && i < j->req.n_models; i++) {
        int pinned;

        err = mf_ccache__pinned(&pinned, &j->v, j->models[i]);
    }
    if (err == MF_OK) {
        int stored = 0;

        err = mf_rollout__ingest(&stored, r->env->store, &r->ctx, r->device_id, r->json, now_s());
    }
    if (err == MF_OK)
        err = mf_checkin_degrade__store(r->env->store, &r->ctx, r->device_id, r->json, now_s());
    return err == MF_OK ? build_reply(j, r) : err;
}

/* The answer's final text in j->text, its holes filled with envs (j->n_unsigned of them). */
static int finish_answer(struct mf_httpd_req *r, struct mf_checkin_job *j, uint8_t *const *envs,
                         const size_t *lens)
{
    j->text = mf_answer__finish(&j->text_len, &j->answer, envs, lens);
    return j->text ? MF_OK
                   : mf_fail(&r->ctx, MF_E_NOMEM, "out of memory building a check-in reply");
}

/* Signs every unsigned assignment of the group at once and finishes every answer with
 * them; errs[i] gets each check-in's failure. */
static void sign_group(struct mf_httpd_req **rs, struct mf_checkin_job **jobs, int *errs, size_t n)
{
    struct mf_director *d = rs[0]->env->director;
    mf_manifest_assignment_spec *specs = NULL;
    uint8_t **envs = NULL;
    size_t *lens = NULL, total = 0, k = 0;
    struct mf_ctx ctx;
    int err = MF_OK;

    for (size_t i = 0; i < n; i++)
        total += errs[i] == MF_OK ? jobs[i]->n_unsigned : 0;
    mf_ctx__init(&ctx, NULL, rs[0]->env->log_fn, rs[0]->env->log_payload, "director");
    if (total) {
        specs = mf_alloc(NULL, total * sizeof(*specs));
        envs = mf_alloc(NULL, total * sizeof(*envs));
        lens = mf_alloc(NULL, total * sizeof(*lens));
        for (size_t i = 0; specs && i < n; i++)
            for (size_t m = 0; errs[i] == MF_OK && m < jobs[i]->n_unsigned; m++)
                specs[k++] = jobs[i]->specs[m];
        err = specs && envs && lens ? mf_director__sign_many(envs, lens, d, &ctx, specs, total)
                                    : mf_fail(&ctx, MF_E_NOMEM, "out of memory signing a group");
    }
    k = 0;
    for (size_t i = 0; i < n; i++) {
        if (errs[i] < 0 || rs[i]->resp)
            continue;
        errs[i] =
            err < 0 && jobs[i]->n_unsigned
                ? mf_fail(&rs[i]->ctx, err, "%s", mf_ctx__errmsg(&ctx))
                : finish_answer(rs[i], jobs[i], envs ? envs + k : NULL, lens ? lens + k : NULL);
        k += jobs[i]->n_unsigned;
    }
    for (size_t i = 0; total && err == MF_OK && i < total; i++)
        mf_free(NULL, envs[i]);
    mf_free(NULL, specs);
    mf_free(NULL, envs);
    mf_free(NULL, lens);
}

void mf_checkin_flow__group(struct mf_httpd_req **rs, size_t n)
{
    struct mf_store *s = rs[0]->env->store;
    struct mf_store_checkin items[MF_STORE_CHECKIN_BATCH_MAX];
    struct mf_checkin_job *jobs[MF_STORE_CHECKIN_BATCH_MAX];
    int errs[MF_STORE_CHECKIN_BATCH_MAX];

    assert(n >= 1 && n <= MF_STORE_CHECKIN_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        jobs[i] = rs[i]->stage_data;
        jobs[i]->defer_sign = 1; /* one signature for the group (sign_group) */
        items[i] = jobs[i]->c;
    }
    (void)s->ops->checkin->checkin_begin(s, items, n);
    for (size_t i = 0; i < n; i++) {
        jobs[i]->c.generation = items[i].generation;
        jobs[i]->c.first = items[i].first;
        jobs[i]->c.err = items[i].err;
        errs[i] = after_begin(rs[i], jobs[i]);
    }
    sign_group(rs, jobs, errs, n);
    for (size_t i = 0; i < n; i++) {
        struct mf_httpd_req *r = rs[i];

        r->stage_err = errs[i];
        if (errs[i] == MF_OK && !r->resp) {
            r->stage_text = jobs[i]->text; /* sent by the MHD worker once resumed */
            r->stage_len = jobs[i]->text_len;
            jobs[i]->text = NULL;
        }
        r->stage_data = NULL;
        mf_checkin_flow__job_free(r, jobs[i]);
    }
}

int mf_checkin_flow__run(char **text_out, size_t *len_out, struct mf_httpd_req *r,
                         struct mf_checkin_job *j)
{
    int err;

    /* Inline: checkin_begin grouped with the others in flight (director/checkin_batch.h)
     * when the server has a batcher. */
    j->c.err = r->env->checkins
                   ? mf_checkin_batch__begin(r->env->checkins, &j->c)
                   : r->env->store->ops->checkin->checkin_begin(r->env->store, &j->c, 1);
    err = after_begin(r, j);
    if (err == MF_OK && !r->resp)
        err = finish_answer(r, j, NULL, NULL);
    *text_out = j->text;
    *len_out = j->text_len;
    j->text = NULL;
    mf_checkin_flow__job_free(r, j);
    return err;
}
