/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A distillation run from queued to its end (docs/distill.md): parent, data, training,
 * gate, publish, provenance. The run row is the record ops and data teams read; the job
 * queue only carries its id, so a run executes once across nodes. Any failure ends the
 * run as "failed" with the message and leaves the fleet where it was; a candidate the gate
 * refuses ends as "rejected" with both sets of figures.
 */
#include "distill/job/distill_job.h"

#include "blob/blob_store.h"
#include "deltas/delta_worker.h"
#include "mf_distill.h"
#include "offload/offload_srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODEL_MAX (64u << 20)

/* What the run learned so far; becomes the provenance record. */
struct run {
    struct mf_store_distill_run row;
    const struct mf_distill_model_cfg *cfg;
    cJSON *record;
    struct mf_distill_data data;
    mf_student_model *parent, *candidate; /* decoded only where the built-in code needs it */
    uint8_t *parent_file;                 /* the parent's file as published */
    size_t parent_len;
    struct mf_dynbuf bytes; /* the candidate's file */
    uint8_t *teacher_pred;
    struct mf_distill_outputs cand_out; /* the candidate's outputs: gate and calibration */
};

/* The example family's student is decoded where built-in code uses it: the in-process
 * evaluator (no evaluator command) and the built-in trainer's warm start. */
static int needs_student(const struct mf_distill_model_cfg *c, int for_parent)
{
    return !c->eval_command || (for_parent && !c->command && c->warm_start);
}

static int decode_student(mf_student_model **out, struct mf_ctx *ctx, const uint8_t *buf,
                          size_t len, const char *whose)
{
    char why[MF_ERRMSG_MAX];

    if (mf_student_model_decode(out, ctx, &ctx->alloc, buf, len) == MF_OK)
        return MF_OK;
    (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(ctx));
    return mf_fail(ctx, MF_E_INVALID,
                   "%s is not a student of the example family (another family needs an "
                   "evaluator command): %s",
                   whose, why);
}

static int copy_row(void *payload, const struct mf_store_distill_run *r)
{
    struct mf_store_distill_run *out = payload;

    *out = *r;
    out->record = NULL; /* borrowed: the run rebuilds its record */
    return MF_OK;
}

/* The version the fleet runs, which the candidate must beat: the newest rollout decides
 * (done: its version; halted, rolled back or aborted: its previous one); without
 * rollouts, the promoted release (the channel default). "" when the model has no release
 * yet. */
struct newest {
    struct mf_store_rollout r;
    int seen;
};

static int take_newest(void *payload, const struct mf_store_rollout *r)
{
    struct newest *n = payload;

    if (!n->seen)
        n->r = *r;
    n->seen = 1;
    return MF_OK;
}

static int find_parent(char *parent, struct mf_ctx *ctx, struct mf_store *s, const char *model)
{
    struct newest *n = mf_calloc(&ctx->alloc, 1, sizeof(*n)); /* an 8 KiB plan inside */
    struct mf_store_version v;
    int err = n ? s->ops->rollout->rollouts_list(s, ctx, model, take_newest, n)
                : mf_fail(ctx, MF_E_NOMEM, "out of memory");

    parent[0] = '\0';
    if (err == MF_OK && n->seen &&
        (strcmp(n->r.state, "running") == 0 || strcmp(n->r.state, "paused") == 0))
        err = mf_fail(ctx, MF_E_STATE, "rollout %lld of %s %s is %s: the loop waits until it ends",
                      (long long)n->r.id, model, n->r.version, n->r.state);
    else if (err == MF_OK && n->seen)
        (void)snprintf(parent, MF_STORE_NAME_SIZE, "%s",
                       strcmp(n->r.state, "done") == 0 ? n->r.version : n->r.prev_version);
    if (err == MF_OK && !n->seen) {
        err = s->ops->registry->promoted_latest(&v, s, ctx, model);
        if (err == MF_OK)
            (void)snprintf(parent, MF_STORE_NAME_SIZE, "%s", v.version);
        err = err == MF_E_NOTFOUND ? MF_OK : err;
    }
    mf_free(&ctx->alloc, n);
    return err;
}

