/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl distill run|status|wait and mfctl versions show (docs/distill.md). */
#include "cmd_distill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_eval(struct mfctl *c, const char *who, const cJSON *e)
{
    if (!cJSON_IsObject(e))
        return;
    (void)fprintf(
        c->out, "  %-9s student %6.2f %%  cascade %6.2f %%  offload %5.2f %%  threshold %.4f\n",
        who, 100 * mfctl__num(e, "student_accuracy"), 100 * mfctl__num(e, "cascade_accuracy"),
        100 * mfctl__num(e, "offload_rate"), mfctl__num(e, "threshold"));
}

/* A trainer's or evaluator's note: its command line, the digest of what it wrote and its
 * stderr, each line prefixed with who wrote it. */
static void print_command(struct mfctl *c, const char *who, const cJSON *note, const char *sha_key)
{
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(note, "command"), *a;
    const char *err = mfctl__str(note, "stderr");

    if (!cJSON_IsArray(argv))
        return;
    (void)fprintf(c->out, "%s command:", who);
    cJSON_ArrayForEach(a, argv)
    {
        (void)fprintf(c->out, " %s", cJSON_GetStringValue(a) ? cJSON_GetStringValue(a) : "?");
    }
    (void)fprintf(c->out, "\n");
    if (mfctl__str(note, sha_key)[0])
        (void)fprintf(c->out, "%s output sha256 %s\n", who, mfctl__str(note, sha_key));
    while (*err) {
        size_t len = strcspn(err, "\n");

        (void)fprintf(c->out, "%s stderr: %.*s\n", who, (int)len, err);
        err += len;
        err += *err == '\n';
    }
}

static void print_evaluator(struct mfctl *c, const cJSON *ev)
{
    if (!cJSON_IsObject(ev))
        return;
    (void)fprintf(c->out, "evaluator: command, outputs %s\n", mfctl__str(ev, "outputs"));
    print_command(c, "evaluator (candidate)", cJSON_GetObjectItemCaseSensitive(ev, "candidate"),
                  "outputs_sha256");
    print_command(c, "evaluator (parent)", cJSON_GetObjectItemCaseSensitive(ev, "parent"),
                  "outputs_sha256");
}

/* The paired comparison of the two cascades on the same held-out items. */
static void print_paired(struct mfctl *c, const cJSON *p)
{
    if (!cJSON_IsObject(p))
        return;
    (void)fprintf(c->out,
                  "  paired    cascade gain %+.2f pt, %.0f %% bounds [%+.2f, %+.2f] pt "
                  "(%.0f items only the candidate gets right, %.0f only the parent)\n",
                  100 * mfctl__num(p, "difference"), 100 * mfctl__num(p, "confidence"),
                  100 * mfctl__num(p, "lower"), 100 * mfctl__num(p, "upper"),
                  mfctl__num(p, "candidate_only"), mfctl__num(p, "parent_only"));
}

