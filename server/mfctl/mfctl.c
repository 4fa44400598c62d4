/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl entry point: global options (--server / $MF_SERVER, --token-file /
 * $MF_TOKEN_FILE), the static command table and the helpers every command shares.
 */
#include "mfctl.h"
#include "cmd_keys.h"
#include "cmd_diff.h"
#include "cmd_samples.h"
#include "cmd_distill.h"
#include "cmd_rollout.h"
#include "mf/ct.h"

#include <stdlib.h>
#include <string.h>

static const struct mfctl_command commands[] = {
    {"publish", "sign a release locally, upload the model and release it",
     "usage: mfctl [global options] publish NAME VERSION FILE --release-key KEY.pem...\n"
     "                 [--security-floor N] [--chunk-size BYTES] [--sequence N]\n"
     "                 [--expires UNIX] [--json]\n"
     "Signs the release document of FILE (per-chunk SHA-256s, default chunk 1 MiB) with the\n"
     "release key(s), uploads FILE and attaches the release; the server verifies it against\n"
     "its keys document before devices see the version. The sequence defaults to one above\n"
     "the model's highest released sequence. NAME and VERSION match [A-Za-z0-9._-]{1,64}.\n",
     mfctl__cmd_publish},
    {"upload", "upload a model file as a staged (unreleased) version",
     "usage: mfctl [global options] upload NAME VERSION FILE [--json]\n"
     "Streams FILE to the server as model NAME, version VERSION. The SHA-256 is computed\n"
     "locally and sent as X-MF-Sha256, so a corrupted upload is refused by the server.\n"
     "The version stays invisible to devices until a signed release is attached\n"
     "(mfctl release). NAME and VERSION match [A-Za-z0-9._-]{1,64}.\n",
     mfctl__cmd_upload},
    {"release", "attach a release envelope signed offline (mfctl keys sign-release)",
     "usage: mfctl [global options] release NAME VERSION RELEASE.json [--json]\n"
     "Sends the signed release of an uploaded version; the server verifies it against its\n"
     "keys document and the stored blob, then devices are assigned the version.\n",
     mfctl__cmd_release},
    {"trust", "install the signed root and keys documents; show trust state",
     "usage: mfctl [global options] trust status [--json]\n"
     "       mfctl [global options] trust set-root ROOT.json\n"
     "       mfctl [global options] trust set-keys KEYS.json\n"
     "set-root installs the first root or the next rotation (version N+1, signed by the\n"
     "thresholds of root N and N+1); set-keys a keys document signed by the root's keys\n"
     "role. The server verifies both as a device would before it serves them.\n",
     mfctl__cmd_trust},
    {"models", "list models and their versions",
     "usage: mfctl [global options] models [--json]\n"
     "Lists every model and version (oldest first). --json prints the server's answer.\n",
     mfctl__cmd_models},
    {"devices", "list enrolled devices and what they run",
     "usage: mfctl [global options] devices [--json]\n"
     "Lists every device with its last check-in and the reported state of each model.\n",
     mfctl__cmd_devices},
    {"versions", "list the versions of one model; fleet figures per version",
     "usage: mfctl [global options] versions MODEL [--json]\n"
     "       mfctl [global options] versions stats MODEL [--json]\n"
     "       mfctl [global options] versions show MODEL VERSION [--json]\n"
     "Lists MODEL's versions (oldest first) with size, digest and release state. stats:\n"
     "per version the devices running and reporting it, installs, P50/P95/P99 latency from\n"
     "the merged device histograms, peak memory, offload rate and teacher agreement.\n",
     mfctl__cmd_versions},
    {"device", "set a device's groups or channel; revoke its credential",
     "usage: mfctl [global options] device groups DEVICE [GROUP[,GROUP...]]\n"
     "       mfctl [global options] device channel DEVICE CHANNEL\n"
     "       mfctl [global options] device revoke DEVICE\n"
     "groups replaces the device's groups (none: clears them); channel picks the channel\n"
     "whose default it follows; revoke stops its credential until it enrolls again.\n",
     mfctl__cmd_device},
    {"groups", "list groups and their devices", "usage: mfctl [global options] groups [--json]\n",
     mfctl__cmd_groups},
    {"pins", "pin a model version for a device, group or channel",
     "usage: mfctl [global options] pins [list] [--json]\n"
     "       mfctl [global options] pins set device|group|channel TARGET MODEL VERSION\n"
     "       mfctl [global options] pins clear device|group|channel TARGET MODEL\n"
     "The director's precedence: security floor > device pin (from the device) > ops pin\n"
     "for the device > for a group > fleet rollback > rollout wave > channel default.\n"
     "A pin must name a released version.\n",
     mfctl__cmd_pins},
    {"rollback", "roll the whole fleet back to a released version, or end it",
     "usage: mfctl [global options] rollback start MODEL VERSION\n"
     "       mfctl [global options] rollback stop MODEL\n"
     "Every device without a pin is assigned VERSION until the rollback is stopped (never\n"
     "below the model's security floor).\n",
     mfctl__cmd_rollback},
    {"tokens", "create, list and revoke admin tokens with a role",
     "usage: mfctl [global options] tokens [list] [--json]\n"
     "       mfctl [global options] tokens create ops|data|admin NAME [--json]\n"
     "       mfctl [global options] tokens revoke ID\n"
     "Roles: ops (devices, groups, pins, rollbacks), data (publish, release), admin\n"
     "(trust, tokens, and all of the others). The token is printed once, at creation.\n",
     mfctl__cmd_tokens},
    {"blobs", "remove orphan blobs (files no row refers to), or list them",
     "usage: mfctl [global options] blobs sweep [--dry-run] [--json]\n"
     "Removes every blob no model version, delta or sample refers to that was committed\n"
     "longer ago than the server's grace period (serve --blob-grace, default 1 h), as the\n"
     "server does at start. --dry-run only lists them.\n",
     mfctl__cmd_blobs},
    {"keys", "create keys, sign root/keys/release documents (offline)", MFCTL_KEYS_USAGE,
     mfctl__cmd_keys},
    {"diff", "create a model delta (offline)", MFCTL_DIFF_USAGE, mfctl__cmd_diff},
    {"patch", "apply a model delta (offline)", MFCTL_PATCH_USAGE, mfctl__cmd_patch},
    {"samples", "export hard samples for training (JSONL + .npy); delete a device's",
     MFCTL_SAMPLES_USAGE, mfctl__cmd_samples},
    {"rollout", "waves watched by red lines: create, status, pause, resume, abort, rollback",
     MFCTL_ROLLOUT_USAGE, mfctl__cmd_rollout},
    {"distill", "the distillation loop: run, status, wait", MFCTL_DISTILL_USAGE,
     mfctl__cmd_distill},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int global_help(FILE *out)
{
    (void)fprintf(out, "usage: mfctl [--server URL] [--token-file FILE] COMMAND [ARGS]\n"
                       "  --server URL       mf-server base URL (default: $MF_SERVER)\n"
                       "  --token-file FILE  admin token file (default: $MF_TOKEN_FILE)\n"
                       "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        (void)fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    (void)fprintf(out, "Run `mfctl COMMAND --help` for a command's arguments.\n");
    return 0;
}

int mfctl__id_ok(const char *s)
{
    return s[0] && strspn(s, "0123456789") == strlen(s) && strlen(s) < 19;
}

int mfctl__usage(struct mfctl *c, const char *why)
{
    (void)fprintf(c->err, "mfctl %s: %s\n%s", c->cmd->name, why, c->cmd->usage);
    return 2;
}

int mfctl__name_ok(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

    return n > 0 && n <= 64 && s[n] == '\0';
}

int mfctl__common_flags(struct mfctl *c, int argc, char **argv, int *json, int *nargs)
{
    int n = 1;

    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(c->cmd->usage, c->out);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            *json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            (void)fprintf(c->err, "mfctl %s: unknown option \"%s\"\n%s", c->cmd->name, argv[i],
                          c->cmd->usage);
            return 2;
        } else {
            argv[n++] = argv[i]; /* positional arguments move to the front, in order */
        }
    }
    *nargs = n - 1;
    return -1;
}

