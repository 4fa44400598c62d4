/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A/B install of one model. The new version always goes to the inactive slot; the active
 * one is not touched until the state file switches, which is the single atomic commit:
 *   1. download + verify into models/<m>/slot-<x>.part (agent_download.c);
 *   2. if the state still names slot x as "previous", forget it first (durably), so no
 *      state file ever describes bytes that are no longer there;
 *   3. durable rename .part -> slot-<x>;
 *   4. write the state file: active = x, previous = the old active slot.
 *   5. raise the model's security floor to the release's (trust.state), so no release
 *      below it is accepted again.
 * A power cut before 4 leaves the old model active; after 4 the new one; between 4 and 5
 * the next check-in records the floor (the release is verified again then).
 * Delta apply into the inactive slot slots in before step 3.
 */
#include "mf_agent_int.h"

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

static void notify_ready(struct mf_agent *a, const struct agent_model *m, const char *slot_name)
{
    struct mf_dynbuf path;

    if (!a->ready_fn)
        return;
    mf_dynbuf__init(&path, &a->ctx.alloc, 4096);
    if (mf_dynbuf__appendf(&path, "%s/%s", a->state_dir, slot_name) < 0) {
        /* The install is committed; the app finds the model through mf_agent_status(). */
        MF_LOG_WARN(&a->ctx, "no memory to announce model %s", m->name);
    } else {
        a->ready_fn(a->ready_payload, m->name, m->state.active.version, (const char *)path.data);
    }
    mf_dynbuf__free(&path);
}

/* Storage names and the next state of one install; on the heap to keep frames small. */
struct install_work {
    char dir[MF_AGENT_STORE_NAME_MAX];
    char part[MF_AGENT_STORE_NAME_MAX];
    char slot_name[MF_AGENT_STORE_NAME_MAX];
    struct mf_agent_model_state next;
};

static int name_work(struct mf_agent *a, struct install_work *w, const char *model, char slot)
{
    char leaf[16];
    int err;

    (void)snprintf(leaf, sizeof(leaf), "slot-%c", slot);
    err = mf_agent__store_name(a, w->dir, model, "");
    if (err >= 0)
        err = mf_agent__store_name(a, w->slot_name, model, leaf);
    (void)snprintf(leaf, sizeof(leaf), "slot-%c.part", slot);
    if (err >= 0)
        err = mf_agent__store_name(a, w->part, model, leaf);
    return err;
}

/* Steps 1-3 of the file comment: a verified blob in slot `slot`, nothing activated yet. */
static int stage(struct mf_agent *a, struct agent_model *m, struct install_work *w,
                 const struct mf_agent_assignment *as, char slot)
{
    int err = make_dirs(a, w->dir);

    if (err < 0)
        return err;
    MF_LOG_INFO(&a->ctx, "model %s: installing %s (%llu bytes) into slot %c", m->name, as->version,
                (unsigned long long)as->size, slot);
    err = mf_agent__download(a, w->part, as);
    if (err < 0)
        return err;
    if (w->next.previous.slot == slot) {
        memset(&w->next.previous, 0, sizeof(w->next.previous));
        err = mf_agent__state_save(a, m, &w->next);
    }
    if (err >= 0) {
        err = a->plat.rename(a->plat.payload, w->part, w->slot_name);
        if (err < 0)
            err = mf_fail(&a->ctx, err, "cannot rename %s to %s", w->part, w->slot_name);
    }
    if (err < 0)
        (void)a->plat.remove(a->plat.payload, w->part);
    return err;
}

int mf_agent__install(struct mf_agent *a, struct agent_model *m,
                      const struct mf_agent_assignment *as)
{
    struct install_work *w = mf_ctx__alloc(&a->ctx, sizeof(*w));
    char slot = m->state.active.slot == 'a' ? 'b' : 'a';
    int err;

    if (!w)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory to install model %s", m->name);
    w->next = m->state;
    err = name_work(a, w, m->name, slot);
    if (err >= 0)
        err = stage(a, m, w, as, slot);
    if (err >= 0) {
        /* Step 4, the commit: the state file names the new slot. */
        w->next.previous = m->state.active;
        w->next.active.slot = slot;
        memcpy(w->next.active.version, as->version, sizeof(w->next.active.version));
        memcpy(w->next.active.sha256, as->sha256, sizeof(w->next.active.sha256));
        w->next.active.size = as->size;
        err = mf_agent__state_save(a, m, &w->next);
    }
    if (err >= 0) {
        MF_LOG_INFO(&a->ctx, "model %s: %s active in slot %c", m->name, as->version, slot);
        if (mf_agent__trust_commit(a, as->verified->release) < 0)
            MF_LOG_WARN(&a->ctx, "%s (retried at the next check-in)", a->ctx.errmsg);
        notify_ready(a, m, w->slot_name);
    }
    mf_ctx__free(&a->ctx, w);
    return err;
}