/* The provenance record of a run (docs/distill.md). */
static void print_record(struct mfctl *c, const cJSON *rec)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rec, "samples");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rec, "trainer");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
    const cJSON *tv;

    if (!cJSON_IsObject(rec))
        return;
    if (cJSON_IsObject(s))
        (void)fprintf(c->out,
                      "samples: %.0f seed, %.0f hard, %.0f audit (dropped: %.0f teacher-unsure, "
                      "%.0f held-out, %.0f other); %d ids\n",
                      mfctl__num(s, "seed"), mfctl__num(s, "hard"), mfctl__num(s, "audit"),
                      mfctl__num(s, "dropped_teacher_unsure"), mfctl__num(s, "dropped_heldout"),
                      mfctl__num(s, "dropped_other"),
                      cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "ids")));
    (void)fprintf(c->out, "teacher versions:");
    cJSON_ArrayForEach(tv, cJSON_GetObjectItemCaseSensitive(rec, "teacher_versions"))
    {
        (void)fprintf(c->out, " %s", cJSON_GetStringValue(tv) ? cJSON_GetStringValue(tv) : "?");
    }
    (void)fprintf(c->out, "\n");
    if (cJSON_IsObject(t))
        (void)fprintf(c->out, "trainer: %s, %.0f epochs, hidden %.0f, T %.2f, warm start %s\n",
                      mfctl__str(t, "kind"), mfctl__num(t, "epochs"), mfctl__num(t, "hidden"),
                      mfctl__num(t, "temperature"),
                      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "warm_start")) ? "yes"
                                                                                      : "no");
    print_command(c, "trainer", t, "output_sha256");
    print_evaluator(c, cJSON_GetObjectItemCaseSensitive(rec, "evaluator"));
    if (cJSON_IsObject(m)) {
        (void)fprintf(c->out, "held-out (%.0f items), teacher %.2f %%:\n",
                      mfctl__num(m, "heldout_items"), 100 * mfctl__num(m, "teacher_accuracy"));
        print_eval(c, "parent", cJSON_GetObjectItemCaseSensitive(m, "parent"));
        print_eval(c, "candidate", cJSON_GetObjectItemCaseSensitive(m, "candidate"));
        print_paired(c, cJSON_GetObjectItemCaseSensitive(m, "paired"));
    }
    if (mfctl__str(rec, "gate")[0])
        (void)fprintf(c->out, "gate: %s\n", mfctl__str(rec, "gate"));
    if (mfctl__num(rec, "model_bytes") > 0)
        (void)fprintf(c->out,
                      "published %s: %.0f bytes (delta from the parent %.0f), sha256 %s, "
                      "rollout %.0f\n",
                      mfctl__str(rec, "version"), mfctl__num(rec, "model_bytes"),
                      mfctl__num(rec, "delta_bytes"), mfctl__str(rec, "sha256"),
                      mfctl__num(rec, "rollout_id"));
    (void)fprintf(c->out, "took %.0f s\n", mfctl__num(rec, "seconds"));
}

static void print_run_head(struct mfctl *c, const cJSON *r)
{
    (void)fprintf(c->out, "run %.0f: %s %s (%s), parent %s, version %s\n", mfctl__num(r, "id"),
                  mfctl__str(r, "model"), mfctl__str(r, "state"), mfctl__str(r, "trigger"),
                  mfctl__str(r, "parent")[0] ? mfctl__str(r, "parent") : "-",
                  mfctl__str(r, "version")[0] ? mfctl__str(r, "version") : "-");
    if (mfctl__str(r, "error")[0])
        (void)fprintf(c->out, "error: %s\n", mfctl__str(r, "error"));
}