int mfctl__report(struct mfctl *c, int err)
{
    (void)fprintf(c->err, "mfctl %s: %s\n", c->cmd ? c->cmd->name : "",
                  mf_ctx__errmsg(&c->ctx)[0] ? mf_ctx__errmsg(&c->ctx) : mf_strerror(err));
    return 1;
}

static int read_token(struct mfctl *c)
{
    FILE *f = fopen(c->token_file, "r");
    size_t len;

    if (!f)
        return mf_fail(&c->ctx, MF_E_IO, "cannot open token file %s", c->token_file);
    if (!fgets(c->token, sizeof(c->token), f)) {
        (void)fclose(f);
        return mf_fail(&c->ctx, MF_E_INVALID, "token file %s is empty", c->token_file);
    }
    (void)fclose(f);
    len = strcspn(c->token, "\r\n");
    c->token[len] = '\0';
    if (len == 0)
        return mf_fail(&c->ctx, MF_E_INVALID, "token file %s is empty", c->token_file);
    return MF_OK;
}

int mfctl__connect(struct mfctl *c)
{
    struct mf_http_config hc = {
        .connect_timeout_ms = 10000,
        .request_timeout_ms = 60000,
        .low_speed_bytes = 1,
        .low_speed_time_s = 60,
        .max_body = MFCTL_MAX_LIST_BODY,
    };
    int err;

    if (!c->server || !c->server[0])
        err = mf_fail(&c->ctx, MF_E_INVALID, "no server: use --server URL or set MF_SERVER");
    else if (!c->token_file || !c->token_file[0])
        err = mf_fail(&c->ctx, MF_E_INVALID,
                      "no admin token: use --token-file FILE or set MF_TOKEN_FILE");
    else
        err = read_token(c);
    if (err >= 0)
        err = mf_http__init(&c->http, &c->ctx, &hc);
    if (err < 0)
        return mfctl__report(c, err);
    c->http_ready = 1;
    return 0;
}

