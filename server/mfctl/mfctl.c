/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl entry point: global options (--server / $MF_SERVER, --token-file /
 * $MF_TOKEN_FILE) and the static command table. The helpers every command shares are in
 * mfctl_shared.c, so the commands never call back into the table that calls them.
 */
#include "mfctl.h"
#include "cmd_keys.h"
#include "cmd_diff.h"
#include "cmd_samples.h"
#include "cmd_distill.h"
#include "cmd_rollout.h"
#include "cmd_audit.h"
#include "mf/ct.h"
#include "mf/version.h"

#include <stdlib.h>
#include <string.h>

static const struct mfctl_command commands[] = {
    {"publish", "sign a release locally, upload the model and release it",
     "usage: mfctl [global options] publish NAME VERSION FILE --release-key KEY.pem...\n"
     "                 [--security-floor N] [--chunk-size BYTES] [--sequence N]\n"
     "                 [--expires UNIX] [--chunk-tree] [--json]\n"
     "Signs the release document of FILE (per-chunk SHA-256s, default chunk 1 MiB) with the\n"
     "release key(s), uploads FILE and attaches the release; the server verifies it against\n"
     "its keys document. Published is not deployed: the fleet stays on the promoted release\n"
     "until a rollout of the new one finishes (mfctl rollout) or ops promote it (mfctl\n"
     "promote --force); a model's first release is promoted at once. The sequence defaults\n"
     "to one above the model's highest released sequence. NAME and VERSION match\n"
     "[A-Za-z0-9._-]{1,64}. The release names the chunks by their Merkle root and, for agents\n"
     "older than the chunk tree, lists them too; --chunk-tree leaves the list out (the\n"
     "release is then a few hundred bytes for any model size; docs/formats/manifest.md).\n",
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
     "keys document and the stored blob. Published is not deployed: devices are assigned\n"
     "the version once a rollout of it finishes (mfctl rollout) or it is promoted (mfctl\n"
     "promote); only a model's first release is promoted at once.\n",
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
     "       mfctl [global options] devices show DEVICE [--json]\n"
     "Lists every device with its last check-in (ISO 8601 UTC) and per model: RUNNING, the\n"
     "version it runs (after a rollback, the one it went back to); STATUS installed, rolled\n"
     "back or failed; ROLLED BACK, the version it rolled back from; DETAIL, why.\n"
     "show: one device, whether it runs its fallback variants (DEGRADED) and its recent\n"
     "degrade/restore switches, newest first, each with its REASON.\n",
     mfctl__cmd_devices},
    {"versions", "list the versions of one model; fleet figures per version",
     "usage: mfctl [global options] versions MODEL [--json]\n"
     "       mfctl [global options] versions stats MODEL [--json]\n"
     "       mfctl [global options] versions show MODEL VERSION [--json]\n"
     "Lists MODEL's versions (oldest first) with size, digest and release state; an unknown\n"
     "MODEL exits 1 with the server's message. stats:\n"
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
    {"groups", "list groups; set a group's poll interval and install window",
     "usage: mfctl [global options] groups [list] [--json]\n"
     "       mfctl [global options] groups settings [--json]\n"
     "       mfctl [global options] groups set-poll GROUP SECONDS [JITTER_PCT]\n"
     "       mfctl [global options] groups clear-poll GROUP\n"
     "       mfctl [global options] groups set-window GROUP HH:MM-HH:MM [UTC+HH:MM]\n"
     "       mfctl [global options] groups clear-window GROUP\n"
     "list: groups and their devices; settings: each group's poll interval and window.\n"
     "set-poll: the group's devices check in every SECONDS (1..86400), each wait moved at\n"
     "random by up to JITTER_PCT % (0..50, default 10); it wins over a device's own\n"
     "poll_interval_s. set-window: they download at once but install only between the two\n"
     "times each day (on the clock UTC+HH:MM, default UTC; it may span midnight), or when\n"
     "the app says the device is idle. A device takes each setting from its first group\n"
     "(by name) that has it; GROUP must have a device.\n",
     mfctl__cmd_groups},
    {"pins", "pin a model version for a device, group or channel",
     "usage: mfctl [global options] pins [list] [--json]\n"
     "       mfctl [global options] pins set device|group|channel TARGET MODEL VERSION\n"
     "       mfctl [global options] pins clear device|group|channel TARGET MODEL\n"
     "The director's precedence: security floor > device pin (from the device) > ops pin\n"
     "for the device > for a group > fleet rollback > rollout wave > channel default.\n"
     "A pin must name a released version, and an enrolled device, a group with a device in\n"
     "it or a model that exists: an unknown one exits 1 with the server's message.\n",
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
    {"promote", "make a release the channel default now, with no canary (--force)",
     MFCTL_PROMOTE_USAGE, mfctl__cmd_promote},
    {"distill", "the distillation loop: run, status, wait", MFCTL_DISTILL_USAGE,
     mfctl__cmd_distill},
    {"audit", "who did what: admin actions and rollout events, newest first", MFCTL_AUDIT_USAGE,
     mfctl__cmd_audit},
    {"webhooks", "URLs that receive each rollout event, signed: add, list, remove",
     MFCTL_WEBHOOKS_USAGE, mfctl__cmd_webhooks},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int global_help(FILE *out)
{
    (void)fprintf(out, "NAME\n"
                       "    mfctl - the ops CLI of mf-server\n"
                       "SYNOPSIS\n"
                       "    mfctl [--server URL] [--token-file FILE] COMMAND [ARGS]\n"
                       "    mfctl --help | --version\n"
                       "OPTIONS\n"
                       "    --server URL       mf-server base URL (default: $MF_SERVER)\n"
                       "    --token-file FILE  admin token file (default: $MF_TOKEN_FILE)\n"
                       "EXIT STATUS\n"
                       "    0 success; 1 failure, the server's answer or why on stderr (an\n"
                       "    unknown device, model or group is one); 2 bad usage.\n"
                       "COMMANDS\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        (void)fprintf(out, "    %-10s %s\n", commands[i].name, commands[i].summary);
    (void)fprintf(out, "Run `mfctl COMMAND --help` for a command's arguments.\n");
    return 0;
}

/* Parses global options; returns the index of the command word, or -1/-2/-3
 * (help/error/version). */
static int parse_globals(struct mfctl *c, int argc, char **argv)
{
    int i;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return -1;
        if (strcmp(argv[i], "--version") == 0)
            return -3;
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
    if (first == -3) {
        (void)fprintf(out, "mfctl %s\n", MF_VERSION_STRING);
        return 0;
    }
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
