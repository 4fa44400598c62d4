/* SPDX-License-Identifier: Apache-2.0 */
/* The director's precedence table (see director_policy.h). */
#include "director/director_policy.h"

#include <string.h>

/* The rules below the security floor, in precedence order; `automatic` marks the ones a
 * device's rolled_back and pending signals may overrule. */
static const struct {
    enum mf_policy_rule rule;
    size_t offset; /* of the candidate in struct mf_policy_input */
    int automatic;
} policy_rules[] = {
    {MF_POLICY_DEVICE_PIN, offsetof(struct mf_policy_input, device_pin), 0},
    {MF_POLICY_OPS_DEVICE_PIN, offsetof(struct mf_policy_input, ops_device_pin), 0},
    {MF_POLICY_OPS_GROUP_PIN, offsetof(struct mf_policy_input, ops_group_pin), 0},
    {MF_POLICY_FLEET_ROLLBACK, offsetof(struct mf_policy_input, fleet_rollback), 0},
    {MF_POLICY_CLASS_ROLLBACK, offsetof(struct mf_policy_input, class_rollback), 0},
    {MF_POLICY_WAVE, offsetof(struct mf_policy_input, wave), 1},
    {MF_POLICY_CHANNEL, offsetof(struct mf_policy_input, channel), 1},
};

static int rolled_back(const struct mf_policy_input *in, const char *sha256)
{
    for (size_t i = 0; i < in->n_rolled_back; i++) {
        if (strcmp(in->rolled_back[i], sha256) == 0)
            return 1;
    }
    return 0;
}

static int assignable(const struct mf_policy_input *in)
{
    return in->installed.present && in->installed.v.security_floor >= in->floor;
}

/* Keeps the device on its installed release when that is assignable. */
static void hold(struct mf_policy_decision *out, const struct mf_policy_input *in,
                 enum mf_policy_rule why)
{
    if (assignable(in)) {
        out->rule = why;
        out->target = &in->installed.v;
        out->variant = in->installed.variant;
    }
}

void mf_policy__decide(struct mf_policy_decision *out, const struct mf_policy_input *in)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < sizeof(policy_rules) / sizeof(policy_rules[0]); i++) {
        const struct mf_policy_candidate *c =
            (const struct mf_policy_candidate *)((const char *)in + policy_rules[i].offset);
        int moves;

        if (!c->present)
            continue;
        if (c->v.security_floor < in->floor) {
            out->skipped_below_floor++; /* the floor outranks every rule */
            continue;
        }
        moves = !in->installed.present || strcmp(c->v.sha256, in->installed.v.sha256) != 0;
        if (policy_rules[i].automatic && moves && rolled_back(in, c->v.sha256)) {
            hold(out, in, MF_POLICY_HOLD_ROLLED_BACK);
            return;
        }
        if (policy_rules[i].automatic && moves && in->pending && assignable(in)) {
            hold(out, in, MF_POLICY_HOLD_PENDING);
            return;
        }
        out->rule = policy_rules[i].rule;
        out->target = &c->v;
        out->variant = c->variant;
        return;
    }
}

const char *mf_policy__rule_name(enum mf_policy_rule rule)
{
    switch (rule) {
    case MF_POLICY_NONE:
        return "none";
    case MF_POLICY_DEVICE_PIN:
        return "device_pin";
    case MF_POLICY_OPS_DEVICE_PIN:
        return "ops_device_pin";
    case MF_POLICY_OPS_GROUP_PIN:
        return "ops_group_pin";
    case MF_POLICY_FLEET_ROLLBACK:
        return "fleet_rollback";
    case MF_POLICY_WAVE:
        return "rollout_wave";
    case MF_POLICY_CHANNEL:
        return "channel_default";
    case MF_POLICY_HOLD_PENDING:
        return "hold_pending";
    case MF_POLICY_HOLD_ROLLED_BACK:
        return "hold_rolled_back";
    case MF_POLICY_CLASS_ROLLBACK:
        return "class_rollback";
    }
    return "?";
}
