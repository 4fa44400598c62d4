/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The smallest complete app on an installed libmf (docs/agent.md, "Embedding libmf"): public
 * headers only, linked with `pkg-config --libs modelferry` or find_package(modelferry).
 * It shows the whole device loop once:
 *   1. enroll with the fleet token and check in (mf_agent_step), which installs the model the
 *      server released, verified against the provisioned trust root;
 *   2. probe the new file and confirm it (health_fn answers "later", mf_agent_confirm());
 *   3. time an inference and record its latency in the runtime report (mf/telemetry.h);
 *   4. score the model's output and offload it (mf/offload.h) through the offload handle the
 *      agent owns (offload_options, mf_agent_offload()): the agent hands it the credential,
 *      its check-ins bring the server's offload policy and send the report.
 * Usage: mf-embed SERVER_URL ENROLL_TOKEN_FILE TRUST_ROOT_FILE STATE_DIR DEVICE_ID MODEL
 * It prints one line per stage and exits 0 when the model is installed and confirmed.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <mf.h>
#include <mf/sys/platform_posix.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A root envelope is a few hundred bytes; a credential or token a few dozen characters. */
#define EMBED_FILE_MAX 16384
#define EMBED_PATH_MAX 1024

struct app {
    const char *state_dir;
    const char *device_id;
    const char *model;
    char model_path[EMBED_PATH_MAX]; /* the new version's file, set by on_new_model */
    char version[MF_AGENT_NAME_MAX + 1];
};

static void print_log(void *payload, int level, const char *module, const char *msg)
{
    (void)payload;
    if (level <= MF_LOG_WARN)
        (void)fprintf(stderr, "mf-embed: %s: %s\n", module, msg);
}

/* Reads a whole small file into `buf` (NUL-terminated); its length, or -1. */
static long read_file(char *buf, size_t cap, const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f)
        return -1;
    n = fread(buf, 1, cap - 1, f);
    (void)fclose(f);
    buf[n] = '\0';
    return n == cap - 1 ? -1 : (long)n; /* a full buffer may be a truncated file */
}

/* Reads a one-line secret (a token or credential) without its line end. */
static int read_line(char *buf, size_t cap, const char *path)
{
    if (read_file(buf, cap, path) < 0)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? 0 : -1;
}

/* health_fn: remember the file; main() probes it and confirms, as an app whose runtime loads
 * the model outside the agent's step would. */
static int on_new_model(void *payload, const char *model, const char *version, const char *path)
{
    struct app *app = payload;

    (void)model;
    (void)snprintf(app->model_path, sizeof(app->model_path), "%s", path);
    (void)snprintf(app->version, sizeof(app->version), "%s", version);
    return MF_AGENT_CONFIRM_LATER;
}

