/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rollouts over the store (docs/rollouts.md): create, the ops actions, the evaluation that
 * advances or halts a wave, and the status view. States:
 *
 *   running --pause--> paused --resume--> running      (resume restarts the wave's soak)
 *   running --min_devices of the wave report--> running (the soak starts: soak_started_at)
 *   running/paused --abort--> aborted    frozen: admitted waves keep the new release, the
 *                                        rest the previous one; nothing advances any more
 *   running --clean soak, last wave--> done + the version promoted (the channel default)
 *   running/paused --red line breached--> halted   + fleet rollback to the previous release
 *                                        (pausing stops advancing, not watching)
 *   any but rolled_back/halted --rollback--> rolled_back   + fleet rollback
 *
 * Every state change is a compare-and-set on the state read (rollout_put's expect_state),
 * so an ops action and an evaluation on another node never overwrite each other, and each
 * records an event.
 */
#ifndef MF_SERVER_ROLLOUT_CTL_H
#define MF_SERVER_ROLLOUT_CTL_H

#include "rollout/rollout_plan.h"
#include "store/store.h"

#define MF_ROLLOUT_JOB_KIND "rollout" /* arg: the rollout id in decimal */

/* What the status view and the evaluation compute for one rollout. */
struct mf_rollout_status {
    struct mf_store_rollout r;
    struct mf_rollout_plan plan;
    uint64_t wave_devices[MF_ROLLOUT_MAX_WAVES]; /* enrolled devices first covered by wave i */
    uint64_t reporting;                          /* admitted devices reporting the new version */
    uint64_t wave_reporting;  /* devices of the current wave reporting the new version */
    uint64_t control_devices; /* devices of the control group (below) that reported */
    /* The new version on the admitted devices (the canary), and the concurrent control
     * group: devices outside the admitted waves (offered the previous release) whose report
     * of the previous version is from the rollout's window (at or after its creation). */
    struct mf_rollout_figures cur, control;
    struct mf_rollout_verdict verdicts[MF_ROLLOUT_MAX_LINES];
    /* The ranked goals, checked like lines (`breached`: missed); they never halt. */
    struct mf_rollout_verdict goal_verdicts[MF_ROLLOUT_MAX_GOALS];
    size_t goals_met;
    int breached;   /* index of the first breached line, or -1 */
    size_t waiting; /* lines still waiting for evidence (they block advancing) */
    /* 1: fewer than line_min_devices in the control group now (the admitted waves cover the
     * fleet), so `control` holds the figures stored when the current wave was admitted. */
    int control_frozen;
    /* The fleet's evaluation (mf_rollout__status): the class tags of the canary's devices
     * (at most MF_STORE_HALTED_CLASSES), each evaluated on its own (mf_rollout__class_status).
     * A class already halted is not among them: the fleet's evaluation leaves it out. */
    char classes[MF_STORE_HALTED_CLASSES][MF_STORE_NAME_SIZE];
    size_t n_classes;
};

/*
 * Creates a running rollout of released `version` of `model` with the plan in `body`
 * (docs/rollouts.md; read strictly), replacing `previous` ("": the release promoted last
 * that no rollout ever halted or rolled back; a named one is taken as named).
 * MF_E_INVALID (bad plan), MF_E_NOTFOUND (no such release), MF_E_STATE (another rollout of
 * the model is running or paused, or no previous release), MF_E_LIMIT (plan text over
 * MF_STORE_PLAN_MAX).
 */
int mf_rollout__create(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       const char *model, const char *version, const char *previous,
                       const cJSON *body, int64_t now);

/* "pause", "resume", "abort" or "rollback" on rollout `id`. MF_E_INVALID for another
 * action, MF_E_NOTFOUND, MF_E_STATE when the rollout's state does not allow it. */
int mf_rollout__act(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                    int64_t id, const char *action, int64_t now);

/* Sets the fleet rollback directive of `model` to `version` (signed per device by the
 * director, the security floor applied there like for any rollback). */
int mf_rollout__fleet_rollback(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                               const char *version, int64_t now);

/* Moves `r` (with its wave fields as the caller set them) to state `to` if it is still in
 * the state read (MF_E_STATE otherwise), records `event` with `detail` (also the breach
 * record for "halted"), and for halted / rolled_back sets the fleet rollback to
 * r->prev_version first. */
int mf_rollout__transition(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                           const char *to, const char *event, const char *detail, int64_t now);

/*
 * Promotes released `version` of `model` outside a rollout (`mfctl promote --force`): the
 * channel default moves to it at once. MF_E_NOTFOUND (not released), MF_E_STATE (a rollout
 * of the model is running or paused: it decides, abort it first).
 */
int mf_rollout__promote(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                        const char *version);

/* Loads rollout `id` and evaluates its admitted waves into `out` (heap-sized: allocate). */
int mf_rollout__status(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id);

/* The same over the reports of devices of class `cls` alone (what the class's own red lines
 * read; a halted class too, so its figures stay visible after the halt). */
int mf_rollout__class_status(struct mf_rollout_status *out, struct mf_store *s, struct mf_ctx *ctx,
                             int64_t id, const char *cls);

/* One evaluation of a watched rollout (what the "rollout" job does): halts and rolls back
 * on a breach; else, if running, starts the wave's soak once min_devices of the wave report
 * the new version, and advances a wave (or, after the last, promotes the version and ends
 * done) that soaked for soak_s with no line breached or waiting. Other states: nothing. */
int mf_rollout__step(struct mf_store *s, struct mf_ctx *ctx, int64_t id, int64_t now);

/* 1 when rollout `r` halted device class `tag` on its own (docs/rollouts.md, "Per-class
 * halts"): its devices get the previous release whatever the rollout's state ("" is never). */
int mf_rollout__class_halted(const struct mf_store_rollout *r, const char *tag);

/* 1 for the states whose red lines are evaluated (running, paused). */
int mf_rollout__watched(const char *state);

/* Group memberships for group waves, read once before a walk: a store visitor must not
 * call the store (SQLite runs every op under one lock). Empty when no wave is a group. */
struct mf_rollout_members {
    size_t n, cap;
    char (*rows)[2][MF_STORE_NAME_SIZE]; /* (device id, group) */
};

int mf_rollout__members_load(struct mf_rollout_members *out, struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_rollout_plan *plan);
void mf_rollout__members_free(struct mf_rollout_members *m);
/* The wave (0-based) that first covers the device, or -1. Pure. */
int mf_rollout__members_wave(const struct mf_rollout_plan *plan, const struct mf_rollout_members *m,
                             const char *device_id);

/* The same for one device, reading only its own memberships (the director's hook). */
int mf_rollout__device_wave(int *wave_out, struct mf_store *s, struct mf_ctx *ctx,
                            const struct mf_rollout_plan *plan, const char *device_id);

/*
 * The release rollout `r` offers one device (wave membership of that device only): running,
 * paused or aborted (frozen), r->version to a device in waves 0..r->wave and r->prev_version
 * to every other. *version_out points into `r`. MF_E_NOTFOUND with no message (no wave: the
 * channel default decides) when the rollout is done (its version is promoted, the default),
 * when it is aborted and `promoted` (the model's channel default) is no longer its previous
 * release (ops promoted one since: their explicit choice wins over the frozen waves), and when
 * halted or rolled back (the fleet rollback directive, which outranks waves, assigns the previous
 * release to everyone).
 */
int mf_rollout__offer(const char **version_out, struct mf_store *s, struct mf_ctx *ctx,
                      const struct mf_store_rollout *r, const char *promoted,
                      const char *device_id);

/* Parses a stored rollout's plan text (the store keeps what create validated). */
int mf_rollout__plan_load(struct mf_rollout_plan *out, struct mf_ctx *ctx,
                          const struct mf_store_rollout *r);

/* "waiting", "clean" or "breached" (goals: "met", "missed"): a verdict in the status view
 * and the history. Static. */
const char *mf_rollout__line_state(const struct mf_rollout_verdict *v, int goal);
/* Records the red lines of evaluation `st` at `now` in the rollout's history (store.h,
 * history_add: bounded, thinned). */
int mf_rollout__history_record(struct mf_store *s, struct mf_ctx *ctx,
                               const struct mf_rollout_status *st, int64_t now);
/* The worker's tick: a snapshot of the fleet's installed versions into the bin of `now`
 * unless it has one (fleet_snapshot); a failure is logged, the tick goes on. */
void mf_rollout__fleet_tick(struct mf_store *s, struct mf_ctx *ctx, int64_t now);

/* Enqueues a "rollout" job for every running rollout and takes the fleet's versions
 * snapshot (the worker's tick). */
void mf_rollout__jobs_tick(void *store, struct mf_ctx *ctx);
/* Runs one claimed "rollout" job: mf_rollout__step on the id in `arg`. */
int mf_rollout__jobs_run(int *made_out, void *store, struct mf_ctx *ctx, const char *arg);

#endif /* MF_SERVER_ROLLOUT_CTL_H */
