/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `mf-agent run`: step, sleep, repeat (agent_cli.h). Each step runs under the state dir
 * lock, after re-reading the state files (a command may have pinned or rolled back in
 * between). SIGTERM/SIGINT stop between steps, also in the middle of a sleep; SIGUSR1
 * (`mf-agent check-now`) ends the sleep at once. Download progress goes to stderr: a bar
 * redrawn in place on a terminal, a plain log line every 10 % otherwise.
 */
#include "agent_cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested, wake_requested;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        wake_requested = 1;
    else
        stop_requested = 1;
}

struct progress_out {
    int tty;
    int last_tenth; /* last 10 % step logged (plain mode) */
    int last_pct;   /* last percentage drawn (bar mode) */
};

static struct progress_out progress;

static void on_progress(void *payload, const char *model, const char *kind, uint64_t done,
                        uint64_t total)
{
    struct progress_out *p = payload;
    int pct = total ? (int)(done * 100 / total) : 100;

    if (p->tty) {
        char bar[31];
        int fill = pct * 30 / 100;

        if (pct == p->last_pct)
            return;
        p->last_pct = pct;
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '-', (size_t)(30 - fill));
        bar[30] = '\0';
        (void)fprintf(stderr, "\r%-16.16s %-5s [%s] %3d%% %8.1f/%.1f MiB%s", model, kind, bar, pct,
                      (double)done / 1048576.0, (double)total / 1048576.0,
                      done == total ? "\n" : "");
        return;
    }
    if (pct / 10 == p->last_tenth && done != total)
        return;
    p->last_tenth = pct / 10;
    (void)fprintf(stderr, "info  mf-agent: model %s: %s %d%% (%llu of %llu bytes)\n", model, kind,
                  pct, (unsigned long long)done, (unsigned long long)total);
    if (done == total)
        p->last_tenth = -1;
}

/* Sets up progress output for agent_cli_open(); called before the agent is created. */
void agent_daemon_progress(mf_agent_options *o)
{
    progress.tty = isatty(STDERR_FILENO);
    progress.last_tenth = -1;
    progress.last_pct = -1;
    o->progress_fn = on_progress;
    o->progress_payload = &progress;
}

static void sleep_s(long seconds)
{
    /* One-second naps so a signal between steps is noticed promptly. */
    for (long i = 0; i < seconds && !stop_requested && !wake_requested; i++) {
        struct timespec ts = {1, 0};

        (void)nanosleep(&ts, NULL);
    }
    wake_requested = 0;
}

static int all_up_to_date(const struct agent_cli *c)
{
    for (size_t i = 0; i < c->cfg.n_models; i++) {
        mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;

        if (mf_agent_status(&st, c->agent, c->cfg.models[i]) < 0 || !st.up_to_date)
            return 0;
    }
    return 1;
}

/* One step under the lock, after picking up what commands changed. */
static int locked_step(struct agent_cli *c)
{
    int fd = agent_lock_take(c->cfg.state_dir, 3600);
    int err;

    if (fd < 0)
        return MF_E_STATE;
    err = mf_agent_reload(c->agent);
    agent_tele_load(c); /* what `record` and `confirm` added while we slept */
    if (err >= 0)
        err = mf_agent_step(c->agent);
    agent_tele_save(c);
    agent_lock_drop(fd);
    if (err < 0)
        (void)fprintf(stderr, "error mf-agent: step failed (%s): %s\n", mf_strerror(err),
                      mf_agent_errmsg(c->agent));
    return err;
}

int agent_daemon_run(struct agent_cli *c)
{
    struct sigaction sa;
    long cycles = 0;
    int err = MF_OK;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGUSR1, &sa, NULL);
    if (!c->cli.once && agent_pid_write(c->cfg.state_dir) < 0)
        (void)fprintf(stderr,
                      "warn  mf-agent: cannot write %s/agent.pid (check-now will not "
                      "reach this daemon)\n",
                      c->cfg.state_dir);
    while (!stop_requested) {
        long interval;

        err = locked_step(c);
        cycles++;
        if (c->cli.once)
            return err == MF_OK && all_up_to_date(c) ? 0 : 1;
        if (c->cli.max_cycles && cycles >= c->cli.max_cycles)
            break;
        interval = mf_agent_poll_interval_s(c->agent);
        sleep_s(interval > 0 ? interval : c->cfg.poll_interval_s);
    }
    agent_pid_remove(c->cfg.state_dir);
    if (stop_requested)
        (void)fprintf(stderr, "info  mf-agent: stopping after %ld cycle(s)\n", cycles);
    return err == MF_OK ? 0 : 1;
}
