/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A/B install of one model. The new version always goes to the inactive slot; the active
 * one is not touched until the state file switches, which is the single atomic commit:
 *   1. download + verify into models/<m>/slot-<x>.part (agent_download.c);
 *   2. if the state still names slot x as "previous", forget it first (durably), so no
 *      state file ever describes bytes that are no longer there;
 *   3. durable rename .part -> slot-<x>;
 *   4. write the state file: active = x, previous = the old active slot.
 * A power cut before 4 leaves the old model active; after 4 the new one.
 * Delta apply into the inactive slot and manifest verification slot in before step 3.
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

int mf_agent__install(struct mf_agent *a, struct agent_model *m,
                      const struct mf_agent_assignment *as)
{
    char dir[MF_AGENT_STORE_NAME_MAX], part[MF_AGENT_STORE_NAME_MAX],
        slot_name[MF_AGENT_STORE_NAME_MAX];
    struct mf_agent_model_state next = m->state;
    char slot = m->state.active.slot == 'a' ? 'b' : 'a';
    char leaf[16];
    int err;

    (void)snprintf(leaf, sizeof(leaf), "slot-%c", slot);
    err = mf_agent__store_name(a, dir, m->name, "");
    if (err >= 0)
        err = mf_agent__store_name(a, slot_name, m->name, leaf);
    (void)snprintf(leaf, sizeof(leaf), "slot-%c.part", slot);
    if (err >= 0)
        err = mf_agent__store_name(a, part, m->name, leaf);
    if (err >= 0)
        err = make_dirs(a, dir);
    if (err < 0)
        return err;
    MF_LOG_INFO(&a->ctx, "model %s: installing %s (%llu bytes) into slot %c", m->name, as->version,
                (unsigned long long)as->size, slot);
    err = mf_agent__download(a, part, as);
    if (err < 0)
        return err;
    if (next.previous.slot == slot) {
        memset(&next.previous, 0, sizeof(next.previous));
        err = mf_agent__state_save(a, m, &next);
    }
    if (err >= 0) {
        err = a->plat.rename(a->plat.payload, part, slot_name);
        if (err < 0)
            err = mf_fail(&a->ctx, err, "cannot rename %s to %s", part, slot_name);
    }
    if (err < 0) {
        (void)a->plat.remove(a->plat.payload, part);
        return err;
    }
    next.previous = m->state.active;
    next.active.slot = slot;
    memcpy(next.active.version, as->version, sizeof(next.active.version));
    memcpy(next.active.sha256, as->sha256, sizeof(next.active.sha256));
    next.active.size = as->size;
    err = mf_agent__state_save(a, m, &next);
    if (err < 0)
        return err;
    MF_LOG_INFO(&a->ctx, "model %s: %s active in slot %c", m->name, as->version, slot);
    notify_ready(a, m, slot_name);
    return MF_OK;
}
