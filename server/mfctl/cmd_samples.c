/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl samples export | delete: the data team's side of the hard-sample store. export
 * pages through GET /v1/admin/samples (docs/protocol-offload.md, "Admin routes") and turns
 * the pages into files one line of Python loads (docs/offload.md, "Sample export"): a JSONL
 * of provenance plus .npy arrays of inputs and student/teacher outputs, row i of every array
 * being line i of the JSONL. One page is held in memory at a time (the server caps it at
 * 500 samples and about 8 MiB of input); the arrays are streamed to disk.
 */
#include "cmd_samples.h"
#include "mf_base64.h"
#include "mf_hex.h"
#include "mf_sha256.h"
#include "mf/ct.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SAMPLE_INPUT_MAX (256u * 1024u) /* the server's cap on one decoded input */
#define EXPORT_PAGE 500                 /* the route's largest page */
#define PATH_MAX_LEN MFCTL_PATH_MAX

struct export_opts {
    const char *model, *version, *kind, *since, *until, *outdir;
    double min_conf;
    int has_min_conf, webdataset; /* --format webdataset: one samples.tar */
};

struct export
{
    struct mfctl *c;
    struct mfctl_npy inputs, offsets, student, teacher;
    struct mfctl_tar tar; /* --format webdataset: instead of the .npy files and the JSONL */
    int webdataset;
    FILE *jsonl;
    char jsonl_path[PATH_MAX_LEN];
    uint64_t rows, input_bytes;
    size_t input_len, classes;
    int ragged;
    uint8_t *raw; /* one decoded input */
};

/* Prints "mfctl samples: <why>[ "<arg>"]" and the usage; returns exit code 2. */
static int usage_error(struct mfctl *c, const char *why, const char *arg)
{
    (void)fprintf(c->err, "mfctl samples: %s%s%s%s\n%s", why, arg ? " \"" : "", arg ? arg : "",
                  arg ? "\"" : "", MFCTL_SAMPLES_USAGE);
    return 2;
}

/* A non-negative decimal integer (Unix seconds). */
static int time_ok(const char *s)
{
    size_t n = strspn(s, "0123456789");

    return n > 0 && n <= 18 && s[n] == '\0';
}

/* Parses `export` arguments; -1 to go on, else the exit code. */
static int parse_export(struct export_opts *o, struct mfctl *c, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            (void)fputs(MFCTL_SAMPLES_USAGE, c->out);
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (o->outdir)
                return usage_error(c, "unexpected argument", a);
            o->outdir = a;
            continue;
        }
        if (!v)
            return usage_error(c, "missing value for", a);
        i++;
        if (strcmp(a, "--model") == 0 && mfctl__name_ok(v)) {
            o->model = v;
        } else if (strcmp(a, "--version") == 0 && mfctl__name_ok(v)) {
            o->version = v;
        } else if (strcmp(a, "--kind") == 0 && (!strcmp(v, "hard") || !strcmp(v, "audit"))) {
            o->kind = v;
        } else if (strcmp(a, "--since") == 0 && time_ok(v)) {
            o->since = v;
        } else if (strcmp(a, "--until") == 0 && time_ok(v)) {
            o->until = v;
        } else if (strcmp(a, "--format") == 0 && (!strcmp(v, "npy") || !strcmp(v, "webdataset"))) {
            o->webdataset = strcmp(v, "webdataset") == 0;
        } else if (strcmp(a, "--min-teacher-confidence") == 0) {
            o->min_conf = strtod(v, &end);
            o->has_min_conf = 1;
            if (*end || !(o->min_conf >= 0.0 && o->min_conf <= 1.0))
                return usage_error(c, "--min-teacher-confidence is not in [0, 1]:", v);
        } else {
            return usage_error(c, "unknown option or bad value for", a);
        }
    }
    if (!o->model)
        return usage_error(c, "--model is required", NULL);
    if (!o->outdir)
        return usage_error(c, "OUTDIR is required", NULL);
    return -1;
}

