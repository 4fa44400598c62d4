/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's precedence (server/director/director_policy.h), case by case: security
 * floor > device pin > ops pin (device, then group) > fleet rollback > rollout wave >
 * channel default, with the pending and rolled_back holds on the automatic rules only.
 */
#include "mf_test.h"
#include "director/director_policy.h"

#include <stdio.h>
#include <string.h>

/* Three releases of one model: v1 and v2 at floor 0, v3 raises the floor to 1. */
static const struct {
    const char *version;
    uint64_t sequence, floor;
} rel[] = {{"v1", 1, 0}, {"v2", 2, 0}, {"v3", 3, 1}};

static const char *sha_of(const char *version)
{
    static char sha[3][65];

    for (int i = 0; i < 3; i++) {
        if (strcmp(rel[i].version, version) == 0) {
            memset(sha[i], 'a' + i, 64);
            sha[i][64] = '\0';
            return sha[i];
        }
    }
    fail_msg("no release %s", version);
    return NULL;
}

static void put(struct mf_policy_candidate *c, const char *version)
{
    memset(c, 0, sizeof(*c));
    if (!version)
        return;
    for (int i = 0; i < 3; i++) {
        if (strcmp(rel[i].version, version) == 0) {
            c->present = 1;
            (void)snprintf(c->v.model, sizeof(c->v.model), "detector");
            (void)snprintf(c->v.version, sizeof(c->v.version), "%s", version);
            (void)snprintf(c->v.sha256, sizeof(c->v.sha256), "%s", sha_of(version));
            c->v.sequence = rel[i].sequence;
            c->v.security_floor = rel[i].floor;
        }
    }
    assert_true(c->present);
}

struct policy_case {
    const char *name;
    uint64_t floor;
    const char *installed, *device_pin, *ops_device, *ops_group, *fleet, *wave, *channel;
    int pending;
    const char *rolled_back; /* one version the device reverted, or NULL */
    enum mf_policy_rule want_rule;
    const char *want; /* NULL: no assignment */
    int want_skipped;
};

static const struct policy_case cases[] = {
    {"channel default alone", 0, "v1", NULL, NULL, NULL, NULL, NULL, "v2", 0, NULL,
     MF_POLICY_CHANNEL, "v2", 0},
    {"wave beats channel", 0, "v1", NULL, NULL, NULL, NULL, "v1", "v2", 0, NULL, MF_POLICY_WAVE,
     "v1", 0},
    {"fleet rollback beats wave", 0, "v2", NULL, NULL, NULL, "v1", "v2", "v2", 0, NULL,
     MF_POLICY_FLEET_ROLLBACK, "v1", 0},
    {"group pin beats rollback", 0, "v2", NULL, NULL, "v2", "v1", NULL, "v2", 0, NULL,
     MF_POLICY_OPS_GROUP_PIN, "v2", 0},
    {"ops device pin beats group pin", 0, "v2", NULL, "v1", "v2", NULL, NULL, "v2", 0, NULL,
     MF_POLICY_OPS_DEVICE_PIN, "v1", 0},
    {"device pin beats ops pins", 0, "v1", "v2", "v1", "v1", "v1", "v1", "v1", 0, NULL,
     MF_POLICY_DEVICE_PIN, "v2", 0},
    {"floor beats device pin", 1, "v1", "v1", NULL, NULL, NULL, NULL, "v3", 0, NULL,
     MF_POLICY_CHANNEL, "v3", 1},
    {"floor skips every low rule", 1, "v1", "v1", "v2", "v1", "v2", "v1", "v3", 0, NULL,
     MF_POLICY_CHANNEL, "v3", 5},
    {"floor leaves nothing assignable", 1, "v1", "v1", NULL, NULL, NULL, NULL, NULL, 0, NULL,
     MF_POLICY_NONE, NULL, 1},
    {"pin at the floor is kept", 1, "v3", "v3", NULL, NULL, NULL, NULL, "v3", 0, NULL,
     MF_POLICY_DEVICE_PIN, "v3", 0},
    {"pending holds against channel", 0, "v1", NULL, NULL, NULL, NULL, NULL, "v2", 1, NULL,
     MF_POLICY_HOLD_PENDING, "v1", 0},
    {"pending holds against wave", 0, "v1", NULL, NULL, NULL, NULL, "v2", "v2", 1, NULL,
     MF_POLICY_HOLD_PENDING, "v1", 0},
    {"pending does not hold an ops pin", 0, "v2", NULL, "v1", NULL, NULL, NULL, "v2", 1, NULL,
     MF_POLICY_OPS_DEVICE_PIN, "v1", 0},
    {"pending does not hold a rollback", 0, "v2", NULL, NULL, NULL, "v1", NULL, "v2", 1, NULL,
     MF_POLICY_FLEET_ROLLBACK, "v1", 0},
    {"pending on the channel version is plain channel", 0, "v2", NULL, NULL, NULL, NULL, NULL, "v2",
     1, NULL, MF_POLICY_CHANNEL, "v2", 0},
    {"rolled back channel version is not re-offered", 0, "v1", NULL, NULL, NULL, NULL, NULL, "v2",
     0, "v2", MF_POLICY_HOLD_ROLLED_BACK, "v1", 0},
    {"rolled back wave version is not re-offered", 0, "v1", NULL, NULL, NULL, NULL, "v2", "v1", 0,
     "v2", MF_POLICY_HOLD_ROLLED_BACK, "v1", 0},
    {"rolled back with nothing installed: no assignment", 0, NULL, NULL, NULL, NULL, NULL, NULL,
     "v2", 0, "v2", MF_POLICY_NONE, NULL, 0},
    {"ops pin wins even over a rolled back version", 0, "v1", NULL, "v2", NULL, NULL, NULL, "v2", 0,
     "v2", MF_POLICY_OPS_DEVICE_PIN, "v2", 0},
    {"pending below the floor does not hold", 1, "v1", NULL, NULL, NULL, NULL, NULL, "v3", 1, NULL,
     MF_POLICY_CHANNEL, "v3", 0},
    {"rolled back below the floor gives nothing", 1, "v1", NULL, NULL, NULL, NULL, NULL, "v3", 0,
     "v3", MF_POLICY_NONE, NULL, 0},
    {"nothing released", 0, "v1", NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, MF_POLICY_NONE, NULL,
     0},
};

