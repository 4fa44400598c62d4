/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-agent's runtime reports (agent_cli.h, docs/agent.md "What a rollout needs from
 * devices"). A rollout advances only on devices that report on the new version, so the
 * daemon reports by default ("report_telemetry": true): libmf counts install results and
 * rollbacks into the telemetry handle, the daemon adds a passed health check when a version
 * is confirmed, and `mf-agent record` adds what the app measured (inference latencies, peak
 * memory, health checks). The totals live in <state>/telemetry.state: the daemon loads them
 * before each step and saves them after it, `record` and `confirm` change them under the
 * same state dir lock in between, so nothing a command records is lost or counted twice.
 */
#include "agent_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TELEMETRY_OBJECT "telemetry.state"
/* Latencies one `record` call takes (one process per batch of inferences, not per one). */
#define RECORD_MAX_LATENCIES 1024

int agent_tele_open(struct agent_cli *c, const mf_platform_ops *ops)
{
    int err;

    if (!c->cfg.report_telemetry)
        return MF_OK;
    err = mf_telemetry_new(&c->tele, NULL, ops, TELEMETRY_OBJECT);
    if (err < 0)
        return err;
    agent_tele_load(c);
    return MF_OK;
}

void agent_tele_load(struct agent_cli *c)
{
    int err = c->tele ? mf_telemetry_load(c->tele) : MF_OK;

    /* A damaged file restarts the totals from zero: reports are cumulative per version and
     * the server keeps the last one it got, so this loses at most what was not sent yet. */
    if (err < 0)
        (void)fprintf(stderr, "warn  mf-agent: %s/%s: %s (totals restart from zero)\n",
                      c->cfg.state_dir, TELEMETRY_OBJECT, mf_strerror(err));
}

void agent_tele_save(struct agent_cli *c)
{
    int err = c->tele ? mf_telemetry_save(c->tele) : MF_OK;

    if (err < 0)
        (void)fprintf(stderr, "warn  mf-agent: cannot save %s/%s: %s\n", c->cfg.state_dir,
                      TELEMETRY_OBJECT, mf_strerror(err));
}

void agent_tele_health(struct agent_cli *c, const char *model, const char *version, int ok)
{
    int err = c->tele ? mf_telemetry_record_health(c->tele, model, version, ok) : MF_OK;

    if (err < 0)
        (void)fprintf(stderr, "warn  mf-agent: model %s %s: health not recorded: %s\n", model,
                      version, mf_strerror(err));
}

/* "1200,1350" into out[] (each 1..2^32-1 us); the count, or -1 with a message. */
static long parse_latencies(uint64_t *out, const char *list)
{
    long n = 0;
    const char *p = list;

    for (;;) {
        char *end = NULL;
        unsigned long long v;

        errno = 0;
        v = strtoull(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || v == 0 || v > 0xffffffffull ||
            p[0] == '-' || n == RECORD_MAX_LATENCIES) {
            (void)fprintf(stderr,
                          "mf-agent: record: latency_us \"%s\": expected 1..%d comma-separated "
                          "integers in 1..4294967295\n",
                          list, RECORD_MAX_LATENCIES);
            return -1;
        }
        out[n++] = v;
        if (!*end)
            return n;
        p = end + 1;
    }
}

static int parse_u64(uint64_t *out, const char *key, const char *s)
{
    char *end = NULL;

    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || *out == 0) {
        (void)fprintf(stderr, "mf-agent: record: %s \"%s\": expected a positive integer\n", key, s);
        return -1;
    }
    return 0;
}

static int usage_error(int *usage_out)
{
    *usage_out = 1;
    return MF_E_INVALID;
}

/* One KEY=VALUE measurement of `version` into the handle: MF_OK, an mf_err, or
 * MF_E_INVALID with *usage_out set after a message naming the bad argument. */
static int record_one(int *usage_out, struct agent_cli *c, uint64_t *lat, const char *version,
                      const char *what)
{
    const char *model = c->cli.arg1, *eq = strchr(what, '=');
    size_t klen = eq ? (size_t)(eq - what) : 0;
    uint64_t bytes;
    long n;
    int err = MF_OK;

    if (eq && klen == 10 && strncmp(what, "latency_us", klen) == 0) {
        n = parse_latencies(lat, eq + 1);
        if (n < 0)
            return usage_error(usage_out);
        for (long i = 0; i < n && err == MF_OK; i++)
            err = mf_telemetry_record_latency(c->tele, model, version, lat[i]);
    } else if (eq && klen == 6 && strncmp(what, "memory", klen) == 0) {
        if (parse_u64(&bytes, "memory", eq + 1) < 0)
            return usage_error(usage_out);
        err = mf_telemetry_record_memory(c->tele, model, version, bytes);
    } else if (eq && klen == 6 && strncmp(what, "health", klen) == 0 &&
               (strcmp(eq + 1, "ok") == 0 || strcmp(eq + 1, "failed") == 0)) {
        err = mf_telemetry_record_health(c->tele, model, version, strcmp(eq + 1, "ok") == 0);
    } else {
        (void)fprintf(stderr,
                      "mf-agent: record: \"%s\": expected latency_us=US[,US...], memory=BYTES or "
                      "health=ok|failed\n",
                      what);
        return usage_error(usage_out);
    }
    return err;
}

int agent_cmd_record(struct agent_cli *c)
{
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    uint64_t *lat = NULL;
    int fd, err, usage = 0;

    if (!c->tele) {
        (void)fprintf(stderr, "error mf-agent: record: \"report_telemetry\" is false in %s\n",
                      c->cli.config);
        return 1;
    }
    lat = mf_alloc(NULL, RECORD_MAX_LATENCIES * sizeof(*lat));
    if (!lat)
        return 1;
    fd = agent_lock_take(c->cfg.state_dir, c->cli.wait_s);
    err = fd < 0 ? MF_E_STATE : mf_agent_reload(c->agent);
    if (err >= 0)
        err = mf_agent_status(&st, c->agent, c->cli.arg1);
    if (err >= 0 && !st.installed) {
        (void)fprintf(stderr, "error mf-agent: record: model %s has nothing installed\n",
                      c->cli.arg1);
        err = MF_E_STATE;
        usage = -1; /* said */
    }
    if (err >= 0) {
        agent_tele_load(c); /* what the daemon saved after its last step */
        err = record_one(&usage, c, lat, st.version, c->cli.arg2);
    }
    if (err == MF_OK)
        agent_tele_save(c);
    if (fd >= 0)
        agent_lock_drop(fd);
    mf_free(NULL, lat);
    if (usage)
        return usage > 0 ? 2 : 1;
    if (err < 0) {
        (void)fprintf(stderr, "error mf-agent: record: %s: %s\n", c->cli.arg1,
                      err == MF_E_STATE ? "state dir busy" : mf_strerror(err));
        return 1;
    }
    printf("%s %s: recorded %s\n", c->cli.arg1, st.version, c->cli.arg2);
    return 0;
}
