/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model variants (docs/protocol.md, "Variants"; docs/rollouts.md, "Model variants"):
 *
 * PUT /v1/admin/models/<name>/versions/<version>/variants/<variant>?rank=&min_ram_mb=...
 *   the variant's bytes (streamed and hashed like a publish) and what a device class needs
 *   to run it; staged: never assigned until its release is attached. `fallback=1` names it
 *   the version's fallback (at most one per version, 409 for a second): the variant devices
 *   keep installed beside the assigned one to degrade to (docs/agent.md, "Runtime
 *   degradation").
 * PUT .../variants/<variant>/release
 *   the variant's own signed release envelope: verified as a device would, describing the
 *   variant's blob, under the version's name with the version's sequence and security floor
 *   (a variant is the same release in other bytes, never a newer one). The version itself
 *   must be released first.
 */
#include "handlers/handlers.h"

#include "blob/blob_store.h"
#include "deltas/delta_worker.h"
#include "common/names.h"
#include "common/req_parse.h"
#include "mf/ct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VARIANT_RANK_MAX 1000

/* The query's needs, every key checked: an unknown one or a bad value is a 400. */
struct needs_parse {
    struct mf_store_variant *v;
    const char *bad; /* the first offending key */
    int seen_rank;
};

static int parse_count(uint64_t *out, const char *s, uint64_t max)
{
    char *end;
    unsigned long long n;

    if (!s || !s[0] || s[0] < '0' || s[0] > '9')
        return -1;
    n = strtoull(s, &end, 10);
    if (*end || n > max)
        return -1;
    *out = n;
    return 0;
}

static int parse_flag(int *out, const char *s)
{
    if (s && (strcmp(s, "1") == 0 || strcmp(s, "true") == 0)) {
        *out = 1;
        return 0;
    }
    if (s && (strcmp(s, "0") == 0 || strcmp(s, "false") == 0)) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int parse_name(char *out, size_t size, const char *s)
{
    if (!s || !mf_names__valid_id(s))
        return -1;
    (void)snprintf(out, size, "%s", s);
    return 0;
}

static enum MHD_Result needs_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    struct needs_parse *p = cls;
    struct mf_store_variant_needs *n = &p->v->needs;
    uint64_t rank = 0;
    int bad;

    (void)kind;
    if (strcmp(key, "rank") == 0) {
        bad = parse_count(&rank, value, VARIANT_RANK_MAX) < 0 || rank == 0;
        p->v->rank = (int64_t)rank;
        p->seen_rank = 1;
    } else if (strcmp(key, "min_ram_mb") == 0) {
        bad = parse_count(&n->min_ram_mb, value, MF_DEVICE_CLASS_MB_MAX) < 0;
    } else if (strcmp(key, "min_storage_mb") == 0) {
        bad = parse_count(&n->min_storage_mb, value, MF_DEVICE_CLASS_MB_MAX) < 0;
    } else if (strcmp(key, "accelerator") == 0) {
        bad = parse_name(n->accelerator, sizeof(n->accelerator), value) < 0;
    } else if (strcmp(key, "class") == 0) {
        bad = parse_name(n->class_tag, sizeof(n->class_tag), value) < 0;
    } else if (strcmp(key, "int8") == 0) {
        bad = parse_flag(&n->int8, value) < 0;
    } else if (strcmp(key, "fp16") == 0) {
        bad = parse_flag(&n->fp16, value) < 0;
    } else if (strcmp(key, "fallback") == 0) {
        bad = parse_flag(&p->v->fallback, value) < 0;
    } else {
        bad = 1;
    }
    if (bad && !p->bad)
        p->bad = key;
    return MHD_YES;
}

/* The variant the request names, with the needs of its query; a 400 built on a bad one. */
static int parse_variant(struct mf_store_variant *v, struct mf_httpd_req *r)
{
    struct needs_parse p = {v, NULL, 0};
    int err = mf_handlers__check_names(r, 3);

    if (err < 0 || r->resp)
        return err;
    memset(v, 0, sizeof(*v));
    (void)snprintf(v->model, sizeof(v->model), "%s", r->params[0]);
    (void)snprintf(v->version, sizeof(v->version), "%s", r->params[1]);
    (void)snprintf(v->variant, sizeof(v->variant), "%s", r->params[2]);
    (void)MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, needs_key, &p);
    if (p.bad)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "bad or unknown variant parameter '%s' (rank 1..%d, "
                                     "min_ram_mb, min_storage_mb, accelerator, class, int8, fp16, "
                                     "fallback)",
                                     p.bad, VARIANT_RANK_MAX);
    if (!p.seen_rank)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "parameter 'rank' is required (1 is the best variant)");
    return MF_OK;
}