/* GET one page of samples after `after`; the answer stays in `resp`. */
static int get_page(struct export *e, struct mf_http_response *resp, const struct export_opts *o,
                    uint64_t after)
{
    char path[1024];
    int n = snprintf(path, sizeof(path), "/v1/admin/samples?model=%s&limit=%d&after=%llu", o->model,
                     EXPORT_PAGE, (unsigned long long)after);

    /* Every piece was validated as a name, an integer or a number: no escaping needed. */
    if (o->version)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&version=%s", o->version);
    if (o->kind)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&kind=%s", o->kind);
    if (o->since)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&since=%s", o->since);
    if (o->until)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&until=%s", o->until);
    if (o->has_min_conf)
        (void)snprintf(path + n, sizeof(path) - (size_t)n, "&min_teacher_confidence=%.17g",
                       o->min_conf);
    return mfctl__request(e->c, resp, "GET", path, NULL, 0);
}

/* The n numbers of array `a` as float32 rows into `out`; `what` names it in messages. */
static int put_vector(struct export *e, struct mfctl_npy *out, const cJSON *a, const char *id,
                      const char *what)
{
    struct mf_ctx *ctx = &e->c->ctx;
    const cJSON *v;
    size_t n = (size_t)cJSON_GetArraySize(a);
    int err = MF_OK;

    if (!cJSON_IsArray(a) || n != e->classes)
        return mf_fail(ctx, MF_E_INVALID,
                       "sample %s: %s has %zu values, earlier samples %zu (or is not an array)", id,
                       what, n, e->classes);
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v))
            return mf_fail(ctx, MF_E_INVALID, "sample %s: %s holds a non-number", id, what);
        if (err == MF_OK && !e->webdataset)
            err = mfctl__npy_put_f32(out, ctx, (float)v->valuedouble);
    }
    return err;
}

/* A tar member's mtime: the sample's received_at (0 when absent or odd). */
static uint64_t member_time(const cJSON *s)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "received_at");

    return cJSON_IsNumber(t) && t->valuedouble >= 0 && t->valuedouble < 1e11
               ? (uint64_t)t->valuedouble
               : 0;
}

/* The WebDataset key of a sample is its id, which must be lower-case hex: the key is the
 * member name up to its first dot, and nothing from the server may name a path. */
static int member_name(char *out, size_t cap, struct export *e, const char *id, const char *ext)
{
    size_t n = strlen(id);

    if (n == 0 || n > 64 || strspn(id, "0123456789abcdef") != n)
        return mf_fail(&e->c->ctx, MF_E_INVALID,
                       "sample id \"%.64s\" is not lower-case hex: it cannot key a tar member", id);
    (void)snprintf(out, cap, "%s.%s", id, ext);
    return MF_OK;
}

/* `<id>.input.npy`: the sample's input bytes as a uint8 .npy of shape (len,). */
static int put_input_member(struct export *e, const cJSON *s, const char *id, size_t len)
{
    char name[96], hdr[MFCTL_NPY_HEADER_LEN];
    uint64_t shape[1] = {len};
    int err = member_name(name, sizeof(name), e, id, "input.npy");

    mfctl__npy_header(hdr, "|u1", 1, shape);
    if (err == MF_OK)
        err = mfctl__tar_put(&e->tar, &e->c->ctx, name, member_time(s), hdr, sizeof(hdr), e->raw,
                             len);
    e->input_bytes += len;
    return err;
}

/* Decodes the sample's input, checks it against its SHA-256 and appends it to inputs.npy
 * (or, for a WebDataset export, writes its `<id>.input.npy` member). */
static int put_input(struct export *e, size_t *len, const cJSON *s, const char *id)
{
    struct mf_ctx *ctx = &e->c->ctx;
    const char *b64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "input"));
    const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "input_sha256"));
    uint8_t digest[MF_SHA256_DIGEST_LEN];
    char hex[2 * MF_SHA256_DIGEST_LEN + 1];
    int err;

    *len = 0;
    if (!b64 || !sha || strlen(sha) != 2 * MF_SHA256_DIGEST_LEN)
        return mf_fail(ctx, MF_E_INVALID, "sample %s has no input or input_sha256", id);
    if (mf_base64__decode(e->raw, SAMPLE_INPUT_MAX, len, b64, strlen(b64)) < 0)
        return mf_fail(ctx, MF_E_INVALID, "sample %s: input is not base64 of at most %u bytes", id,
                       SAMPLE_INPUT_MAX);
    mf_sha256__digest(digest, e->raw, *len);
    mf_hex__encode(hex, digest, sizeof(digest));
    if (!mf_ct_memeq(hex, sha, sizeof(hex) - 1))
        return mf_fail(ctx, MF_E_INVALID, "sample %s: input does not match input_sha256 %s", id,
                       sha);
    if (e->rows == 0)
        e->input_len = *len;
    e->ragged |= *len != e->input_len;
    if (e->webdataset)
        return put_input_member(e, s, id, *len);
    err = mfctl__npy_put_i64(&e->offsets, ctx, (int64_t)e->input_bytes);
    if (err == MF_OK)
        err = mfctl__npy_write(&e->inputs, ctx, e->raw, *len);
    e->input_bytes += *len;
    return err;
}

