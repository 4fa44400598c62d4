/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to mfctl, the ops CLI of mf-server. mfctl.c holds the static command table and
 * the global options, mfctl_shared.c the helpers below; each command group lives in its own
 * cmd_<group>.c. Adding a command is one table line in mfctl.c plus its file.
 */
#ifndef MFCTL_H
#define MFCTL_H

#include "mf_ctx.h"
#include "mf_http.h"

#include <cjson/cJSON.h>

#include <stdio.h>

#define MFCTL_TOKEN_MAX 256
/* Cap on admin list answers (models, devices) held in memory for printing. */
#define MFCTL_MAX_LIST_BODY (16u * 1024u * 1024u)

struct mfctl_command;

/* Process-wide state of one mfctl invocation. */
struct mfctl {
    struct mf_ctx ctx;
    struct mf_http http;
    int http_ready;
    const char *server;          /* --server or $MF_SERVER, no trailing '/' handling needed */
    const char *token_file;      /* --token-file or $MF_TOKEN_FILE */
    char token[MFCTL_TOKEN_MAX]; /* read lazily by mfctl__connect(); wiped at exit */
    FILE *out;
    FILE *err;
    const struct mfctl_command *cmd; /* the command being run */
};

struct mfctl_command {
    const char *name;
    const char *summary;                                /* one line for `mfctl --help` */
    const char *usage;                                  /* full text for `mfctl CMD --help` */
    int (*run)(struct mfctl *c, int argc, char **argv); /* argv[0] is the command name */
};

/* Runs mfctl; returns the process exit code (0 ok, 1 failure, 2 usage error). */
int mfctl__main(int argc, char **argv, FILE *out, FILE *err);

/* Reads the admin token and prepares the HTTP client; 1 on failure (message printed). */
int mfctl__connect(struct mfctl *c);
/* server + path into `url` (bounded); MF_OK or MF_E_LIMIT/MF_E_NOMEM with a message. */
int mfctl__url(struct mfctl *c, struct mf_dynbuf *url, const char *path);
/* One admin request with an optional JSON body; a status outside 200..204 becomes an error
 * (mf_http__fail_status). Ownership: the caller frees `resp` (initialised already). */
int mfctl__request(struct mfctl *c, struct mf_http_response *resp, const char *method,
                   const char *path, const void *body, size_t len);
/* Prints "mfctl: <message>" for a failed call and returns exit code 1. */
int mfctl__report(struct mfctl *c, int err);
/* 1 when `s` matches [A-Za-z0-9._-]{1,64} (model names and versions, docs/protocol.md). */
int mfctl__name_ok(const char *s);
/* 1 when `s` is a decimal id (rollout, distillation run) of at most 18 digits. */
int mfctl__id_ok(const char *s);
/* Decimal digits only, at most `max`, into *out; 0, or -1 (out untouched) when `s` is not. */
int mfctl__parse_u64(uint64_t *out, const char *s, uint64_t max);
/* Unix seconds as ISO 8601 UTC, "2026-12-02T03:04:05Z", in `buf`; "-" when absent or 0. */
const char *mfctl__fmt_time(char *buf, size_t cap, double t);
/* Bytes with a unit: "512 B", "1.5 KiB", "40.0 MiB", "2.0 GiB". */
const char *mfctl__fmt_bytes(char *buf, size_t cap, double bytes);
/* Prints "mfctl CMD: why" and the command's usage to stderr; returns the usage exit status 2. */
int mfctl__usage(struct mfctl *c, const char *why);

/* Answer helpers (cmd_rollout.c): a number or string member (0 / "" when absent); the
 * answer parsed, with an array under `key` (NULL: any JSON) or NULL and a message; one
 * request whose answer is printed with `print`, or raw with --json (exit status). */
double mfctl__num(const cJSON *o, const char *key);
const char *mfctl__str(const cJSON *o, const char *key);
cJSON *mfctl__parse(struct mfctl *c, const char *json, size_t len, const char *key);
/* The answer parsed, with its array `key` in *out; NULL with a message naming `key`. */
cJSON *mfctl__parse_array(struct mfctl *c, const cJSON **out, const char *json, size_t len,
                          const char *key);
int mfctl__call(struct mfctl *c, const char *method, const char *path, const char *body, int json,
                int (*print)(struct mfctl *, const char *, size_t));
/* One request whose answer is printed raw with --json (when it has one), else `done` (if
 * any); the exit status. */
int mfctl__send(struct mfctl *c, const char *method, const char *path, const char *body, int json,
                const char *done);
/* Handles the flags every command takes: `--help` (returns 0 after printing usage) and
 * `--json` (sets *json). Returns -1 to continue, else the exit code. Rejects other flags. */
int mfctl__common_flags(struct mfctl *c, int argc, char **argv, int *json, int *nargs);

/* Commands (one file per group). */
int mfctl__cmd_publish(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_upload(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_release(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_trust(struct mfctl *c, int argc, char **argv);

/* cmd_publish.c, shared with publish: staged blob upload (X-MF-Sha256) and release PUT. */
int mfctl__upload(struct mfctl *c, struct mf_http_response *resp, const char *name,
                  const char *version, FILE *f, uint64_t size, const char *sha_hex);
int mfctl__put_release(struct mfctl *c, struct mf_http_response *resp, const char *name,
                       const char *version, const void *env, size_t len);
/* 0, or 2 after printing why NAME/VERSION are not [A-Za-z0-9._-]{1,64}. */
int mfctl__check_names(struct mfctl *c, const char *name, const char *version);
/* FILE as a regular file and its size; NULL after printing why not. */
FILE *mfctl__open_model(struct mfctl *c, const char *path, uint64_t *size);
int mfctl__cmd_models(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_devices(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_versions(struct mfctl *c, int argc, char **argv);
/* cmd_fleet.c: the director's inputs and admin tokens */
int mfctl__cmd_device(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_groups(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_pins(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_rollback(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_tokens(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_blobs(struct mfctl *c, int argc, char **argv);
int mfctl__print_pins(struct mfctl *c, const char *json, size_t len);
int mfctl__print_tokens(struct mfctl *c, const char *json, size_t len);
int mfctl__print_groups(struct mfctl *c, const char *json, size_t len);

/* GET `path`, print it with `print` or raw (--json); handles --help and stray arguments. */
int mfctl__list_command(struct mfctl *c, int argc, char **argv, const char *path,
                        int (*print)(struct mfctl *, const char *, size_t));
/* Table printers, separate from the network so tests can feed them JSON. */
int mfctl__print_models(struct mfctl *c, const char *json, size_t len);
int mfctl__print_group_settings(struct mfctl *c, const char *json, size_t len);
/* Only `model`'s versions (NULL: every model). */
int mfctl__print_versions(struct mfctl *c, const char *json, size_t len, const char *model);
int mfctl__print_devices(struct mfctl *c, const char *json, size_t len);

#endif /* MFCTL_H */