static void test_director__precedence_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct policy_case *c = &cases[i];
        struct mf_policy_input in;
        struct mf_policy_decision d;

        memset(&in, 0, sizeof(in));
        in.floor = c->floor;
        put(&in.installed, c->installed);
        put(&in.device_pin, c->device_pin);
        put(&in.ops_device_pin, c->ops_device);
        put(&in.ops_group_pin, c->ops_group);
        put(&in.fleet_rollback, c->fleet);
        put(&in.wave, c->wave);
        put(&in.channel, c->channel);
        in.pending = c->pending;
        if (c->rolled_back)
            in.rolled_back[in.n_rolled_back++] = sha_of(c->rolled_back);
        mf_policy__decide(&d, &in);
        if (d.rule != c->want_rule)
            fail_msg("%s: rule %s, want %s", c->name, mf_policy__rule_name(d.rule),
                     mf_policy__rule_name(c->want_rule));
        if (!c->want && d.target)
            fail_msg("%s: assigned %s, want nothing", c->name, d.target->version);
        if (c->want && (!d.target || strcmp(d.target->version, c->want) != 0))
            fail_msg("%s: assigned %s, want %s", c->name, d.target ? d.target->version : "-",
                     c->want);
        if (d.skipped_below_floor != c->want_skipped)
            fail_msg("%s: %d skipped by the floor, want %d", c->name, d.skipped_below_floor,
                     c->want_skipped);
    }
}

static void test_director__rule_names_are_distinct(void **state)
{
    (void)state;
    for (int a = MF_POLICY_NONE; a <= MF_POLICY_HOLD_ROLLED_BACK; a++) {
        assert_string_not_equal(mf_policy__rule_name((enum mf_policy_rule)a), "?");
        for (int b = a + 1; b <= MF_POLICY_HOLD_ROLLED_BACK; b++)
            assert_string_not_equal(mf_policy__rule_name((enum mf_policy_rule)a),
                                    mf_policy__rule_name((enum mf_policy_rule)b));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_director__precedence_table),
        cmocka_unit_test(test_director__rule_names_are_distinct),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
