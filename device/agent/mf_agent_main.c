/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent: the Linux daemon/CLI on libmf (docs/agent.md).
 *   mf-agent --config FILE run [--once] [--max-cycles N]
 *   mf-agent --config FILE status
 *   mf-agent --config FILE check-now
 *   mf-agent --config FILE pin MODEL [VERSION]      (default: the installed version)
 *   mf-agent --config FILE unpin MODEL
 *   mf-agent --config FILE rollback MODEL [REASON]
 *   mf-agent --config FILE confirm MODEL
 *   mf-agent --config FILE record MODEL latency_us=US[,US...]|memory=BYTES|health=ok|failed
 * Commands come from a static table; each lives in agent_daemon.c or agent_commands.c.
 * Exit codes: 0 success, 1 failure (reason on stderr), 2 usage error.
 */
#include "agent_cli.h"
#include "mf/ct.h"
#include "mf_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A root envelope is capped at 32 KiB by the device library (docs/formats/manifest.md). */
#define MF_AGENT_ROOT_MAX (32 * 1024 + 1)

struct command {
    const char *name;
    int (*fn)(struct agent_cli *c);
    int min_args, max_args; /* positional arguments after the command */
    int control;            /* opens a control handle (not an app start) */
};

static const struct command commands[] = {
    {"run", agent_daemon_run, 0, 0, 0},          {"status", agent_cmd_status, 0, 0, 1},
    {"check-now", agent_cmd_check_now, 0, 0, 1}, {"pin", agent_cmd_pin, 1, 2, 1},
    {"unpin", agent_cmd_unpin, 1, 1, 1},         {"rollback", agent_cmd_rollback, 1, 2, 1},
    {"confirm", agent_cmd_confirm, 1, 1, 1},     {"record", agent_cmd_record, 2, 2, 1},
};

static const char usage_text[] =
    "NAME\n"
    "    mf-agent - the modelferry device agent (Linux daemon and control CLI on libmf)\n"
    "SYNOPSIS\n"
    "    mf-agent --config FILE run [--once] [--max-cycles N]\n"
    "    mf-agent --config FILE status\n"
    "    mf-agent --config FILE check-now\n"
    "    mf-agent --config FILE pin MODEL [VERSION]\n"
    "    mf-agent --config FILE unpin MODEL\n"
    "    mf-agent --config FILE rollback MODEL [REASON]\n"
    "    mf-agent --config FILE confirm MODEL\n"
    "    mf-agent --config FILE record MODEL latency_us=US[,US...]\n"
    "    mf-agent --config FILE record MODEL memory=BYTES|health=ok|failed\n"
    "    mf-agent --help | --version\n"
    "DESCRIPTION\n"
    "    run checks in, downloads, verifies and installs the assigned model versions, and\n"
    "    reports them, every poll interval (--once: one cycle). The other commands talk to\n"
    "    the running daemon: status prints each model's state, check-now wakes it, pin holds\n"
    "    a version (default: the installed one), rollback returns to the previous version,\n"
    "    confirm declares a new version healthy (\"confirm\": \"manual\"), record adds the\n"
    "    app's own runtime figures to the next report. docs/agent.md has the config file's keys.\n"
    "OPTIONS\n"
    "    --config FILE     the agent's JSON config (required)\n"
    "    --once            run: one cycle, then exit\n"
    "    --max-cycles N    run: at most N cycles\n"
    "    --wait SECONDS    how long a command waits for a busy daemon (default 60)\n"
    "EXIT STATUS\n"
    "    0 success; 1 failure (reason on stderr); 2 bad usage.\n";

static int usage_error(void)
{
    (void)fputs("Run `mf-agent --help` for the commands and options.\n", stderr);
    return 2;
}

static int parse_long(long *out, const char *opt, const char *s)
{
    char *end = NULL;

    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno || !end || *end || *out < 1) {
        (void)fprintf(stderr, "mf-agent: %s: \"%s\" is not a positive number\n", opt, s);
        return -1;
    }
    return 0;
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    }
    return NULL;
}

static int parse_cli(struct cli *cli, const struct command **cmd_out, int argc, char **argv)
{
    int nargs = 0;

    memset(cli, 0, sizeof(*cli));
    cli->wait_s = 60;
    *cmd_out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--config") == 0 && i + 1 < argc) {
            cli->config = argv[++i];
        } else if (strcmp(a, "--once") == 0) {
            cli->once = 1;
        } else if (strcmp(a, "--max-cycles") == 0 && i + 1 < argc) {
            if (parse_long(&cli->max_cycles, a, argv[++i]) < 0)
                return -1;
        } else if (strcmp(a, "--wait") == 0 && i + 1 < argc) {
            if (parse_long(&cli->wait_s, a, argv[++i]) < 0)
                return -1;
        } else if (!*cmd_out && find_command(a)) {
            *cmd_out = find_command(a);
            cli->command = a;
        } else if (*cmd_out && nargs < (*cmd_out)->max_args && a[0] != '-') {
            if (nargs++ == 0)
                cli->arg1 = a;
            else
                cli->arg2 = a;
        } else if (a[0] == '-') {
            (void)fprintf(stderr, "mf-agent: unknown option \"%s\"\n", a);
            return -1;
        } else {
            (void)fprintf(stderr, "mf-agent: unexpected argument \"%s\"\n", a);
            return -1;
        }
    }
    if (!cli->config || !*cmd_out) {
        (void)fprintf(stderr, "mf-agent: --config FILE and a command are required\n");
        return -1;
    }
    if (nargs < (*cmd_out)->min_args) {
        (void)fprintf(stderr, "mf-agent: %s needs a MODEL%s\n", cli->command,
                      (*cmd_out)->min_args > 1 ? " and a measurement" : "");
        return -1;
    }
    return 0;
}