static int load_parent(struct run *r, struct mf_ctx *ctx, struct mf_distill_jobs *j)
{
    struct mf_store *s = j->store;
    struct mf_store_version v;
    char whose[2 * MF_STORE_NAME_SIZE + 16];
    int err = s->ops->registry->version_get(&v, s, ctx, r->row.model, r->row.parent_version);

    if (err == MF_OK &&
        (v.size > MODEL_MAX || !(r->parent_file = mf_alloc(&ctx->alloc, v.size + 1))))
        err = mf_fail(ctx, MF_E_NOMEM, "parent %s is too large for the loop (%llu bytes)",
                      r->row.parent_version, (unsigned long long)v.size);
    if (err == MF_OK)
        err = mf_blob__read(r->parent_file, v.size, &r->parent_len, ctx, j->blob_root, v.sha256);
    (void)snprintf(whose, sizeof(whose), "parent %s %s", r->row.model, r->row.parent_version);
    if (err == MF_OK && needs_student(r->cfg, 1))
        err = decode_student(&r->parent, ctx, r->parent_file, r->parent_len, whose);
    return err;
}

static int train_builtin(struct run *r, struct mf_ctx *ctx)
{
    const struct mf_distill_model_cfg *c = r->cfg;
    const struct mf_distill_data *d = &r->data;
    mf_train_set set = {.n = d->n, .x = d->x, .y = d->y, .soft = d->soft, .has_soft = d->has_soft};
    mf_distill_options o;
    int err = mf_distill_options_init(&o, MF_DISTILL_OPTIONS_VERSION);

    o.hidden = c->hidden;
    o.in_scale = 1.0f / (float)d->train->max_value; /* 1/255 for pixels, 1/16 for digits */
    o.train.epochs = c->epochs;
    o.train.temperature = c->temperature;
    o.train.seed = c->train_seed;
    o.init_seed = c->train_seed * 31 + 7;
    o.warm_start = c->warm_start ? r->parent : NULL;
    if (err == MF_OK)
        err = mf_distill_student(&r->candidate, NULL, ctx, &set, d->train->dim, MF_DATASET_CLASSES,
                                 &o);
    return err;
}

