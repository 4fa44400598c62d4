/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fallback variant's slot (docs/agent.md, "Runtime degradation"): beside the active slot
 * the agent keeps the lighter variant of the same version that the release names as its
 * fallback, so degrading never needs the network. The check-in assignment offers it
 * ("fallback": variant, sha256, size, plus its release envelope and blob unless the device
 * holds it already, docs/protocol.md). Its release is verified with the trust chain (release
 * keys, the model's floor) and must be of the model and version the device runs; the bytes
 * are checked chunk by chunk as they arrive, exactly like a model download, into
 * models/<m>/fallback.part (resumable: the .part keeps its progress record).
 * Power cuts: the finished .part replaces models/<m>/fallback only after fallback.state,
 * which describes it, was removed, and fallback.state is written (atomically) last, so it
 * never names bytes that are not there; a load that finds it naming a file of another size
 * forgets it. GC: a fallback is kept while the active version is its version and the server
 * still offers it; it is removed (state first, then the file) otherwise.
 * Storage budget: with a declared class, active + fallback bytes stay within the class's
 * storage_mb (the server's rule, checked here again). Only an agent that degrades (options'
 * `degrade`) keeps a fallback; others ignore the offer.
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define FALLBACK_STATE_MAX 512

struct fallback_names {
    char file[MF_AGENT_STORE_NAME_MAX];
    char part[MF_AGENT_STORE_NAME_MAX];
    char state[MF_AGENT_STORE_NAME_MAX];
};

static int names_of(struct mf_agent *a, struct fallback_names *n, const struct agent_model *m)
{
    int err = mf_agent__store_name(a, n->file, m->name, "fallback");

    if (err >= 0)
        err = mf_agent__store_name(a, n->part, m->name, "fallback.part");
    if (err >= 0)
        err = mf_agent__store_name(a, n->state, m->name, "fallback.state");
    return err;
}

static int hex64_ok(const char *s)
{
    uint8_t raw[MF_SHA256_LEN];

    return strlen(s) == MF_SHA256_HEX_LEN &&
           mf_hex__decode(raw, sizeof(raw), s, MF_SHA256_HEX_LEN) >= 0;
}

/* "mf-fallback 1 <variant> <version> <sha256> <size>\n"; 0 when it is not that. */
static int parse_state(struct mf_agent_fallback *out, const char *text)
{
    unsigned long long size = 0;
    char tail = 0;

    memset(out, 0, sizeof(*out));
    if (sscanf(text, "mf-fallback 1 %64s %64s %64s %llu%c", out->variant, out->version, out->sha256,
               &size, &tail) != 5 ||
        tail != '\n' || !mf_agent__name_ok(out->variant) || !mf_agent__name_ok(out->version) ||
        !hex64_ok(out->sha256) || size == 0) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    out->size = size;
    return 1;
}

/* Storage names on the heap (frames stay under the device stack ceiling). */
static struct fallback_names *names_new(struct mf_agent *a, const struct agent_model *m)
{
    struct fallback_names *n = mf_ctx__alloc(&a->ctx, sizeof(*n));

    if (n && names_of(a, n, m) >= 0)
        return n;
    mf_ctx__free(&a->ctx, n);
    return NULL;
}

struct mf_agent_fallback *mf_agent__fallback_of(const struct mf_agent *a,
                                                const struct agent_model *m)
{
    return a->dg ? &a->dg->fb[m - a->models] : NULL;
}

void mf_agent__fallback_load(struct mf_agent *a, struct agent_model *m)
{
    struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);
    struct fallback_names *n;
    struct mf_dynbuf text;
    uint64_t size = 0;

    if (!fb)
        return;
    n = names_new(a, m);
    memset(fb, 0, sizeof(*fb));
    if (!n || mf_agent__store_read(a, &text, n->state, FALLBACK_STATE_MAX) < 0) {
        mf_ctx__clear(&a->ctx); /* none (the usual case) or unreadable: no fallback */
        mf_ctx__free(&a->ctx, n);
        return;
    }
    if (mf_dynbuf__append(&text, "", 1) < 0 || !parse_state(fb, (const char *)text.data))
        MF_LOG_WARN(&a->ctx, "model %s: damaged %s ignored", m->name, n->state);
    else if (a->plat.size(a->plat.payload, &size, n->file) < 0 || size != fb->size) {
        MF_LOG_WARN(&a->ctx, "model %s: %s names %llu bytes that are not there", m->name, n->state,
                    (unsigned long long)fb->size);
        memset(fb, 0, sizeof(*fb));
    }
    mf_dynbuf__free(&text);
    mf_ctx__free(&a->ctx, n);
}

