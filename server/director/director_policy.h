/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's precedence (docs/operations.md, "Director"): which release one device
 * should run for one model. Pure: the check-in handler resolves every candidate from the
 * store first, so the rules are tested case by case without a server (test_director.c).
 *
 *   security floor > device pin > ops pin (device, then group) > active fleet rollback
 *                  > class rollback > rollout wave > channel default
 *
 * (a class rollback: the newest rollout of the model halted the device's class on its own,
 * docs/rollouts.md "Per-class halts", and offers that class the previous release).
 *
 * Each rule offers a candidate release or nothing; the first candidate at or above the
 * model's security floor wins. Two device signals temper the automatic rules (wave and
 * channel default) only, never an explicit pin or rollback: a candidate the device
 * reported in `rolled_back` is not offered again (the device keeps its installed release
 * when that is assignable, else it gets nothing), and while the installed version is
 * `pending` (not yet confirmed healthy) the device is held on it, unless it sits below the
 * security floor, which outranks the hold.
 */
#ifndef MF_SERVER_DIRECTOR_POLICY_H
#define MF_SERVER_DIRECTOR_POLICY_H

#include "store/store.h"

#include <stddef.h>

enum mf_policy_rule {
    MF_POLICY_NONE = 0, /* no assignable release */
    MF_POLICY_DEVICE_PIN,
    MF_POLICY_OPS_DEVICE_PIN,
    MF_POLICY_OPS_GROUP_PIN,
    MF_POLICY_FLEET_ROLLBACK,
    MF_POLICY_WAVE,
    MF_POLICY_CHANNEL,
    MF_POLICY_HOLD_PENDING,     /* kept on the installed release: it awaits confirmation */
    MF_POLICY_HOLD_ROLLED_BACK, /* kept on the installed release: the device reverted the other */
    MF_POLICY_CLASS_ROLLBACK    /* appended: the rollout halted the device's class */
};

/* A candidate: `present` 0 when the rule offers nothing; otherwise a released version. */
struct mf_policy_candidate {
    int present;
    struct mf_store_version v; /* a variant's sha256, size and release digest when it is one */
    char variant[MF_STORE_NAME_SIZE]; /* "": the version's own blob (director_variant.h) */
};

#define MF_POLICY_MAX_ROLLED_BACK 8

struct mf_policy_input {
    uint64_t floor; /* security floor of the model: that of its highest-sequence release */
    struct mf_policy_candidate installed; /* the device's installed version, if released */
    int pending;                          /* installed version not confirmed healthy yet */
    const char *rolled_back[MF_POLICY_MAX_ROLLED_BACK]; /* sha256s the device reverted */
    size_t n_rolled_back;
    struct mf_policy_candidate device_pin, ops_device_pin, ops_group_pin, fleet_rollback, wave,
        channel;
    struct mf_policy_candidate class_rollback; /* appended: after fleet_rollback in precedence */
};

struct mf_policy_decision {
    enum mf_policy_rule rule;
    const struct mf_store_version *target; /* borrowed from the input; NULL for NONE */
    const char *variant;                   /* the target's variant ("": none), borrowed */
    int skipped_below_floor;               /* candidates refused by the security floor */
};

/* Applies the precedence. Always succeeds; `out->target` points into `in`. */
void mf_policy__decide(struct mf_policy_decision *out, const struct mf_policy_input *in);

/* "device_pin", "ops_group_pin", ...: the rule's name in logs and metrics. Static. */
const char *mf_policy__rule_name(enum mf_policy_rule rule);

#endif /* MF_SERVER_DIRECTOR_POLICY_H */
