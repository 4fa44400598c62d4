/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The external trainer contract (docs/distill.md): the run writes its training set into a
 * fresh directory and runs the configured command with that directory as its last
 * argument; the command writes out/model.safetensors (and may write out/metrics.json,
 * kept for the record). The server judges the output itself: it must decode as a student
 * of the example family, or the run fails; nothing the trainer claims is trusted.
 *
 *   job.json            {"n", "dim", "classes", "temperature", "epochs", "hidden",
 *                        "warm_start", "seed", "parent": "parent.safetensors" or null}
 *   train_x.u8          n x dim input bytes
 *   train_y.u8          n labels; 255: none (uplinked samples)
 *   train_soft.f32      n x classes teacher soft targets at the temperature, little-endian
 *   train_has_soft.u8   n flags: 1 where the soft row is valid
 */
#include "distill/job/distill_job.h"

#include "mf_dynbuf.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUTPUT_MAX (64u << 20)

extern char **environ;

static int put(struct mf_ctx *ctx, const char *dir, const char *name, const void *p, size_t n)
{
    char path[4400];

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    return mf_file_write_atomic(ctx, path, p, n);
}

static int write_job(struct mf_ctx *ctx, const char *dir, const struct mf_distill_model_cfg *c,
                     const struct mf_distill_data *d, int has_parent)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    int err;

    if (o && cJSON_AddNumberToObject(o, "n", (double)d->n) &&
        cJSON_AddNumberToObject(o, "dim", d->train->dim) &&
        cJSON_AddNumberToObject(o, "classes", MF_DATASET_CLASSES) &&
        cJSON_AddNumberToObject(o, "temperature", c->temperature) &&
        cJSON_AddNumberToObject(o, "epochs", c->epochs) &&
        cJSON_AddNumberToObject(o, "hidden", c->hidden) &&
        cJSON_AddBoolToObject(o, "warm_start", c->warm_start && has_parent) &&
        cJSON_AddNumberToObject(o, "seed", (double)c->train_seed) &&
        (has_parent ? cJSON_AddStringToObject(o, "parent", "parent.safetensors")
                    : cJSON_AddNullToObject(o, "parent")))
        text = cJSON_PrintUnformatted(o);
    err = text ? put(ctx, dir, "job.json", text, strlen(text))
               : mf_fail(ctx, MF_E_NOMEM, "out of memory");
    cJSON_free(text);
    cJSON_Delete(o);
    return err;
}

static int write_inputs(struct mf_ctx *ctx, const char *dir, const struct mf_distill_model_cfg *c,
                        const struct mf_distill_data *d, const mf_student_model *parent)
{
    struct mf_dynbuf pb;
    char out[4400];
    int err = MF_OK;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", dir, strerror(errno));
    (void)snprintf(out, sizeof(out), "%s/out", dir);
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return mf_fail(ctx, MF_E_IO, "cannot create %s: %s", out, strerror(errno));
    mf_dynbuf__init(&pb, &ctx->alloc, OUTPUT_MAX);
    err = put(ctx, dir, "train_x.u8", d->x, d->n * d->train->dim);
    if (err == MF_OK)
        err = put(ctx, dir, "train_y.u8", d->y, d->n);
    if (err == MF_OK)
        err = put(ctx, dir, "train_soft.f32", d->soft, d->n * MF_DATASET_CLASSES * sizeof(float));
    if (err == MF_OK)
        err = put(ctx, dir, "train_has_soft.u8", d->has_soft, d->n);
    if (err == MF_OK && parent)
        err = mf_student_model_encode(&pb, ctx, parent);
    if (err == MF_OK && parent)
        err = put(ctx, dir, "parent.safetensors", pb.data, pb.len);
    if (err == MF_OK)
        err = write_job(ctx, dir, c, d, parent != NULL);
    mf_dynbuf__free(&pb);
    return err;
}

/* Runs argv + dir, killing it after timeout_s. MF_OK only for exit status 0. */
static int run_command(struct mf_ctx *ctx, const struct mf_distill_model_cfg *c, const char *dir)
{
    char *argv[MF_DISTILL_ARGV_MAX + 2];
    const struct timespec step = {0, 50 * 1000000L};
    const time_t deadline = time(NULL) + (time_t)c->timeout_s;
    pid_t pid;
    int status = 0, n = 0, rc;

    while (c->argv[n]) {
        argv[n] = (char *)c->argv[n]; /* posix_spawn's prototype; it does not write */
        n++;
    }
    argv[n++] = (char *)dir;
    argv[n] = NULL;
    rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc != 0)
        return mf_fail(ctx, MF_E_IO, "trainer %s: cannot start: %s", argv[0], strerror(rc));
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);

        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return mf_fail(ctx, MF_E_IO, "trainer %s: waitpid: %s", argv[0], strerror(errno));
        if (time(NULL) >= deadline) {
            (void)kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            return mf_fail(ctx, MF_E_LIMIT, "trainer %s: killed after %u s", argv[0], c->timeout_s);
        }
        (void)nanosleep(&step, NULL);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return mf_fail(ctx, MF_E_GENERIC, "trainer %s failed (%s %d)", argv[0],
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return MF_OK;
}

static void remove_dir(const char *dir)
{
    static const char *const names[] = {"job.json",
                                        "train_x.u8",
                                        "train_y.u8",
                                        "train_soft.f32",
                                        "train_has_soft.u8",
                                        "parent.safetensors",
                                        "out/model.safetensors",
                                        "out/metrics.json",
                                        NULL};
    char path[4400];

    for (size_t i = 0; names[i]; i++) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        (void)unlink(path);
    }
    (void)snprintf(path, sizeof(path), "%s/out", dir);
    (void)rmdir(path);
    (void)rmdir(dir);
}

int mf_distill__train_command(mf_student_model **out, struct mf_ctx *ctx,
                              const struct mf_distill_model_cfg *c, const struct mf_distill_data *d,
                              const mf_student_model *parent, const char *dir)
{
    char path[4400], why[MF_ERRMSG_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    int err;

    *out = NULL;
    remove_dir(dir); /* a lost attempt's leftovers */
    err = write_inputs(ctx, dir, c, d, parent);
    if (err == MF_OK)
        err = run_command(ctx, c, dir);
    (void)snprintf(path, sizeof(path), "%s/out/model.safetensors", dir);
    if (err == MF_OK)
        err = mf_file_read_all(&buf, &len, ctx, &ctx->alloc, path, OUTPUT_MAX);
    if (err == MF_OK && mf_student_model_decode(out, ctx, &ctx->alloc, buf, len) < 0) {
        (void)snprintf(why, sizeof(why), "%s", mf_ctx__errmsg(ctx));
        err = mf_fail(ctx, MF_E_INVALID,
                      "trainer output is not a student of the example family: %s", why);
    }
    mf_free(&ctx->alloc, buf);
    remove_dir(dir);
    return err;
}