int mf_agent__fallback_usable(const struct mf_agent *a, const struct agent_model *m)
{
    const struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);

    return fb && fb->variant[0] && m->state.active.slot &&
           strcmp(fb->version, m->state.active.version) == 0;
}

/* Removes the fallback (its state first) and any download of one. */
static void drop(struct mf_agent *a, struct agent_model *m, const char *why)
{
    struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);
    struct fallback_names *n = names_new(a, m);

    if (!n) {
        mf_ctx__clear(&a->ctx);
        return;
    }
    if (fb->variant[0])
        MF_LOG_INFO(&a->ctx, "model %s: fallback %s of %s removed (%s)", m->name, fb->variant,
                    fb->version, why);
    (void)a->plat.remove(a->plat.payload, n->state);
    (void)a->plat.remove(a->plat.payload, n->file);
    mf_agent__progress_drop(a, n->part, 1);
    memset(fb, 0, sizeof(*fb));
    mf_ctx__free(&a->ctx, n);
}

/* The offered release, verified, of this model and the version it runs, within budget. */
static int check_release(struct mf_agent *a, const struct agent_model *m,
                         const struct mf_agent_fallback_ref *f, const mf_manifest_release *r)
{
    char sha[MF_SHA256_HEX_LEN + 1];
    uint64_t budget = a->class_storage_mb << 20;

    mf_hex__encode(sha, r->sha256, sizeof(r->sha256));
    if (strcmp(r->name, m->name) != 0 || strcmp(r->version, m->state.active.version) != 0)
        return mf_fail(&a->ctx, MF_E_SIGNATURE,
                       "fallback %s refused: its release is of %s %s, the device runs %s %s",
                       f->variant, r->name, r->version, m->name, m->state.active.version);
    if (strcmp(sha, m->state.active.sha256) == 0)
        return mf_fail(&a->ctx, MF_E_INVALID, "fallback %s refused: it is the active bytes",
                       f->variant);
    if (a->has_class && (r->size > budget || m->state.active.size > budget - r->size))
        return mf_fail(&a->ctx, MF_E_LIMIT,
                       "fallback %s refused: %llu + %llu bytes exceed the class's %llu MiB",
                       f->variant, (unsigned long long)m->state.active.size,
                       (unsigned long long)r->size, (unsigned long long)a->class_storage_mb);
    return MF_OK;
}

/* One install's names, message and next state; on the heap. */
struct fallback_work {
    struct fallback_names n;
    char what[MF_AGENT_NAME_MAX * 3 + 32];
    struct mf_agent_fallback next;
    char text[FALLBACK_STATE_MAX]; /* fallback.state's line */
};

static int write_state(struct mf_agent *a, struct fallback_work *w)
{
    int len = snprintf(w->text, sizeof(w->text), "mf-fallback 1 %s %s %s %llu\n", w->next.variant,
                       w->next.version, w->next.sha256, (unsigned long long)w->next.size);

    return mf_agent__store_write(a, w->n.state, w->text, (size_t)len, 0);
}

