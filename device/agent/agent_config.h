/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to mf-agent: the JSON configuration file, parsed separately from the code that
 * acts on it (STYLE rule 34). Every parse error names the file, and the key or the line.
 *
 *   {"server_url": "http://127.0.0.1:8080", "device_id": "cam-0001",
 *    "enrollment_token_file": "/etc/mf/enroll.token", "state_dir": "/var/lib/mf-agent",
 *    "models": ["detector"], "poll_interval_s": 60, "log_level": "info",
 *    "ca_file": "/etc/ssl/certs/ca.pem", "trust_root_file": "/etc/mf/root.json",
 *    "confirm": "auto", "max_unconfirmed_starts": 3, "metered": false,
 *    "max_recv_bytes_per_s": 0, "stall_timeout_s": 60, "report_telemetry": true}
 *
 * trust_root_file is required: the signed root the device is provisioned with (no trust
 * on first use); it is read only until the agent has saved its own trust state.
 */
#ifndef MF_AGENT_CONFIG_H
#define MF_AGENT_CONFIG_H

#include "mf_ctx.h"

#include <stddef.h>

#define MF_AGENT_CONFIG_MAX_BYTES (64 * 1024)

struct mf_agent_config {
    char *server_url;            /* required */
    char *device_id;             /* required */
    char *enrollment_token_file; /* optional: NULL once enrolled */
    char *state_dir;             /* required */
    char *ca_file;               /* optional */
    char *trust_root_file;       /* required: the provisioned root envelope */
    char **models;               /* required, 1..MF_AGENT_MAX_MODELS names */
    size_t n_models;
    long poll_interval_s;        /* 1..86400, default 60 */
    int log_level;               /* an mf_log_level, default MF_LOG_INFO */
    int confirm_manual;          /* "confirm": "manual": new versions wait for `mf-agent confirm` */
    long max_unconfirmed_starts; /* 1..1000, default 3 */
    int metered;                 /* no delta-to-full fallback */
    long max_recv_bytes_per_s;   /* bandwidth cap, 0 (default): none */
    long stall_timeout_s;        /* 1..3600, default 60 */
    int report_telemetry;        /* default 1: install, health and recorded runtime figures */
};

/*
 * Parses `len` bytes of `json` read from `file` (used in messages only). MF_OK,
 * MF_E_INVALID (bad JSON, unknown key, missing or ill-typed value), MF_E_NOMEM. On failure
 * `out` holds nothing to free. Strings are allocated from ctx's allocator.
 */
int mf_agent_config__parse(struct mf_agent_config *out, struct mf_ctx *ctx, const char *file,
                           const char *json, size_t len);

/* Reads `path` (at most MF_AGENT_CONFIG_MAX_BYTES) and parses it. Adds MF_E_IO, MF_E_LIMIT. */
int mf_agent_config__load(struct mf_agent_config *out, struct mf_ctx *ctx, const char *path);

/*
 * Reads the first line of a secret file (the enrollment token) into `out` (`cap` bytes),
 * without its line ending. MF_E_IO, MF_E_LIMIT (longer than cap - 1), MF_E_INVALID (empty).
 */
int mf_agent_config__read_secret(char *out, size_t cap, struct mf_ctx *ctx, const char *path);

/* Reads a whole file of at most `cap - 1` bytes into `out` (NUL-terminated). MF_E_IO,
 * MF_E_LIMIT. */
int mf_agent_config__read_file(char *out, size_t cap, size_t *len_out, struct mf_ctx *ctx,
                               const char *path);

void mf_agent_config__free(struct mf_agent_config *c, struct mf_ctx *ctx);

#endif /* MF_AGENT_CONFIG_H */