static void copy_item(cJSON *dst, const char *to, const cJSON *src, const char *from)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, from);

    cJSON_AddItemToObject(dst, to, v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
}

/* "teacher_label": the class the teacher's probabilities rank first (the first of equal
 * ones), null while the sample is unlabelled: the hard label data teams train on. */
static void add_teacher_label(cJSON *line, const cJSON *probs)
{
    const cJSON *p;
    double best = 0;
    int k = 0, label = -1;

    cJSON_ArrayForEach(p, probs)
    {
        if (cJSON_IsNumber(p) && (label < 0 || p->valuedouble > best)) {
            best = p->valuedouble;
            label = k;
        }
        k++;
    }
    cJSON_AddItemToObject(line, "teacher_label",
                          label >= 0 ? cJSON_CreateNumber(label) : cJSON_CreateNull());
}

/* Line `row` of samples.jsonl: the provenance of one sample (docs/offload.md). */
static int put_line(struct export *e, const cJSON *s, size_t input_len)
{
    static const char *const same[] = {
        "id",          "model",           "model_version",      "kind",
        "method",      "score",           "created_at",         "received_at",
        "output_kind", "teacher_version", "teacher_confidence", "labelled_at",
        "threshold",   "input_sha256",
    };
    cJSON *line = cJSON_CreateObject();
    char *text = NULL;
    int err = MF_OK;

    if (line) {
        cJSON_AddNumberToObject(line, "row", (double)e->rows);
        copy_item(line, "device", s, "device_id");
        for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
            copy_item(line, same[i], s, same[i]);
        copy_item(line, "student_output", s, "output");
        copy_item(line, "teacher_output", s, "teacher_output");
        add_teacher_label(line, cJSON_GetObjectItemCaseSensitive(s, "teacher_output"));
        cJSON_AddNumberToObject(line, "input_len", (double)input_len);
        text = cJSON_PrintUnformatted(line);
    }
    if (!text) {
        err = mf_fail(&e->c->ctx, MF_E_NOMEM, "out of memory writing samples.jsonl");
    } else if (e->webdataset) {
        char name[96];
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));

        err = member_name(name, sizeof(name), e, id, "json");
        if (err == MF_OK)
            err = mfctl__tar_put(&e->tar, &e->c->ctx, name, member_time(s), text, strlen(text),
                                 "\n", 1);
    } else if (fprintf(e->jsonl, "%s\n", text) < 0)
        err = mf_fail(&e->c->ctx, MF_E_IO, "cannot write %s: %s", e->jsonl_path, strerror(errno));
    cJSON_free(text);
    cJSON_Delete(line);
    return err;
}

static int put_sample(struct export *e, const cJSON *s)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));
    const cJSON *student = cJSON_GetObjectItemCaseSensitive(s, "output");
    const cJSON *teacher = cJSON_GetObjectItemCaseSensitive(s, "teacher_output");
    size_t len = 0;
    int err;

    if (!id)
        return mf_fail(&e->c->ctx, MF_E_INVALID, "server answer holds a sample without an id");
    if (e->rows == 0)
        e->classes = (size_t)cJSON_GetArraySize(student);
    err = put_input(e, &len, s, id);
    if (err == MF_OK)
        err = put_vector(e, &e->student, student, id, "output");
    if (err == MF_OK && cJSON_IsArray(teacher)) {
        err = put_vector(e, &e->teacher, teacher, id, "teacher_output");
    } else if (!e->webdataset) {
        /* Not labelled yet: a row of NaN keeps row i of every file the same sample. */
        for (size_t i = 0; err == MF_OK && i < e->classes; i++)
            err = mfctl__npy_put_f32(&e->teacher, &e->c->ctx, NAN);
    }
    if (err == MF_OK)
        err = put_line(e, s, len);
    e->rows++;
    return err;
}

