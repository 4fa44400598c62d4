/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small files (state, credential) over the platform port. A write never leaves a torn
 * file behind: the bytes go to "<name>.tmp", are synced, and only then replace <name> with
 * the port's durable rename, so a power cut leaves either the old or the new content.
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

int mf_agent__store_name(struct mf_agent *a, char *out, const char *model, const char *leaf)
{
    int n =
        snprintf(out, MF_AGENT_STORE_NAME_MAX, "models/%s%s%s", model, leaf[0] ? "/" : "", leaf);

    if (n < 0 || n >= MF_AGENT_STORE_NAME_MAX)
        return mf_fail(&a->ctx, MF_E_LIMIT, "storage name for model %s too long", model);
    return MF_OK;
}

int mf_agent__path(struct mf_agent *a, struct mf_dynbuf *out, const char *name)
{
    mf_dynbuf__init(out, &a->ctx.alloc, 4096);
    if (mf_dynbuf__appendf(out, "%s/%s", a->state_dir, name) < 0) {
        mf_dynbuf__free(out);
        return MF_E_NOMEM;
    }
    return MF_OK;
}

int mf_agent__store_write(struct mf_agent *a, const char *name, const void *data, size_t len,
                          int secret)
{
    const mf_platform_ops *p = &a->plat;
    char tmp[MF_AGENT_STORE_NAME_MAX + 8];
    mf_platform_file *f = NULL;
    int n, err;

    n = snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return mf_fail(&a->ctx, MF_E_LIMIT, "storage name %s too long", name);
    err = p->open(p->payload, &f, tmp,
                  MF_PLATFORM_OPEN_WRITE | (secret ? MF_PLATFORM_OPEN_SECRET : 0));
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot create %s in the state dir", tmp);
    err = p->write(p->payload, f, data, len);
    if (err >= 0)
        err = p->sync(p->payload, f);
    p->close(p->payload, f);
    if (err < 0) {
        (void)p->remove(p->payload, tmp);
        return mf_fail(&a->ctx, err, "cannot write %s in the state dir", tmp);
    }
    err = p->rename(p->payload, tmp, name);
    if (err < 0) {
        (void)p->remove(p->payload, tmp);
        return mf_fail(&a->ctx, err, "cannot rename %s to %s in the state dir", tmp, name);
    }
    return MF_OK;
}

int mf_agent__store_read(struct mf_agent *a, struct mf_dynbuf *out, const char *name, size_t max)
{
    const mf_platform_ops *p = &a->plat;
    mf_platform_file *f = NULL;
    uint64_t size = 0;
    size_t got = 0;
    int err;

    err = p->size(p->payload, &size, name);
    if (err == MF_E_NOTFOUND)
        return mf_fail(&a->ctx, err, "%s not found in the state dir", name);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot stat %s in the state dir", name);
    if (size >= max)
        return mf_fail(&a->ctx, MF_E_LIMIT, "%s is %llu bytes, more than %zu", name,
                       (unsigned long long)size, max);
    mf_dynbuf__init(out, &a->ctx.alloc, max + 1);
    err = p->open(p->payload, &f, name, MF_PLATFORM_OPEN_READ);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot open %s in the state dir", name);
    for (;;) {
        uint8_t chunk[128];

        err = p->read_at(p->payload, &got, f, out->len, chunk, sizeof(chunk));
        if (err < 0 || got == 0)
            break;
        err = mf_dynbuf__append(out, chunk, got);
        if (err < 0)
            break;
    }
    p->close(p->payload, f);
    if (err < 0) {
        mf_dynbuf__free(out);
        return mf_fail(&a->ctx, err, "cannot read %s in the state dir: %s", name, mf_strerror(err));
    }
    return MF_OK;
}
