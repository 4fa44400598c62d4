/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The distill config parser (server/distill/job/distill_config.c): defaults, every key read,
 * the external trainer's argv, the canary plan kept as text, and one rejected document per
 * rule with the key named in the message.
 */
#include "mf_test.h"
#include "kit_case.h"
#include "distill/job/distill_job.h"

#include <stdlib.h>
#include <string.h>

#define DATA                                                                                       \
    "\"data\": {\"train_images\": \"tr.gz\", \"train_labels\": \"tl.gz\", "                        \
    "\"heldout_images\": \"hi.gz\", \"heldout_labels\": \"hl.gz\"}"
#define RELEASE "\"release\": {\"key\": \"k.pem\"}"

static struct mf_distill_config cfg;

static int parse(struct mf_ctx *ctx, const char *json)
{
    return mf_distill__config_parse(&cfg, ctx, json, strlen(json));
}

/* parse as a table's parser (kit_case.h): a refused config leaves nothing half-parsed. */
static int parse_leaving_nothing(void *payload, struct mf_ctx *ctx, const char *json)
{
    int err = parse(ctx, json);

    (void)payload;
    if (err < 0)
        assert_int_equal(cfg.n, 0);
    return err;
}

static void test_distill_config__defaults(void **state)
{
    struct mf_ctx ctx;
    const struct mf_distill_model_cfg *m;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(parse(&ctx, "{\"models\": {\"fashion\": {" DATA ", " RELEASE "}}}"), MF_OK);
    assert_int_equal(cfg.n, 1);
    m = mf_distill__config_model(&cfg, "fashion");
    assert_non_null(m);
    assert_null(mf_distill__config_model(&cfg, "other"));
    assert_string_equal(m->train_images, "tr.gz");
    assert_string_equal(m->heldout_labels, "hl.gz");
    assert_string_equal(m->release_key, "k.pem");
    assert_true(m->seed_fraction == 0.1 && m->calibration == 5000 && m->target_rate == 0.1);
    assert_true(m->epochs == 20 && m->hidden == 32 && m->temperature == 2.0f);
    assert_true(!m->command && !m->warm_start && m->auto_samples == 0);
    assert_true(!m->eval_command && m->eval_timeout_s == 600 && !m->eval_logits);
    assert_true(!m->gate_paired && m->gate_confidence == 0.95); /* the raw comparison */
    assert_true(m->heldout_begin == 0 && m->heldout_end == 0);
    assert_true(m->min_teacher_confidence == 0.5 && m->max_samples == 50000);
    assert_string_equal(m->version_prefix, "d");
    assert_true(m->expires_s == 365ull * 86400 && m->chunk_size == 65536);
    assert_null(m->rollout_plan);
    mf_distill__config_free(&cfg);
}

static void test_distill_config__every_key(void **state)
{
    struct mf_ctx ctx;
    const struct mf_distill_model_cfg *m;
    const char *json =
        "{\"models\": {\"a\": {\"data\": {\"train_images\": \"t\", \"train_labels\": \"l\","
        " \"heldout_images\": \"h\", \"heldout_labels\": \"g\", \"heldout_range\": [10, 20],"
        " \"seed_fraction\": 0.2, \"calibration\": 100, \"split_seed\": 9},"
        " \"trainer\": {\"command\": [\"python3\", \"t.py\"], \"timeout_s\": 30, \"epochs\": 3,"
        " \"hidden\": 16, \"temperature\": 4, \"warm_start\": true, \"seed\": 5},"
        " \"evaluator\": {\"command\": [\"python3\", \"e.py\", \"-q\"], \"timeout_s\": 40,"
        " \"outputs\": \"logits\"},"
        " \"samples\": {\"min_teacher_confidence\": 0.7, \"max\": 10},"
        " \"auto_samples\": 50, \"target_rate\": 0.2, \"gate_tolerance\": 0.01,"
        " \"gate_test\": \"paired\", \"gate_confidence\": 0.9,"
        " \"release\": {\"key\": \"r.pem\", \"version_prefix\": \"s\", \"security_floor\": 3,"
        " \"expires_days\": 2, \"chunk_size\": 8192},"
        " \"rollout\": {\"waves\": [{\"percent\": 10}], \"allow_no_red_lines\": true}}}}";

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(parse(&ctx, json), MF_OK);
    m = &cfg.models[0];
    assert_true(m->heldout_begin == 10 && m->heldout_end == 20);
    assert_true(m->seed_fraction == 0.2 && m->calibration == 100 && m->split_seed == 9);
    assert_true(m->command && m->timeout_s == 30);
    assert_string_equal(m->argv[0], "python3");
    assert_string_equal(m->argv[1], "t.py");
    assert_null(m->argv[2]);
    assert_true(m->eval_command && m->eval_timeout_s == 40 && m->eval_logits);
    assert_string_equal(m->eval_argv[0], "python3");
    assert_string_equal(m->eval_argv[2], "-q");
    assert_null(m->eval_argv[3]);
    assert_true(m->epochs == 3 && m->hidden == 16 && m->temperature == 4.0f);
    assert_true(m->warm_start && m->train_seed == 5);
    assert_true(m->min_teacher_confidence == 0.7 && m->max_samples == 10);
    assert_true(m->auto_samples == 50 && m->target_rate == 0.2 && m->gate_tolerance == 0.01);
    assert_true(m->gate_paired && m->gate_confidence == 0.9);
    assert_string_equal(m->version_prefix, "s");
    assert_true(m->security_floor == 3 && m->expires_s == 2 * 86400 && m->chunk_size == 8192);
    assert_string_equal(m->rollout_plan,
                        "{\"waves\":[{\"percent\":10}],\"allow_no_red_lines\":true}");
    mf_distill__config_free(&cfg);
    assert_int_equal(cfg.n, 0);
}

