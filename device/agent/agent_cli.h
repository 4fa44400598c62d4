/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to mf-agent: the command line, shared by its files.
 *   mf_agent_main.c   argument parsing, the command table, building the agent
 *   agent_daemon.c    `run`: the step loop, SIGTERM/SIGINT/SIGUSR1, pid file, progress output
 *   agent_commands.c  status, check-now, pin, unpin, rollback, confirm
 *   agent_record.c    runtime reports (telemetry.state) and `record`
 *   agent_lock.c      the state dir lock (flock on <state>/agent.lock) and the pid file
 *
 * Concurrency: one process at a time changes the state dir. The daemon holds the lock
 * while it steps (enroll, check in, download, install) and releases it while it sleeps;
 * a command takes the same lock (waiting up to --wait seconds), changes the state files
 * through libmf, and the daemon re-reads them (mf_agent_reload) before its next step.
 * `status` reads without the lock: every state file is replaced atomically.
 */
#ifndef MF_AGENT_CLI_H
#define MF_AGENT_CLI_H

#include "agent_config.h"
#include "mf/agent.h"
#include "mf/sys/platform_posix.h"

struct cli {
    const char *config;
    const char *command;
    const char *arg1, *arg2; /* MODEL, VERSION / REASON */
    int once;
    long max_cycles; /* 0: unbounded */
    long wait_s;     /* how long a command waits for the daemon's lock */
};

/* What `run` and the commands work on. */
struct agent_cli {
    struct cli cli;
    struct mf_agent_config cfg;
    mf_platform_posix posix;
    mf_agent *agent;
    mf_telemetry *tele; /* NULL with "report_telemetry": false */
    int log_level;
};

/* Creates cli->agent from the config; `control` for commands (not an app start). */
int agent_cli_open(struct agent_cli *c, int control);

int agent_daemon_run(struct agent_cli *c);
/* Points the options' progress callback at the daemon's bar / log lines. */
void agent_daemon_progress(mf_agent_options *o);
int agent_cmd_status(struct agent_cli *c);
int agent_cmd_check_now(struct agent_cli *c);
int agent_cmd_pin(struct agent_cli *c);
int agent_cmd_unpin(struct agent_cli *c);
int agent_cmd_rollback(struct agent_cli *c);
int agent_cmd_confirm(struct agent_cli *c);
int agent_cmd_record(struct agent_cli *c);

/* agent_record.c: the telemetry handle over the state dir's port (none when reports are
 * off), its load before and save after each step or command (warnings on stderr, never a
 * failed step), and a health result of a version. */
int agent_tele_open(struct agent_cli *c, const mf_platform_ops *ops);
void agent_tele_load(struct agent_cli *c);
void agent_tele_save(struct agent_cli *c);
void agent_tele_health(struct agent_cli *c, const char *model, const char *version, int ok);

/* agent_lock.c: -1 with a message on stderr when the lock is not had in `wait_s`. */
int agent_lock_take(const char *state_dir, long wait_s);
void agent_lock_drop(int fd);
int agent_pid_write(const char *state_dir);
void agent_pid_remove(const char *state_dir);
/* The running daemon's pid, or 0 when none runs. */
long agent_pid_read(const char *state_dir);

#endif /* MF_AGENT_CLI_H */