int mfctl__url(struct mfctl *c, struct mf_dynbuf *url, const char *path)
{
    size_t n = strlen(c->server);
    int err;

    while (n > 0 && c->server[n - 1] == '/')
        n--;
    mf_dynbuf__init(url, &c->ctx.alloc, 4096);
    err = mf_dynbuf__appendf(url, "%.*s%s", (int)n, c->server, path);
    if (err < 0)
        return mf_fail(&c->ctx, err, "URL for %s too long", path);
    return MF_OK;
}

int mfctl__request(struct mfctl *c, struct mf_http_response *resp, const char *method,
                   const char *path, const void *body, size_t len)
{
    struct mf_http_request req = {.method = method, .bearer = c->token};
    struct mf_dynbuf url;
    int err = mfctl__url(c, &url, path);

    if (err < 0)
        return err;
    req.url = (const char *)url.data;
    if (body) {
        req.content_type = "application/json";
        req.body = body;
        req.body_len = len;
    }
    err = mf_http__perform(&c->http, resp, &req);
    if (err >= 0 && (resp->status < 200 || resp->status > 204))
        err = mf_http__fail_status(&c->http, resp, path);
    mf_dynbuf__free(&url);
    return err;
}

/* Parses global options; returns the index of the command word, or -1/-2 (help/error). */
static int parse_globals(struct mfctl *c, int argc, char **argv)
{
    int i;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return -1;
        if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            c->server = argv[++i];
        } else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc) {
            c->token_file = argv[++i];
        } else {
            (void)fprintf(c->err, "mfctl: unknown or incomplete option \"%s\"\n", argv[i]);
            return -2;
        }
    }
    if (i == argc) {
        (void)fprintf(c->err, "mfctl: no command given\n");
        return -2;
    }
    return i;
}

int mfctl__main(int argc, char **argv, FILE *out, FILE *err)
{
    struct mfctl c;
    int first, rc = 2;

    memset(&c, 0, sizeof(c));
    mf_ctx__init(&c.ctx, NULL, NULL, NULL, "mfctl");
    c.out = out;
    c.err = err;
    c.server = getenv("MF_SERVER");
    c.token_file = getenv("MF_TOKEN_FILE");
    first = parse_globals(&c, argc, argv);
    if (first == -1)
        return global_help(out);
    if (first < 0) {
        (void)global_help(err);
        return 2;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, argv[first]) == 0) {
            c.cmd = &commands[i];
            rc = commands[i].run(&c, argc - first, argv + first);
            break;
        }
    }
    if (!c.cmd) {
        (void)fprintf(err, "mfctl: unknown command \"%s\"\n", argv[first]);
        (void)global_help(err);
    }
    if (c.http_ready)
        mf_http__cleanup(&c.http);
    mf_secure_zero(c.token, sizeof(c.token));
    return rc;
}
