/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A/B install of one model. The new version always goes to the inactive slot; the active
 * one is not touched until the state file switches, which is the single atomic commit:
 *   1. build a verified image in models/<m>/slot-<x>.part, from a delta when the check-in
 *      offers one from the active version (agent_delta.c; the delta itself is downloaded
 *      resumably into slot-<x>.delta), else by downloading the full blob (agent_download.c).
 *      A failed delta falls back to the full blob, except in metered mode (report, wait);
 *   2. if the state still names slot x as "previous", forget it first (durably), so no
 *      state file ever describes bytes that are no longer there;
 *   3. durable rename .part -> slot-<x>;
 *   4. write the state file: active = x (pending when the app confirms health), previous =
 *      the old active slot;
 *   5. raise the model's security floor to the release's (trust.state), so no release
 *      below it is accepted again;
 *   6. ask the app (agent_health.c): healthy confirms, unhealthy reverts.
 * With an install window (the check-in's install_window), steps 2-6 wait after step 1 until
 * the window opens or the app's idle_fn says the device is idle: the verified .part stays
 * with its record, and later steps of this process go straight to step 2 (a new process
 * runs step 1 again, resuming from what storage holds, as after any interruption).
 * A power cut before 4 leaves the old model active; after 4 the new one; between 4 and 5
 * the next check-in records the floor (the release is verified again then). Interrupted
 * downloads and applies resume from their progress record / checkpoint (1).
 */
#include "mf_agent_int.h"
#include "mf/patch.h"

#include <stdio.h>
#include <string.h>

static int make_dirs(struct mf_agent *a, const char *dir)
{
    int err = a->plat.mkdir(a->plat.payload, "models");

    if (err >= 0)
        err = a->plat.mkdir(a->plat.payload, dir);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot create %s in the state dir", dir);
    return MF_OK;
}

/* Storage names and the next state of one install; on the heap to keep frames small. */
struct install_work {
    char dir[MF_AGENT_STORE_NAME_MAX];
    char part[MF_AGENT_STORE_NAME_MAX];
    char delta[MF_AGENT_STORE_NAME_MAX];
    char slot_name[MF_AGENT_STORE_NAME_MAX];
    char active_name[MF_AGENT_STORE_NAME_MAX];
    char what[MF_AGENT_NAME_MAX * 2 + 32];
    struct mf_agent_model_state next;
    struct mf_agent_fetch fetch;
    struct mf_agent_chunks chunks; /* a chunk-tree release's list (agent_chunks.c) */
};

static int name_work(struct mf_agent *a, struct install_work *w, const struct agent_model *m,
                     char slot)
{
    char leaf[24];
    int err;

    (void)snprintf(leaf, sizeof(leaf), "slot-%c", slot);
    err = mf_agent__store_name(a, w->dir, m->name, "");
    if (err >= 0)
        err = mf_agent__store_name(a, w->slot_name, m->name, leaf);
    (void)snprintf(leaf, sizeof(leaf), "slot-%c.part", slot);
    if (err >= 0)
        err = mf_agent__store_name(a, w->part, m->name, leaf);
    (void)snprintf(leaf, sizeof(leaf), "slot-%c.delta", slot);
    if (err >= 0)
        err = mf_agent__store_name(a, w->delta, m->name, leaf);
    (void)snprintf(leaf, sizeof(leaf), "slot-%c",
                   m->state.active.slot ? m->state.active.slot : 'a');
    if (err >= 0)
        err = mf_agent__store_name(a, w->active_name, m->name, leaf);
    return err;
}

/* The check-in's delta from the active version, else its compressed full blob (a delta from
 * the empty image), if any. */
static const struct mf_agent_delta_ref *pick_delta(const struct agent_model *m,
                                                   const struct mf_agent_assignment *as)
{
    for (size_t i = 0; m->state.active.slot && i < as->n_deltas; i++) {
        if (strcmp(as->deltas[i].from_sha256, m->state.active.sha256) == 0)
            return &as->deltas[i];
    }
    for (size_t i = 0; i < as->n_deltas; i++) {
        if (strcmp(as->deltas[i].from_sha256, MF_PATCH_EMPTY_SHA256_HEX) == 0)
            return &as->deltas[i];
    }
    return NULL;
}

static void fetch_of(struct install_work *w, struct agent_model *m, const char *kind,
                     const char *blob, const char *part, uint64_t size, const uint8_t *sha256,
                     const mf_manifest_release *rel)
{
    w->fetch = (struct mf_agent_fetch){.m = m,
                                       .model = m->name,
                                       .kind = kind,
                                       .what = w->what,
                                       .blob = blob,
                                       .part = part,
                                       .size = size,
                                       .sha256 = sha256,
                                       .rel = mf_agent__rel_chunks(rel)};
}

/* Step 1 from a delta: resumable download of the patch, then the checkpointed apply. */
static int build_from_delta(struct mf_agent *a, struct install_work *w, struct agent_model *m,
                            const struct mf_agent_assignment *as,
                            const struct mf_agent_delta_ref *dr, const mf_manifest_release *rel)
{
    uint8_t sha[MF_SHA256_LEN];
    int err;

    (void)mf_hex__decode(sha, sizeof(sha), dr->sha256, MF_SHA256_HEX_LEN);
    (void)snprintf(w->what, sizeof(w->what), "delta of model %s %s", as->model, as->version);
    fetch_of(w, m, "delta", dr->blob, w->delta, dr->size, sha, NULL);
    err = mf_agent__fetch(a, &w->fetch);
    if (err >= 0)
        err = mf_agent__delta_apply(a, w->part, w->active_name, w->delta, as, dr, rel);
    if (err != MF_E_NET && err != MF_E_IO)
        mf_agent__progress_drop(a, w->delta, 1); /* applied, or of no use */
    return err;
}

static int build_full(struct mf_agent *a, struct install_work *w, struct agent_model *m,
                      const struct mf_agent_assignment *as, const mf_manifest_release *rel)
{
    (void)snprintf(w->what, sizeof(w->what), "model %s %s", as->model, as->version);
    fetch_of(w, m, "model", as->blob, w->part, rel->size, rel->sha256, rel);
    return mf_agent__fetch(a, &w->fetch);
}

/* Step 1: delta when offered, full otherwise or after a failed delta (unless metered); both
 * verified against the release's chunk hashes, a chunk-tree release's fetched first. */
static int build(struct mf_agent *a, struct install_work *w, struct agent_model *m,
                 const struct mf_agent_assignment *as)
{
    const struct mf_agent_delta_ref *dr = pick_delta(m, as);
    const mf_manifest_release *rel = NULL;
    char why[MF_ERRMSG_MAX];
    int err = mf_agent__chunks_get(&rel, &w->chunks, a, as, as->verified->release);

    if (err < 0)
        return err;
    if (dr) {
        err = build_from_delta(a, w, m, as, dr, rel);
        if (err >= 0) {
            a->stats.delta_installs++;
            MF_LOG_INFO(&a->ctx, "model %s: %s built from a %llu-byte %s", m->name, as->version,
                        (unsigned long long)dr->size,
                        strcmp(dr->from_sha256, MF_PATCH_EMPTY_SHA256_HEX) == 0
                            ? "compressed full blob"
                            : "delta");
            return MF_OK;
        }
        if (err == MF_E_NET || err == MF_E_IO)
            return err; /* the delta download or apply resumes at the next attempt */
        memcpy(why, a->ctx.errmsg, sizeof(why));
        if (a->metered)
            return mf_fail(&a->ctx, err, "%s; metered link: not falling back to the full blob",
                           why);
        MF_LOG_WARN(&a->ctx, "%s; falling back to the full blob", why);
        mf_ctx__clear(&a->ctx);
        a->stats.delta_fallbacks++;
    }
    err = build_full(a, w, m, as, rel);
    if (err >= 0) {
        a->stats.full_installs++;
        MF_LOG_INFO(&a->ctx, "model %s: %s downloaded in full (%llu bytes)", m->name, as->version,
                    (unsigned long long)as->verified->release->size);
    }
    return err;
}

/* A wall-clock time inside [start, end) of the UTC day (wrapping past midnight). */
static int in_window(int64_t now_s, int start, int end)
{
    int min = (int)((now_s / 60) % 1440);

    return start < end ? min >= start && min < end : min >= start || min < end;
}

int mf_agent__install_allowed(struct mf_agent *a, const struct agent_model *m,
                              const struct mf_agent_assignment *as)
{
    /* No trustworthy clock: ops asked for a window, so only the app's word opens it. */
    int64_t now = a->plat.wall_clock_s ? a->plat.wall_clock_s(a->plat.payload) : 0;

    if (a->window_start_min < 0)
        return 1;
    if (now > 0 && in_window(now, a->window_start_min, a->window_end_min))
        return 1;
    return a->idle_fn && a->idle_fn(a->idle_payload, m->name, as->version) != 0;
}

/* Steps 1-3 of the file comment: a verified image in slot `slot`, nothing activated yet;
 * *deferred_out = 1 (and MF_OK) when it is built but waits for the install window. */
static int stage(struct mf_agent *a, struct agent_model *m, struct install_work *w,
                 const struct mf_agent_assignment *as, char slot, int *deferred_out)
{
    int staged =
        m->deferred && m->deferred_slot == slot && strcmp(m->deferred_sha256, as->sha256) == 0;
    int err = make_dirs(a, w->dir);

    if (err < 0)
        return err;
    if (!staged) {
        MF_LOG_INFO(&a->ctx, "model %s: installing %s (%llu bytes) into slot %c", m->name,
                    as->version, (unsigned long long)as->size, slot);
        err = build(a, w, m, as);
        if (err < 0)
            return err;
    }
    if (!mf_agent__install_allowed(a, m, as)) {
        if (!staged)
            MF_LOG_INFO(&a->ctx,
                        "model %s: %s downloaded and verified; installs in the window "
                        "%02d:%02d-%02d:%02d UTC or when the app is idle",
                        m->name, as->version, a->window_start_min / 60, a->window_start_min % 60,
                        a->window_end_min / 60, a->window_end_min % 60);
        m->deferred = 1;
        m->deferred_slot = slot;
        memcpy(m->deferred_sha256, as->sha256, sizeof(m->deferred_sha256));
        memcpy(m->deferred_version, as->version, sizeof(m->deferred_version));
        *deferred_out = 1;
        return MF_OK;
    }
    m->deferred = 0;
    if (w->next.previous.slot == slot) {
        memset(&w->next.previous, 0, sizeof(w->next.previous));
        err = mf_agent__state_save(a, m, &w->next);
    }
    if (err >= 0) {
        err = a->plat.rename(a->plat.payload, w->part, w->slot_name);
        if (err < 0)
            err = mf_fail(&a->ctx, err, "cannot rename %s to %s", w->part, w->slot_name);
    }
    /* The .part is the slot now (or of no use): its record goes, with it on failure. */
    mf_agent__progress_drop(a, w->part, err < 0);
    return err;
}

int mf_agent__install(int *deferred_out, struct mf_agent *a, struct agent_model *m,
                      const struct mf_agent_assignment *as)
{
    struct install_work *w = mf_ctx__alloc(&a->ctx, sizeof(*w));
    char slot = m->state.active.slot == 'a' ? 'b' : 'a';
    int err;

    *deferred_out = 0;
    if (!w)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to install model %s", m->name);
    memset(w, 0, sizeof(*w));
    w->next = m->state;
    err = name_work(a, w, m, slot);
    if (err >= 0)
        err = stage(a, m, w, as, slot, deferred_out);
    if (err >= 0 && !*deferred_out) {
        /* Step 4, the commit: the state file names the new slot. */
        w->next.previous = m->state.active;
        if (w->next.previous.slot == slot)
            memset(&w->next.previous, 0, sizeof(w->next.previous));
        w->next.active.slot = slot;
        memcpy(w->next.active.version, as->version, sizeof(w->next.active.version));
        memcpy(w->next.active.sha256, as->sha256, sizeof(w->next.active.sha256));
        w->next.active.size = as->size;
        w->next.active.sequence = as->verified->release->sequence;
        w->next.pending = a->health_fn != NULL;
        w->next.starts = 0;
        /* Its release envelope first, so a state file never names one that is not kept;
         * without it check-ins are only sent the envelope again. */
        if (mf_agent__release_keep(w->next.active.release, a, m, slot, as) < 0) {
            MF_LOG_WARN(&a->ctx, "model %s: %s (its release is sent again)", m->name,
                        a->ctx.errmsg);
            mf_ctx__clear(&a->ctx);
            w->next.active.release[0] = '\0';
        }
        err = mf_agent__state_save(a, m, &w->next);
    }
    if (err >= 0 && !*deferred_out) {
        MF_LOG_INFO(&a->ctx, "model %s: %s active in slot %c%s", m->name, as->version, slot,
                    w->next.pending ? " (pending confirmation)" : "");
        if (mf_agent__trust_commit(a, as->verified->release) < 0)
            MF_LOG_WARN(&a->ctx, "%s (retried at the next check-in)", a->ctx.errmsg);
        err = mf_agent__after_activate(a, m);
    }
    mf_agent__chunks_free(a, &w->chunks);
    mf_ctx__free(&a->ctx, w);
    return err;
}
