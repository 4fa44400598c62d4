/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent: the Linux daemon/CLI on libmf.
 *   mf-agent --config FILE run [--once] [--max-cycles N]
 *   mf-agent --config FILE status
 * `run` calls mf_agent_step() every poll interval (the server's, else the config's) until
 * SIGTERM/SIGINT, which are honoured between steps. `--once` runs one step and exits 0
 * only when every tracked model runs its assignment. Logs go to stderr.
 */
#include "agent_config.h"
#include "mf/agent.h"
#include "mf/ct.h"
#include "mf/sys/platform_posix.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A root envelope is capped at 32 KiB by the device library (docs/formats/manifest.md). */
#define MF_AGENT_ROOT_MAX (32 * 1024 + 1)

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int usage(FILE *out)
{
    (void)fprintf(out, "usage: mf-agent --config FILE run [--once] [--max-cycles N]\n"
                       "       mf-agent --config FILE status\n"
                       "       mf-agent --help\n");
    return out == stdout ? 0 : 2;
}

struct cli {
    const char *config;
    const char *command;
    int once;
    long max_cycles; /* 0: unbounded */
};

static int parse_cli(struct cli *cli, int argc, char **argv)
{
    memset(cli, 0, sizeof(*cli));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli->command = "help";
            return 0;
        } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
            cli->config = argv[++i];
        } else if (strcmp(a, "--once") == 0) {
            cli->once = 1;
        } else if (strcmp(a, "--max-cycles") == 0 && i + 1 < argc) {
            char *end = NULL;

            errno = 0;
            cli->max_cycles = strtol(argv[++i], &end, 10);
            if (errno || !end || *end || cli->max_cycles < 1) {
                (void)fprintf(stderr, "mf-agent: --max-cycles: \"%s\" is not a positive number\n",
                              argv[i]);
                return -1;
            }
        } else if (!cli->command && (strcmp(a, "run") == 0 || strcmp(a, "status") == 0)) {
            cli->command = a;
        } else {
            (void)fprintf(stderr, "mf-agent: unexpected argument \"%s\"\n", a);
            return -1;
        }
    }
    if (!cli->config || !cli->command) {
        (void)fprintf(stderr, "mf-agent: --config FILE and a command are required\n");
        return -1;
    }
    return 0;
}

static void on_ready(void *payload, const char *model, const char *version, const char *path)
{
    if (*(const int *)payload >= MF_LOG_INFO)
        (void)fprintf(stderr, "info  mf-agent: model %s %s ready at %s\n", model, version, path);
}

static void sleep_s(long seconds)
{
    /* One-second naps so a signal between steps is noticed promptly. */
    for (long i = 0; i < seconds && !stop_requested; i++) {
        struct timespec ts = {1, 0};

        (void)nanosleep(&ts, NULL);
    }
}

static int all_up_to_date(const mf_agent *agent, const struct mf_agent_config *cfg)
{
    for (size_t i = 0; i < cfg->n_models; i++) {
        mf_agent_model_status st;

        if (mf_agent_status(&st, agent, cfg->models[i]) < 0 || !st.up_to_date)
            return 0;
    }
    return 1;
}

static int run(mf_agent *agent, const struct mf_agent_config *cfg, const struct cli *cli)
{
    struct sigaction sa;
    long cycles = 0;
    int err = MF_OK;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGINT, &sa, NULL);
    while (!stop_requested) {
        long interval;

        err = mf_agent_step(agent);
        cycles++;
        if (err < 0)
            (void)fprintf(stderr, "error mf-agent: step failed (%s): %s\n", mf_strerror(err),
                          mf_agent_errmsg(agent));
        if (cli->once)
            return err == MF_OK && all_up_to_date(agent, cfg) ? 0 : 1;
        if (cli->max_cycles && cycles >= cli->max_cycles)
            break;
        interval = mf_agent_poll_interval_s(agent);
        sleep_s(interval > 0 ? interval : cfg->poll_interval_s);
    }
    if (stop_requested)
        (void)fprintf(stderr, "info  mf-agent: stopping after %ld cycle(s)\n", cycles);
    return err == MF_OK ? 0 : 1;
}

