/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Installing a policy and its crash-safe cache (offload/<model>/policy.json). The cache is
 * replaced atomically (tmp, sync, durable rename), so a power cut leaves the old or the new
 * policy, never a torn one; an unusable cache leaves the handle edge-only, the safe side.
 */
#include "mf_offload_int.h"

#include <stdio.h>
#include <string.h>

int mf_offload__store_name(const mf_offload *o, char *out, const char *leaf)
{
    int n = snprintf(out, MF_OFFLOAD_STORE_NAME_MAX, "offload/%s%s%s", o->model, leaf[0] ? "/" : "",
                     leaf);

    return (n < 0 || n >= MF_OFFLOAD_STORE_NAME_MAX) ? MF_E_LIMIT : MF_OK;
}

void mf_offload__policy_apply(mf_offload *o, const mf_offload_policy *server)
{
    mf_offload_policy eff = *server;
    uint64_t now = o->plat.monotonic_ms(o->plat.payload);

    if (o->has_limits)
        mf_offload_policy_restrict(&eff, server, &o->limits);
    /* Budgets survive a re-sent identical policy (every check-in); only new caps restart them,
     * or a device checking in each minute would get a fresh daily budget each minute. */
    if (!o->has_policy || eff.per_minute != o->policy.per_minute ||
        eff.per_hour != o->policy.per_hour || eff.per_day != o->policy.per_day ||
        eff.bytes_per_day != o->policy.bytes_per_day)
        mf_offload_budget_init(&o->budget, &eff, now);
    o->policy = eff;
    o->has_policy = 1;
}

int mf_offload__write_atomic(const mf_platform_ops *pl, struct mf_ctx *ctx, const char *tmp,
                             const char *name, int open_flags, const void *buf, size_t len)
{
    mf_platform_file *f = NULL;
    int err = pl->open(pl->payload, &f, tmp, MF_PLATFORM_OPEN_WRITE | open_flags);

    if (err < 0)
        return mf_fail(ctx, err, "cannot create %s", tmp);
    err = pl->write(pl->payload, f, buf, len);
    if (err >= 0)
        err = pl->sync(pl->payload, f);
    pl->close(pl->payload, f);
    if (err >= 0)
        err = pl->rename(pl->payload, tmp, name);
    if (err < 0) {
        (void)pl->remove(pl->payload, tmp);
        return mf_fail(ctx, err, "cannot write %s", name);
    }
    return MF_OK;
}

/* Atomic replace of offload/<model>/policy.json: tmp, sync, durable rename. */
int mf_offload__policy_cache_write(mf_offload *o, const char *json, size_t len)
{
    char name[MF_OFFLOAD_STORE_NAME_MAX], tmp[MF_OFFLOAD_STORE_NAME_MAX];

    if (mf_offload__store_name(o, name, "policy.json") < 0 ||
        mf_offload__store_name(o, tmp, "policy.json.tmp") < 0)
        return mf_fail(&o->ctx, MF_E_LIMIT, "policy cache name too long");
    return mf_offload__write_atomic(&o->plat, &o->ctx, tmp, name, 0, json, len);
}

/* Loads the cached policy; a missing or unusable cache leaves the handle edge-only. */
int mf_offload__policy_cache_load(mf_offload *o)
{
    const mf_platform_ops *p = &o->plat;
    char name[MF_OFFLOAD_STORE_NAME_MAX];
    mf_platform_file *f = NULL;
    mf_offload_policy pol;
    uint64_t size = 0;
    size_t len = 0;
    char *buf;
    int err;

    (void)mf_offload__store_name(o, name, "policy.json");
    err = p->size(p->payload, &size, name);
    if (err == MF_E_NOTFOUND)
        return MF_OK;
    if (err < 0)
        return mf_fail(&o->ctx, err, "cannot stat %s", name);
    if (size > MF_OFFLOAD_POLICY_JSON_MAX) {
        MF_LOG_WARN(&o->ctx, "%s too large; staying edge-only until the next check-in", name);
        return MF_OK;
    }
    buf = mf_ctx__alloc(&o->ctx, (size_t)size + 1);
    if (!buf)
        return mf_fail(&o->ctx, MF_E_NOMEM, "no memory for %s", name);
    err = p->open(p->payload, &f, name, MF_PLATFORM_OPEN_READ);
    while (err >= 0 && len < size) {
        size_t got = 0;

        err = p->read_at(p->payload, &got, f, len, buf + len, (size_t)size - len);
        if (err >= 0 && got == 0)
            break;
        len += got;
    }
    if (f)
        p->close(p->payload, f);
    if (err < 0) {
        mf_ctx__free(&o->ctx, buf);
        return mf_fail(&o->ctx, err, "cannot read %s", name);
    }
    err = mf_offload__policy_parse(&o->ctx, &pol, buf, len);
    mf_ctx__free(&o->ctx, buf);
    if (err < 0) {
        MF_LOG_WARN(&o->ctx, "%s unusable (%s); staying edge-only", name, o->ctx.errmsg);
        mf_ctx__clear(&o->ctx);
        return MF_OK;
    }
    mf_offload__policy_apply(o, &pol);
    return MF_OK;
}
