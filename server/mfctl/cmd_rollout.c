/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl rollout create|status|pause|resume|abort|rollback, mfctl promote and mfctl versions
 * stats: the admin routes of docs/protocol.md, "Rollouts", with readable tables.
 * One module with cmd_rollout_watch.c, which redraws the status view printed here (--watch).
 */
#include "cmd_rollout.h"
#include "mf_json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_FILE_MAX (8u * 1024u) /* the server's plan bound (MF_STORE_PLAN_MAX) */

double mfctl__num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

const char *mfctl__str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

    return s ? s : "";
}

cJSON *mfctl__parse(struct mfctl *c, const char *json, size_t len, const char *key)
{
    cJSON *doc = NULL;

    /* The reader's message names the byte and rule when the answer is not strict JSON. */
    if (json &&
        mf_json__parse(&doc, &c->ctx, json, len, len, MF_JSON_DEPTH_DEFAULT, "server answer") < 0)
        return NULL;
    if (!doc || (key && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, key)))) {
        cJSON_Delete(doc);
        (void)mf_fail(&c->ctx, MF_E_INVALID, "unexpected answer from the server");
        return NULL;
    }
    return doc;
}

cJSON *mfctl__parse_array(struct mfctl *c, const cJSON **out, const char *json, size_t len,
                          const char *key)
{
    cJSON *doc = mfctl__parse(c, json, len, NULL);

    if (!doc)
        return NULL;
    *out = cJSON_GetObjectItemCaseSensitive(doc, key);
    if (!cJSON_IsArray(*out)) {
        cJSON_Delete(doc);
        (void)mf_fail(&c->ctx, MF_E_INVALID, "server answer has no \"%s\" array", key);
        return NULL;
    }
    return doc;
}

static void print_waves(struct mfctl *c, const cJSON *doc)
{
    const cJSON *w;
    int i = 0;

    (void)fprintf(c->out, "waves:\n  %-2s %-8s %-24s %8s  %s\n", "#", "KIND", "TARGET", "DEVICES",
                  "STATE");
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "waves"))
    {
        char target[32] = "list";

        if (strcmp(mfctl__str(w, "kind"), "percent") == 0)
            (void)snprintf(target, sizeof(target), "%g %%", mfctl__num(w, "percent"));
        else if (strcmp(mfctl__str(w, "kind"), "group") == 0)
            (void)snprintf(target, sizeof(target), "%s", mfctl__str(w, "group"));
        (void)fprintf(c->out, "  %-2d %-8s %-24s %8.0f  %s\n", i++, mfctl__str(w, "kind"), target,
                      mfctl__num(w, "devices"), mfctl__str(w, "state"));
    }
}

/* A figure in its metric's unit: bytes for memory, microseconds as an integer, microjoules,
 * inferences per second, rates and agreement as fractions; never an exponent. */
static const char *fmt_figure(char *buf, size_t cap, const char *metric, double v)
{
    size_t n = strlen(metric);

    if (n > 7 && strcmp(metric + n - 7, "_memory") == 0)
        return mfctl__fmt_bytes(buf, cap, v);
    if (n > 3 && strcmp(metric + n - 3, "_us") == 0)
        (void)snprintf(buf, cap, v == (double)(long long)v ? "%.0f us" : "%.1f us", v);
    else if (n > 3 && strcmp(metric + n - 3, "_uj") == 0)
        (void)snprintf(buf, cap, "%.1f uJ", v);
    else if (strcmp(metric, "sustained_rate") == 0)
        (void)snprintf(buf, cap, "%.2f /s", v);
    else
        (void)snprintf(buf, cap, "%.4f", v);
    return buf;
}

/* "p99_latency_us", or "sustained_p99_us@5" (from minute 5 after activation on). */
static const char *metric_label(char *buf, size_t cap, const cJSON *l)
{
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(l, "after_min");

    if (cJSON_IsNumber(after))
        (void)snprintf(buf, cap, "%s@%.0f", mfctl__str(l, "metric"), after->valuedouble);
    else
        (void)snprintf(buf, cap, "%s", mfctl__str(l, "metric"));
    return buf;
}

/* Every dimension per version: the new one beside the previous (the control group); "-"
 * where a group has no data (an absent figure, e.g. energy without a counter). */
