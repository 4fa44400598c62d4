/* SPDX-License-Identifier: Apache-2.0 */
/* The director's decision per model of a check-in (checkin_decide.h). */
#include "director/checkin_decide.h"

#include "director/director_variant.h"
#include "director/director_wave.h"
#include "http/http_metrics.h"

#include <stdio.h>
#include <string.h>

struct mf_checkin_work *mf_checkin_decide__work_new(struct mf_httpd_req *r, size_t n_models)
{
    size_t n = n_models ? n_models : 1;
    struct mf_checkin_work *w =
        mf_calloc(&r->ctx.alloc, 1,
                  sizeof(*w) + n * (sizeof(*w->v) + sizeof(*w->from) + sizeof(*w->dirs) +
                                    sizeof(*w->variant)));

    if (!w)
        return NULL;
    /* The struct and each element size keep the arrays aligned in this order. */
    _Static_assert(sizeof(struct mf_checkin_work) % _Alignof(struct mf_store_version) == 0 &&
                       sizeof(struct mf_store_version) % _Alignof(const char *) == 0,
                   "checkin_work's arrays stay aligned");
    w->v = (struct mf_store_version *)(void *)(w + 1);
    w->from = (const struct mf_checkin_model **)(void *)(w->v + n);
    w->dirs = (struct mf_store_directives *)(void *)(w->from + n);
    w->variant = (char(*)[MF_STORE_NAME_SIZE])(void *)(w->dirs + n); /* chars: any alignment */
    return w;
}
/* The release `version` of `model`, if there is such a released version. */
static int resolve(struct mf_policy_candidate *c, const struct mf_ccache_view *v, const char *model,
                   const char *version)
{
    int err;

    c->present = 0;
    if (!version || !version[0])
        return MF_OK;
    err = mf_ccache__version_get(&c->v, v, model, version);
    if (err == MF_E_NOTFOUND)
        return MF_OK; /* a pin to a version that is gone or was never there: no candidate */
    if (err < 0)
        return err;
    c->present = c->v.sequence > 0; /* staged versions are never assigned */
    return MF_OK;
}

/* Makes candidate `c` variant x of its version: its bytes and release, the version's place. */
static void take_variant(struct mf_policy_candidate *c, const struct mf_store_variant *x)
{
    memcpy(c->v.sha256, x->sha256, sizeof(c->v.sha256));
    c->v.size = x->size;
    memcpy(c->v.release_digest, x->release_digest, sizeof(c->v.release_digest));
    c->v.chunks_sha256[0] = '\0'; /* the version's chunk list is not the variant's */
    (void)snprintf(c->variant, sizeof(c->variant), "%s", x->variant);
}

/* The variant of candidate `c`'s version that class `cls` gets (director_variant.h), or the
 * version's own blob. */
static int classify(struct mf_policy_candidate *c, const struct mf_ccache_view *v,
                    const struct mf_device_class *cls)
{
    struct mf_store_variant xs[MF_STORE_VARIANTS_MAX];
    size_t n = 0;
    int err, pick;

    if (!c->present || !cls->declared)
        return MF_OK;
    err = mf_ccache__variants(xs, &n, v, c->v.model, c->v.version);
    pick = err == MF_OK ? mf_variant__pick(xs, n, cls) : -1;
    if (pick >= 0)
        take_variant(c, &xs[pick]);
    return err;
}

/* The device's installed release: the version it names when it runs that version's own
 * bytes, or the released variant of it whose bytes it runs (whatever its class says now). */
static int resolve_installed(struct mf_policy_candidate *c, const struct mf_ccache_view *v,
                             const struct mf_checkin_model *m)
{
    struct mf_store_variant xs[MF_STORE_VARIANTS_MAX];
    size_t n = 0;
    int err = resolve(c, v, m->name, m->version);

    if (err < 0 || !c->present || strcmp(c->v.sha256, m->sha256) == 0)
        return err;
    c->present = 0; /* the device runs other bytes under that name... */
    err = mf_ccache__variants(xs, &n, v, m->name, m->version);
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        if (strcmp(xs[i].sha256, m->sha256) == 0) { /* ... unless they are a variant's */
            take_variant(c, &xs[i]);
            c->present = 1;
            break;
        }
    }
    return err;
}

