/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state dir lock of mf-agent (agent_cli.h): an flock() on <state>/agent.lock, which
 * the kernel drops when the holder dies (kill -9 included), so a crash never leaves the
 * device locked. The pid file <state>/agent.pid lets `check-now` wake the daemon.
 */
#include "agent_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static void path_of(char *out, size_t cap, const char *dir, const char *leaf)
{
    (void)snprintf(out, cap, "%s/%s", dir, leaf);
}

int agent_lock_take(const char *state_dir, long wait_s)
{
    char path[1024];
    int fd;

    path_of(path, sizeof(path), state_dir, "agent.lock");
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        (void)fprintf(stderr, "error mf-agent: cannot open %s\n", path);
        return -1;
    }
    for (long waited_ms = 0;; waited_ms += 100) {
        struct timespec ts = {0, 100 * 1000000L};

        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        if (waited_ms >= wait_s * 1000) {
            (void)fprintf(stderr,
                          "error mf-agent: %s is held (the daemon is busy, e.g. downloading); "
                          "retry later or raise --wait\n",
                          path);
            break;
        }
        (void)nanosleep(&ts, NULL);
    }
    (void)close(fd);
    return -1;
}

void agent_lock_drop(int fd)
{
    if (fd >= 0)
        (void)close(fd); /* closing the descriptor releases the flock */
}

int agent_pid_write(const char *state_dir)
{
    char path[1024];
    FILE *f;

    path_of(path, sizeof(path), state_dir, "agent.pid");
    f = fopen(path, "w");
    if (!f)
        return -1;
    (void)fprintf(f, "%ld\n", (long)getpid());
    return fclose(f) == 0 ? 0 : -1;
}

void agent_pid_remove(const char *state_dir)
{
    char path[1024];

    path_of(path, sizeof(path), state_dir, "agent.pid");
    (void)unlink(path);
}

/* First line of `path` into `line` ("" when unreadable). */
static void first_line(char *line, size_t cap, const char *path)
{
    FILE *f = fopen(path, "r");

    line[0] = '\0';
    if (!f)
        return;
    if (!fgets(line, (int)cap, f))
        line[0] = '\0';
    (void)fclose(f);
}

long agent_pid_read(const char *state_dir)
{
    char path[1024], line[32];
    long pid;

    path_of(path, sizeof(path), state_dir, "agent.pid");
    first_line(line, sizeof(line), path);
    pid = strtol(line, NULL, 10);
    /* A stale file (the daemon was killed) names a process that is gone, or by now
     * another program with a recycled pid: only an mf-agent counts. */
    if (pid <= 0 || kill((pid_t)pid, 0) != 0)
        return 0;
    (void)snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    first_line(line, sizeof(line), path);
    return strncmp(line, "mf-agent", 8) == 0 ? pid : 0;
}