static void print_scorecard(struct mfctl *c, const cJSON *doc, const cJSON *of, const char *title)
{
    const cJSON *l;
    char label[64], cur[32], prev[32];

    (void)fprintf(c->out, "%s (%s vs %s):\n  %-26s %14s %14s %8s %8s\n", title,
                  mfctl__str(doc, "version"), mfctl__str(doc, "previous"), "METRIC", "VERSION",
                  "PREVIOUS", "DEVICES", "PREV");
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(of, "scorecard"))
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(l, "version");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(l, "previous");
        const char *metric = mfctl__str(l, "metric");

        (void)fprintf(
            c->out, "  %-26s %14s %14s %8.0f %8.0f\n", metric_label(label, sizeof(label), l),
            cJSON_IsNumber(v) ? fmt_figure(cur, sizeof(cur), metric, v->valuedouble) : "-",
            cJSON_IsNumber(p) ? fmt_figure(prev, sizeof(prev), metric, p->valuedouble) : "-",
            mfctl__num(l, "devices"), mfctl__num(l, "previous_devices"));
    }
}

/* The red lines ("red_lines") or the ranked goals ("goals") with their verdicts. */
static void print_lines(struct mfctl *c, const cJSON *doc, const char *key, const char *title)
{
    const cJSON *l;
    char limit[32], value[32], bound[32], label[64];
    int goals = strcmp(key, "goals") == 0;

    if (goals && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, key)) == 0)
        return;
    (void)fprintf(c->out, "%s:\n  %-26s %-9s %10s %14s %14s  %s\n", title, "METRIC", "KIND",
                  "LIMIT", "VALUE", "BOUND", "STATUS");
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(doc, key))
    {
        int evaluated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "evaluated"));
        int breached = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "breached"));
        const char *metric = mfctl__str(l, "metric");
        const char *missed = goals ? "missed" : "BREACHED", *met = goals ? "met" : "ok";

        (void)metric_label(label, sizeof(label), l);

        /* A relative line's limit is a factor of the baseline, the others are in its unit. */
        if (strcmp(mfctl__str(l, "kind"), "relative") == 0)
            (void)snprintf(limit, sizeof(limit), "x%.2f", mfctl__num(l, "limit"));
        else
            (void)fmt_figure(limit, sizeof(limit), metric, mfctl__num(l, "limit"));
        if (evaluated)
            (void)fprintf(c->out, "  %-26s %-9s %10s %14s %14s  %s\n", label, mfctl__str(l, "kind"),
                          limit, fmt_figure(value, sizeof(value), metric, mfctl__num(l, "value")),
                          fmt_figure(bound, sizeof(bound), metric, mfctl__num(l, "bound")),
                          breached ? missed : met);
        else /* not enough evidence yet: a red line blocks advancing, never counts clean */
            (void)fprintf(c->out, "  %-26s %-9s %10s %14s %14s  waiting (%s)\n", label,
                          mfctl__str(l, "kind"), limit, "-", "-", mfctl__str(l, "waiting_for"));
    }
}

/* The whole plan as created, on one line (--json has it as an object). */
static void print_plan(struct mfctl *c, const cJSON *doc)
{
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(doc, "plan"));

    if (text)
        (void)fprintf(c->out, "plan: %s\n", text);
    cJSON_free(text);
}

/* An event's time as the server wrote it in ISO 8601 ("at_iso"), or formatted here from the
 * Unix seconds of an older server. */
static const char *event_time(char *buf, size_t cap, const cJSON *e)
{
    if (mfctl__str(e, "at_iso")[0])
        return mfctl__str(e, "at_iso");
    return mfctl__fmt_time(buf, cap, mfctl__num(e, "at"));
}

