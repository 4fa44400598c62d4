/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl audit and mfctl webhooks (docs/operations.md, "Audit log", "Webhooks"). */
#ifndef MFCTL_CMD_AUDIT_H
#define MFCTL_CMD_AUDIT_H

#include "mfctl.h"

#define MFCTL_AUDIT_USAGE                                                                          \
    "usage: mfctl [global options] audit [--since T] [--until T] [--token ID|NAME]\n"              \
    "                                    [--action PREFIX] [--limit N] [--before SEQ] [--json]\n"  \
    "Lists the audit log, newest first: every POST, PUT and DELETE of the admin API with\n"        \
    "the token that asked (id and name; \"-\" when it had no valid token), the route, its ids\n"   \
    "and the status answered; and each automatic rollout event (actor rollout-engine,\n"           \
    "action rollout.KIND). T is YYYY-MM-DDTHH:MM:SSZ or Unix seconds; --action matches the\n"      \
    "start of the action (\"PUT \", \"DELETE /v1/admin/pins\", \"rollout.\"); --limit is\n"        \
    "1..1000 (default 100). When more rows are there, the last line gives the --before of\n"       \
    "the next page.\n"

#define MFCTL_WEBHOOKS_USAGE                                                                       \
    "usage: mfctl [global options] webhooks [list] [--json]\n"                                     \
    "       mfctl [global options] webhooks add URL --secret-file FILE [--json]\n"                 \
    "       mfctl [global options] webhooks remove ID\n"                                           \
    "add registers URL (http:// or https://) for every rollout event: a JSON POST signed\n"        \
    "with the secret in FILE (its first line, 16 to 256 characters) as\n"                          \
    "X-Modelferry-Signature: sha256=<hex HMAC-SHA256 of the body>, with the event id in\n"         \
    "X-Modelferry-Event (the same on every retry: dedup by it), retried with exponential\n"        \
    "backoff until the receiver answers 2xx. list shows each URL's deliveries by state.\n"

int mfctl__cmd_audit(struct mfctl *c, int argc, char **argv);
int mfctl__cmd_webhooks(struct mfctl *c, int argc, char **argv);
int mfctl__print_webhooks(struct mfctl *c, const char *json, size_t len);
/* The table of a GET /v1/admin/audit answer; separate from the network for the tests. */
int mfctl__print_audit(struct mfctl *c, const char *json, size_t len);

#endif /* MFCTL_CMD_AUDIT_H */
