/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent commands other than `run` (agent_cli.h): they open a control handle (not an app
 * start: pending versions do not count it), and all but `status` hold the state dir lock
 * while they change state files. `check-now` wakes a running daemon with SIGUSR1, or runs
 * one step itself when none runs.
 */
#include "agent_cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void print_model(const mf_agent *agent, const char *model)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

    if (mf_agent_status(&st, agent, model) < 0)
        return;
    if (st.installed)
        printf("%-24s %-16s slot %c  %12llu bytes  sha256 %s  floor %llu%s\n", model, st.version,
               st.slot, (unsigned long long)st.size, st.sha256,
               (unsigned long long)st.security_floor, st.pending ? "  PENDING" : "");
    else
        printf("%-24s (nothing installed)\n", model);
    if (st.previous_slot)
        printf("  previous: %s in slot %c\n", st.previous_version, st.previous_slot);
    if (st.pinned[0])
        printf("  pinned: %s\n", st.pinned);
    if (st.pending)
        printf("  pending: waiting for confirmation (%u start(s) so far)\n", st.unconfirmed_starts);
    if (st.rolled_back)
        printf("  rolled back: %zu version(s), last: %s\n", st.rolled_back, st.last_rollback);
    if (st.download_total)
        printf("  download: %s %llu of %llu bytes verified (%llu%%)\n", st.download_kind,
               (unsigned long long)st.download_done, (unsigned long long)st.download_total,
               (unsigned long long)(st.download_done * 100 / st.download_total));
}

int agent_cmd_status(struct agent_cli *c)
{
    mf_agent_trust_state ts = MF_AGENT_TRUST_STATE_INIT;

    for (size_t i = 0; i < c->cfg.n_models; i++)
        print_model(c->agent, c->cfg.models[i]);
    if (mf_agent_trust_status(&ts, c->agent) < 0) {
        (void)fprintf(stderr,
                      "error mf-agent: status: the library does not know trust state "
                      "version %u\n",
                      ts.struct_version);
        return 1;
    }
    printf("trust: root v%llu, keys v%llu, director sequence %llu\n",
           (unsigned long long)ts.root_version, (unsigned long long)ts.keys_version,
           (unsigned long long)ts.assignment_sequence);
    printf("daemon: %s\n", agent_pid_read(c->cfg.state_dir) ? "running" : "not running");
    return 0;
}

/* Runs `fn` on the model named by the first argument, under the lock. */
static int locked(struct agent_cli *c, int (*fn)(struct agent_cli *), const char *done)
{
    int fd = agent_lock_take(c->cfg.state_dir, c->cli.wait_s);
    int err;

    if (fd < 0)
        return 1;
    err = mf_agent_reload(c->agent);
    if (err >= 0)
        err = fn(c);
    agent_lock_drop(fd);
    if (err < 0) {
        (void)fprintf(stderr, "error mf-agent: %s: %s\n", c->cli.command,
                      mf_agent_errmsg(c->agent));
        return 1;
    }
    printf("%s: %s\n", c->cli.arg1, done);
    return 0;
}

static int do_pin(struct agent_cli *c)
{
    return mf_agent_pin(c->agent, c->cli.arg1, c->cli.arg2);
}

static int do_unpin(struct agent_cli *c)
{
    return mf_agent_unpin(c->agent, c->cli.arg1);
}

static int do_rollback(struct agent_cli *c)
{
    return mf_agent_rollback(c->agent, c->cli.arg1, c->cli.arg2);
}

/* The confirmation is the health check a manual daemon waited for: reported as passed. */
static int do_confirm(struct agent_cli *c)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    int err = mf_agent_status(&st, c->agent, c->cli.arg1);
    int was_pending = err == MF_OK && st.pending;

    if (err == MF_OK)
        err = mf_agent_confirm(c->agent, c->cli.arg1);
    if (err == MF_OK && was_pending && c->tele) {
        agent_tele_load(c);
        agent_tele_health(c, c->cli.arg1, st.version, 1);
        agent_tele_save(c);
    }
    return err;
}

int agent_cmd_pin(struct agent_cli *c)
{
    return locked(c, do_pin, "pinned");
}

int agent_cmd_unpin(struct agent_cli *c)
{
    return locked(c, do_unpin, "unpinned");
}

int agent_cmd_rollback(struct agent_cli *c)
{
    return locked(c, do_rollback, "rolled back to the previous version");
}

int agent_cmd_confirm(struct agent_cli *c)
{
    return locked(c, do_confirm, "confirmed");
}

int agent_cmd_check_now(struct agent_cli *c)
{
    long pid = agent_pid_read(c->cfg.state_dir);

    if (pid > 0) {
        if (kill((pid_t)pid, SIGUSR1) != 0) {
            (void)fprintf(stderr, "error mf-agent: cannot signal the daemon (pid %ld)\n", pid);
            return 1;
        }
        printf("daemon %ld woken for a check-in\n", pid);
        return 0;
    }
    c->cli.once = 1; /* no daemon: one step here */
    return agent_daemon_run(c);
}