int mfctl__print_rollout(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, "waves");
    const cJSON *e;

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(
        c->out,
        "rollout %.0f: %s %s (previous %s)  state %s  wave %.0f of %d\n"
        "soak %.0f s once %.0f devices of the wave report (%.0f now, %.0f in all admitted "
        "waves): %s\n"
        "each line counts clean on %.0f devices, %.0f inferences; control group %.0f devices\n",
        mfctl__num(doc, "id"), mfctl__str(doc, "model"), mfctl__str(doc, "version"),
        mfctl__str(doc, "previous"), mfctl__str(doc, "state"), mfctl__num(doc, "wave") + 1,
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "waves")),
        mfctl__num(doc, "soak_s"), mfctl__num(doc, "min_devices"),
        mfctl__num(doc, "wave_reporting"), mfctl__num(doc, "reporting"),
        mfctl__num(doc, "soak_started_at") > 0 ? "soaking" : "waiting for devices",
        mfctl__num(doc, "line_min_devices"), mfctl__num(doc, "line_min_inferences"),
        mfctl__num(doc, "control_devices"));
    if (mfctl__str(doc, "breach")[0])
        (void)fprintf(c->out, "halted by: %s\n", mfctl__str(doc, "breach"));
    if (mfctl__str(doc, "halted_classes")[0])
        (void)fprintf(c->out, "classes halted (back on %s): %s\n", mfctl__str(doc, "previous"),
                      mfctl__str(doc, "halted_classes"));
    print_waves(c, doc);
    print_lines(c, doc, "red_lines", "red lines");
    print_lines(c, doc, "goals", "goals (ranked; they never halt)");
    print_scorecard(c, doc, doc, "scorecard");
    /* Each device class on its own: what its red lines read, halted or not. */
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "classes"))
    {
        char title[128];

        (void)snprintf(title, sizeof(title), "class %s%s", mfctl__str(e, "class"),
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "halted")) ? " (halted)"
                                                                                   : "");
        print_scorecard(c, doc, e, title);
    }
    print_plan(c, doc);
    (void)fprintf(c->out, "events (UTC):\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "events"))
    {
        /* The created event's detail is the plan cut to a line: the whole one is above. */
        int plan_above = strcmp(mfctl__str(e, "kind"), "created") == 0 &&
                         cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "plan"));
        char at[32];

        (void)fprintf(c->out, "  %s %-11s %s\n", event_time(at, sizeof(at), e),
                      mfctl__str(e, "kind"), plan_above ? "(plan above)" : mfctl__str(e, "detail"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

int mfctl__print_rollouts(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, "rollouts");
    const cJSON *r;

    if (!doc)
        return MF_E_INVALID;
    (void)fprintf(c->out, "%-5s %-20s %-12s %-12s %-12s %4s\n", "ID", "MODEL", "VERSION",
                  "PREVIOUS", "STATE", "WAVE");
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "rollouts"))
    {
        (void)fprintf(c->out, "%-5.0f %-20s %-12s %-12s %-12s %4.0f\n", mfctl__num(r, "id"),
                      mfctl__str(r, "model"), mfctl__str(r, "version"), mfctl__str(r, "previous"),
                      mfctl__str(r, "state"), mfctl__num(r, "wave"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* Every red-line figure of each version ("figures": the metric's name, "@minute" for the
 * sustained ones), in its unit, with its 95 % interval where it has one and its evidence. */
static void print_figures(struct mfctl *c, const cJSON *versions)
{
    const cJSON *v, *f;

    cJSON_ArrayForEach(v, versions)
    {
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(v, "figures"))
        {
            char metric[64], val[32], lo[32], hi[32], range[80] = "";
            double value = mfctl__num(f, "value");

            (void)snprintf(metric, sizeof(metric), "%.*s", (int)strcspn(f->string, "@"), f->string);
            (void)fmt_figure(val, sizeof(val), metric, value);
            if (mfctl__num(f, "lo") != value || mfctl__num(f, "hi") != value)
                (void)snprintf(range, sizeof(range), "  [%s, %s]",
                               fmt_figure(lo, sizeof(lo), metric, mfctl__num(f, "lo")),
                               fmt_figure(hi, sizeof(hi), metric, mfctl__num(f, "hi")));
            (void)fprintf(c->out, "  %-12s %-26s %14s%s  (%.0f devices, %.0f samples)\n",
                          mfctl__str(v, "version"), f->string, val, range, mfctl__num(f, "devices"),
                          mfctl__num(f, "samples"));
        }
    }
}

static void print_versions(struct mfctl *c, const cJSON *versions)
{
    const cJSON *v;
    char mem[32];

    (void)fprintf(c->out, "%-12s %8s %9s %7s %7s %9s %9s %9s %11s %8s %8s\n", "VERSION", "RUNNING",
                  "REPORTING", "INST_OK", "INST_KO", "P50_US", "P95_US", "P99_US", "PEAK_MEM",
                  "OFFLOAD", "AGREE");
    cJSON_ArrayForEach(v, versions)
    {
        (void)fprintf(c->out, "%-12s %8.0f %9.0f %7.0f %7.0f %9.0f %9.0f %9.0f %11s %8.4f %8.4f\n",
                      mfctl__str(v, "version"), mfctl__num(v, "devices_running"),
                      mfctl__num(v, "devices_reporting"), mfctl__num(v, "install_ok"),
                      mfctl__num(v, "install_failed"), mfctl__num(v, "p50_us"),
                      mfctl__num(v, "p95_us"), mfctl__num(v, "p99_us"),
                      mfctl__fmt_bytes(mem, sizeof(mem), mfctl__num(v, "peak_memory")),
                      mfctl__num(v, "offload_rate"), mfctl__num(v, "teacher_agreement"));
    }
    print_figures(c, versions);
}

/* The fleet's versions, then each device class's from its own reports. */
int mfctl__print_stats(struct mfctl *c, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(c, json, len, "versions");
    const cJSON *k;

    if (!doc)
        return MF_E_INVALID;
    print_versions(c, cJSON_GetObjectItemCaseSensitive(doc, "versions"));
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(doc, "classes"))
    {
        (void)fprintf(c->out, "class %s:\n", mfctl__str(k, "class"));
        print_versions(c, cJSON_GetObjectItemCaseSensitive(k, "versions"));
    }
    cJSON_Delete(doc);
    return MF_OK;
}

/* The one admin exchange of mfctl: with --json the answer is printed raw (an empty one too when
 * `print` would have read it), else it goes to `print`, else `done` is printed. */
static int exchange(struct mfctl *c, const char *method, const char *path, const char *body,
                    int json, int (*print)(struct mfctl *, const char *, size_t), const char *done)
{
    struct mf_http_response resp;
    int err;

    if (mfctl__connect(c) != 0)
        return 1;
    mf_http__response_init(&resp, &c->http);
    err = mfctl__request(c, &resp, method, path, body, body ? strlen(body) : 0);
    if (err >= 0 && json && (print || resp.body.len))
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "");
    else if (err >= 0 && print)
        err = print(c, (const char *)resp.body.data, resp.body.len);
    else if (err >= 0 && done)
        (void)fprintf(c->out, "%s\n", done);
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__call(struct mfctl *c, const char *method, const char *path, const char *body, int json,
                int (*print)(struct mfctl *, const char *, size_t))
{
    return exchange(c, method, path, body, json, print, NULL);
}

int mfctl__send(struct mfctl *c, const char *method, const char *path, const char *body, int json,
                const char *done)
{
    return exchange(c, method, path, body, json, NULL, done);
}

/* PLAN.json plus model, version and previous, as the create body (caller frees). */
static char *create_body(struct mfctl *c, const char *path, const char *model, const char *version,
                         const char *previous)
{
    char *buf = mf_alloc(&c->ctx.alloc, PLAN_FILE_MAX + 1), *out = NULL;
    FILE *f = fopen(path, "rb");
    size_t n = f && buf ? fread(buf, 1, PLAN_FILE_MAX + 1, f) : 0;
    cJSON *plan = NULL;

    if (f)
        (void)fclose(f);
    if (!f || !buf || n > PLAN_FILE_MAX) {
        (void)fprintf(c->err, "mfctl rollout: cannot read %s (at most %u bytes)\n", path,
                      PLAN_FILE_MAX);
        mf_free(&c->ctx.alloc, buf);
        return NULL;
    }
    if (mf_json__parse_object(&plan, &c->ctx, buf, n, PLAN_FILE_MAX, MF_JSON_DEPTH_DEFAULT, path) <
        0)
        plan = NULL;
    mf_free(&c->ctx.alloc, buf);
    if (!plan) {
        (void)fprintf(c->err, "mfctl rollout: %s\n", mf_ctx__errmsg(&c->ctx));
        cJSON_Delete(plan);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(plan, "model");
    cJSON_DeleteItemFromObjectCaseSensitive(plan, "version");
    cJSON_DeleteItemFromObjectCaseSensitive(plan, "previous");
    if (cJSON_AddStringToObject(plan, "model", model) &&
        cJSON_AddStringToObject(plan, "version", version) &&
        (!previous || cJSON_AddStringToObject(plan, "previous", previous)))
        out = cJSON_PrintUnformatted(plan);
    cJSON_Delete(plan);
    return out;
}

/* Takes --watch, --interval S and --timeout S out of argv (the common flags do not know
 * them); *watch_out -1 after a bad value (usage printed: exit 2). Returns the new argc. */
static int watch_flags(struct mfctl *c, int *watch_out, unsigned *interval, unsigned *timeout,
                       int argc, char **argv)
{
    int n = 1;

    *watch_out = 0;
    for (int i = 1; i < argc; i++) {
        int is_interval = strcmp(argv[i], "--interval") == 0;
        uint64_t v = 0;

        if (strcmp(argv[i], "--watch") == 0) {
            *watch_out = 1;
        } else if (is_interval || strcmp(argv[i], "--timeout") == 0) {
            if (i + 1 >= argc || mfctl__parse_u64(&v, argv[i + 1], is_interval ? 3600 : 604800) ||
                v == 0) {
                (void)mfctl__usage(c, is_interval ? "--interval takes 1..3600 seconds"
                                                  : "--timeout takes 1..604800 seconds");
                *watch_out = -1;
                return n;
            }
            *(is_interval ? interval : timeout) = (unsigned)v;
            i++;
            *watch_out = *watch_out ? *watch_out : 2; /* a value without --watch: refused */
        } else {
            argv[n++] = argv[i];
        }
    }
    return n;
}

int mfctl__cmd_rollout(struct mfctl *c, int argc, char **argv)
{
    static const char *const actions[] = {"pause", "resume", "abort", "rollback"};
    unsigned interval = 5, timeout = 3600;
    char path[96];
    int watch, json, nargs, rc;

    argc = watch_flags(c, &watch, &interval, &timeout, argc, argv);
    if (watch < 0)
        return 2;
    rc = mfctl__common_flags(c, argc, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (watch &&
        (watch == 2 || nargs != 2 || strcmp(argv[1], "status") != 0 || !mfctl__id_ok(argv[2])))
        return mfctl__usage(c, "--watch (with --interval, --timeout) goes with status ID");
    if (watch)
        return mfctl__rollout_watch(c, argv[2], json, interval, timeout);
    if (nargs >= 4 && nargs <= 5 && strcmp(argv[1], "create") == 0) {
        char *body;

        if (!mfctl__name_ok(argv[2]) || !mfctl__name_ok(argv[3]) ||
            (nargs == 5 && !mfctl__name_ok(argv[5])))
            return mfctl__usage(c, "MODEL, VERSION and PREVIOUS must match [A-Za-z0-9._-]{1,64}");
        body = create_body(c, argv[4], argv[2], argv[3], nargs == 5 ? argv[5] : NULL);
        if (!body)
            return 1;
        rc = mfctl__call(c, "POST", "/v1/admin/rollouts", body, json, mfctl__print_rollout);
        cJSON_free(body);
        return rc;
    }
    if (nargs == 1 && strcmp(argv[1], "status") == 0)
        return mfctl__call(c, "GET", "/v1/admin/rollouts", NULL, json, mfctl__print_rollouts);
    if (nargs == 2 && strcmp(argv[1], "status") == 0 && mfctl__id_ok(argv[2])) {
        (void)snprintf(path, sizeof(path), "/v1/admin/rollouts/%s", argv[2]);
        return mfctl__call(c, "GET", path, NULL, json, mfctl__print_rollout);
    }
    for (size_t i = 0; nargs == 2 && i < sizeof(actions) / sizeof(actions[0]); i++) {
        if (strcmp(argv[1], actions[i]) == 0 && mfctl__id_ok(argv[2])) {
            (void)snprintf(path, sizeof(path), "/v1/admin/rollouts/%s/%s", argv[2], actions[i]);
            return mfctl__call(c, "POST", path, "{}", json, mfctl__print_rollout); /* body: {} */
        }
    }
    return mfctl__usage(c, "expected create, status, pause, resume, abort or rollback");
}

int mfctl__versions_stats(struct mfctl *c, const char *model, int json)
{
    char path[128];

    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/stats", model);
    return mfctl__call(c, "GET", path, NULL, json, mfctl__print_stats);
}

int mfctl__cmd_promote(struct mfctl *c, int argc, char **argv)
{
    char path[192], done[192];
    int force = 0, n = 1, json, nargs, rc;

    for (int i = 1; i < argc; i++) { /* --force is this command's own flag */
        if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else
            argv[n++] = argv[i];
    }
    rc = mfctl__common_flags(c, n, argv, &json, &nargs);
    if (rc >= 0)
        return rc;
    if (nargs != 2)
        return mfctl__usage(c, "expected MODEL VERSION --force");
    if (!mfctl__name_ok(argv[1]) || !mfctl__name_ok(argv[2]))
        return mfctl__usage(c, "MODEL and VERSION must match [A-Za-z0-9._-]{1,64}");
    if (!force)
        return mfctl__usage(c, "--force is required: promoting deploys VERSION to every device "
                               "with no canary; `mfctl rollout create` proves it first");
    (void)snprintf(path, sizeof(path), "/v1/admin/models/%s/versions/%s/promote", argv[1], argv[2]);
    (void)snprintf(done, sizeof(done), "promoted %s %s: the channel default from the next check-in",
                   argv[1], argv[2]);
    return mfctl__send(c, "POST", path, "{\"force\":true}", json, done);
}