/* The app side of mf-agent: with "confirm": "manual" a new version waits for `confirm`
 * (which reports the passed health check); "auto" confirms it and reports that now. */
static int on_health(void *payload, const char *model, const char *version, const char *path)
{
    struct agent_cli *c = payload;

    if (c->log_level >= MF_LOG_INFO)
        (void)fprintf(stderr, "info  mf-agent: model %s %s ready at %s%s\n", model, version, path,
                      c->cfg.confirm_manual ? " (run `mf-agent confirm` once it is healthy)" : "");
    if (c->cfg.confirm_manual)
        return MF_AGENT_CONFIRM_LATER;
    agent_tele_health(c, model, version, 1);
    return MF_AGENT_HEALTHY;
}

/* Options from the config; on the heap (the struct is large for the stack ceiling). */
static int fill_options(mf_agent_options *o, struct agent_cli *c, const mf_platform_ops *ops,
                        const char *root, size_t root_len, const char *token, int control)
{
    int err = mf_agent_options_init(o, MF_AGENT_OPTIONS_VERSION);

    o->trust_root = root;
    o->trust_root_len = root_len;
    o->server_url = c->cfg.server_url;
    o->device_id = c->cfg.device_id;
    o->enrollment_token = token[0] ? token : NULL;
    o->state_dir = c->cfg.state_dir;
    o->models = (const char *const *)c->cfg.models;
    o->n_models = c->cfg.n_models;
    o->platform = ops;
    o->ca_file = c->cfg.ca_file;
    o->log_fn = mf_log_stderr;
    o->log_payload = &c->log_level;
    o->health_fn = on_health;
    o->health_payload = c;
    o->max_unconfirmed_starts = (unsigned int)c->cfg.max_unconfirmed_starts;
    o->metered = c->cfg.metered;
    o->max_recv_bytes_per_s = c->cfg.max_recv_bytes_per_s;
    o->stall_timeout_s = c->cfg.stall_timeout_s;
    /* The config's interval over the server's default; a group's setting wins over both. */
    o->poll_interval_s = c->cfg.poll_interval_s;
    /* A Linux host has the memory: fewer system calls per download (docs/agent.md). */
    o->download_buffer = 256u * 1024u;
    o->control_only = control;
    o->telemetry = control ? NULL : c->tele; /* commands change the file, not a step */
    agent_daemon_progress(o);
    return err;
}

int agent_cli_open(struct agent_cli *c, int control)
{
    mf_platform_ops ops;
    struct mf_ctx ctx;
    char token[256] = "";
    size_t root_len = 0;
    char *root = mf_alloc(NULL, MF_AGENT_ROOT_MAX);
    mf_agent_options *o = mf_alloc(NULL, sizeof(*o));
    int err = root && o ? MF_OK : MF_E_NOMEM;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "mf-agent");
    if (err >= 0)
        err = mf_agent_config__read_file(root, MF_AGENT_ROOT_MAX, &root_len, &ctx,
                                         c->cfg.trust_root_file);
    if (err < 0)
        (void)fprintf(stderr, "error mf-agent: trust_root_file: %s\n", mf_ctx__errmsg(&ctx));
    if (err >= 0 && c->cfg.enrollment_token_file &&
        mf_agent_config__read_secret(token, sizeof(token), &ctx, c->cfg.enrollment_token_file) < 0)
        (void)fprintf(stderr, "warn  mf-agent: %s (enrollment will fail if needed)\n",
                      mf_ctx__errmsg(&ctx));
    if (err >= 0) {
        err = mf_platform_posix_init(&ops, &c->posix, c->cfg.state_dir);
        if (err < 0)
            (void)fprintf(stderr, "error mf-agent: cannot open state_dir %s\n", c->cfg.state_dir);
    }
    if (err >= 0)
        err = agent_tele_open(c, &ops);
    if (err >= 0)
        err = fill_options(o, c, &ops, root, root_len, token, control);
    if (err >= 0)
        err = mf_agent_new(&c->agent, o); /* copies the token; bootstraps from the root */
    mf_secure_zero(token, sizeof(token));
    mf_free(NULL, root);
    mf_free(NULL, o);
    return err;
}

int main(int argc, char **argv)
{
    struct agent_cli *c;
    const struct command *cmd = NULL;
    struct mf_ctx ctx;
    int rc;

    if (mf_cli__std_flags(argc, argv, "mf-agent", usage_text) == 0)
        return 0;
    c = mf_alloc(NULL, sizeof(*c));
    if (!c)
        return 1;
    memset(c, 0, sizeof(*c));
    c->posix.dirfd = -1;
    if (parse_cli(&c->cli, &cmd, argc, argv) < 0) {
        mf_free(NULL, c);
        return usage_error();
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "mf-agent");
    if (mf_agent_config__load(&c->cfg, &ctx, c->cli.config) < 0) {
        (void)fprintf(stderr, "mf-agent: %s\n", mf_ctx__errmsg(&ctx));
        mf_free(NULL, c);
        return 2;
    }
    c->log_level = c->cfg.log_level;
    if (agent_cli_open(c, cmd->control) < 0)
        rc = 1; /* the reason was logged through the log callback */
    else
        rc = cmd->fn(c);
    mf_agent_free(c->agent); /* before the telemetry handle it borrows */
    mf_telemetry_free(c->tele);
    mf_platform_posix_close(&c->posix);
    mf_agent_config__free(&c->cfg, &ctx);
    mf_free(NULL, c);
    return rc;
}
