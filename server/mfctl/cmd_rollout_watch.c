/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl rollout status ID --watch: the status view redrawn every --interval seconds until the
 * rollout ends (no longer running or paused) or --timeout runs out (cmd_rollout.h). Exit
 * status 0 when it ended done, 1 when it ended otherwise (halted, rolled back, aborted), on
 * a timeout, or on an error.
 * One module with cmd_rollout.c: it prints the status view and its dispatch calls this file.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fileno */
#include "cmd_rollout.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One draw; the rollout's state into `state` ("" when the answer had none). */
static int draw(struct mfctl *c, char *state, size_t cap, const char *path, int json, int n)
{
    struct mf_http_response resp;
    cJSON *doc = NULL;
    int err;

    state[0] = '\0';
    mf_http__response_init(&resp, &c->http);
    err = mfctl__request(c, &resp, "GET", path, NULL, 0);
    if (err >= 0)
        doc = mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL);
    if (err >= 0 && !doc)
        err = MF_E_INVALID;
    if (err >= 0) {
        (void)snprintf(state, cap, "%s", mfctl__str(doc, "state"));
        /* A terminal is redrawn in place; a pipe or file gets one view after another. */
        if (!json && isatty(fileno(c->out)))
            (void)fputs("\033[H\033[2J", c->out);
        else if (!json && n > 0)
            (void)fputs("\n", c->out);
        if (json)
            (void)fprintf(c->out, "%s\n", (const char *)resp.body.data);
        else
            err = mfctl__print_rollout(c, (const char *)resp.body.data, resp.body.len);
        (void)fflush(c->out);
    }
    cJSON_Delete(doc);
    mf_http__response_free(&resp);
    return err;
}

int mfctl__rollout_watch(struct mfctl *c, const char *id, int json, unsigned interval_s,
                         unsigned timeout_s)
{
    char path[96], state[32];
    double until = now_s() + timeout_s;
    int err;

    (void)snprintf(path, sizeof(path), "/v1/admin/rollouts/%s", id);
    if (mfctl__connect(c) != 0)
        return 1;
    for (int n = 0;; n++) {
        struct timespec pause = {(time_t)interval_s, 0};

        err = draw(c, state, sizeof(state), path, json, n);
        if (err < 0)
            return mfctl__report(c, err);
        if (strcmp(state, "running") != 0 && strcmp(state, "paused") != 0)
            break;
        if (now_s() + interval_s > until) {
            (void)fprintf(c->err, "mfctl rollout: rollout %s still %s after %u s\n", id, state,
                          timeout_s);
            return 1;
        }
        (void)nanosleep(&pause, NULL);
    }
    if (strcmp(state, "done") == 0)
        return 0;
    (void)fprintf(c->err, "mfctl rollout: rollout %s ended %s\n", id, state[0] ? state : "?");
    return 1;
}