/* One page: its samples appended; *next is the server's cursor (0: that was the last). */
static int put_page(struct export *e, uint64_t *next, const char *json, size_t len)
{
    cJSON *doc = mfctl__parse(e->c, json, len, NULL);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "samples");
    const cJSON *nx = cJSON_GetObjectItemCaseSensitive(doc, "next");
    const cJSON *s;
    int err = MF_OK;

    if (!doc)
        return MF_E_INVALID; /* the message is mfctl__parse()'s */
    if (!cJSON_IsArray(list) || !cJSON_IsNumber(nx) || nx->valuedouble < 0)
        err = mf_fail(&e->c->ctx, MF_E_INVALID, "server answer has no \"samples\" and \"next\"");
    else
        *next = (uint64_t)nx->valuedouble;
    cJSON_ArrayForEach(s, list)
    {
        if (err == MF_OK)
            err = put_sample(e, s);
    }
    cJSON_Delete(doc);
    return err;
}

static void out_path(char *out, const char *dir, const char *name)
{
    (void)snprintf(out, PATH_MAX_LEN, "%s/%s", dir, name);
}

static int open_all(struct export *e, const char *dir)
{
    struct mf_ctx *ctx = &e->c->ctx;
    char p[4][PATH_MAX_LEN], part[PATH_MAX_LEN + 8];
    int err;

    if (strlen(dir) > PATH_MAX_LEN - 64)
        return mf_fail(ctx, MF_E_LIMIT, "output directory name too long");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", dir, strerror(errno));
    if (e->webdataset) {
        out_path(p[0], dir, "samples.tar");
        return mfctl__tar_open(&e->tar, ctx, p[0]);
    }
    out_path(p[0], dir, "inputs.npy");
    out_path(p[1], dir, "input_offsets.npy");
    out_path(p[2], dir, "student.npy");
    out_path(p[3], dir, "teacher.npy");
    out_path(e->jsonl_path, dir, "samples.jsonl");
    err = mfctl__npy_open(&e->inputs, ctx, p[0], "|u1");
    if (err == MF_OK)
        err = mfctl__npy_open(&e->offsets, ctx, p[1], "<i8");
    if (err == MF_OK)
        err = mfctl__npy_open(&e->student, ctx, p[2], "<f4");
    if (err == MF_OK)
        err = mfctl__npy_open(&e->teacher, ctx, p[3], "<f4");
    if (err < 0)
        return err;
    (void)snprintf(part, sizeof(part), "%s.part", e->jsonl_path);
    e->jsonl = fopen(part, "w");
    if (!e->jsonl)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", part, strerror(errno));
    return MF_OK;
}

static void abort_all(struct export *e)
{
    char part[PATH_MAX_LEN + 8];

    mfctl__npy_abort(&e->inputs);
    mfctl__npy_abort(&e->offsets);
    mfctl__npy_abort(&e->student);
    mfctl__npy_abort(&e->teacher);
    mfctl__tar_abort(&e->tar);
    if (e->jsonl) {
        (void)fclose(e->jsonl);
        e->jsonl = NULL;
        (void)snprintf(part, sizeof(part), "%s.part", e->jsonl_path);
        (void)remove(part);
    }
}

/* Headers with the final shapes; samples.jsonl last, so its presence means "complete". */
static int finish_all(struct export *e)
{
    struct mf_ctx *ctx = &e->c->ctx;
    uint64_t rect[2] = {e->rows, e->rows ? e->input_len : 0}, flat[1] = {e->input_bytes};
    uint64_t offs[1] = {e->rows + 1}, outs[2] = {e->rows, e->classes};
    char part[PATH_MAX_LEN + 8];
    int err = MF_OK;

    if (e->webdataset)
        return mfctl__tar_finish(&e->tar, ctx);
    if (e->ragged) {
        err = mfctl__npy_put_i64(&e->offsets, ctx, (int64_t)e->input_bytes);
        if (err == MF_OK)
            err = mfctl__npy_finish(&e->offsets, ctx, 1, offs);
        if (err == MF_OK)
            err = mfctl__npy_finish(&e->inputs, ctx, 1, flat);
    } else {
        mfctl__npy_abort(&e->offsets);
        (void)remove(e->offsets.path); /* a stale one from an earlier export would mislead */
        err = mfctl__npy_finish(&e->inputs, ctx, 2, rect);
    }
    if (err == MF_OK)
        err = mfctl__npy_finish(&e->student, ctx, 2, outs);
    if (err == MF_OK)
        err = mfctl__npy_finish(&e->teacher, ctx, 2, outs);
    if (err < 0)
        return err;
    (void)snprintf(part, sizeof(part), "%s.part", e->jsonl_path);
    err = fclose(e->jsonl) == 0 ? MF_OK : MF_E_IO;
    e->jsonl = NULL;
    if (err < 0 || rename(part, e->jsonl_path) != 0)
        return mf_fail(ctx, MF_E_IO, "cannot complete %s: %s", e->jsonl_path, strerror(errno));
    return MF_OK;
}

