/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's variant rule (server/director/director_variant.h), case by case: which
 * variant of one version a declared device class gets (class, capabilities, a missing
 * variant), and that the precedence then carries it (pins, holds).
 */
#include "mf_test.h"
#include "director/director_policy.h"
#include "director/director_variant.h"

#include <stdio.h>
#include <string.h>

/* The variants of det v2, as ops might publish them. */
static struct mf_store_variant vs[6];
static size_t n_vs;

static void add(const char *name, int64_t rank, uint64_t ram, const char *accel, int int8, int fp16,
                const char *tag, uint64_t size, int released)
{
    struct mf_store_variant *v = &vs[n_vs++];

    memset(v, 0, sizeof(*v));
    (void)snprintf(v->model, sizeof(v->model), "det");
    (void)snprintf(v->version, sizeof(v->version), "v2");
    (void)snprintf(v->variant, sizeof(v->variant), "%s", name);
    memset(v->sha256, 'a' + (int)n_vs, 64);
    v->size = size;
    v->rank = rank;
    v->needs.min_ram_mb = ram;
    (void)snprintf(v->needs.accelerator, sizeof(v->needs.accelerator), "%s", accel);
    v->needs.int8 = int8;
    v->needs.fp16 = fp16;
    (void)snprintf(v->needs.class_tag, sizeof(v->needs.class_tag), "%s", tag);
    if (released)
        memset(v->release_digest, 'f', 64);
}

static int setup(void **state)
{
    (void)state;
    n_vs = 0;
    add("npu", 1, 256, "npu", 1, 0, "", 1 << 20, 1);      /* best, on the accelerator only */
    add("best", 1, 0, "", 0, 0, "", 1 << 20, 0);          /* staged: never offered */
    add("fp32", 2, 1024, "", 0, 0, "", 40 << 20, 1);      /* plenty of RAM and storage */
    add("int8", 3, 256, "", 1, 0, "", 10 << 20, 1);       /* int8 kernels */
    add("fp16", 3, 256, "", 0, 1, "", 20 << 20, 1);       /* ties with int8 on rank */
    add("tiny", 4, 64, "", 0, 0, "cam-lite", 1 << 20, 1); /* one class only */
    return 0;
}

struct variant_case {
    const char *name;
    int declared;
    const char *tag, *accel;
    uint64_t ram, storage;
    int int8, fp16;
    const char *want; /* NULL: the version's own blob */
};

static const struct variant_case cases[] = {
    {"no class declared: the version's own blob, as before variants", 0, "", "", 4096, 4096, 1, 1,
     NULL},
    {"accelerator class: the npu variant (rank 1)", 1, "", "npu", 512, 4096, 1, 0, "npu"},
    {"another accelerator is not that one", 1, "", "gpu", 512, 4096, 1, 0, "int8"},
    {"big device without int8: fp32", 1, "", "", 2048, 4096, 0, 0, "fp32"},
    {"low RAM with int8 and fp16: rank tie, fp16 by name", 1, "", "", 512, 4096, 1, 1, "fp16"},
    {"low RAM with fp16 only: fp16", 1, "", "", 512, 4096, 0, 1, "fp16"},
    {"storage too small for fp16's 20 MiB blob: int8 needs int8, none left", 1, "", "", 512, 16, 0,
     1, NULL},
    {"storage bounds the blob: int8 (10 MiB) fits in 16", 1, "", "", 512, 16, 1, 0, "int8"},
    {"low RAM, no kernels, wrong class tag: nothing fits, the own blob", 1, "cam-x", "", 128, 4096,
     0, 0, NULL},
    {"low RAM, no kernels, the tagged class: tiny", 1, "cam-lite", "", 128, 4096, 0, 0, "tiny"},
    {"npu without int8 kernels: not npu, and int8 neither", 1, "", "npu", 512, 4096, 0, 0, NULL},
};

static void test_director_variant__rule_case_by_case(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct variant_case *c = &cases[i];
        struct mf_device_class cls = {c->declared, c->tag,  c->accel, c->ram,
                                      c->storage,  c->int8, c->fp16};
        int got = mf_variant__pick(vs, n_vs, &cls);

        if (!c->want && got >= 0)
            fail_msg("%s: got %s, want the own blob", c->name, vs[got].variant);
        if (c->want && (got < 0 || strcmp(vs[got].variant, c->want) != 0))
            fail_msg("%s: got %s, want %s", c->name, got < 0 ? "the own blob" : vs[got].variant,
                     c->want);
    }
}

/* A version without variants: every class gets its own blob. */
static void test_director_variant__missing_variants(void **state)
{
    struct mf_device_class cls = {1, "cam-lite", "npu", 64, 64, 1, 1};

    (void)state;
    assert_int_equal(mf_variant__pick(vs, 0, &cls), -1);
    assert_int_equal(mf_variant__pick(&vs[1], 1, &cls), -1); /* only a staged one */
}

/* The version's fallback variant is offered beside the assigned one, never assigned itself:
 * the class that would get tiny gets the own blob once tiny is the fallback. */