int mfctl__print_run(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, NULL);

    if (!doc)
        return MF_E_INVALID;
    print_run_head(c, doc);
    print_record(c, cJSON_GetObjectItemCaseSensitive(doc, "record"));
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__print_runs(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, "runs");
    const cJSON *r;

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-5s %-16s %-10s %-7s %-10s %-10s %9s %9s  %s\n", "ID", "MODEL", "STATE",
                  "TRIGGER", "PARENT", "VERSION", "CASCADE", "PARENT_C", "ERROR");
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "runs"))
    {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r, "record"), "metrics");

        (void)fprintf(
            c->out, "%-5.0f %-16s %-10s %-7s %-10s %-10s %8.2f%% %8.2f%%  %s\n",
            mfctl__num(r, "id"), mfctl__str(r, "model"), mfctl__str(r, "state"),
            mfctl__str(r, "trigger"), mfctl__str(r, "parent"), mfctl__str(r, "version"),
            100 * mfctl__num(cJSON_GetObjectItemCaseSensitive(m, "candidate"), "cascade_accuracy"),
            100 * mfctl__num(cJSON_GetObjectItemCaseSensitive(m, "parent"), "cascade_accuracy"),
            mfctl__str(r, "error"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__print_version(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, NULL);
    const cJSON *p;

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%s %s: %.0f bytes, sha256 %s, sequence %.0f, security floor %.0f\n",
                  mfctl__str(doc, "model"), mfctl__str(doc, "version"), mfctl__num(doc, "size"),
                  mfctl__str(doc, "sha256"), mfctl__num(doc, "sequence"),
                  mfctl__num(doc, "security_floor"));
    p = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    if (cJSON_IsObject(p)) {
        (void)fprintf(c->out, "provenance: made by ");
        print_run_head(c, p);
        print_record(c, cJSON_GetObjectItemCaseSensitive(p, "record"));
    } else {
        (void)fprintf(c->out, "provenance: published by hand (no distillation run)\n");
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* Polls run `id` until it ends or `seconds` pass; 0 only when it published. */
static int wait_run(struct mfctl *c, const char *id, long seconds, int json)
{
    const struct timespec step = {0, 500 * 1000000L};
    const time_t deadline = time(NULL) + seconds;
    char path[96], state[32] = "";
    int err = MF_OK;

    (void)snprintf(path, sizeof(path), "/v1/admin/distill/runs/%s", id);
    if (mfctl__connect(c) != 0)
        return 1;
    for (;;) {
        struct mf_http_response resp;
        cJSON *doc;

        mf_http__response_init(&resp, &c->http);
        err = mfctl__request(c, &resp, "GET", path, NULL, 0);
        doc = err >= 0 ? mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL) : NULL;
        (void)snprintf(state, sizeof(state), "%s", mfctl__str(doc, "state"));
        if (doc && strcmp(state, "queued") != 0 && strcmp(state, "running") != 0) {
            if (json)
                (void)fprintf(c->out, "%s\n", (const char *)resp.body.data);
            else
                (void)mfctl__print_run(c, (const char *)resp.body.data, resp.body.len);
        }
        cJSON_Delete(doc);
        mf_http__response_free(&resp);
        if (err < 0 || !doc)
            return mfctl__report(c, err < 0 ? err : MF_E_INVALID);
        if (strcmp(state, "queued") != 0 && strcmp(state, "running") != 0)
            return strcmp(state, "published") == 0 ? 0 : 1;
        if (time(NULL) >= deadline) {
            (void)fprintf(c->err, "mfctl distill wait: run %s still %s after %ld s\n", id, state,
                          seconds);
            return 1;
        }
        (void)nanosleep(&step, NULL);
    }
}

int mfctl__cmd_distill(struct mfctl *c, int argc, char **argv)
{
    char path[128];
    int json, nargs, rc = mfctl__common_flags(c, argc, argv, &json, &nargs);

    if (rc >= 0)
        return rc;
    if (nargs == 2 && strcmp(argv[1], "run") == 0) {
        if (!mfctl__name_ok(argv[2]))
            return mfctl__usage(c, "MODEL must match [A-Za-z0-9._-]{1,64}");
        (void)snprintf(path, sizeof(path), "/v1/admin/distill/%s/runs", argv[2]);
        return mfctl__call(c, "POST", path, "{}", json, mfctl__print_run); /* body: {} */
    }
    if (nargs == 1 && strcmp(argv[1], "status") == 0)
        return mfctl__call(c, "GET", "/v1/admin/distill/runs", NULL, json, mfctl__print_runs);
    if (nargs == 2 && strcmp(argv[1], "status") == 0 && mfctl__id_ok(argv[2])) {
        (void)snprintf(path, sizeof(path), "/v1/admin/distill/runs/%s", argv[2]);
        return mfctl__call(c, "GET", path, NULL, json, mfctl__print_run);
    }
    if ((nargs == 2 || nargs == 3) && strcmp(argv[1], "wait") == 0 && mfctl__id_ok(argv[2]) &&
        (nargs == 2 || mfctl__id_ok(argv[3])))
        return wait_run(c, argv[2], nargs == 3 ? strtol(argv[3], NULL, 10) : 600, json);
    return mfctl__usage(c, "expected run MODEL, status [ID] or wait ID [SECONDS]");
}

int mfctl__versions_show(struct mfctl *c, const char *model, const char *version, int json)
{
    char path[200];

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s", model, version);
    return mfctl__call(c, "GET", path, NULL, json, mfctl__print_version);
}