static int export_pages(struct export *e, const struct export_opts *o)
{
    struct mf_http_response resp;
    uint64_t after = 0, next = 0;
    int err;

    mf_http__response_init(&resp, &e->c->http);
    do {
        mf_dynbuf__reset(&resp.body);
        err = get_page(e, &resp, o, after);
        if (err == MF_OK)
            err = put_page(e, &next, (const char *)resp.body.data, resp.body.len);
        /* The cursor is a sequence number that only grows; anything else would loop. */
        if (err == MF_OK && next != 0 && next <= after)
            err = mf_fail(&e->c->ctx, MF_E_INVALID, "server cursor went from %llu to %llu",
                          (unsigned long long)after, (unsigned long long)next);
        after = next;
    } while (err == MF_OK && next != 0);
    mf_http__response_free(&resp);
    return err;
}

static int cmd_export(struct mfctl *c, int argc, char **argv)
{
    struct export_opts o;
    struct export e;
    int rc = parse_export(&o, c, argc, argv), err;

    if (rc >= 0)
        return rc;
    if (mfctl__connect(c) != 0)
        return 1;
    memset(&e, 0, sizeof(e));
    e.c = c;
    e.webdataset = o.webdataset;
    e.raw = mf_alloc(&c->ctx.alloc, SAMPLE_INPUT_MAX);
    err = e.raw ? open_all(&e, o.outdir) : mf_fail(&c->ctx, MF_E_NOMEM, "out of memory");
    if (err == MF_OK)
        err = export_pages(&e, &o);
    if (err == MF_OK)
        err = finish_all(&e);
    abort_all(&e);
    mf_free(&c->ctx.alloc, e.raw);
    if (err < 0)
        return mfctl__report(c, err);
    (void)fprintf(c->out, "exported %llu samples of %s to %s%s (%s inputs, %zu classes)\n",
                  (unsigned long long)e.rows, o.model, o.outdir, e.webdataset ? "/samples.tar" : "",
                  e.ragged ? "variable-length" : "fixed-length", e.classes);
    return 0;
}

static int cmd_delete(struct mfctl *c, int argc, char **argv)
{
    struct mf_http_response resp;
    const char *device = NULL;
    char path[160];
    cJSON *doc;
    int err;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(MFCTL_SAMPLES_USAGE, c->out);
            return 0;
        }
        if (strcmp(argv[i], "--device") != 0 || i + 1 >= argc || device)
            return usage_error(c, "unexpected argument", argv[i]);
        device = argv[++i];
    }
    if (!device || !mfctl__name_ok(device))
        return usage_error(c, "--device ID ([A-Za-z0-9._-]{1,64}) is required", NULL);
    if (mfctl__connect(c) != 0)
        return 1;
    (void)snprintf(path, sizeof(path), "/v1/admin/devices/%s/samples", device);
    mf_http__response_init(&resp, &c->http);
    err = mfctl__request(c, &resp, "DELETE", path, NULL, 0);
    if (err == MF_OK) {
        doc = mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL);
        if (!doc)
            err = MF_E_INVALID; /* the message is mfctl__parse()'s */
        else if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "deleted")))
            (void)fprintf(c->out, "deleted %.0f samples of device %s\n",
                          cJSON_GetObjectItemCaseSensitive(doc, "deleted")->valuedouble, device);
        else
            err = mf_fail(&c->ctx, MF_E_INVALID, "server answer has no \"deleted\" count");
        cJSON_Delete(doc);
    }
    mf_http__response_free(&resp);
    return err < 0 ? mfctl__report(c, err) : 0;
}

int mfctl__cmd_samples(struct mfctl *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "export") == 0)
        return cmd_export(c, argc, argv);
    if (argc >= 2 && strcmp(argv[1], "delete") == 0)
        return cmd_delete(c, argc, argv);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        (void)fputs(MFCTL_SAMPLES_USAGE, c->out);
        return 0;
    }
    return usage_error(c, "expected export or delete", NULL);
}
