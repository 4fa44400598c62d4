/* SPDX-License-Identifier: Apache-2.0 */
/*
 * External-command connector: one process per call, so a crashed or wedged teacher
 * program never outlives its call. Contract (docs/protocol-offload.md, "Teacher
 * connectors"): the program gets one JSON object on stdin, then EOF,
 *   {"model": "digits", "n_classes": 10, "input": "<base64 of the input bytes>"}
 * and writes one JSON object on stdout, then exits 0:
 *   {"probs": [...n_classes numbers...], "version": "t-7"}   ("logits" instead of "probs"
 * when the config says output "logits"; "version" is optional).
 * Past the timeout the process is killed (SIGKILL) and the call fails.
 */
#define _GNU_SOURCE /* pipe2 */
#include "offload/teacher_int.h"
#include "mf_json.h"

#include "manifest_common.h"
#include "mf_dynbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COMMAND_REPLY_MAX (1024u * 1024u)

extern char **environ;

static int command_open(void **state_out, struct mf_ctx *ctx, const struct mf_teacher_config *c)
{
    *state_out = NULL;
    if (!c->argv[0])
        return mf_fail(ctx, MF_E_INVALID, "model %s: the command teacher needs a command",
                       c->model);
    return MF_OK;
}

static void command_close(void *state)
{
    (void)state;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int spawn(pid_t *pid_out, int *in_fd, int *out_fd, struct mf_ctx *ctx,
                 const struct mf_teacher_config *c)
{
    posix_spawn_file_actions_t fa;
    int to_child[2], from_child[2], rc;

    if (pipe2(to_child, O_CLOEXEC) != 0)
        return mf_fail(ctx, MF_E_IO, "pipe: %s", strerror(errno));
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        (void)close(to_child[0]);
        (void)close(to_child[1]);
        return mf_fail(ctx, MF_E_IO, "pipe: %s", strerror(errno));
    }
    (void)posix_spawn_file_actions_init(&fa);
    (void)posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
    (void)posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    rc = posix_spawn(pid_out, c->argv[0], &fa, NULL, (char *const *)c->argv, environ);
    (void)posix_spawn_file_actions_destroy(&fa);
    (void)close(to_child[0]);
    (void)close(from_child[1]);
    if (rc != 0) {
        (void)close(to_child[1]);
        (void)close(from_child[0]);
        return mf_fail(ctx, MF_E_NET, "cannot start teacher command '%s': %s", c->argv[0],
                       strerror(rc));
    }
    *in_fd = to_child[1];
    *out_fd = from_child[0];
    (void)fcntl(*in_fd, F_SETFL, O_NONBLOCK);
    (void)fcntl(*out_fd, F_SETFL, O_NONBLOCK);
    return MF_OK;
}

/* Feeds the request and collects the reply at the same time (either may exceed a pipe's
 * buffer), until the program closes stdout or the deadline passes. */
static int exchange(struct mf_dynbuf *reply, struct mf_ctx *ctx, int *in_fd, int out_fd,
                    const struct mf_dynbuf *req, int64_t deadline)
{
    size_t sent = 0;
    char chunk[4096];

    for (;;) {
        struct pollfd p[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = -1, .events = POLLOUT}};
        int64_t left = deadline - mono_ms();
        int n;

        if (left <= 0)
            return mf_fail(ctx, MF_E_NET, "teacher command timed out");
        p[1].fd = *in_fd;
        n = poll(p, *in_fd >= 0 ? 2 : 1, (int)left);
        if (n < 0 && errno != EINTR)
            return mf_fail(ctx, MF_E_IO, "poll: %s", strerror(errno));
        if (*in_fd >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(*in_fd, req->data + sent, req->len - sent);

            if (w > 0)
                sent += (size_t)w;
            if ((w < 0 && errno != EAGAIN) || sent == req->len) {
                (void)close(*in_fd); /* EOF: the request is complete (or unwanted) */
                *in_fd = -1;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(out_fd, chunk, sizeof(chunk));

            if (r == 0)
                break;
            if (r < 0 && errno != EAGAIN && errno != EINTR)
                return mf_fail(ctx, MF_E_IO, "reading the teacher command: %s", strerror(errno));
            if (r > 0 && mf_dynbuf__append(reply, chunk, (size_t)r) < 0)
                return mf_fail(ctx, MF_E_LIMIT, "teacher command answer exceeds %u bytes",
                               COMMAND_REPLY_MAX - 1);
        }
    }
    return MF_OK;
}

static int parse_reply(float *out, char version_out[MF_STORE_NAME_SIZE], struct mf_ctx *ctx,
                       const struct mf_teacher_config *c, const struct mf_dynbuf *reply, size_t n)
{
    const char *key = c->output_logits ? "logits" : "probs";
    cJSON *root;
    int err = mf_json__parse_object(&root, ctx, reply->data, reply->len, reply->len,
                                    MF_JSON_DEPTH_DEFAULT, "teacher command answer");

    if (err < 0)
        return err;
    err = mf_teacher__read_floats(out, ctx, cJSON_GetObjectItemCaseSensitive(root, key), n, key);
    if (err == MF_OK)
        mf_teacher__read_version(version_out, root, "version");
    cJSON_Delete(root);
    return err;
}

static int build_request(struct mf_dynbuf *req, struct mf_ctx *ctx,
                         const struct mf_teacher_config *c, const uint8_t *input, size_t len,
                         size_t n_classes)
{
    size_t b64 = mf_base64__encoded_len(len);
    int err = mf_dynbuf__appendf(req, "{\"model\":\"%s\",\"n_classes\":%zu,\"input\":\"", c->model,
                                 n_classes);
    char *enc = mf_alloc(&ctx->alloc, b64 + 1);

    if (!enc)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory encoding a teacher request");
    mf_base64__encode(enc, input, len);
    if (err == MF_OK)
        err = mf_dynbuf__append(req, enc, b64);
    if (err == MF_OK)
        err = mf_dynbuf__append(req, "\"}\n", 3);
    mf_free(&ctx->alloc, enc);
    if (err < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory building a teacher request");
    return MF_OK;
}

static int command_infer(float *out, char version_out[MF_STORE_NAME_SIZE], void *state,
                         struct mf_ctx *ctx, const struct mf_teacher_config *c,
                         const uint8_t *input, size_t len, size_t n_classes, unsigned timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    struct mf_dynbuf req, reply;
    int in_fd = -1, out_fd = -1, status = 0, err;
    pid_t pid;

    (void)state;
    mf_dynbuf__init(&req, &ctx->alloc, len * 2 + 256);
    mf_dynbuf__init(&reply, &ctx->alloc, COMMAND_REPLY_MAX);
    err = build_request(&req, ctx, c, input, len, n_classes);
    if (err == MF_OK)
        err = spawn(&pid, &in_fd, &out_fd, ctx, c);
    if (err < 0)
        goto out;
    err = exchange(&reply, ctx, &in_fd, out_fd, &req, deadline);
    if (in_fd >= 0)
        (void)close(in_fd);
    (void)close(out_fd);
    if (err < 0)
        (void)kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (err == MF_OK && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        err = mf_fail(ctx, MF_E_NET, "teacher command '%s' failed (status %d)", c->argv[0], status);
    if (err == MF_OK)
        err = parse_reply(out, version_out, ctx, c, &reply, n_classes);
out:
    mf_dynbuf__free(&req);
    mf_dynbuf__free(&reply);
    return err;
}

const struct mf_teacher_connector mf_teacher__command = {
    .name = "command",
    .open = command_open,
    .close = command_close,
    .infer = command_infer,
};