static void test_distill_config__rejects(void **state)
{
    static const struct mf_kit_case cases[] = {
        {"not json", "distill config: line 1: not valid JSON at byte 0: unexpected byte (0x6e)"},
        {"{\"models\": {}, \"x\": 1}", "expected {\"models\""},
        {"{\"models\": [1]}", "expected {\"models\""},
        {"{\"models\": {\"m\": {" RELEASE "}}}", "expected an object"},
        {"{\"models\": {\"m\": {\"bogus\": 1, " DATA ", " RELEASE "}}}",
         "'bogus' is not a known key"},
        {"{\"models\": {\"m\": {\"data\": {\"train_images\": \"a\"}, " RELEASE "}}}",
         "'train_labels'"},
        {"{\"models\": {\"m\": {\"data\": {\"train_images\": \"\", \"train_labels\": \"b\","
         " \"heldout_images\": \"c\", \"heldout_labels\": \"d\"}, " RELEASE "}}}",
         "'train_images' must be a non-empty string"},
        {"{\"models\": {\"m\": {\"data\": {\"train_images\": \"a\", \"train_labels\": \"b\","
         " \"heldout_images\": \"c\", \"heldout_labels\": \"d\", \"heldout_range\": [5, "
         "5]}, " RELEASE "}}}",
         "'heldout_range'"},
        {"{\"models\": {\"m\": {\"data\": {\"train_images\": \"a\", \"train_labels\": \"b\","
         " \"heldout_images\": \"c\", \"heldout_labels\": \"d\", \"seed_fraction\": 1.5}, " RELEASE
         "}}}",
         "'seed_fraction' must be a number in"},
        {"{\"models\": {\"m\": {" DATA ", \"trainer\": {\"command\": []}, " RELEASE "}}}",
         "'trainer.command' must be 1..16 strings"},
        {"{\"models\": {\"m\": {" DATA ", \"trainer\": {\"epochs\": 0}, " RELEASE "}}}",
         "must be positive"},
        {"{\"models\": {\"m\": {" DATA ", \"trainer\": {\"epochs\": 2.5}, " RELEASE "}}}",
         "'epochs' must be an integer"},
        {"{\"models\": {\"m\": {" DATA ", \"trainer\": {\"warm_start\": 1}, " RELEASE "}}}",
         "'trainer.warm_start' must be true or false"},
        {"{\"models\": {\"m\": {" DATA ", \"target_rate\": 0, " RELEASE "}}}", "'target_rate'"},
        {"{\"models\": {\"m\": {" DATA "}}}", "expected an object"},
        {"{\"models\": {\"m\": {" DATA ", \"release\": {\"key\": \"k\", \"chunk_size\": 100}}}}",
         "chunk_size >= 4096"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"rollout\": [1]}}}",
         "'rollout' must be a rollout plan object"},
        /* The canary plan is read as POST /v1/admin/rollouts reads it: a typo fails here. */
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"rollout\": {\"soak\": 30,"
         " \"waves\": [{\"percent\": 10}], \"allow_no_red_lines\": true}}}}",
         "models.m: 'rollout': unknown key 'soak'"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"rollout\": {\"waves\": [{\"percent\":"
         " 10}], \"red_lines\": []}}}}",
         "'rollout': field 'red_lines' is empty"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"samples\": {\"min\": 1}}}}",
         "'min' is not a known key"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"gate_test\": \"mcnemar\"}}}",
         "'gate_test' must be \"raw\" or \"paired\""},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"gate_confidence\": 0.3}}}",
         "'gate_confidence' must be a number in [0.5, 0.9999]"},
        /* the evaluator: a command is required, its output kind is one of two words */
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"evaluator\": {\"timeout_s\": 5}}}}",
         "'evaluator.command' must be 1..16 strings"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"evaluator\": [\"e\"]}}}",
         "expected an object"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE
         ", \"evaluator\": {\"command\": [\"e\"], \"label\": 1}}}}",
         "'label' is not a known key"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE
         ", \"evaluator\": {\"command\": [\"e\"], \"outputs\": \"softmax\"}}}}",
         "'evaluator.outputs' must be \"probabilities\" or \"logits\""},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE
         ", \"evaluator\": {\"command\": [\"e\"], \"timeout_s\": 0}}}}",
         "'evaluator.timeout_s' must be positive"},
        {"{\"models\": {\"m\": {" DATA ", " RELEASE ", \"evaluator\": {\"command\": [\"\"]}}}}",
         "'evaluator.command' has an empty or too long argument"},
    };
    (void)state;
    mf_kit_case_refused(cases, MF_TEST_COUNT(cases), parse_leaving_nothing, NULL);
}

int main(void)
{
    return MF_TEST_RUN("distill_config", NULL, NULL,
                       cmocka_unit_test(test_distill_config__defaults),
                       cmocka_unit_test(test_distill_config__every_key),
                       cmocka_unit_test(test_distill_config__rejects));
}