static void test_director_variant__fallback_is_never_assigned(void **state)
{
    struct mf_store_variant fb = vs[5];
    struct mf_device_class cls = {1, "cam-lite", "", 128, 4096, 0, 0};

    (void)state;
    assert_string_equal(fb.variant, "tiny");
    assert_int_equal(mf_variant__pick(&fb, 1, &cls), 0);
    fb.fallback = 1;
    assert_int_equal(mf_variant__pick(&fb, 1, &cls), -1);
}

/* Each need on its own, at its bound. */
static void test_director_variant__needs_at_their_bounds(void **state)
{
    struct mf_store_variant_needs n;
    struct mf_device_class cls = {1, "", "", 256, 10, 0, 0};

    (void)state;
    memset(&n, 0, sizeof(n));
    n.min_ram_mb = 256;
    n.min_storage_mb = 10;
    assert_true(mf_variant__allows(&n, 10u << 20, &cls));
    assert_false(mf_variant__allows(&n, (10u << 20) + 1, &cls));
    cls.ram_mb = 255;
    assert_false(mf_variant__allows(&n, 1, &cls));
    cls.ram_mb = 256;
    cls.storage_mb = 9;
    assert_false(mf_variant__allows(&n, 1, &cls));
    cls.storage_mb = 10;
    n.fp16 = 1;
    assert_false(mf_variant__allows(&n, 1, &cls));
    cls.fp16 = 1;
    assert_true(mf_variant__allows(&n, 1, &cls));
}

/* An input whose only candidate is the channel's v2 (its own blob). */
static void channel_v2(struct mf_policy_input *in)
{
    memset(in, 0, sizeof(*in));
    in->channel.present = 1;
    (void)snprintf(in->channel.v.version, sizeof(in->channel.v.version), "v2");
    memset(in->channel.v.sha256, 'b', 64);
}

/* The precedence carries the variant the rule chose: a pin names the version, the class its
 * variant; a device on a variant that the rule would pick again is not moved. */
static void test_director_variant__precedence_carries_the_variant(void **state)
{
    struct mf_policy_input in;
    struct mf_policy_decision d;

    (void)state;
    channel_v2(&in);
    in.device_pin = in.channel;
    (void)snprintf(in.device_pin.v.version, sizeof(in.device_pin.v.version), "v1");
    memcpy(in.device_pin.v.sha256, vs[3].sha256, sizeof(vs[3].sha256));
    (void)snprintf(in.device_pin.variant, sizeof(in.device_pin.variant), "int8");
    mf_policy__decide(&d, &in);
    assert_int_equal(d.rule, MF_POLICY_DEVICE_PIN);
    assert_string_equal(d.target->version, "v1");
    assert_string_equal(d.variant, "int8");
    /* Pending on the int8 variant of v1, offered v2's own blob by the channel: held, and the
     * hold keeps the variant. */
    memset(&in.device_pin, 0, sizeof(in.device_pin));
    in.installed.present = 1;
    (void)snprintf(in.installed.v.version, sizeof(in.installed.v.version), "v1");
    memcpy(in.installed.v.sha256, vs[3].sha256, sizeof(vs[3].sha256));
    (void)snprintf(in.installed.variant, sizeof(in.installed.variant), "int8");
    in.pending = 1;
    mf_policy__decide(&d, &in);
    assert_int_equal(d.rule, MF_POLICY_HOLD_PENDING);
    assert_string_equal(d.variant, "int8");
    /* Not pending: the channel's v2 own blob, no variant. */
    in.pending = 0;
    mf_policy__decide(&d, &in);
    assert_int_equal(d.rule, MF_POLICY_CHANNEL);
    assert_string_equal(d.variant, "");
}

/* A class rollback (the rollout halted the device's class) outranks the wave and the
 * channel, and is not an automatic rule: a device pending on the bad release goes back. */
static void test_director_variant__class_rollback_precedence(void **state)
{
    struct mf_policy_input in;
    struct mf_policy_decision d;

    (void)state;
    channel_v2(&in);
    in.wave = in.channel;
    in.installed = in.channel;
    in.pending = 1;
    in.class_rollback.present = 1;
    (void)snprintf(in.class_rollback.v.version, sizeof(in.class_rollback.v.version), "v1");
    memset(in.class_rollback.v.sha256, 'a', 64);
    mf_policy__decide(&d, &in);
    assert_int_equal(d.rule, MF_POLICY_CLASS_ROLLBACK);
    assert_string_equal(d.target->version, "v1");
    assert_string_equal(mf_policy__rule_name(d.rule), "class_rollback");
    /* The fleet rollback and pins still outrank it. */
    in.fleet_rollback = in.channel;
    mf_policy__decide(&d, &in);
    assert_int_equal(d.rule, MF_POLICY_FLEET_ROLLBACK);
}

int main(void)
{
    return MF_TEST_RUN(
        "tests", NULL, NULL,
        cmocka_unit_test_setup(test_director_variant__rule_case_by_case, setup),
        cmocka_unit_test_setup(test_director_variant__fallback_is_never_assigned, setup),
        cmocka_unit_test_setup(test_director_variant__missing_variants, setup),
        cmocka_unit_test_setup(test_director_variant__needs_at_their_bounds, setup),
        cmocka_unit_test_setup(test_director_variant__precedence_carries_the_variant, setup),
        cmocka_unit_test_setup(test_director_variant__class_rollback_precedence, setup));
}