static int status(const mf_agent *agent, const struct mf_agent_config *cfg)
{
    mf_agent_trust_state ts;

    for (size_t i = 0; i < cfg->n_models; i++) {
        mf_agent_model_status st;

        if (mf_agent_status(&st, agent, cfg->models[i]) < 0)
            continue;
        if (st.installed)
            printf("%-24s %-16s slot %c  %12llu bytes  sha256 %s  floor %llu\n", cfg->models[i],
                   st.version, st.slot, (unsigned long long)st.size, st.sha256,
                   (unsigned long long)st.security_floor);
        else
            printf("%-24s (nothing installed)\n", cfg->models[i]);
    }
    mf_agent_trust_status(&ts, agent);
    printf("trust: root v%llu, keys v%llu, director sequence %llu\n",
           (unsigned long long)ts.root_version, (unsigned long long)ts.keys_version,
           (unsigned long long)ts.assignment_sequence);
    return 0;
}

/* Builds the agent from the config; the token file is read only when present. */
static int open_agent(mf_agent **out, mf_platform_posix *posix, const struct mf_agent_config *cfg,
                      int *log_level)
{
    mf_platform_ops ops;
    mf_agent_options o;
    struct mf_ctx ctx;
    char token[256] = "";
    size_t root_len = 0;
    char *root = NULL;
    int err;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "mf-agent");
    root = mf_alloc(NULL, MF_AGENT_ROOT_MAX);
    if (!root)
        return MF_E_NOMEM;
    err =
        mf_agent_config__read_file(root, MF_AGENT_ROOT_MAX, &root_len, &ctx, cfg->trust_root_file);
    if (err < 0) {
        (void)fprintf(stderr, "error mf-agent: trust_root_file: %s\n", mf_ctx__errmsg(&ctx));
        mf_free(NULL, root);
        return err;
    }
    if (cfg->enrollment_token_file &&
        mf_agent_config__read_secret(token, sizeof(token), &ctx, cfg->enrollment_token_file) < 0)
        (void)fprintf(stderr, "warn  mf-agent: %s (enrollment will fail if needed)\n",
                      mf_ctx__errmsg(&ctx));
    err = mf_platform_posix_init(&ops, posix, cfg->state_dir);
    if (err < 0) {
        (void)fprintf(stderr, "error mf-agent: cannot open state_dir %s\n", cfg->state_dir);
        mf_secure_zero(token, sizeof(token));
        mf_free(NULL, root);
        return err;
    }
    err = mf_agent_options_init(&o, MF_AGENT_OPTIONS_VERSION);
    o.trust_root = root;
    o.trust_root_len = root_len;
    o.server_url = cfg->server_url;
    o.device_id = cfg->device_id;
    o.enrollment_token = token[0] ? token : NULL;
    o.state_dir = cfg->state_dir;
    o.models = (const char *const *)cfg->models;
    o.n_models = cfg->n_models;
    o.platform = &ops;
    o.ca_file = cfg->ca_file;
    o.log_fn = mf_log_stderr;
    o.log_payload = log_level;
    o.ready_fn = on_ready;
    o.ready_payload = log_level;
    if (err >= 0)
        err = mf_agent_new(out, &o); /* copies the token; bootstraps from the root */
    mf_secure_zero(token, sizeof(token));
    mf_free(NULL, root);
    return err;
}

int main(int argc, char **argv)
{
    struct mf_agent_config cfg;
    mf_platform_posix posix = {-1};
    mf_agent *agent = NULL;
    struct mf_ctx ctx;
    struct cli cli;
    int rc;

    if (parse_cli(&cli, argc, argv) < 0)
        return usage(stderr);
    if (strcmp(cli.command, "help") == 0)
        return usage(stdout);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "mf-agent");
    if (mf_agent_config__load(&cfg, &ctx, cli.config) < 0) {
        (void)fprintf(stderr, "mf-agent: %s\n", mf_ctx__errmsg(&ctx));
        return 2;
    }
    if (open_agent(&agent, &posix, &cfg, &cfg.log_level) < 0) {
        rc = 1; /* the reason was logged through the log callback */
    } else if (strcmp(cli.command, "status") == 0) {
        rc = status(agent, &cfg);
    } else {
        rc = run(agent, &cfg, &cli);
    }
    mf_agent_free(agent);
    mf_platform_posix_close(&posix);
    mf_agent_config__free(&cfg, &ctx);
    return rc;
}
