/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the trainer and the evaluator contracts share (docs/distill.md): a work directory
 * with an out/ folder, the command run with that directory as its last argument in a
 * process group of its own (a timeout kills the whole group, so a shell's children die
 * with it), its stderr captured to stderr.txt, and the run record's note of the command:
 * its argv, the tail of its stderr and the SHA-256 of what it wrote. Each captured stderr
 * line is also logged with the run id and the command's role, so an operator reading the
 * server log sees whose output it is.
 */
#include "distill/job/distill_job.h"

#include "mf_hex.h"
#include "mf_sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATH_ROOM 4400

extern char **environ;

int mf_distill__dir_put(struct mf_ctx *ctx, const char *dir, const char *name, const void *p,
                        size_t n)
{
    char path[PATH_ROOM];

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    return mf_file_write_atomic(ctx, path, p, n);
}

int mf_distill__dir_put_json(struct mf_ctx *ctx, const char *dir, const char *name, cJSON *o,
                             int ok)
{
    char *text = o && ok ? cJSON_PrintUnformatted(o) : NULL;
    int err = text ? mf_distill__dir_put(ctx, dir, name, text, strlen(text))
                   : mf_fail(ctx, MF_E_NOMEM, "out of memory writing %s", name);

    cJSON_free(text);
    cJSON_Delete(o);
    return err;
}

int mf_distill__dir_make(struct mf_ctx *ctx, const char *dir)
{
    char out[PATH_ROOM];

    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", dir, strerror(errno));
    (void)snprintf(out, sizeof(out), "%s/out", dir);
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", out, strerror(errno));
    return MF_OK;
}

void mf_distill__dir_remove(const char *dir, const char *const *names)
{
    char path[PATH_ROOM];

    for (size_t i = 0; names[i]; i++) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        (void)unlink(path);
    }
    (void)snprintf(path, sizeof(path), "%s/stderr.txt", dir);
    (void)unlink(path);
    (void)snprintf(path, sizeof(path), "%s/out", dir);
    (void)rmdir(path);
    (void)rmdir(dir);
}

/* The last MF_DISTILL_STDERR_MAX bytes of dir/stderr.txt into `tail` (NUL-terminated),
 * other bytes than printable ASCII, newline and tab replaced by '?'. */
static void read_stderr(char *tail, const char *dir)
{
    char path[PATH_ROOM];
    FILE *f;
    size_t n = 0;

    tail[0] = '\0';
    (void)snprintf(path, sizeof(path), "%s/stderr.txt", dir);
    f = fopen(path, "rb");
    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);

        if (end > (long)MF_DISTILL_STDERR_MAX)
            (void)fseek(f, end - (long)MF_DISTILL_STDERR_MAX, SEEK_SET);
        else
            (void)fseek(f, 0, SEEK_SET);
        n = fread(tail, 1, MF_DISTILL_STDERR_MAX, f);
    }
    tail[n] = '\0';
    (void)fclose(f);
    /* the record is JSON text kept by both stores: printable ASCII, newlines and tabs only */
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)tail[i];

        if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch >= 0x7f)
            tail[i] = '?';
    }
}

/* Logs each line of `tail` as "distill run ID ROLE: line". */
static void log_stderr(struct mf_ctx *ctx, const struct mf_distill_cmd *c, const char *tail)
{
    const char *p = tail;

    while (*p) {
        size_t len = strcspn(p, "\n");

        if (len)
            MF_LOG_INFO(ctx, "distill run %lld %s: %.*s", (long long)c->run_id, c->role, (int)len,
                        p);
        p += len;
        p += *p == '\n';
    }
}

static int spawn(pid_t *pid, struct mf_ctx *ctx, const struct mf_distill_cmd *c, char **argv,
                 const char *dir)
{
    char path[PATH_ROOM];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc;

    (void)snprintf(path, sizeof(path), "%s/stderr.txt", dir);
    if (posix_spawn_file_actions_init(&fa) != 0)
        return mf_fail(ctx, MF_E_NOMEM, "%s %s: cannot start", c->role, argv[0]);
    if (posix_spawnattr_init(&attr) != 0) {
        (void)posix_spawn_file_actions_destroy(&fa);
        return mf_fail(ctx, MF_E_NOMEM, "%s %s: cannot start", c->role, argv[0]);
    }
    rc = posix_spawn_file_actions_addopen(&fa, 2, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (rc == 0)
        rc = posix_spawnattr_setpgroup(&attr, 0);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    if (rc == 0)
        rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
    (void)posix_spawn_file_actions_destroy(&fa);
    (void)posix_spawnattr_destroy(&attr);
    if (rc != 0)
        return mf_fail(ctx, MF_E_IO, "%s %s: cannot start: %s", c->role, argv[0], strerror(rc));
    return MF_OK;
}

/* Runs argv + dir, killing its process group after timeout_s. MF_OK only for exit 0. */
static int run(struct mf_ctx *ctx, const struct mf_distill_cmd *c, const char *dir)
{
    char *argv[MF_DISTILL_ARGV_MAX + 2];
    const struct timespec step = {0, 20 * 1000000L};
    struct timespec t0, now;
    pid_t pid;
    int status = 0, n = 0, err;

    while (c->argv[n]) {
        argv[n] = (char *)c->argv[n]; /* posix_spawn's prototype; it does not write */
        n++;
    }
    argv[n++] = (char *)dir;
    argv[n] = NULL;
    err = spawn(&pid, ctx, c, argv, dir);
    if (err < 0)
        return err;
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);

        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            (void)kill(-pid, SIGKILL);
            return mf_fail(ctx, MF_E_IO, "%s %s: waitpid: %s", c->role, argv[0], strerror(errno));
        }
        (void)clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= (time_t)c->timeout_s) {
            (void)kill(-pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            return mf_fail(ctx, MF_E_LIMIT, "%s %s: killed after %u s", c->role, argv[0],
                           c->timeout_s);
        }
        (void)nanosleep(&step, NULL);
    }
    (void)kill(-pid, SIGKILL); /* what it left running in its group dies with it */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return mf_fail(ctx, MF_E_GENERIC, "%s %s failed (%s %d)", c->role, argv[0],
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return MF_OK;
}

int mf_distill__command_run(struct mf_ctx *ctx, const struct mf_distill_cmd *c, const char *dir,
                            cJSON *note)
{
    char tail[MF_DISTILL_STDERR_MAX + 1];
    cJSON *args = note ? cJSON_AddArrayToObject(note, "command") : NULL;
    int err;

    for (size_t i = 0; args && c->argv[i]; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(c->argv[i]));
    err = run(ctx, c, dir);
    read_stderr(tail, dir);
    log_stderr(ctx, c, tail);
    if (note)
        (void)cJSON_AddStringToObject(note, "stderr", tail);
    return err;
}

void mf_distill__note_sha256(cJSON *note, const char *key, const void *p, size_t n)
{
    uint8_t d[MF_SHA256_DIGEST_LEN];
    char hex[MF_SHA256_HEX_LEN + 1];

    if (!note)
        return;
    mf_sha256__digest(d, p, n);
    mf_hex__encode(hex, d, sizeof(d));
    (void)cJSON_AddStringToObject(note, key, hex);
}