/* Gathers every rule's candidate for one model (director_policy.h) from the store. */
static int gather(struct mf_checkin_work *w, struct mf_httpd_req *r, const struct mf_ccache_view *v,
                  const struct mf_checkin_req *req, const struct mf_checkin_model *m,
                  const struct mf_store_directives *dir)
{
    struct mf_policy_input *in = &w->in;
    struct mf_policy_candidate *const offered[] = {
        &in->device_pin,     &in->ops_device_pin, &in->ops_group_pin, &in->fleet_rollback,
        &in->class_rollback, &in->wave,           &in->channel};
    int err;

    memset(in, 0, sizeof(*in));
    err = mf_ccache__promoted_latest(&in->channel.v, v, m->name);
    if (err < 0)
        return err; /* MF_E_NOTFOUND: nothing released, no assignment */
    in->channel.present = 1;
    in->floor = in->channel.v.security_floor;
    if (m->sha256)
        err = resolve_installed(&in->installed, v, m);
    if (err == MF_OK)
        err = resolve(&in->device_pin, v, m->name, m->pin);
    if (err == MF_OK)
        err = resolve(&in->ops_device_pin, v, m->name, dir->device_pin);
    if (err == MF_OK)
        err = resolve(&in->ops_group_pin, v, m->name, dir->group_pin);
    if (err == MF_OK)
        err = resolve(&in->fleet_rollback, v, m->name, dir->fleet_rollback);
    if (err == MF_OK && dir->channel_version[0])
        err = resolve(&in->channel, v, m->name, dir->channel_version);
    if (err == MF_OK) {
        err = mf_director__wave_cached(&in->wave.v, v, r->device_id, m->name);
        in->wave.present = err == MF_OK;
        if (err == MF_E_NOTFOUND)
            err = MF_OK;
    }
    if (err == MF_OK && req->device_class.declared) {
        err = mf_director__class_rollback_cached(&in->class_rollback.v, v, req->device_class.tag,
                                                 m->name);
        in->class_rollback.present = err == MF_OK;
        if (err == MF_E_NOTFOUND)
            err = MF_OK;
    }
    /* Every rule chooses a version; the device's class chooses among its variants. */
    for (size_t i = 0; err == MF_OK && i < sizeof(offered) / sizeof(offered[0]); i++)
        err = classify(offered[i], v, &req->device_class);
    in->pending = m->pending;
    in->n_rolled_back = m->n_rolled_back;
    for (size_t i = 0; i < m->n_rolled_back; i++)
        in->rolled_back[i] = m->rolled_back[i];
    return err;
}

int mf_checkin_decide__collect(struct mf_checkin_work *w, struct mf_httpd_req *r,
                               const struct mf_ccache_view *v, const struct mf_checkin_req *req)
{
    w->n = 0;
    for (size_t i = 0; i < req->n_models; i++) {
        const struct mf_checkin_model *m = &req->models[i];
        struct mf_policy_decision d;
        int err = gather(w, r, v, req, m, &w->dirs[i]);

        if (err == MF_E_NOTFOUND)
            continue; /* nothing released: no assignment */
        if (err < 0)
            return err;
        mf_policy__decide(&d, &w->in);
        mf_metrics__decision(r->env->metrics, d.rule);
        MF_LOG_DBG(&r->ctx, "director: %s %s -> %s (%s)", r->device_id, m->name,
                   d.target ? d.target->version : "-", mf_policy__rule_name(d.rule));
        if (!d.target)
            continue;
        w->v[w->n] = *d.target;
        w->from[w->n] = m;
        (void)snprintf(w->variant[w->n], sizeof(w->variant[w->n]), "%s", d.variant);
        w->n++;
    }
    return MF_OK;
}