/* The verified .part becomes the fallback: its old state goes first, the new one last. */
static int commit(struct mf_agent *a, struct agent_model *m, struct fallback_work *w,
                  const struct mf_agent_fallback_ref *f, const mf_manifest_release *r)
{
    struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);
    int err;

    memset(&w->next, 0, sizeof(w->next));
    (void)snprintf(w->next.variant, sizeof(w->next.variant), "%s", f->variant);
    memcpy(w->next.version, m->state.active.version, sizeof(w->next.version));
    mf_hex__encode(w->next.sha256, r->sha256, sizeof(r->sha256));
    w->next.size = r->size;
    (void)a->plat.remove(a->plat.payload, w->n.state); /* never names the bytes replaced */
    memset(fb, 0, sizeof(*fb));
    err = a->plat.rename(a->plat.payload, w->n.part, w->n.file);
    if (err < 0)
        err = mf_fail(&a->ctx, err, "cannot rename %s to %s", w->n.part, w->n.file);
    mf_agent__progress_drop(a, w->n.part, err < 0);
    if (err >= 0)
        err = write_state(a, w);
    if (err >= 0) {
        *fb = w->next;
        MF_LOG_INFO(&a->ctx, "model %s: fallback %s of %s installed (%llu bytes)", m->name,
                    w->next.variant, w->next.version, (unsigned long long)w->next.size);
    }
    return err;
}

/* Download (resumable, verified), then the switch of file and state described above. */
static int install(struct mf_agent *a, struct agent_model *m, const struct mf_agent_fallback_ref *f)
{
    struct fallback_work *w = mf_ctx__alloc(&a->ctx, sizeof(*w));
    mf_manifest_release *r = NULL;
    int err = w ? names_of(a, &w->n, m) : mf_fail(&a->ctx, MF_E_NOMEM, "no memory for a fallback");

    if (err >= 0)
        err = mf_agent__trust_release(a, &r, f->release_env, f->release_len);
    if (err >= 0)
        err = check_release(a, m, f, r);
    if (err >= 0) {
        struct mf_agent_fetch fetch = {.m = m,
                                       .model = m->name,
                                       .kind = "model",
                                       .what = w->what,
                                       .blob = f->blob,
                                       .part = w->n.part,
                                       .size = r->size,
                                       .sha256 = r->sha256,
                                       .rel = mf_agent__rel_chunks(r)};

        (void)snprintf(w->what, sizeof(w->what), "fallback %s of model %s %s", f->variant, m->name,
                       r->version);
        err = mf_agent__fetch(a, &fetch);
    }
    if (err >= 0)
        err = commit(a, m, w, f, r);
    mf_manifest_release_free(r);
    mf_ctx__free(&a->ctx, w);
    return err;
}

void mf_agent__fallback_sync(struct mf_agent *a, struct agent_model *m,
                             const struct mf_agent_assignment *as)
{
    const struct mf_agent_fallback_ref *f = &as->fallback;
    struct mf_agent_fallback *fb = mf_agent__fallback_of(a, m);
    int runs =
        as->verified && m->state.active.slot && strcmp(m->state.active.sha256, as->sha256) == 0;
    int err;

    if (!fb)
        return;  /* an agent that never degrades keeps no fallback */
    if (!runs) { /* not (yet) the assigned release: keep only a fallback of what runs */
        if (fb->variant[0] && !mf_agent__fallback_usable(a, m))
            drop(a, m, "superseded");
        return;
    }
    if (!f->variant) {
        if (fb->variant[0])
            drop(a, m, mf_agent__fallback_usable(a, m) ? "no longer offered" : "superseded");
        return;
    }
    if (mf_agent__fallback_usable(a, m) && strcmp(fb->variant, f->variant) == 0 &&
        strcmp(fb->sha256, f->sha256) == 0)
        return; /* holds it already */
    if (!f->release_env) {
        MF_LOG_WARN(&a->ctx, "model %s: fallback %s offered without its release", m->name,
                    f->variant);
        return;
    }
    err = install(a, m, f);
    if (err < 0) {
        MF_LOG_WARN(&a->ctx, "model %s: %s (retried at the next check-in)", m->name, a->ctx.errmsg);
        mf_ctx__clear(&a->ctx);
    }
}