int mf_handlers__variant_begin(struct mf_httpd_req *r)
{
    struct mf_store_variant v;
    int err = parse_variant(&v, r);

    if (err < 0 || r->resp)
        return err;
    return mf_handlers__publish_begin(r); /* X-MF-Sha256, the upload limit, the temp blob */
}

static int reply_variant(struct mf_httpd_req *r, unsigned status, const struct mf_store_variant *v)
{
    const struct mf_store_variant_needs *n = &v->needs;
    cJSON *body = cJSON_CreateObject();

    if (body && (!cJSON_AddStringToObject(body, "model", v->model) ||
                 !cJSON_AddStringToObject(body, "version", v->version) ||
                 !cJSON_AddStringToObject(body, "variant", v->variant) ||
                 !cJSON_AddStringToObject(body, "sha256", v->sha256) ||
                 !cJSON_AddNumberToObject(body, "size", (double)v->size) ||
                 !cJSON_AddNumberToObject(body, "rank", (double)v->rank) ||
                 !cJSON_AddNumberToObject(body, "min_ram_mb", (double)n->min_ram_mb) ||
                 !cJSON_AddNumberToObject(body, "min_storage_mb", (double)n->min_storage_mb) ||
                 !cJSON_AddStringToObject(body, "accelerator", n->accelerator) ||
                 !cJSON_AddStringToObject(body, "class", n->class_tag) ||
                 !cJSON_AddBoolToObject(body, "int8", n->int8) ||
                 !cJSON_AddBoolToObject(body, "fp16", n->fp16) ||
                 !cJSON_AddBoolToObject(body, "fallback", v->fallback) ||
                 !cJSON_AddBoolToObject(body, "released", v->release_digest[0] != '\0'))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return mf_httpd__reply_json(r, status, body);
}

/* Variants of the version, and which one is its fallback. */
struct variant_count {
    size_t n;
    char fallback[MF_STORE_NAME_SIZE];
};

static int count_variant(void *payload, const struct mf_store_variant *v)
{
    struct variant_count *c = payload;

    c->n++;
    if (v->fallback)
        (void)snprintf(c->fallback, sizeof(c->fallback), "%s", v->variant);
    return MF_OK;
}

/* An existing variant: 200 for the same bytes and needs (idempotent), 409 otherwise. */
static int reply_existing(struct mf_httpd_req *r, const struct mf_store_variant *have,
                          const struct mf_store_variant *got)
{
    if (mf_ct_memeq(have->sha256, got->sha256, MF_SHA256_HEX_LEN) && have->size == got->size &&
        have->rank == got->rank && have->fallback == got->fallback &&
        memcmp(&have->needs, &got->needs, sizeof(got->needs)) == 0)
        return reply_variant(r, MHD_HTTP_OK, have);
    return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                 "variant '%s' of %s/%s exists with other bytes or needs",
                                 got->variant, got->model, got->version);
}

static int variant_end(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_variant v, have;
    struct mf_store_version base;
    struct variant_count n = {0, ""};
    int err = parse_variant(&v, r);

    memset(&have, 0, sizeof(have));
    if (err < 0 || r->resp)
        return err;
    err = mf_handlers__upload_finish(v.sha256, &v.size, r);
    if (err < 0 || r->resp)
        return err;
    err = s->ops->registry->version_get(&base, s, &r->ctx, v.model, v.version);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND, "no version '%s' of model '%s'",
                                     v.version, v.model);
    if (err == MF_OK)
        err = s->ops->variants->variant_get(&have, s, &r->ctx, v.model, v.version, v.variant);
    if (err == MF_OK)
        return reply_existing(r, &have, &v);
    if (err != MF_E_NOTFOUND)
        return err;
    err = s->ops->variants->variants_list(s, &r->ctx, v.model, v.version, 0, count_variant, &n);
    if (err < 0)
        return err;
    if (n.n >= MF_STORE_VARIANTS_MAX) /* what a check-in weighs per version is bounded */
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT, "%s/%s has %d variants already", v.model,
                                     v.version, MF_STORE_VARIANTS_MAX);
    if (v.fallback && n.fallback[0])
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                     "%s/%s has a fallback variant already: '%s'", v.model,
                                     v.version, n.fallback);
    err = mf_blob__upload_commit(r->upload, &r->ctx);
    if (err < 0)
        return err;
    v.created_at = mf_handlers__now();
    err = s->ops->variants->variant_insert(s, &r->ctx, &v);
    if (err == MF_E_STATE) /* a concurrent upload of the same variant won: judge against it */
        err = s->ops->variants->variant_get(&have, s, &r->ctx, v.model, v.version, v.variant);
    if (err == MF_OK && have.model[0])
        return reply_existing(r, &have, &v);
    if (err < 0)
        return mf_handlers__reply_failure(r, err);
    MF_LOG_INFO(&r->ctx, "staged variant %s of %s/%s sha256=%s size=%llu rank %lld", v.variant,
                v.model, v.version, v.sha256, (unsigned long long)v.size, (long long)v.rank);
    return reply_variant(r, MHD_HTTP_CREATED, &v);
}

