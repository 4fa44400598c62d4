/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl rollout and mfctl versions stats (docs/rollouts.md). */
#ifndef MFCTL_CMD_ROLLOUT_H
#define MFCTL_CMD_ROLLOUT_H

#include "mfctl.h"

#define MFCTL_ROLLOUT_USAGE                                                                        \
    "usage: mfctl [global options] rollout create MODEL VERSION PLAN.json [PREVIOUS] [--json]\n"   \
    "       mfctl [global options] rollout status [ID] [--json]\n"                                 \
    "       mfctl [global options] rollout status ID --watch [--interval S] [--timeout S]\n"       \
    "       mfctl [global options] rollout pause|resume|abort|rollback ID [--json]\n"              \
    "PLAN.json: {\"soak_s\": S, \"min_devices\": N, \"waves\": [{\"percent\": P} |\n"              \
    "{\"group\": G} | {\"devices\": [ID...]}], \"red_lines\": [{\"metric\": M, \"max\": X} |\n"    \
    "{\"metric\": M, \"relative\": F}]}; metrics: install_failure_rate, health_rollback_rate,\n"   \
    "p99_latency_us, peak_memory, offload_rate, teacher_agreement (\"min\" for it).\n"             \
    "A wave advances after S seconds clean with N devices reporting; a breached line halts\n"      \
    "the rollout and rolls the fleet back to PREVIOUS (default: the release before VERSION).\n"    \
    "status without ID lists rollouts; with ID shows waves, devices, each red line's value\n"      \
    "against its bound, the whole plan and the events (ISO 8601 UTC). --watch redraws it\n"        \
    "every S seconds (default 5) until the rollout ends or the timeout (default 3600 s)\n"         \
    "passes; exit status 0 only if it ended done.\n"

/* mfctl versions stats MODEL [--json]: mfctl versions calls it with MODEL checked. */
int mfctl__versions_stats(struct mfctl *c, const char *model, int json);
int mfctl__cmd_rollout(struct mfctl *c, int argc, char **argv);
/* rollout status ID --watch (cmd_rollout_watch.c): the exit status. */
int mfctl__rollout_watch(struct mfctl *c, const char *id, int json, unsigned interval_s,
                         unsigned timeout_s);

/* Printers, separate from the network so tests feed them JSON. */
int mfctl__print_rollout(struct mfctl *c, const char *json, size_t len);
int mfctl__print_rollouts(struct mfctl *c, const char *json, size_t len);
int mfctl__print_stats(struct mfctl *c, const char *json, size_t len);

#endif /* MFCTL_CMD_ROLLOUT_H */