static cJSON *eval_json(const struct mf_distill_eval *e)
{
    cJSON *o = cJSON_CreateObject();

    if (o && (!cJSON_AddNumberToObject(o, "student_accuracy", e->student_acc) ||
              !cJSON_AddNumberToObject(o, "cascade_accuracy", e->cascade_acc) ||
              !cJSON_AddNumberToObject(o, "offload_rate", e->offload_rate) ||
              !cJSON_AddNumberToObject(o, "threshold", e->threshold))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

static cJSON *paired_json(const struct mf_distill_paired *p, double confidence)
{
    cJSON *o = cJSON_CreateObject();

    if (o && (!cJSON_AddNumberToObject(o, "candidate_only", (double)p->candidate_only) ||
              !cJSON_AddNumberToObject(o, "parent_only", (double)p->parent_only) ||
              !cJSON_AddNumberToObject(o, "difference", p->difference) ||
              !cJSON_AddNumberToObject(o, "lower", p->lower) ||
              !cJSON_AddNumberToObject(o, "upper", p->upper) ||
              !cJSON_AddNumberToObject(o, "confidence", confidence))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

/* A model's outputs on the gate's items: in process for the example family, else by the
 * evaluator command in its own work dir (the note, NULL for none, gets its record). */
static int outputs(struct mf_distill_outputs *o, struct run *r, struct mf_ctx *ctx,
                   struct mf_distill_jobs *j, const mf_student_model *m, const uint8_t *file,
                   size_t len, const char *who, cJSON *note)
{
    const struct mf_distill_model_cfg *c = r->cfg;
    const struct mf_distill_eval_cmd e = {{"evaluator", c->eval_argv, c->eval_timeout_s, r->row.id},
                                          MF_DATASET_CLASSES,
                                          c->eval_logits};
    char dir[4200], why[MF_ERRMSG_MAX];
    int err;

    if (!c->eval_command)
        return mf_distill__outputs_builtin(o, ctx, m, &r->data);
    (void)snprintf(dir, sizeof(dir), "%s/tmp/distill-%lld-eval-%s", j->blob_root,
                   (long long)r->row.id, who);
    err = mf_distill__outputs_command(o, ctx, &e, &r->data, file, len, dir, note);
    if (err == MF_OK)
        return MF_OK;
    (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(ctx));
    return mf_fail(ctx, err, "evaluating the %s: %s", who, why);
}

/* Evaluates parent and candidate; *pass_out is the gate's verdict. */
static int gate(int *pass_out, struct run *r, struct mf_ctx *ctx, struct mf_distill_jobs *j)
{
    const struct mf_distill_model_cfg *c = r->cfg;
    struct mf_teacher *t = mf_offsrv__teacher(j->offload, c->model);
    struct mf_distill_eval pe = {0}, ce = {0};
    struct mf_distill_outputs po = {0};
    struct mf_distill_paired pr = {0};
    cJSON *metrics = cJSON_AddObjectToObject(r->record, "metrics");
    cJSON *ev = c->eval_command ? cJSON_AddObjectToObject(r->record, "evaluator") : NULL;
    int err = MF_OK;

    *pass_out = 0;
    if (!metrics)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (!t)
        return mf_fail(ctx, MF_E_STATE,
                       "model %s has no teacher in the offload config: the gate needs one",
                       c->model);
    r->teacher_pred = mf_alloc(&ctx->alloc, r->data.heldout->n ? r->data.heldout->n : 1);
    if (!r->teacher_pred)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (ev)
        (void)cJSON_AddStringToObject(ev, "outputs", c->eval_logits ? "logits" : "probabilities");
    err = mf_distill__teacher_preds(r->teacher_pred, ctx, t, r->data.heldout);
    if (err == MF_OK)
        err = outputs(&r->cand_out, r, ctx, j, r->candidate, r->bytes.data, r->bytes.len,
                      "candidate", ev ? cJSON_AddObjectToObject(ev, "candidate") : NULL);
    if (err == MF_OK)
        err =
            mf_distill__evaluate(&ce, ctx, &r->cand_out, &r->data, r->teacher_pred, c->target_rate);
    if (err == MF_OK && r->parent_file)
        err = outputs(&po, r, ctx, j, r->parent, r->parent_file, r->parent_len, "parent",
                      ev ? cJSON_AddObjectToObject(ev, "parent") : NULL);
    if (err == MF_OK && r->parent_file)
        err = mf_distill__evaluate(&pe, ctx, &po, &r->data, r->teacher_pred, c->target_rate);
    if (err == MF_OK && r->parent_file)
        mf_distill__paired(&pr, &r->cand_out, ce.threshold, &po, pe.threshold, r->teacher_pred,
                           r->data.heldout->y, c->gate_confidence);
    mf_distill__outputs_free(&po, ctx);
    if (err < 0)
        return err;
    (void)cJSON_AddNumberToObject(
        metrics, "teacher_accuracy",
        mf_eval_accuracy(r->teacher_pred, r->data.heldout->y, r->data.heldout->n));
    (void)cJSON_AddNumberToObject(metrics, "heldout_items", (double)r->data.heldout->n);
    (void)cJSON_AddItemToObject(metrics, "candidate", eval_json(&ce));
    if (r->parent_file)
        (void)cJSON_AddItemToObject(metrics, "parent", eval_json(&pe));
    if (r->parent_file)
        (void)cJSON_AddItemToObject(metrics, "paired", paired_json(&pr, c->gate_confidence));
    /* Not worse where it counts: the deployed cascade's accuracy on held-out items; with
     * the paired test, not worse with the configured confidence. */
    *pass_out =
        !r->parent_file || (c->gate_paired ? pr.lower >= -c->gate_tolerance
                                           : ce.cascade_acc >= pe.cascade_acc - c->gate_tolerance);
    (void)cJSON_AddStringToObject(r->record, "gate_test", c->gate_paired ? "paired" : "raw");
    (void)cJSON_AddStringToObject(
        r->record, "gate",
        !r->parent_file ? "passed: first version"
        : c->gate_paired
            ? (*pass_out ? "passed: the paired lower bound of the cascade gain is not below "
                           "-gate_tolerance"
                         : "rejected: the paired lower bound of the cascade gain is below "
                           "-gate_tolerance")
            : (*pass_out ? "passed: cascade accuracy not below the parent's"
                         : "rejected: cascade accuracy below the parent's"));
    return MF_OK;
}

static int record_samples(struct run *r)
{
    const struct mf_distill_data *d = &r->data;
    cJSON *o = cJSON_AddObjectToObject(r->record, "samples");

    if (!o || !cJSON_AddNumberToObject(o, "seed", (double)d->n_seed) ||
        !cJSON_AddNumberToObject(o, "hard", (double)d->n_hard) ||
        !cJSON_AddNumberToObject(o, "audit", (double)d->n_audit) ||
        !cJSON_AddNumberToObject(o, "dropped_teacher_unsure", (double)d->n_dropped_unsure) ||
        !cJSON_AddNumberToObject(o, "dropped_heldout", (double)d->n_dropped_heldout) ||
        !cJSON_AddNumberToObject(o, "dropped_other", (double)d->n_dropped_shape) ||
        !cJSON_AddNumberToObject(o, "until_seq", (double)r->row.samples_until))
        return MF_E_NOMEM;
    cJSON_AddItemReferenceToObject(o, "ids", r->data.sample_ids);
    cJSON_AddItemReferenceToObject(r->record, "teacher_versions", r->data.teacher_versions);
    return MF_OK;
}

static int record_trainer(struct run *r)
{
    const struct mf_distill_model_cfg *c = r->cfg;
    cJSON *o = cJSON_AddObjectToObject(r->record, "trainer");

    if (!o || !cJSON_AddStringToObject(o, "kind", c->command ? "command" : "builtin") ||
        !cJSON_AddNumberToObject(o, "epochs", c->epochs) ||
        !cJSON_AddNumberToObject(o, "hidden", c->hidden) ||
        !cJSON_AddNumberToObject(o, "temperature", c->temperature) ||
        !cJSON_AddBoolToObject(o, "warm_start", c->warm_start && r->parent_file) ||
        !cJSON_AddNumberToObject(o, "seed", (double)c->train_seed))
        return MF_E_NOMEM;
    return MF_OK;
}

/* The candidate's file in r->bytes; r->candidate decoded where the gate runs in process. */
static int train(struct run *r, struct mf_ctx *ctx, struct mf_distill_jobs *j)
{
    cJSON *note = cJSON_GetObjectItemCaseSensitive(r->record, "trainer");
    char dir[4200];
    int err;

    if (!r->cfg->command) {
        err = train_builtin(r, ctx);
        return err == MF_OK ? mf_student_model_encode(&r->bytes, ctx, r->candidate) : err;
    }
    (void)snprintf(dir, sizeof(dir), "%s/tmp/distill-%lld", j->blob_root, (long long)r->row.id);
    err = mf_distill__train_command(&r->bytes, ctx, r->cfg, &r->data, r->parent_file, r->parent_len,
                                    dir, r->row.id, note);
    if (err == MF_OK && needs_student(r->cfg, 0))
        err = decode_student(&r->candidate, ctx, r->bytes.data, r->bytes.len, "trainer output");
    return err;
}

static int publish(struct run *r, struct mf_ctx *ctx, struct mf_distill_jobs *j)
{
    uint64_t bins[MF_STORE_HIST_BINS];
    struct mf_distill_published p;
    int err;

    mf_distill__calibration_hist(bins, &r->cand_out);
    err = mf_distill__publish(&p, ctx, j->store, j->blob_root, r->cfg, r->row.parent_version,
                              r->bytes.data, r->bytes.len, bins);
    /* what was published is recorded even when the canary step failed after it */
    (void)snprintf(r->row.version, sizeof(r->row.version), "%s", p.version);
    r->row.rollout_id = p.rollout_id;
    (void)cJSON_AddStringToObject(r->record, "version", p.version);
    (void)cJSON_AddStringToObject(r->record, "sha256", p.sha256);
    (void)cJSON_AddNumberToObject(r->record, "model_bytes", (double)p.size);
    (void)cJSON_AddNumberToObject(r->record, "delta_bytes", (double)p.delta_bytes);
    (void)cJSON_AddNumberToObject(r->record, "rollout_id", (double)p.rollout_id);
    if (j->deltas)
        mf_delta__worker_wake(*j->deltas);
    return err;
}

/* Writes the run's end: state, error, record. */
static int finish(struct run *r, struct mf_ctx *ctx, struct mf_store *s, const char *state,
                  const char *error)
{
    char *text = cJSON_PrintUnformatted(r->record);
    int err;

    (void)snprintf(r->row.state, sizeof(r->row.state), "%s", state);
    (void)snprintf(r->row.error, sizeof(r->row.error), "%s", error);
    r->row.record = text ? text : "{}";
    r->row.updated_at = (int64_t)time(NULL);
    err = s->ops->distill->distill_run_put(s, ctx, &r->row, "running");
    cJSON_free(text);
    r->row.record = NULL;
    return err;
}

static void run_free(struct run *r, struct mf_ctx *ctx)
{
    mf_distill__data_free(&r->data);
    mf_student_model_free(r->parent);
    mf_student_model_free(r->candidate);
    mf_free(&ctx->alloc, r->parent_file);
    mf_distill__outputs_free(&r->cand_out, ctx);
    mf_dynbuf__free(&r->bytes);
    mf_free(&ctx->alloc, r->teacher_pred);
    cJSON_Delete(r->record);
}

/* The steps, each recording what it learned. MF_OK with *pass_out, or the first error. */
static int steps(int *pass_out, struct run *r, struct mf_ctx *ctx, struct mf_distill_jobs *j)
{
    int err = find_parent(r->row.parent_version, ctx, j->store, r->row.model);

    (void)cJSON_AddStringToObject(r->record, "parent", r->row.parent_version);
    (void)cJSON_AddStringToObject(r->record, "trigger", r->row.trigger);
    if (err == MF_OK && r->row.parent_version[0])
        err = load_parent(r, ctx, j);
    if (err == MF_OK)
        err = mf_distill__data_load(&r->data, ctx, r->cfg);
    if (err == MF_OK)
        err = mf_distill__data_samples(&r->data, ctx, j->store, j->blob_root, r->cfg,
                                       r->row.samples_until);
    if (err == MF_OK && record_samples(r) < 0)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (err == MF_OK && record_trainer(r) < 0)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (err == MF_OK)
        err = train(r, ctx, j);
    if (err == MF_OK)
        err = gate(pass_out, r, ctx, j);
    if (err == MF_OK && *pass_out)
        err = publish(r, ctx, j);
    return err;
}

int mf_distill__run(struct mf_distill_jobs *j, struct mf_ctx *ctx, int64_t id)
{
    struct mf_store *s = j->store;
    struct run r;
    int pass = 0, err;
    const time_t t0 = time(NULL);

    memset(&r, 0, sizeof(r));
    mf_dynbuf__init(&r.bytes, &ctx->alloc, MODEL_MAX);
    err = s->ops->distill->distill_run_get(s, ctx, id, copy_row, &r.row);
    if (err < 0)
        return err;
    if (strcmp(r.row.state, "queued") != 0 && strcmp(r.row.state, "running") != 0)
        return MF_OK; /* ended already (a job retried after its run finished) */
    (void)snprintf(r.row.state, sizeof(r.row.state), "running");
    r.row.updated_at = (int64_t)t0;
    r.row.record = "";
    err = s->ops->distill->distill_run_put(s, ctx, &r.row,
                                           ""); /* queued, or a lost attempt's running */
    r.cfg = mf_distill__config_model(j->cfg, r.row.model);
    r.record = cJSON_CreateObject();
    if (err == MF_OK && !r.record)
        err = mf_fail(ctx, MF_E_NOMEM, "out of memory");
    if (err == MF_OK && !r.cfg)
        err = mf_fail(ctx, MF_E_NOTFOUND, "model %s is not in the distill config", r.row.model);
    if (err == MF_OK)
        err = steps(&pass, &r, ctx, j);
    (void)cJSON_AddNumberToObject(r.record, "seconds", (double)(time(NULL) - t0));
    if (err < 0) {
        char why[MF_ERRMSG_MAX];

        (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(ctx));
        MF_LOG_WARN(ctx, "distillation run %lld of %s failed: %s", (long long)id, r.row.model, why);
        err = r.record ? finish(&r, ctx, s, "failed", why) : err;
    } else {
        MF_LOG_INFO(ctx, "distillation run %lld of %s: %s %s", (long long)id, r.row.model,
                    pass ? "published" : "rejected", pass ? r.row.version : "");
        err = finish(&r, ctx, s, pass ? "published" : "rejected", "");
    }
    run_free(&r, ctx);
    return err;
}

/* The newest run of a model, if any. */
struct newest_run {
    struct mf_store_distill_run r;
    int seen;
};

static int take_newest_run(void *payload, const struct mf_store_distill_run *r)
{
    struct newest_run *n = payload; /* the list is limited to the newest row */

    n->seen = 1;
    return copy_row(&n->r, r);
}

struct count {
    int64_t max_seq;
    size_t n;
};

static int count_sample(void *payload, const struct mf_store_sample *m)
{
    struct count *c = payload;

    c->n++;
    c->max_seq = m->seq > c->max_seq ? m->seq : c->max_seq;
    return MF_OK;
}

/* Labelled samples of `model` after the newest run's cursor (at most `limit`; 0 all). */
static int new_samples(struct count *out, struct newest_run *nr, struct mf_ctx *ctx,
                       struct mf_store *s, const char *model, size_t limit)
{
    struct mf_store_sample_query q = {.model = model, .min_confidence = 1e-9};
    int err;

    memset(out, 0, sizeof(*out));
    memset(nr, 0, sizeof(*nr));
    err = s->ops->distill->distill_runs_list(s, ctx, model, 1, take_newest_run, nr);
    q.after_seq = nr->seen ? nr->r.samples_until : 0;
    q.limit = (int64_t)limit;
    out->max_seq = q.after_seq;
    if (err == MF_OK)
        err = s->ops->offload->samples_walk(s, ctx, &q, count_sample, out);
    return err;
}

int mf_distill__run_create(struct mf_store_distill_run *out, struct mf_distill_jobs *j,
                           struct mf_ctx *ctx, const char *model, const char *trigger, int64_t now)
{
    struct mf_store *s = j->store;
    struct newest_run nr;
    struct count c;
    char arg[32];
    int err;

    memset(out, 0, sizeof(*out));
    if (!mf_distill__config_model(j->cfg, model))
        return mf_fail(ctx, MF_E_NOTFOUND, "model %s is not in the distill config", model);
    err = new_samples(&c, &nr, ctx, s, model, 0);
    if (err < 0)
        return err;
    (void)snprintf(out->model, sizeof(out->model), "%s", model);
    (void)snprintf(out->state, sizeof(out->state), "queued");
    (void)snprintf(out->trigger, sizeof(out->trigger), "%s", trigger);
    out->samples_until = c.max_seq;
    out->record = "";
    out->created_at = out->updated_at = now;
    err = s->ops->distill->distill_run_put(s, ctx, out, "");
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "a distillation run of %s is queued or running already",
                       model);
    (void)snprintf(arg, sizeof(arg), "%lld", (long long)out->id);
    if (err == MF_OK)
        err = s->ops->jobs->job_enqueue(s, ctx, MF_DISTILL_JOB_KIND, arg, now);
    return err;
}

static int run_job(int *made_out, void *payload, struct mf_ctx *ctx, const char *arg)
{
    char *end;
    long long id = strtoll(arg, &end, 10);

    *made_out = 0;
    if (end == arg || *end || id <= 0)
        return mf_fail(ctx, MF_E_INVALID, "distill job with a bad run id '%s'", arg);
    *made_out = 1;
    return mf_distill__run(payload, ctx, (int64_t)id);
}

/* Auto trigger: a run once `auto_samples` new labelled samples arrived and no rollout of
 * the model is in progress (the loop never stacks a canary on a canary). */
static void tick(void *payload, struct mf_ctx *ctx)
{
    struct mf_distill_jobs *j = payload;
    struct mf_store_distill_run run;
    struct newest_run nr;
    struct count c;
    char parent[MF_STORE_NAME_SIZE];

    for (size_t i = 0; j->cfg && i < j->cfg->n; i++) {
        const struct mf_distill_model_cfg *m = &j->cfg->models[i];

        if (!m->auto_samples ||
            new_samples(&c, &nr, ctx, j->store, m->model, m->auto_samples) < 0 ||
            c.n < m->auto_samples)
            continue;
        if (nr.seen && (strcmp(nr.r.state, "queued") == 0 || strcmp(nr.r.state, "running") == 0))
            continue;
        if (find_parent(parent, ctx, j->store, m->model) < 0)
            continue; /* a rollout in progress, or the store failed: next tick */
        if (mf_distill__run_create(&run, j, ctx, m->model, "auto", (int64_t)time(NULL)) == MF_OK)
            MF_LOG_INFO(ctx, "distillation run %lld of %s queued: %zu new samples",
                        (long long)run.id, m->model, c.n);
    }
}

void mf_distill__jobs_kind(struct mf_job_kind *out, struct mf_distill_jobs *j)
{
    out->kind = MF_DISTILL_JOB_KIND;
    out->run = run_job;
    out->tick = tick;
    out->payload = j;
}