static uint64_t now_us(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* The stand-in for inference: three "logits" from the model file's bytes. 0, or -1 when the
 * file cannot be read (the probe fails, the version is rolled back). */
static int infer(float logits[3], const char *path)
{
    unsigned char chunk[256];
    unsigned long sum[3] = {0, 0, 0};
    FILE *f = fopen(path, "rb");
    size_t n, total = 0;

    if (!f)
        return -1;
    do {
        n = fread(chunk, 1, sizeof(chunk), f);
        for (size_t i = 0; i < n; i++)
            sum[(total + i) % 3] += chunk[i];
        total += n;
    } while (n > 0);
    (void)fclose(f);
    for (int k = 0; k < 3; k++)
        logits[k] = total ? (float)sum[k] / (float)total * 0.01f : 0.0f;
    return total ? 0 : -1;
}

static int open_agent(mf_agent **out, struct app *app, const mf_platform_ops *ops, const char *url,
                      const char *token, const char *root, size_t root_len, mf_telemetry *tele)
{
    static char errbuf[MF_AGENT_ERRBUF_SIZE];
    mf_agent_options o;
    mf_offload_options oo;
    const mf_offload_options *per_model[1] = {&oo}; /* same order as o.models */
    int err = mf_agent_options_init(&o, MF_AGENT_OPTIONS_VERSION);

    if (err == MF_OK)
        err = mf_offload_options_init(&oo, MF_OFFLOAD_OPTIONS_VERSION);
    if (err < 0)
        return err;
    oo.log_fn = print_log; /* the agent fills model, version, server and credential */
    o.server_url = url;
    o.device_id = app->device_id;
    o.enrollment_token = token;
    o.state_dir = app->state_dir;
    o.models = &app->model;
    o.n_models = 1;
    o.platform = ops;
    o.trust_root = root;
    o.trust_root_len = root_len;
    o.log_fn = print_log;
    o.health_fn = on_new_model;
    o.health_payload = app;
    o.offload_options = per_model; /* the agent owns the handle and lends it out */
    o.telemetry = tele;
    o.errbuf = errbuf;
    o.errbuf_size = sizeof(errbuf);
    err = mf_agent_new(out, &o);
    if (err < 0)
        (void)fprintf(stderr, "mf-embed: agent: %s\n", errbuf);
    return err;
}

static int run(struct app *app, const char *url, const char *token, const char *root,
               size_t root_len)
{
    mf_platform_posix posix;
    mf_platform_ops ops;
    mf_agent *agent = NULL;
    mf_offload *offload = NULL;
    mf_telemetry *tele = NULL;
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    mf_offload_answer a;
    mf_offload_sample s;
    float logits[3], score;
    const char input[] = "sensor frame 0001";
    uint64_t t0;
    int err = mf_platform_posix_init(&ops, &posix, app->state_dir);

    if (err < 0) {
        (void)fprintf(stderr, "mf-embed: state dir %s: %s\n", app->state_dir, mf_strerror(err));
        return 1;
    }
    err = mf_telemetry_new(&tele, NULL, &ops, "telemetry.state");
    /* 1. enroll, check in, install */
    if (err == MF_OK)
        err = open_agent(&agent, app, &ops, url, token, root, root_len, tele);
    if (err == MF_OK && mf_agent_step(agent) < 0)
        (void)fprintf(stderr, "mf-embed: step: %s\n", mf_agent_errmsg(agent));
    if (err == MF_OK && !app->model_path[0]) {
        (void)fprintf(stderr, "mf-embed: no new version of %s was installed\n", app->model);
        err = MF_E_NOTFOUND;
    }
    if (err == MF_OK)
        (void)printf("mf-embed: installed %s %s\n", app->model, app->version);
    /* 2 + 3. probe the file with one timed inference, confirm, record the latency */
    if (err == MF_OK) {
        t0 = now_us();
        if (infer(logits, app->model_path) < 0) {
            err = mf_agent_rollback(agent, app->model, "probe inference failed");
            (void)fprintf(stderr, "mf-embed: %s %s does not load: rolled back\n", app->model,
                          app->version);
            err = err < 0 ? err : MF_E_INVALID;
        } else {
            err = mf_agent_confirm(agent, app->model);
        }
        if (err == MF_OK)
            err = mf_telemetry_record_latency(tele, app->model, app->version, now_us() - t0);
    }
    if (err == MF_OK)
        err = mf_agent_status(&st, agent, app->model);
    if (err == MF_OK)
        (void)printf("mf-embed: confirmed %s %s (pending %d)\n", app->model, st.version,
                     st.pending);
    /* 4. the agent's offload handle (borrowed): the first check-in already brought its
     * policy; this one also sends the runtime report */
    if (err == MF_OK)
        err = mf_agent_offload(&offload, agent, app->model);
    if (err == MF_OK && mf_agent_step(agent) < 0)
        (void)fprintf(stderr, "mf-embed: step: %s\n", mf_agent_errmsg(agent));
    if (err == MF_OK)
        err = mf_offload_score(&score, MF_OFFLOAD_MAX_SOFTMAX, MF_OFFLOAD_LOGITS, logits, 3, 1.0f);
    if (err == MF_OK) {
        s.input = input;
        s.input_len = sizeof(input) - 1;
        s.output = logits;
        s.n_classes = 3;
        s.output_kind = MF_OFFLOAD_LOGITS;
        err = mf_offload_ask(&a, NULL, offload, &s);
    }
    if (err == MF_OK) {
        (void)printf("mf-embed: offload score %.3f reason %s by_teacher %d label %d queued %d\n",
                     (double)score, mf_offload_reason_name(a.reason), a.by_teacher, a.label,
                     a.queued);
        if (mf_offload_drain(offload, 4) < 0)
            (void)fprintf(stderr, "mf-embed: uplink: %s\n", mf_offload_errmsg(offload));
        if (mf_agent_step(agent) < 0) /* the offload counters reach the server */
            (void)fprintf(stderr, "mf-embed: step: %s\n", mf_agent_errmsg(agent));
        err = mf_telemetry_save(tele);
    }
    if (err < 0)
        (void)fprintf(stderr, "mf-embed: failed: %s\n", mf_strerror(err));
    mf_agent_free(agent); /* frees the offload handle it lent out too */
    mf_telemetry_free(tele);
    mf_platform_posix_close(&posix);
    return err < 0 ? 1 : 0;
}

#define EMBED_USAGE                                                                                \
    "NAME\n"                                                                                       \
    "    mf-embed - the smallest app on libmf %s: enroll, install, confirm, report, offload\n"     \
    "SYNOPSIS\n"                                                                                   \
    "    mf-embed SERVER_URL ENROLL_TOKEN_FILE TRUST_ROOT_FILE STATE_DIR DEVICE_ID MODEL\n"        \
    "    mf-embed --help | --version\n"                                                            \
    "It prints one line per stage and exits 0 when the model is installed and confirmed.\n"

int main(int argc, char **argv)
{
    static char token[EMBED_FILE_MAX], root[EMBED_FILE_MAX];
    struct app app;
    long root_len;

    /* Every modelferry program answers --help and --version (docs/operations.md). */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "--version") == 0) {
            (void)printf(argv[i][2] == 'h' ? EMBED_USAGE : "mf-embed %s\n", mf_version_string());
            return 0;
        }
        if (strncmp(argv[i], "--", 2) == 0) {
            (void)fprintf(stderr, "mf-embed: unknown option \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (argc != 7) {
        (void)fprintf(stderr, EMBED_USAGE, mf_version_string());
        return 2;
    }
    if (read_line(token, sizeof(token), argv[2]) < 0) {
        (void)fprintf(stderr, "mf-embed: cannot read an enrollment token from %s\n", argv[2]);
        return 2;
    }
    root_len = read_file(root, sizeof(root), argv[3]);
    if (root_len <= 0) {
        (void)fprintf(stderr, "mf-embed: cannot read a trust root from %s\n", argv[3]);
        return 2;
    }
    memset(&app, 0, sizeof(app));
    app.state_dir = argv[4];
    app.device_id = argv[5];
    app.model = argv[6];
    return run(&app, argv[1], token, root, (size_t)root_len);
}