int mf_handlers__variant_end(struct mf_httpd_req *r)
{
    return mf_handlers__upload_end(r, variant_end(r));
}

int mf_handlers__variant_release_begin(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 3);

    if (err < 0 || r->resp)
        return err;
    return mf_handlers__release_begin(r);
}

/* The verified release of variant `x` of released version `base`: same version, same
 * sequence and floor, the variant's bytes. */
static int attach(struct mf_httpd_req *r, mf_trust *t, struct mf_store_variant *x,
                  const struct mf_store_version *base)
{
    struct mf_store *s = r->env->store;
    struct mf_store_version blob = *base;
    mf_manifest_release *rel = NULL;
    char digest[MF_SHA256_HEX_LEN + 1];
    int err;

    memcpy(blob.sha256, x->sha256, sizeof(blob.sha256));
    blob.size = x->size;
    err = mf_handlers__release_verify(&rel, digest, r, t, &blob);
    if (err < 0 || r->resp) {
        mf_manifest_release_free(rel);
        return err;
    }
    if (rel->sequence != base->sequence || rel->security_floor != base->security_floor)
        err = mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                    "variant release has sequence %llu floor %llu, version '%s' "
                                    "has sequence %llu floor %llu: a variant is the same release",
                                    (unsigned long long)rel->sequence,
                                    (unsigned long long)rel->security_floor, base->version,
                                    (unsigned long long)base->sequence,
                                    (unsigned long long)base->security_floor);
    else if (x->release_digest[0] && mf_ct_memeq(digest, x->release_digest, MF_SHA256_HEX_LEN))
        err = reply_variant(r, MHD_HTTP_OK, x);
    else if (x->release_digest[0])
        err = mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                    "variant '%s' of %s/%s has another release already", x->variant,
                                    x->model, x->version);
    else {
        memcpy(x->release_digest, digest, sizeof(digest));
        err = s->ops->variants->variant_release_set(s, &r->ctx, x, r->body.data, r->body.len);
        if (err == MF_OK) {
            MF_LOG_INFO(&r->ctx, "released variant %s of %s/%s (sequence %llu)", x->variant,
                        x->model, x->version, (unsigned long long)base->sequence);
            /* Deltas from the same variant of earlier releases, as the worker makes them; a
             * failed enqueue costs only bandwidth (full downloads). */
            if (mf_delta__enqueue_variant(s, &r->ctx, x->model, x->version, x->variant) < 0)
                MF_LOG_WARN(&r->ctx, "queueing deltas of %s/%s/%s: %s", x->model, x->version,
                            x->variant, mf_ctx__errmsg(&r->ctx));
            mf_delta__worker_wake(r->env->deltas);
            err = reply_variant(r, MHD_HTTP_CREATED, x);
        } else {
            err = mf_handlers__reply_failure(r, err);
        }
    }
    mf_manifest_release_free(rel);
    return err;
}

int mf_handlers__variant_release_put(struct mf_httpd_req *r)
{
    struct mf_store *s = r->env->store;
    struct mf_store_variant x;
    struct mf_store_version base;
    mf_trust *t = NULL;
    int err = mf_handlers__check_names(r, 3);

    if (err < 0 || r->resp)
        return err;
    err = s->ops->variants->variant_get(&x, s, &r->ctx, r->params[0], r->params[1], r->params[2]);
    if (err == MF_E_NOTFOUND)
        return mf_httpd__reply_error(r, MHD_HTTP_NOT_FOUND,
                                     "no uploaded variant '%s' of %s/%s: upload it first",
                                     r->params[2], r->params[0], r->params[1]);
    if (err == MF_OK)
        err = s->ops->registry->version_get(&base, s, &r->ctx, x.model, x.version);
    if (err < 0)
        return err;
    if (base.sequence == 0)
        return mf_httpd__reply_error(r, MHD_HTTP_CONFLICT,
                                     "version '%s' of model '%s' is not released: release it "
                                     "before its variants",
                                     x.version, x.model);
    err = mf_handlers__release_trust(&t, r);
    if (err < 0 || r->resp)
        return err;
    err = attach(r, t, &x, &base);
    mf_trust_free(t);
    return err;
}
